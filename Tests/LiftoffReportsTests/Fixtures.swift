import LiftoffProfile

func metadata(_ command: [String] = ["/usr/bin/app"]) -> Profile.Metadata {
    Profile.Metadata(
        liftoffVersion: "0.1.0", commandLine: command,
        host: Profile.Host(name: "box", os: "Linux 6.1", architecture: "x86_64", cpuCount: 2),
        startTime: "2026-11-21T10:00:00.000Z", buildConfiguration: "debug", samplingRateHz: 1000)
}

/// Frames with every character that must be escaped somewhere.
let hostileNames = [
    "main", "a<b>&\"c\"", "semi;colon", "new\nline", "</script><script>alert(1)</script>", "with space",
]

/// main → a<b>&"c" → semi;colon (3 on main, 1 on the worker), main → new\nline (1),
/// main → with space (2 on the worker).
func hostileProfile() -> Profile {
    Profile(
        metadata: metadata(["/bin/evil<app>"]), timeOriginNs: 0,
        phases: Profile.Phases(processStartNs: 0, preMainNs: 0, mainEntryNs: 0, endNs: 10),
        threads: [
            Profile.ThreadInfo(id: 1, name: "main", isMain: true),
            Profile.ThreadInfo(id: 2, name: "work;er", isMain: false),
        ],
        frames: hostileNames.map { Profile.Frame(name: $0, object: "app") },
        stacks: Profile.StackTable(parent: [-1, 0, 1, 0, 0, 0], frame: [0, 1, 2, 3, 5, 4]),
        samples: Profile.SampleTable(
            thread: [1, 1, 1, 1, 2, 2, 2, 1],
            timeNs: [1, 2, 3, 4, 5, 6, 7, 8],
            stack: [2, 2, 2, 3, 4, 4, 2, 5]))
}

/// main (1 self) → work (3 self).
func tinyProfile() -> Profile {
    Profile(
        metadata: metadata(), timeOriginNs: 0,
        phases: Profile.Phases(processStartNs: 0, preMainNs: 0, mainEntryNs: 0, endNs: 10),
        threads: [Profile.ThreadInfo(id: 1, name: "main", isMain: true)],
        frames: [Profile.Frame(name: "main", object: "app"), Profile.Frame(name: "work", object: "app")],
        stacks: Profile.StackTable(parent: [-1, 0], frame: [0, 1]),
        samples: Profile.SampleTable(thread: [1, 1, 1, 1], timeNs: [1, 2, 3, 4], stack: [1, 1, 1, 0]))
}

func emptyProfile() -> Profile {
    Profile(
        metadata: metadata(), timeOriginNs: 0,
        phases: Profile.Phases(processStartNs: 0, preMainNs: 0, mainEntryNs: 0, endNs: 0))
}
