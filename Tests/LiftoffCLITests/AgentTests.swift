import Foundation
import LiftoffProfile
import LiftoffReports
import LiftoffTestSupport
import Testing

@testable import LiftoffCLI
import LiftoffComparison

/// Holds the process state: its tests count samples, which other suites loading the cores would thin.
@Suite("The injected agent", .serialized, .processState(timeLimit: .seconds(300)))
struct AgentTests {
    /// The program's output when run without the agent.
    func bareOutput(_ command: [String]) throws -> String {
        try runToEnd(command[0], Array(command.dropFirst())).output
    }

    /// `liftoff profile` of `command`: its status, the profile and the program's output.
    func profile(_ command: [String], extra: [String] = []) throws -> (status: Int32, stdout: String, stderr: String, profile: Profile?, log: String) {
        let out = temporaryFolder()
        let result = try BuiltTool.find().run(["profile", "--out", out.path] + extra + ["--"] + command)
        let profile = try? Profile.load(from: out.appendingPathComponent("profile.json"))
        let log = (try? String(contentsOf: out.appendingPathComponent("output.log"), encoding: .utf8)) ?? ""
        return (result.status, result.stdout, result.stderr, profile, log)
    }

    func functions(_ profile: Profile) -> Set<String> {
        var names = Set<String>()
        for sample in 0..<profile.samples.count where profile.samples.state[sample] == .running {
            for frame in profile.frameIndices(ofStack: profile.samples.stack[sample]) { names.insert(profile.frames[frame].name) }
        }
        return names
    }

    @Test("a C program with two threads: both threads sampled, its functions named, its output unchanged")
    func cProgram() throws {
        let program = try AgentPrograms.build(
            "two-threads", source: AgentPrograms.twoThreads, ext: "c", compiler: "/usr/bin/cc", ["-O1", "-g", "-lpthread"])
        let result = try profile([program])
        #expect(result.status == 0, "\(result.stderr)")
        let profile = try #require(result.profile)
        #expect(profile.threads.count >= 2)
        let names = functions(profile)
        #expect(names.contains("hash_rows") && names.contains("parse_config"), "\(names.sorted().prefix(20))")
        let worker = try #require(profile.threads.first { !$0.isMain })
        // The worker's stacks read as perf's: start_thread calls the thread's function, with no
        // frame of the wrapper through which the agent learns of new threads between them.
        let workerStacks = (0..<profile.samples.count).filter { profile.samples.thread[$0] == worker.id }
            .map { profile.frameIndices(ofStack: profile.samples.stack[$0]).map { profile.frames[$0].name } }
        #expect(!names.contains("lo_thread_begins"), "\(names.sorted().prefix(20))")
        #expect(workerStacks.contains { stack in zip(stack, stack.dropFirst()).contains { $0 == "start_thread" && $1 == "worker" } },
            "\(workerStacks.prefix(3))")
        let onWorker = (0..<profile.samples.count).filter { profile.samples.thread[$0] == worker.id && profile.samples.state[$0] == .running }
            .reduce(0) { $0 + Int(profile.samples.weight[$1]) }
        let hashed = try #require(ReportedWork.named("hash_rows", in: result.log), "the worker reports its work: \(result.log)")
        let interval = profile.samplingIntervalNs
        #expect(
            hashed.agrees(withRunning: Double(onWorker), intervalNs: interval),
            "the worker's work was sampled: \(onWorker) running ticks for \(hashed), \(hashed.expectedRunning(intervalNs: interval)) ± \(hashed.runningTolerance(intervalNs: interval))")
        #expect(
            ReportedWork.withoutReports(result.log) == ReportedWork.withoutReports(try bareOutput([program])),
            "byte-identical output, apart from the lines that report the work's clocks")
        #expect(result.stdout.contains("hash_rows"), "the summary names the hot function")
    }

    @Test("a Swift program without Liftoff and python3 -c are profiled, their hot functions named")
    func swiftAndPython() throws {
        let program = try AgentPrograms.build(
            "collatz", source: AgentPrograms.swiftProgram, ext: "swift", compiler: "/opt/swift/usr/bin/swiftc", ["-O", "-g"])
        let swift = try profile([program])
        #expect(swift.status == 0, "\(swift.stderr)")
        #expect(swift.log == (try bareOutput([program])))
        #expect(functions(try #require(swift.profile)).contains { $0.contains("collatzSteps") })

        let python = ["/usr/bin/python3", "-c", "import json\nprint(len([json.dumps({'k': i}) for i in range(200000)]))"]
        let run = try profile(python)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.log == (try bareOutput(python)))
        let names = functions(try #require(run.profile))
        #expect(names.contains("_PyEval_EvalFrameDefault"), "\(names.sorted().prefix(30))")
    }

    @Test("an unmodified async Swift program gets its tasks and async call stacks: leaf samples name middle")
    func asyncSwiftProgram() throws {
        let program = try AgentPrograms.build(
            "async-tasks", source: AgentPrograms.asyncProgram, ext: "swift", compiler: "/opt/swift/usr/bin/swiftc",
            ["-O", "-g", "-parse-as-library"])
        let run = try profile([program])
        #expect(run.status == 0, "\(run.stderr)")
        let profile = try #require(run.profile)
        let kinds = profile.asyncTasks.map(\.kind)
        #expect(kinds.filter { $0 == .asyncLet }.count == 1 && kinds.filter { $0 == .groupChild }.count == 2, "\(kinds)")
        #expect(profile.asyncTasks.filter { $0.kind != .unknown }.allSatisfy { !$0.runs.isEmpty })
        var inLeaf = 0
        var named = 0
        for row in 0..<profile.samples.count where profile.samples.state[row] == .running {
            let frames = profile.frameIndices(ofStack: profile.samples.stack[row]).map { profile.frames[$0] }
            guard let at = frames.lastIndex(where: { $0.displayName.hasPrefix("leaf(") }) else { continue }
            let weight = Int(profile.samples.weight[row])
            inLeaf += weight
            if frames[..<at].contains(where: { $0.isAsync && $0.displayName.hasPrefix("middle(") }) { named += weight }
        }
        let leaves = try #require(ReportedWork.named("leaf", in: run.log), "the leaves report their work: \(run.log)")
        let interval = profile.samplingIntervalNs
        #expect(
            leaves.agrees(withRunning: Double(inLeaf), intervalNs: interval),
            "\(inLeaf) running ticks in leaf for \(leaves): \(leaves.expectedRunning(intervalNs: interval)) ± \(leaves.runningTolerance(intervalNs: interval))")
        #expect(named * 10 >= inLeaf * 9, "\(named) of \(inLeaf) samples in leaf name middle")
    }

    @Test("a server's launch ends at its ready line: stopped with SIGTERM, the agent still writes")
    func readyLine() throws {
        let server = ["/usr/bin/python3", "-c", "import time\nprint('listening on 8080', flush=True)\ntime.sleep(30)"]
        let started = Date()
        let run = try profile(server, extra: ["--ready", "listening on"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(Date().timeIntervalSince(started) < 25, "stopped once ready")
        let profile = try #require(run.profile)
        #expect(profile.phases.firstFrameNs != nil)
        #expect(profile.marks.contains { $0.name == .ready })
    }

    @Test("profile exits with the program's status: its exit status, 128 + a crash's signal, 124 when --ready never matched")
    func exitStatuses() throws {
        let failing = try profile(["/bin/sh", "-c", "echo starting; exit 3"])
        #expect(failing.status == 3, "\(failing.stdout)\(failing.stderr)")
        #expect(failing.stdout.contains(": exit status 3 after") && failing.stdout.contains("liftoff exits with 3."), "\(failing.stdout)")
        #expect(failing.profile != nil, "the profile is written all the same")

        let crash = try AnyPrograms.build("crash", AnyPrograms.crash)
        let crashed = try profile([crash])
        #expect(crashed.status == 128 + SIGSEGV, "\(crashed.stdout)")
        #expect(crashed.stdout.contains("crashed with signal 11 (SIGSEGV) after"), "\(crashed.stdout)")
        #expect(crashed.profile?.processes.first?.signal == 11)

        let neverReady = ["/bin/sh", "-c", "echo starting; sleep 30"]
        let started = Date()
        let waited = try profile(neverReady, extra: ["--ready", "listening on", "--timeout", "1"])
        #expect(waited.status == 124, "\(waited.stdout)\(waited.stderr)")
        #expect(waited.stdout.contains("It never became ready: no output line matched --ready"), "\(waited.stdout)")
        #expect(Date().timeIntervalSince(started) < 20, "stopped at --timeout")
        #expect(waited.profile != nil, "the profile is written all the same")

        let exitedEarly = try profile(["/bin/sh", "-c", "echo starting"], extra: ["--ready", "listening on"])
        #expect(exitedEarly.status == 124, "an exit before the ready line is not a launch: \(exitedEarly.stdout)")
    }

    @Test("a Swift program that crashes ends as it does bare: its signal, its backtrace, about its time; the backtracer is not profiled")
    func swiftCrash() throws {
        let program = try AgentPrograms.build(
            "swift-crash", source: AgentPrograms.crashingSwiftProgram, ext: "swift", compiler: "/opt/swift/usr/bin/swiftc",
            ["-Onone", "-g"])
        let bare = Process()
        bare.executableURL = URL(fileURLWithPath: program)
        let pipe = Pipe()
        bare.standardOutput = pipe
        bare.standardError = pipe
        let started = Date()
        try bare.run()
        let bareOutput = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        bare.waitUntilExit()
        let bareMs = Date().timeIntervalSince(started) * 1000
        try #require(bare.terminationReason == .uncaughtSignal && bare.terminationStatus == SIGILL, "\(bareOutput)")
        try #require(bareOutput.contains("*** Program crashed: Illegal instruction"), "Swift's backtracer runs: \(bareOutput)")

        let run = try profile([program])
        #expect(run.status == 128 + SIGILL, "SIGILL, as bare: \(run.stdout)")
        #expect(run.stdout.contains("crashed with signal 4 (SIGILL) after"), "\(run.stdout)")
        #expect(run.stdout.contains("in its own crash handler, not profiled"), "\(run.stdout)")
        #expect(!run.log.contains("failed to suspend thread"), "the backtracer reaches every thread: \(run.log)")
        #expect(!run.log.contains("liftoff-sampler"), "the sampler thread is gone before the backtracer lists threads")
        let bareFrames = Self.crashedThreadFrames(bareOutput)
        #expect(bareFrames.contains("loadConfig()"), "\(bareFrames)")
        #expect(
            Self.crashedThreadFrames(run.log) == bareFrames,
            "the crashed thread's backtrace, frame by frame:\n\(run.log)\nbare:\n\(bareOutput)")
        let profile = try #require(run.profile)
        #expect(profile.processes.map(\.programName) == ["swift-crash"], "swift-backtrace runs without the agent")
        #expect(profile.processes.first?.signal == Int(SIGILL))
        #expect(functions(profile).contains { $0.contains("countWords") }, "the work before the crash is sampled")
        let after = try #require(run.stdout.firstMatch(of: #/after ([0-9.]+) ms/#).flatMap { Double($0.1) })
        #expect(after <= 1.5 * bareMs + 1000, "the crash took \(after) ms under the agent, \(bareMs) ms bare")
    }

    /// The function names of the crashed thread's frames in a Swift backtrace.
    static func crashedThreadFrames(_ output: String) -> [String] {
        let lines = output.split(separator: "\n", omittingEmptySubsequences: false)
        guard let first = lines.firstIndex(where: { $0.hasPrefix("Thread ") && $0.hasSuffix("crashed:") }) else { return [] }
        return lines[(first + 1)...].prefix { !$0.hasPrefix("Thread ") && !$0.hasPrefix("Registers") }.compactMap { line in
            line.firstMatch(of: #/0x[0-9a-f]+ (.+?)(?: \+ [0-9]+)? in /#).map { String($0.1) }
        }
    }

    @Test("--duration stops a program that handles SIGTERM itself: recorded until it re-raises the signal, then exit 0")
    func durationAndOwnStopHandler() throws {
        let program = try AnyPrograms.build("cleans-up", AgentPrograms.cleansUpOnTerm)
        let started = Date()
        let run = try profile([program], extra: ["--duration", "1"])
        #expect(Date().timeIntervalSince(started) < 15, "stopped after --duration")
        #expect(run.status == 0, "stopped after --duration is a run that did what was asked: \(run.stdout)\(run.stderr)")
        #expect(run.stdout.contains("stopped after --duration after"), "\(run.stdout)")
        #expect(run.log.contains("removing the partial output"), "its own handler ran: \(run.log)")
        let profile = try #require(run.profile, "the profile is written: \(run.stderr)")
        #expect(profile.processes.first?.signal == Int(SIGTERM), "it ended with the SIGTERM it raised again")
        // Sampled right up to the signal it handled: the work before it is in the profile, to its end.
        let process = try #require(profile.processes.first)
        var lastInBlock: UInt64 = 0
        for row in 0..<profile.samples.count where profile.samples.state[row] == .running {
            let names = profile.frameIndices(ofStack: profile.samples.stack[row]).map { profile.frames[$0].name }
            if names.contains("compress_block") { lastInBlock = max(lastInBlock, profile.samples.timeNs[row]) }
        }
        #expect(process.endNs >= 1_000_000_000, "recorded until it ended, after --duration: \(process.endNs) ns")
        #expect(
            lastInBlock + 50_000_000 >= process.endNs,
            "compress_block is sampled until the signal: its last sample at \(lastInBlock) ns, the end at \(process.endNs) ns")
    }

    @Test("a signal the program ignores stays ignored in what it runs with exec, as nohup needs")
    func ignoredSignalInherited() throws {
        let script = "trap '' HUP; exec /bin/sh -c 'kill -HUP $$; echo survived the hangup'"
        let run = try profile(["/bin/sh", "-c", script])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        #expect(run.log.contains("survived the hangup"), "\(run.log)")
    }

    @Test("a daemon that leaves the process group is stopped and named when the program ends, or followed to its ready line")
    func daemon() throws {
        let daemon = """
            import os, sys, time
            print("starting", flush=True)
            if os.fork() > 0: sys.exit(0)
            os.setsid()
            if os.fork() > 0: os._exit(0)
            sum(i * i for i in range(3000000))
            print("daemon listening", flush=True)
            time.sleep(30)
            """
        let started = Date()
        let stopped = try profile(["/usr/bin/python3", "-c", daemon])
        #expect(Date().timeIntervalSince(started) < 20, "not waited for")
        #expect(stopped.status == 0, "\(stopped.stdout)\(stopped.stderr)")
        #expect(
            stopped.stdout.contains(#/python3 \([0-9]+\) left the program's process group \(a daemon\)/#)
                && stopped.stdout.contains("--follow-daemons"), "the summary names it: \(stopped.stdout)")

        let followed = try profile(["/usr/bin/python3", "-c", daemon], extra: ["--follow-daemons", "--ready", "daemon listening"])
        #expect(followed.status == 0, "stopped at the daemon's ready line: \(followed.stdout)\(followed.stderr)")
        #expect(!followed.stdout.contains("left the program's process group"), "\(followed.stdout)")
        let profile = try #require(followed.profile)
        #expect(profile.processes.count == 3, "the program, its first child and the daemon: \(profile.processes.map(\.label))")
        #expect(profile.marks.contains { $0.name == .ready }, "the daemon's ready line is the launch's")
    }

    @Test("Ctrl-C or SIGTERM to liftoff profile hands the signal on: the server ends, its profile is written, exit 130 or 143", arguments: [SIGINT, SIGTERM])
    func interrupted(signal: Int32) throws {
        let out = temporaryFolder()
        let server = "import time\nprint('listening on 8080', flush=True)\nwhile True: sum(i * i for i in range(100000)); time.sleep(0.01)"
        let process = Process()
        process.executableURL = try BuiltTool.find().url
        process.arguments = ["profile", "--out", out.path, "--", "/usr/bin/python3", "-c", server]
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let log = out.appendingPathComponent("output.log")
        let giveUp = Date(timeIntervalSinceNow: 30)
        while Date() < giveUp, !((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("listening on") { usleep(20_000) }
        usleep(300_000)
        let sent = Date()
        kill(process.processIdentifier, signal)
        let stdout = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()

        #expect(process.terminationReason == .exit && process.terminationStatus == 128 + signal, "\(stdout)\(stderr)")
        #expect(Date().timeIntervalSince(sent) < 10, "the server ended once it got the signal")
        let name = signal == SIGINT ? "SIGINT" : "SIGTERM"
        #expect(stdout.contains("interrupted by \(name) after"), "the summary says so: \(stdout)")
        let profile = try Profile.load(from: out.appendingPathComponent("profile.json"))
        #expect(profile.samples.count > 0, "what the agent recorded until the signal is in the profile")
        #expect(functions(profile).contains("_PyEval_EvalFrameDefault"))
    }

    @Test("a program that links Liftoff records itself: the agent stands down and its own profile is used")
    func liftoffProgram() throws {
        let tool = try BuiltTool.find().url.path
        let run = try profile([tool, "demo", "--quiet", "--out", temporaryFolder().path])
        #expect(run.status == 0, "\(run.stderr)")
        let profile = try #require(run.profile)
        #expect(!profile.tasks.isEmpty, "the demo's own profile, with its launch tasks")
        #expect(profile.timeToFirstFrameNs != nil)
        // The loader's timeline, which the agent left beside the recordings when it stood down, is
        // in the program's own profile: the demo's executable first, the Swift runtime among them.
        let loader = try #require(profile.phases.preMain?.loader, "the program's own profile has the loader's timeline")
        #expect(loader.objects.first?.path == tool, "\(loader.objects.map(\.path))")
        #expect(loader.objects.contains { $0.fileName == "libswiftCore.so" } && !loader.initializers.isEmpty)
        // Its own sampler ran alone and sampled the main thread, running or waiting, at every tick
        // from its first to the profile's end: as many ticks as that time holds, less 10 % and two
        // intervals for its last tick before the end. Its sampler starts after main, later on a
        // busy machine (182 of 280 intervals after main were sampled once with the whole suite
        // running), so the ticks owed count from the first one it took.
        let main = try #require(profile.threads.first { $0.isMain })
        let samples = (0..<profile.samples.count).filter { profile.samples.thread[$0] == main.id }
        let ticks = samples.reduce(0) { $0 + profile.samples.ticks($1) }
        let interval = profile.samplingIntervalNs
        let firstTick = try #require(samples.map { profile.samples.timeNs[$0] }.min())
        let owed = Double(profile.phases.endNs - firstTick) / Double(interval) + 1
        let afterMain = Double(profile.phases.endNs - profile.phases.mainEntryNs) / Double(interval)
        #expect(
            Double(ticks) >= 0.9 * owed - 2 && Double(ticks) <= owed + 2,
            "\(ticks) main-thread ticks for \(owed) intervals from the first (\(afterMain) after main)")
    }

    @Test("a program that links Liftoff and is stopped before it writes its profile keeps its own sampler's samples and its spans")
    func liftoffProgramStopped() throws {
        let tool = try BuiltTool.find().url.path
        // The demo blocks its main thread for 60 s after its first frame; SIGTERM at 4 s ends it
        // (it has no handler), long before it would write its own profile.
        let run = try profile(
            [tool, "demo", "--quiet", "--inject-hang", "60000", "--out", temporaryFolder().path], extra: ["--duration", "4"])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        let profile = try #require(run.profile, "\(run.stdout)\(run.stderr)")
        let process = try #require(profile.processes.first)
        #expect(process.recordedItself == true && process.signal == Int(SIGTERM), "\(profile.processes)")
        #expect(profile.processes.count == 1, "no helper of Liftoff's own is followed: \(profile.processes.map(\.label))")
        #expect(profile.samples.count > 50, "its own sampler's samples: \(profile.samples.count)")
        #expect(profile.frames.contains { $0.name.contains("DemoWorkload") }, "the demo's launch work is in them")
        // Its spans come from the journal it kept beside the agent's recording.
        #expect(profile.spans.contains { $0.name == "didFinishLaunching" }, "\(profile.spans.map(\.name).prefix(20))")
        #expect(profile.spans.allSatisfy { $0.endNs >= $0.startNs && $0.endNs <= profile.phases.endNs + 1_000_000 })
        #expect(run.stdout.contains("links Liftoff and ended before it wrote its profile"), "\(run.stdout)")
    }

    @Test("static, setuid and loader-less programs are refused in one sentence; record still times them")
    func refusals() throws {
        let folder = temporaryFolder()
        let staticProgram = try AgentPrograms.build(
            "static", source: "int main(void) { return 0; }", ext: "c", compiler: "/usr/bin/cc", ["-static"])
        let refusedStatic = try profile([staticProgram])
        #expect(refusedStatic.status == 1)
        #expect(refusedStatic.stderr.contains("is statically linked"), "\(refusedStatic.stderr)")

        let setuid = folder.appendingPathComponent("setuid-true").path
        try FileManager.default.copyItem(atPath: "/bin/true", toPath: setuid)
        chmod(setuid, 0o4755)
        let refusedSetuid = try profile([setuid])
        #expect(refusedSetuid.status == 1)
        #expect(refusedSetuid.stderr.contains("setuid"), "\(refusedSetuid.stderr)")

        var image = try Data(contentsOf: URL(fileURLWithPath: "/bin/true"))
        let loader = Data("/lib64/ld-linux-x86-64.so.2".utf8)
        let range = try #require(image.range(of: loader))
        image.replaceSubrange(range, with: Data("/lib64/ld-missing-x86-64.so".utf8))
        let noLoader = folder.appendingPathComponent("no-loader").path
        try image.write(to: URL(fileURLWithPath: noLoader))
        chmod(noLoader, 0o755)
        let refusedLoader = try profile([noLoader])
        #expect(refusedLoader.status == 1)
        #expect(refusedLoader.stderr.contains("needs the loader /lib64/ld-missing-x86-64.so"), "\(refusedLoader.stderr)")

        let timed = try BuiltTool.find().run(["record", "--runs", "2", "--quiet", "--out", temporaryFolder().path, "--", staticProgram])
        #expect(timed.status == 0, "\(timed.stderr)")
    }

    @Test("a shell's forked commands: each process is its command alone, from its fork on, with no recording of the fork's copy of the shell")
    func forkedCommands() throws {
        let run = try profile(["/bin/bash", "-c", "for i in 1 2 3 4 5; do /bin/true; done"])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        let profile = try #require(run.profile)
        let children = profile.processes.dropFirst()
        #expect(children.count == 5, "\(profile.processes.map(\.label))")
        for child in children {
            #expect(child.programs.map(\.fileName) == ["true"], "\(child.programs)")
            #expect(child.parentID == profile.processes.first?.id)
            // From the fork: the exec and true's loader come after its start.
            let program = try #require(child.programs.first)
            #expect(child.startNs == program.startNs && program.startNs < child.endNs)
        }
    }

    @Test("a static program reached through a wrapper's exec: the profile names it as not followed and says whose pre-main it shows")
    func staticThroughWrapper() throws {
        let staticProgram = try AgentPrograms.build(
            "static-wrapped", source: "int main(void) { return 0; }", ext: "c", compiler: "/usr/bin/cc", ["-static"])
        let run = try profile(["/bin/sh", "-c", "exec \(staticProgram)"])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        let profile = try #require(run.profile)
        #expect(profile.processes.first?.unfollowedExec == staticProgram, "\(profile.processes)")
        let note = try #require(profile.phases.preMain?.loaderNote, "\(String(describing: profile.phases.preMain))")
        #expect(note.contains("went on as \(staticProgram), which left no recording") && note.contains("sh's"), "\(note)")
        #expect(run.stdout.contains("which left no recording"), "\(run.stdout)")
    }

    @Test("record samples a program without Liftoff with the agent: every run has a profile, and compare gets its phases")
    func recordWithAgent() throws {
        let program = try AgentPrograms.build(
            "two-threads", source: AgentPrograms.twoThreads, ext: "c", compiler: "/usr/bin/cc", ["-O1", "-g", "-lpthread"])
        let folder = temporaryFolder()
        let result = try BuiltTool.find().run(["record", "--runs", "3", "--warmup", "1", "--quiet", "--out", folder.path, "--", program])
        #expect(result.status == 0, "\(result.stderr)")
        let runs = try RunSet.load(folder.path)
        #expect(runs.measure == .profile)
        #expect(runs.profiles.count == 3)
        for profile in runs.profiles {
            #expect((profile.timeToFirstFrameNs ?? 0) >= 120_000_000, "time to exit, as its first frame")
            #expect(profile.frames.contains { $0.name == "hash_rows" })
        }
        let metrics = Set(runs.metrics([.phases]).map(\.name))
        #expect(metrics.isSuperset(of: ["pre-main", "pre-main: on CPU", "pre-main: waiting for a core", "pre-main: blocked"]))
    }
}
