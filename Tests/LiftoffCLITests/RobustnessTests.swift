import Foundation
import Liftoff
import LiftoffProfile
import LiftoffFormats
import LiftoffTestSupport
import Testing

@testable import LiftoffCLI
import LiftoffComparison

/// A valid small profile, changed by `edit`, written to a temporary file.
func profileFile(_ edit: (inout Profile) -> Void = { _ in }) throws -> URL {
    var profile = Profile.synthetic(samples: 200, distinctStacks: 20, tasks: 3)
    edit(&profile)
    let url = temporaryFolder().appendingPathComponent("profile.json")
    try profile.write(to: url)
    return url
}

/// Runs a shell script with `$L` set to the built tool; its exit status and combined output.
func shell(_ script: String) throws -> (status: Int32, output: String) {
    let tool = try BuiltTool.find().url.path
    return try runToEnd("/bin/bash", ["-c", "L='\(tool)'\n" + script])
}

@Suite("Hostile numbers, huge inputs, full disks and runaway children", .timeLimit(.minutes(3)))
struct RobustnessTests {
    @Test(
        "absurd times and counts are refused at load with the field named",
        arguments: ["samples.timeNs[0]", "tasks[0].cpuNs", "tasks[1].endNs", "violations[0].count", "spans[0].samples", "phases.endNs"])
    func absurdValues(field: String) throws {
        let edit: (inout Profile) -> Void = { profile in
            switch field {
            case "samples.timeNs[0]": profile.samples.timeNs[0] = .max
            case "tasks[0].cpuNs": profile.tasks[0].cpuNs = .max
            case "tasks[1].endNs": profile.tasks[1].endNs = .max - 1
            case "violations[0].count":
                profile.violations = [
                    Profile.Violation(rule: "r", message: "m", threadID: 1, threadName: "t", timeNs: 1, stack: nil, count: .max)
                ]
            case "spans[0].samples":
                profile.spans = [Profile.Span(name: "s", category: .span, threadID: 1, startNs: 0, endNs: 1, samples: 1_000_000)]
            default: profile.phases.endNs = .max
            }
        }
        let url = try profileFile(edit)
        #expect(throws: ProfileError.self) { try Profile.load(from: url) }
        do {
            _ = try Profile.load(from: url)
        } catch let error as ProfileError {
            #expect(error.message.contains(field), "\(error.message)")
            #expect(!error.message.contains("\n"))
        }
        for command in [["report", url.path, "--format", "html"], ["check", url.path, "--max-violations", "0"]] {
            let result = try BuiltTool.find().run(command)
            #expect(result.status == 1, "\(command): \(result.stderr)")
            #expect(result.stderr.contains(field))
        }
    }

    @Test("a 10,000-frame stack renders in every format; a 100 KB name is shortened at load with a marker")
    func hugeInputs() throws {
        let url = try profileFile { profile in
            let base = profile.frames.count
            profile.frames += (0..<10_000).map { Profile.Frame(name: "deep\($0)", object: "app") }
            var parent = -1
            for depth in 0..<10_000 {
                profile.stacks.parent.append(parent)
                profile.stacks.frame.append(base + depth)
                parent = profile.stacks.count - 1
            }
            profile.samples.stack[0] = parent
            profile.samples.state[0] = .running
            profile.frames[0].name = String(repeating: "n", count: 100_000)
        }
        let loaded = try Profile.load(from: url)
        #expect(loaded.frames[0].name.utf8.count <= Profile.maximumNameBytes)
        #expect(loaded.frames[0].name.hasSuffix(Profile.shortenedMarker))
        for format in ReportFormats.all {
            let bytes = try format.render(loaded, options: ReportOptions(samples: .wall))
            #expect(!bytes.isEmpty, "\(format.name)")
        }
        let folded = FoldedRenderer.render(loaded)
        let deepLine = try #require(folded.split(separator: "\n").first { $0.contains("deep9999") })
        #expect(deepLine.split(separator: ";").count == 10_000)
    }

    @Test("a full disk ends report, compare, check and simulate with one sentence and exit 1; a closed pipe is quiet")
    func writeErrors() throws {
        let profile = try profileFile()
        let runs = try runFolder([10, 11, 12])
        for command in [
            "\"$L\" report '\(profile.path)' --format markdown",
            "\"$L\" report '\(profile.path)' --format html",
            "\"$L\" compare '\(runs.path)' '\(runs.path)'",
            "\"$L\" check '\(runs.path)' --max-ttff 1s",
            "echo launch | \"$L\" simulate -",
        ] {
            let result = try shell("\(command) > /dev/full; echo \"status $?\"")
            #expect(result.output.hasSuffix("status 1\n"), "\(command): \(result.output)")
            #expect(result.output.contains("Cannot write to standard output: No space left on device."), "\(command)")
            #expect(!result.output.contains("Fatal error"))
        }
        let big = try profileFile { profile in profile = Profile.synthetic(samples: 20_000, distinctStacks: 2_000, tasks: 50) }
        let piped = try shell("\"$L\" report '\(big.path)' --format html | head -c 100 > /dev/null; echo \"status ${PIPESTATUS[0]}\"")
        #expect(piped.output == "status 0\n", "a reader that stopped reading is not an error: \(piped.output)")
    }

    @Test("simulate: hostile numbers are refused in a sentence; CRLF and a BOM are read; a background launch draws when it comes forward")
    func simulate() throws {
        let huge = try shell("printf 'launch\\nwait 18446744073709551615\\n' | \"$L\" simulate -; echo \"status $?\"")
        #expect(huge.output.contains("Line 2:") && huge.output.hasSuffix("status 1\n"), "\(huge.output)")
        let task = try shell("printf 'launch\\nbackground-task x 99999999999999\\n' | \"$L\" simulate -; echo \"status $?\"")
        #expect(task.output.contains("longer than a simulation goes"), "\(task.output)")
        let watchdog = try shell("echo launch | \"$L\" simulate - --watchdog 18446744073709551615; echo \"status $?\"")
        #expect(watchdog.output.hasSuffix("status 64\n"), "\(watchdog.output)")
        #expect(watchdog.output.contains("--watchdog must be between 1 and"))

        let crlf = try Scenario.parse("\u{FEFF}launch\r\nhome\r\nforeground\r\n")
        #expect(crlf.lines.map(\.text) == ["launch", "home", "foreground"])

        let started = Date()
        let scenario = try Scenario.parse("launch-background location\nforeground\nwait 100\n")
        let output = Simulation(watchdogMs: 20_000).run(scenario)
        #expect(Date().timeIntervalSince(started) < 20, "virtual time: no 30 s real-time waits")
        let afterForeground = output.drop { !$0.contains(#""step":"foreground""#) }
        #expect(afterForeground.contains { $0.contains(#""kind":"frame""#) }, "the UI is built and drawn in the foreground")
    }

    @Test("record leaves no process behind: not a grandchild, not one that left the group, not its child when it is killed")
    func noStrays() throws {
        let folder = temporaryFolder()
        let marker = "61.\(Int.random(in: 100...999))"
        let result = try BuiltTool.find().run([
            "record", "--runs", "2", "--warmup", "0", "--quiet", "--out", folder.path,
            "--", "/bin/sh", "-c", "sleep \(marker) & setsid sleep \(marker)1 & echo started",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        Thread.sleep(forTimeInterval: 0.3)
        let strays = try runToEnd("/usr/bin/pgrep", ["-f", "sleep \(marker)"])
        #expect(strays.output.isEmpty, "left running: \(strays.output)")

        // kill -9 of record: its running child dies with it.
        let child = "62.\(Int.random(in: 100...999))"
        let tool = try BuiltTool.find().url
        let record = Process()
        record.executableURL = tool
        record.arguments = ["record", "--runs", "1", "--warmup", "0", "--quiet", "--out", temporaryFolder().path, "--", "sleep", child]
        record.standardOutput = FileHandle.nullDevice
        record.standardError = FileHandle.nullDevice
        try record.run()
        var seen = false
        for _ in 0..<200 where !seen {
            seen = !(try runToEnd("/usr/bin/pgrep", ["-f", "sleep \(child)"]).output.isEmpty)
            if !seen { Thread.sleep(forTimeInterval: 0.02) }
        }
        #expect(seen, "the child started")
        kill(record.processIdentifier, SIGKILL)
        record.waitUntilExit()
        var gone = false
        for _ in 0..<200 where !gone {
            gone = try runToEnd("/usr/bin/pgrep", ["-f", "sleep \(child)"]).output.isEmpty
            if !gone { Thread.sleep(forTimeInterval: 0.02) }
        }
        #expect(gone, "the child died with record")
    }

    @Test("usage errors say what is wrong with exit 64; a record.json of an unknown schema is refused")
    func inputQuirks() throws {
        let negative = try BuiltTool.find().run(["check", try runFolder([10]).path, "--max-violations=-1"])
        #expect(negative.status == 64, "\(negative.stderr)")
        #expect(negative.stderr.contains("--max-violations must be 0 or more"))
        let file = try profileFile()
        let out = try BuiltTool.find().run(["record", "--runs", "1", "--out", file.path, "--", "true"])
        #expect(out.status == 1)
        #expect(out.stderr.contains("is a file, not a folder"), "\(out.stderr)")
        #expect(!out.stderr.contains("NSCocoaErrorDomain"))

        let folder = temporaryFolder()
        let manifest = #"{"schema":"liftoff.record/9","command":["x"],"measure":"exit","runs":[]}"#
        try manifest.write(to: folder.appendingPathComponent("record.json"), atomically: true, encoding: .utf8)
        #expect(throws: RunSetError.self) { try RunSet.load(folder.path) }
        let refused = try BuiltTool.find().run(["check", folder.path, "--max-ttff", "1s"])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("liftoff.record/9"), "\(refused.stderr)")
    }
}
