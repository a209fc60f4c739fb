import ArgumentParser
import Foundation
import LiftoffProfile
import LiftoffFormats
import LiftoffTestSupport
import Testing

@testable import LiftoffCLI

/// Runs the built `liftoff` binary, which sits next to the test bundle.
struct BuiltTool {
    var url: URL

    static func find() throws -> BuiltTool {
        let folder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let url = folder.appendingPathComponent("liftoff")
        try #require(
            FileManager.default.isExecutableFile(atPath: url.path),
            "liftoff is not built next to the tests; run `swift build` (make test does) first")
        return BuiltTool(url: url)
    }

    /// Runs the tool. `environment` adds variables to the child's environment only: tests never
    /// change the environment of the test process, which other suites' children inherit.
    /// Runs liftoff with `arguments`, its environment this process's with `environment` added,
    /// in `directory` (this process's by default).
    func run(
        _ arguments: [String], environment: [String: String] = [:], in directory: URL? = nil
    ) throws -> (status: Int32, stdout: String, stderr: String) {
        let result = try runWithPID(arguments, environment: environment, in: directory)
        return (result.status, result.stdout, result.stderr)
    }

    func runWithPID(
        _ arguments: [String], environment: [String: String] = [:], in directory: URL? = nil
    ) throws -> (status: Int32, stdout: String, stderr: String, pid: Int) {
        let process = Process()
        process.executableURL = url
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, added in added }
        }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (
            process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self),
            Int(process.processIdentifier)
        )
    }
}

func temporaryFolder() -> URL {
    let url = testScratch.appendingPathComponent("liftoff-cli-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

@Suite("CLI in process", .timeLimit(.minutes(5)))
struct CLIParsingTests {
    @Test("report renders a saved profile to a file in the chosen format")
    func reportToFile() throws {
        let folder = temporaryFolder()
        let profileURL = folder.appendingPathComponent("profile.json")
        try demoLikeProfile().write(to: profileURL)
        let output = folder.appendingPathComponent("out.folded")
        var command = try LiftoffCommand.parseAsRoot(["report", profileURL.path, "--format", "folded", "-o", output.path])
        try command.run()
        #expect(try String(contentsOf: output, encoding: .utf8) == "main;load 2\n")
    }

    @Test("report writes every format, HTML by default", arguments: ReportFormats.all.map(\.name))
    func reportFormats(name: String) throws {
        let folder = temporaryFolder()
        let profileURL = folder.appendingPathComponent("profile.json")
        try demoLikeProfile().write(to: profileURL)
        let output = folder.appendingPathComponent("out")
        let arguments = ["report", profileURL.path, "-o", output.path] + (name == "html" ? [] : ["--format", name])
        var command = try LiftoffCommand.parseAsRoot(arguments)
        try command.run()
        if name == "pprof" {
            #expect(try Data(contentsOf: output).starts(with: [0x1F, 0x8B]), "gzip-compressed protobuf")
            return
        }
        if name == "otlp" {
            // Field 1 (resource_profiles), length-delimited; OTLPTests reads the whole request.
            #expect(try Data(contentsOf: output).first == 0x0A, "an ExportProfilesServiceRequest")
            return
        }
        let text = try String(contentsOf: output, encoding: .utf8)
        let start: String
        switch name {
        case "html": start = "<!DOCTYPE html>"
        case "svg": start = "<?xml"
        case "folded": start = "main;load 2"
        case "speedscope": start = "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\""
        case "chrome": start = "{\"displayTimeUnit\":\"ms\""
        case "markdown": start = "## Launch profile:"
        default:
            Issue.record("a format without a check here: \(name)")
            return
        }
        #expect(text.hasPrefix(start))
    }

    @Test("report on a missing file fails with one sentence naming it")
    func reportMissing() throws {
        var command = try LiftoffCommand.parseAsRoot(["report", "/nonexistent/profile.json"])
        let error = #expect(throws: CLIError.self) { try command.run() }
        #expect(error?.description == "The profile /nonexistent/profile.json does not exist.")
    }

    @Test("an unknown format is a usage error")
    func unknownFormat() {
        #expect(throws: (any Error).self) { try LiftoffCommand.parseAsRoot(["report", "p.json", "--format", "png"]) }
    }

    @Test("demo refuses rates outside 1 ... 10000 Hz before doing anything", arguments: ["0", "20000"])
    func demoRate(rate: String) {
        let error = #expect(throws: (any Error).self) { try LiftoffCommand.parseAsRoot(["demo", "--rate", rate]) }
        #expect(LiftoffCommand.message(for: error!).contains("--rate must be between 1 and 10000"))
    }

    private func demoLikeProfile() -> Profile {
        Profile(
            metadata: Profile.Metadata(
                liftoffVersion: "0.1.0", commandLine: ["app"],
                host: Profile.Host(name: "h", os: "Linux", architecture: "x86_64", cpuCount: 2),
                startTime: "2026-11-21T10:00:00.000Z", buildConfiguration: "debug", samplingRateHz: 100),
            timeOriginNs: 0, phases: Profile.Phases(processStartNs: 0, preMainNs: 0, mainEntryNs: 0, endNs: 1),
            threads: [Profile.ThreadInfo(id: 1, name: "main", isMain: true)],
            frames: [Profile.Frame(name: "main", object: "app"), Profile.Frame(name: "load", object: "app")],
            stacks: Profile.StackTable(parent: [-1, 0], frame: [0, 1]),
            samples: Profile.SampleTable(thread: [1, 1], timeNs: [0, 1], stack: [1, 1]))
    }
}

@Suite("liftoff binary", .timeLimit(.minutes(5)))
struct CLIEndToEndTests {
    @Test("liftoff demo writes a loadable profile, folded stacks and an SVG with demangled demo functions")
    func demoEndToEnd() throws {
        let tool = try BuiltTool.find()
        let folder = temporaryFolder()
        let result = try tool.runWithPID(["demo", "--out", folder.path, "--rate", "500", "--linger", "20"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stdout.contains("Top functions by CPU time (running samples):"))
        #expect(result.stdout.contains("Time to first frame: "))

        let profile = try Profile.load(from: folder.appendingPathComponent("profile.json"))
        let main = try #require(profile.threads.first { $0.isMain })
        #expect(main.name == "main")
        #expect((0..<profile.samples.count).filter { profile.samples.thread[$0] == main.id }.reduce(0) { $0 + profile.samples.ticks($1) } > 20)
        // The demo's longest work (over 100 ms of CPU), so a machine busy enough to starve the
        // sampler for a while still has it sampled.
        #expect(profile.frames.contains { $0.name.hasPrefix("static LiftoffDemo.DemoWorkload.hashCatalog(") })
        // Reports show short names (as `swift demangle --simplified` writes them); the full one stays.
        let hash = try #require(profile.frames.first { $0.name.hasPrefix("static LiftoffDemo.DemoWorkload.hashCatalog(") })
        #expect(hash.short == "static DemoWorkload.hashCatalog(_:workers:)")
        #expect(profile.phases.mainEntryNs > profile.phases.processStartNs)
        #expect(profile.phases.endNs > profile.phases.mainEntryNs)
        #expect(profile.metadata.samplingRateHz == 500)

        // The app's life: launch callbacks as spans, the first frame after didFinishLaunching.
        let ttff = try #require(profile.timeToFirstFrameNs)
        let finish = try #require(profile.spans.first { $0.name == "didFinishLaunching" })
        #expect(finish.category == "callback")
        #expect(ttff >= finish.endNs)
        #expect(profile.violations.isEmpty, "the optimized plan keeps blocking work off the main thread")
        #expect(profile.displayFrames.first?.index == 0)
        #expect(profile.marks.map(\.name).starts(with: ["firstLayout", "firstDraw", "firstFrame"]))
        #expect(profile.stateChanges.map(\.to) == ["inactive", "active", "inactive", "background", "notRunning"])
        #expect(profile.spans.contains { $0.name == "willTerminate" })

        // The parse ran as a background task: its samples sit on the task's thread, never on
        // the main thread (whose tid is the process id).
        #expect(main.id == result.pid)
        let parse = try #require(profile.tasks.first { $0.name == "parse catalogue" })
        #expect(parse.status == "completed")
        #expect(parse.threadID != main.id)
        func names(_ sample: Int) -> [String] {
            profile.frameIndices(ofStack: profile.samples.stack[sample]).map { profile.frames[$0].name }
        }
        for sample in 0..<profile.samples.count where names(sample).contains(where: { $0.contains("DemoWorkload.decodeCatalog") }) {
            #expect(profile.samples.thread[sample] == parse.threadID, "a parse sample on another thread")
        }
        // The parse task's running samples on its thread, against the CPU (its thread's CPU clock,
        // read by the scheduler around it) and time it took.
        let parseStart = try #require(parse.startNs), parseEnd = try #require(parse.endNs)
        let parseWork = SampledWork(cpuNs: try #require(parse.cpuNs), wallNs: parseEnd - parseStart, stretches: 1)
        // Each tick of a row counts at its own time (a late answer's row may begin before the task).
        let interval = profile.samplingIntervalNs
        let parseTicks = (0..<profile.samples.count).filter {
            profile.samples.thread[$0] == parse.threadID && profile.samples.state[$0] == .running
        }.reduce(0) { count, row in
            count + (0..<UInt64(profile.samples.ticks(row))).filter { (parseStart...parseEnd).contains(profile.samples.timeNs[row] + $0 * interval) }.count
        }
        #expect(
            parseWork.agrees(withRunning: Double(parseTicks), intervalNs: profile.samplingIntervalNs),
            "the parse was sampled: \(parseTicks) running ticks for \(parseWork)")
        #expect(profile.tasks.first { $0.name == "build views" }?.threadID == main.id)

        let folded = try String(contentsOf: folder.appendingPathComponent("flame.folded"), encoding: .utf8)
        #expect(folded.contains("static\u{A0}DemoWorkload.hashCatalog(_:workers:)"))
        let svg = try String(contentsOf: folder.appendingPathComponent("flame.svg"), encoding: .utf8)
        #expect(svg.contains("static DemoWorkload.hashCatalog(_:workers:)"))
        #expect(!svg.contains("LiftoffDemo.DemoWorkload"), "the SVG shows short names")
        for format in ReportFormats.all where !format.isBinary {
            let text = try String(contentsOf: folder.appendingPathComponent(format.fileName), encoding: .utf8)
            #expect(text == String(decoding: try format.render(profile, options: ReportOptions()), as: UTF8.self), "\(format.fileName) renders profile.json")
        }
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("profile.pb.gz").path))
        // Every thread has wall-clock samples (the main thread may have no running one).
        let wall = try String(contentsOf: folder.appendingPathComponent("flame-wall.folded"), encoding: .utf8)
        #expect(wall.contains("main\u{A0}(\(main.id));"), "spaces in folded names are no-break spaces")
        #expect(wall == FoldedRenderer.render(profile, perThread: true, samples: .wall))
    }

    @Test("demo --plan both reaches the first frame sooner with the optimized plan, which has no violations")
    func comparePlans() throws {
        let folder = temporaryFolder()
        let result = try BuiltTool.find().run(["demo", "--plan", "both", "--runs", "1", "--out", folder.path, "--rate", "200"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let naive = try Profile.load(from: folder.appendingPathComponent("naive/profile.json"))
        let optimized = try Profile.load(from: folder.appendingPathComponent("profile.json"))
        #expect(optimized.violations.isEmpty)
        #expect(naive.violations.contains { $0.message.contains("'parse catalogue'") })
        #expect(naive.tasks.allSatisfy { $0.threadID == naive.threads.first { $0.isMain }?.id })
        #expect(naive.tasks.filter(\.couldDefer).map(\.name).contains("hash catalogue"))
        #expect(result.stdout.contains("The optimized plan reaches its first frame"))
        let naiveTTFF = try #require(naive.timeToFirstFrameNs)
        let optimizedTTFF = try #require(optimized.timeToFirstFrameNs)
        #expect(optimizedTTFF < naiveTTFF, "optimized \(optimizedTTFF) ns, naive \(naiveTTFF) ns")
    }

    @Test("an injected 600 ms stall after the first frame is recorded as a hang whose stacks show it")
    func injectedHang() throws {
        let folder = temporaryFolder()
        let result = try BuiltTool.find().run(["demo", "--out", folder.path, "--linger", "0", "--inject-hang", "600"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let profile = try Profile.load(from: folder.appendingPathComponent("profile.json"))
        #expect(profile.hangs.count == 1)
        let hang = try #require(profile.hangs.first)
        #expect(hang.running == "launch task injected stall")
        #expect(hang.durationNs >= 550_000_000)
        let showingStall = hang.stacks.filter { stack in
            profile.frameIndices(ofStack: stack).contains { profile.frames[$0].name.contains("DemoWorkload.stall") }
        }
        #expect(Double(showingStall.count) >= 0.8 * Double(hang.stacks.count) && !hang.stacks.isEmpty)
        #expect(result.stdout.contains("Hangs (main thread away from its run loop for 250 ms or more): 1"))
    }

    @Test("main-queue blocks, @MainActor tasks and timers run on the OS main thread inside the loop")
    func mainThreadWork() throws {
        let result = try BuiltTool.find().run(["probe-main-thread"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: [String: Bool]])
        for kind in ["mainQueue", "mainActor", "timer"] {
            #expect(object[kind]?["onMainThread"] == true, "\(kind): \(result.stdout)")
            #expect(object[kind]?["insideLoop"] == true, "\(kind): \(result.stdout)")
        }
    }

    @Test("the watchdog thread ends a launch stuck on the main thread and prints the main thread's stack")
    func stuckLaunchWatchdog() throws {
        let started = Date()
        let result = try BuiltTool.find().run(["probe-main-thread", "--stall-launch-ms", "10000", "--watchdog-ms", "500"])
        #expect(result.status == 3)
        #expect(Date().timeIntervalSince(started) < 8, "ended by the watchdog, not by the stall running out")
        #expect(result.stderr.contains("launch watchdog: no first frame 500 ms after launch began; the launch was in didFinishLaunching"))
        #expect(result.stderr.contains("ProbeDelegate.stallMainThread"), "stderr: \(result.stderr)")
    }

    @Test("a didEnterBackground that does not return in time ends the process with the main thread's stack")
    func stuckEnterBackground() throws {
        let started = Date()
        let result = try BuiltTool.find().run(["probe-main-thread", "--stall-background-ms", "10000", "--background-limit-ms", "300"])
        #expect(result.status == 4)
        #expect(Date().timeIntervalSince(started) < 8)
        #expect(result.stderr.contains("didEnterBackground did not return within 300 ms"))
        #expect(result.stderr.contains("ProbeDelegate.stallMainThread"))
    }

    @Test("simulate replays the seeds' life cycle as JSON lines, in virtual time")
    func simulate() throws {
        let folder = temporaryFolder()
        let script = folder.appendingPathComponent("scenario.txt")
        try Data("launch\nbackground-task upload 3000; home\nwait 60000\npurge\nlaunch-background location\nterminate\n".utf8)
            .write(to: script)
        let started = Date()
        let result = try BuiltTool.find().run(["simulate", script.path])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Date().timeIntervalSince(started) < 20, "waiting a minute of app time costs no real minute")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        let objects = try lines.map { try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        func describe(_ object: [String: Any]) -> String? {
            switch object["kind"] as? String {
            case "callback": return object["name"] as? String
            case "state": return "\(object["from"]!)→\(object["to"]!)"
            case "frame": return "frame \(object["index"]!)"
            case "background-task": return "task \(object["event"]!)"
            default: return nil
            }
        }
        #expect(objects.compactMap(describe) == [
            "notRunning→inactive", "willFinishLaunching", "didFinishLaunching", "inactive→active", "didBecomeActive",
            "frame 0", "frame 1", "task begin", "willResignActive", "active→inactive", "inactive→background", "didEnterBackground",
            "task end", "background→suspended", "suspended→notRunning",
            "notRunning→background", "willFinishLaunching", "didFinishLaunching", "background→suspended",
            "suspended→notRunning",
        ])
        let suspended = try #require(objects.first { $0["to"] as? String == "suspended" })
        #expect(suspended["t_ms"] as? Double == 3000)
    }

    @Test("simulate names the line and word of a bad step and exits non-zero")
    func simulateBadStep() throws {
        let folder = temporaryFolder()
        let script = folder.appendingPathComponent("bad.txt")
        try Data("launch\nwait later\n".utf8).write(to: script)
        let result = try BuiltTool.find().run(["simulate", script.path])
        #expect(result.status != 0)
        #expect(result.stderr.contains("Line 2: 'later' is not a whole number of milliseconds."))
        #expect(result.stdout.isEmpty, "nothing runs before the whole scenario parses")
    }

    @Test("the process start comes from LIFTOFF_LAUNCH_NS when a launcher sets it")
    func launchTimeFromEnvironment() throws {
        let tool = try BuiltTool.find()
        let folder = temporaryFolder()
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let spawn = UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
        let result = try tool.run(
            ["demo", "--out", folder.path, "--rate", "100", "--linger", "0"], environment: ["LIFTOFF_LAUNCH_NS": String(spawn)])
        #expect(result.status == 0)
        let profile = try Profile.load(from: folder.appendingPathComponent("profile.json"))
        #expect(profile.timeOriginNs == spawn)
        #expect(profile.phases.preMainNs > 0, "pre-main time is measured from the spawn")
    }

    @Test("bad input gets one sentence on stderr and a non-zero exit", arguments: [
        (["report", "/nonexistent.json"], "Error: The profile /nonexistent.json does not exist."),
        (["demo", "--rate", "0"], "Error: --rate must be between 1 and 10000 samples per second, not 0."),
        (["report", "/etc/hostname"], "is not a JSON object."),
    ])
    func badInput(arguments: [String], message: String) throws {
        let result = try BuiltTool.find().run(arguments)
        #expect(result.status != 0)
        #expect(result.stderr.contains(message), "stderr: \(result.stderr)")
        #expect(!result.stderr.contains("Fatal error"))
    }

    @Test("a malformed profile file is left untouched by report")
    func malformedUntouched() throws {
        let folder = temporaryFolder()
        let url = folder.appendingPathComponent("broken.json")
        try Data("{\"schema\": \"liftoff.profile/1\", \"frames\": [".utf8).write(to: url)
        let result = try BuiltTool.find().run(["report", url.path, "--format", "svg", "-o", url.path])
        #expect(result.status != 0)
        #expect(result.stderr.contains("is truncated"))
        #expect(try String(contentsOf: url, encoding: .utf8) == "{\"schema\": \"liftoff.profile/1\", \"frames\": [")
    }
}
