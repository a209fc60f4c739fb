/// Small hand-made profiles of known shape, shared by the tests of analysis, comparison and reports.
import LiftoffProfile

public func metadata(_ command: [String] = ["/usr/bin/app"]) -> Profile.Metadata {
    Profile.Metadata(
        liftoffVersion: "0.1.0", commandLine: command,
        host: Profile.Host(name: "box", os: "Linux 6.1", architecture: "x86_64", cpuCount: 2),
        startTime: "2026-11-21T10:00:00.000Z", buildConfiguration: "debug", samplingRateHz: 1000)
}

/// Frames with every character that must be escaped somewhere.
public let hostileNames = [
    "main", "a<b>&\"c\"", "semi;colon", "new\nline", "</script><script>alert(1)</script>", "with space",
]

/// main → a<b>&"c" → semi;colon (3 on main, 1 on the worker), main → new\nline (1),
/// main → with space (2 on the worker).
public func hostileProfile() -> Profile {
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
public func tinyProfile() -> Profile {
    Profile(
        metadata: metadata(), timeOriginNs: 0,
        phases: Profile.Phases(processStartNs: 0, preMainNs: 0, mainEntryNs: 0, endNs: 10),
        threads: [Profile.ThreadInfo(id: 1, name: "main", isMain: true)],
        frames: [Profile.Frame(name: "main", object: "app"), Profile.Frame(name: "work", object: "app")],
        stacks: Profile.StackTable(parent: [-1, 0], frame: [0, 1]),
        samples: Profile.SampleTable(thread: [1, 1, 1, 1], timeNs: [1, 2, 3, 4], stack: [1, 1, 1, 0]))
}

public func emptyProfile() -> Profile {
    Profile(
        metadata: metadata(), timeOriginNs: 0,
        phases: Profile.Phases(processStartNs: 0, preMainNs: 0, mainEntryNs: 0, endNs: 0))
}

/// A small launch: main (tid 1) runs a launch callback with two tasks and draws; a worker
/// (tid 2) reads. Times in nanoseconds.
///
/// Samples: main at 1, 2, 3, 4 ms on main→launch, main→launch, main→draw, main→draw;
/// worker at 1.5, 2.5 ms on main→launch→parse.
public func launchProfile() -> Profile {
    var profile = Profile(
        metadata: metadata(["/usr/bin/app"]), timeOriginNs: 0,
        phases: Profile.Phases(
            processStartNs: 0, preMainNs: 0, mainEntryNs: 500_000, endNs: 6_000_000, firstFrameNs: 4_500_000),
        threads: [
            Profile.ThreadInfo(id: 1, name: "main", isMain: true),
            Profile.ThreadInfo(id: 2, name: "worker", isMain: false),
        ],
        frames: ["main", "launch", "parse", "draw"].map { Profile.Frame(name: $0, object: "app") },
        stacks: Profile.StackTable(parent: [-1, 0, 1, 0], frame: [0, 1, 2, 3]),
        samples: Profile.SampleTable(
            thread: [1, 2, 1, 2, 1, 1],
            timeNs: [1_000_000, 1_500_000, 2_000_000, 2_500_000, 3_000_000, 4_000_000],
            stack: [1, 2, 1, 2, 3, 3]))
    profile.spans = [
        Profile.Span(name: "didFinishLaunching", category: "callback", threadID: 1, startNs: 600_000, endNs: 4_200_000)
    ]
    profile.marks = [Profile.Mark(name: "firstFrame", timeNs: 4_500_000)]
    profile.stateChanges = [
        Profile.StateChange(timeNs: 600_000, from: "notRunning", to: "inactive"),
        Profile.StateChange(timeNs: 4_300_000, from: "inactive", to: "active"),
    ]
    profile.tasks = [
        Profile.TaskRecord(
            name: "read", lane: "background(utility)", status: "completed", threadID: 2, threadName: "worker",
            readyNs: 900_000, startNs: 1_000_000, endNs: 2_000_000, cpuNs: 800_000, onCriticalPath: true, slackNs: 0),
        Profile.TaskRecord(
            name: "build views", lane: "main", status: "completed", dependencies: ["read"], threadID: 1,
            threadName: "main", readyNs: 2_000_000, startNs: 2_200_000, endNs: 3_000_000, waitNs: 200_000,
            cpuNs: 700_000, onCriticalPath: true, slackNs: 0),
        Profile.TaskRecord(
            name: "prefetch", lane: "main", status: "completed", threadID: 1, threadName: "main",
            readyNs: 3_000_000, startNs: 3_000_000, endNs: 4_000_000, slackNs: 500_000, couldDefer: true),
    ]
    // The violation's stack (main → launch → parse) points at its source line.
    profile.frames[2].file = "/src/App/Parse.swift"
    profile.frames[2].line = 12
    profile.violations = [
        Profile.Violation(
            rule: "no-blocking-on-main-during-launch", message: "prefetch blocked the main thread.", threadID: 1,
            threadName: "main", timeNs: 3_100_000, stack: 2, count: 1)
    ]
    return profile
}

/// Profiles built tick by tick at 1 kHz: each thread's samples are (state, stack) per millisecond.
public struct LaunchBuilder {
    /// An empty launch: the main thread (tid 1) only, 2 cores, 1 s long.
    public init() {}

    public var frames: [Profile.Frame] = []
    public var parent: [Int] = []
    public var frameOf: [Int] = []
    public var samples = Profile.SampleTable()
    public var cpuCount = 2
    public var firstFrameMs: UInt64? = nil
    public var endMs: UInt64 = 1000
    public var threads: [Profile.ThreadInfo] = [Profile.ThreadInfo(id: 1, name: "main", isMain: true)]
    /// The frame of each `object|function`, and the stack of each (parent stack, frame): found by
    /// key, not by scanning, so a builder of thousands of samples stays fast. Rebuilt when the
    /// arrays were changed directly.
    private var frameIndex: [String: Int] = [:]
    private var stackIndex: [Int: [Int: Int]] = [:]
    private var indexed = (frames: 0, stacks: 0)

    private mutating func reindex() {
        guard indexed != (frames.count, parent.count) else { return }
        frameIndex = [:]
        stackIndex = [:]
        for (index, frame) in frames.enumerated() where frameIndex[frame.object + "|" + frame.name] == nil {
            frameIndex[frame.object + "|" + frame.name] = index
        }
        for index in parent.indices where stackIndex[parent[index]]?[frameOf[index]] == nil {
            stackIndex[parent[index], default: [:]][frameOf[index]] = index
        }
        indexed = (frames.count, parent.count)
    }

    /// The stack of `names`, outermost first; a name `lib|function` is in that object, else in `app`.
    public mutating func stack(_ names: [String]) -> Int {
        reindex()
        var at = -1
        for name in names {
            let parts = name.split(separator: "|", maxSplits: 1).map(String.init)
            let (object, function) = parts.count == 2 ? (parts[0], parts[1]) : ("app", name)
            let key = object + "|" + function
            let frame = frameIndex[key] ?? {
                frames.append(Profile.Frame(name: function, object: object))
                frameIndex[key] = frames.count - 1
                return frames.count - 1
            }()
            if let existing = stackIndex[at]?[frame] {
                at = existing
            } else {
                parent.append(at)
                frameOf.append(frame)
                stackIndex[at, default: [:]][frame] = parent.count - 1
                at = parent.count - 1
            }
        }
        indexed = (frames.count, parent.count)
        return at
    }

    /// One sample a millisecond on `thread` from `fromMs` to `toMs`.
    public mutating func add(thread: Int, _ state: Profile.SampleState, _ names: [String], fromMs: UInt64, toMs: UInt64) {
        let stack = stack(names)
        for ms in fromMs..<toMs {
            samples.thread.append(thread)
            samples.timeNs.append(ms * 1_000_000)
            samples.stack.append(stack)
            samples.state.append(state)
            samples.task.append(0)
            samples.cpuNs.append(0)
            samples.weight.append(1)
        }
    }

    public func profile() -> Profile {
        var meta = metadata(["/usr/bin/app"])
        meta.host.cpuCount = cpuCount
        return Profile(
            metadata: meta, timeOriginNs: 0,
            phases: Profile.Phases(
                processStartNs: 0, preMainNs: 0, mainEntryNs: 1_000_000, endNs: endMs * 1_000_000,
                firstFrameNs: firstFrameMs.map { $0 * 1_000_000 }),
            threads: threads, frames: frames, stacks: Profile.StackTable(parent: parent, frame: frameOf), samples: samples)
    }
}

/// A 200 ms launch whose main thread computes for 50 ms, then sleeps `sleepMs` in `load_config`.
public func launchWithSleep(ms sleepMs: UInt64) -> Profile {
    var launch = LaunchBuilder()
    launch.endMs = 200
    launch.firstFrameMs = 200
    launch.add(thread: 1, .running, ["main", "parse"], fromMs: 0, toMs: 50)
    if sleepMs > 0 {
        launch.add(thread: 1, .blocked, ["main", "load_config", "libc.so.6|nanosleep"], fromMs: 50, toMs: 50 + sleepMs)
    }
    return launch.profile()
}
