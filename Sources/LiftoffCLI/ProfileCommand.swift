import ArgumentParser
import Foundation
import Liftoff
import LiftoffFormats
import LiftoffProfile
import LiftoffReports
import LiftoffSampler

#if canImport(Glibc)
import Glibc
#endif

/// `liftoff profile -- CMD …`: one launch of any program, sampled by the injected agent.
struct ProfileCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "profile",
        abstract: "Profile one launch of any program, unchanged: sampled on every thread by an injected agent.",
        discussion: """
            The program runs with libLiftoffAgent.so preloaded (LD_PRELOAD). The agent samples \
            every thread from before main, writes its recording when the program exits, is \
            stopped, crashes or replaces itself with exec, and liftoff symbolizes it: \
            profile.json and every report go to --out, and the summary to the terminal. It needs \
            no privileges; where the kernel allows one's own processes a page-fault event \
            (perf_event_paranoid 2, the default, or lower), the files and offsets the launch's \
            page faults read from storage are recorded too. Every program it runs is profiled too, into the \
            same profile, each process with its own threads (--no-children: only exec is \
            followed); a shell script, a version manager's shim, make or swift run work as they \
            are. The program's output shows as it runs and is kept in OUT/output.log. A \
            statically linked or setuid program cannot be profiled this way (liftoff record \
            still times it).

            With --ready, the program is ready at its first output line matching the expression \
            (on standard output or error; --ready-stream picks one), then stopped with SIGTERM: \
            a server's launch. With --duration N, it is stopped the same way after N seconds: \
            a server profiled for a while.

            The profile is written however the program ends. liftoff then exits with the \
            program's own status: its exit status, 128 + the signal that ended it (139 for a \
            SIGSEGV), 0 when it was stopped after its ready line or --duration, and 124 when --ready never \
            matched or it outlived --timeout. Ctrl-C or SIGTERM hands the signal on to the \
            program and waits up to 5 s for it to end and write what it recorded; the profile \
            is built from that, and liftoff exits 130 (143 for SIGTERM). A second Ctrl-C stops \
            at once. An error of liftoff's own (the program cannot \
            start, the profile cannot be written) exits 1 with one sentence on standard error.

            Examples:
              liftoff profile -- ./MyServer --port 0
              liftoff profile --ready 'listening on' --out Reports/server -- ./server
              liftoff profile --duration 30 -- ./server
              liftoff profile --rate 4000 -- python3 -c 'import json'
            """
    )

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Folder for profile.json and the reports (default: a new folder per run in ~/.cache/liftoff/profiles/, with latest pointing at the newest).",
            valueName: "folder"))
    var out: String?

    @OptionGroup var agentOptions: AgentOptions

    @Flag(
        name: .long,
        help: "Keep the executor's frames (start_thread, Dispatch's worker, swift_job_run) below a Swift task's first async function; they are folded away by default.")
    var executorFrames = false

    @OptionGroup var watch: LaunchWatchOptions

    @Option(
        name: .long,
        help: "The page cache the launch starts with: as-is (the default), warm (it runs once unrecorded first), cold (it runs once unrecorded to learn its files, then the executable and every file it mapped are evicted, and what stayed in memory is reported) or cold-system (as cold, but the whole page cache is dropped, as root).")
    var cache: CacheMode = .asIs

    @Argument(parsing: .postTerminator, help: "The command to profile, after --.")
    var command: [String] = []

    func validate() throws {
        if cache == .coldSystem { try PageCache.checkCanDrop() }
        guard !command.isEmpty else {
            throw ValidationError("Give the command to profile after --, for example: liftoff profile -- ./app")
        }
    }

    func run() throws {
        let agent = try ProfileCommand.agentLibrary()
        try Injectability.check(command[0])
        let folder = try out.map { URL(fileURLWithPath: $0, isDirectory: true) } ?? ProfileCommand.newDefaultFolder(program: command[0])
        do {
            try AtomicFile.createFolder(folder)
        } catch let error as ProfileError {
            throw CLIError(error.message)
        }
        let launch = agentOptions.launch(
            library: agent, folder: AgentLaunch.recordingsFolder(beside: folder.appendingPathComponent(".agent-recordings")))
        try launch.prepare()
        defer { launch.cleanUp() }
        let log = folder.appendingPathComponent("output.log")
        // A program that links Liftoff records itself there (and tells the agent to stand down).
        let own = folder.appendingPathComponent(".program-profile.json")
        unlink(own.path)
        defer { unlink(own.path) }
        var environment = ProcessInfo.processInfo.environment
        environment[LaunchRecorder.outputVariable] = own.path
        if executorFrames { environment[SamplerConfiguration.executorFramesVariable] = "1" }
        environment = launch.environment(environment)
        var runner = ProcessRunner(
            arguments: command, environment: environment, log: log, ready: try watch.pattern(),
            timeoutSeconds: watch.timeout, readyStreams: watch.readyStream, durationSeconds: watch.duration,
            followsDaemons: watch.followDaemons)
        runner.passesOutputThrough = true
        runner.recordsDiskFaults = true
        ProcessRunner.forwardInterrupts()
        ProcessRunner.adoptOrphans()
        let cacheBefore = try prepareCache(agent: agent, folder: folder, environment: environment)
        let result = try runner.run(launchVariable: ProfileRecorder.launchTimeVariable)
        let cacheState = cacheBefore.map(PageCache.afterRun)
        let readyNs = result.outcome == .timedOut ? nil : result.readyNs
        var profile: Profile
        let recordedItself: Bool
        if let ownProfile = try? Profile.load(from: own) {
            profile = ownProfile
            // The agent stood down for it, and left the loader's timeline beside the recordings.
            if profile.phases.preMain != nil, profile.phases.preMain?.loader == nil {
                profile.phases.preMain?.loader = launch.loaderTimeline(ofProcess: result.pid)
            }
            recordedItself = true
        } else {
            recordedItself = false
            do {
                profile = try launch.profile(
                    rootProcessID: result.pid, readyNs: readyNs, ready: try watch.pattern().map { ($0, watch.readyStream) },
                    keepsExecutorFrames: executorFrames)
            } catch let error as AgentRecording.ReadError {
                guard case .signalled = result.outcome else {
                    throw CLIError("\(error.description) The program ended with \(result.outcome.description); its output is in \(log.path).")
                }
                // A program that links Liftoff records itself, and one that crashed before writing
                // left nothing: it still ends as the program did.
                let sentence = "Error: Nothing was recorded: the program ended with \(result.outcome.description) before it wrote a profile "
                    + "(a program that links Liftoff records itself, and writes its profile at finishAndWrite()); its output is in \(log.path).\n"
                FileHandle.standardError.write(Data(sentence.utf8))
                throw ExitCode(ProfileCommand.exitStatus(result.outcome, readyMissed: false))
            }
        }
        profile.cache = cacheState
        profile.diskFaults = DiskFaultRecords.of(result, in: profile)
        do {
            try profile.write(to: folder.appendingPathComponent("profile.json"))
            for (name, data) in try ReportFormats.folderFiles(profile) {
                try AtomicFile.write(data, to: folder.appendingPathComponent(name))
            }
        } catch let error as ProfileError {
            throw CLIError(error.message)
        }
        // An interrupted program was not given the time to become ready.
        let readyMissed = watch.ready != nil && readyNs == nil && !result.outcome.isInterruption
        let status = ProfileCommand.exitStatus(result.outcome, readyMissed: readyMissed)
        // A crash: when the program's recording ended (the fatal signal), and so how long its own
        // crash handler (Swift's backtracer) ran after it, unprofiled.
        let crashNs = profile.processes.first { $0.id == Int(result.pid) && $0.signal != nil }?.endNs
        let lines = [
            ProfileCommand.headline(
                command.joined(separator: " "), outcome: result.outcome, afterNs: result.exitNs,
                readyMissedOn: readyMissed ? watch.readyStream.phrase : nil, status: status, crashNs: crashNs),
            DemoCommand.summary(profile, result: nil, folder: folder.path, readyByRecorder: recordedItself),
        ]
        var shown = lines
        if let cacheState, CacheMode.isCold(cacheState.mode) {
            shown.insert(contentsOf: [PageCache.sentence(cacheState), PageCache.readSentence(cacheState)].compactMap { $0 }, at: 1)
        }
        if let faults = DiskFaultRecords.sentence(profile) { shown.insert(faults, at: min(shown.count, cacheState == nil ? 1 : 3)) }
        if !result.stoppedDaemons.isEmpty {
            let list = result.stoppedDaemons.joined(separator: ", ")
            let one = result.stoppedDaemons.count == 1
            shown.insert(
                "\(list) left the program's process group (a daemon) and \(one ? "was" : "were") still running when the "
                    + "program ended: stopped with SIGTERM, and profiled until then. --follow-daemons follows "
                    + "\(one ? "it" : "them") to \(one ? "its" : "their") end, its --ready line or --duration.",
                at: 1)
        }
        try StandardOutput.print(shown.joined(separator: "\n"))
        if status != 0 { throw ExitCode(status) }
    }

    /// Sets up the page cache `--cache` asks for: `warm` and `cold` run the command once first,
    /// unrecorded (under the agent, into a folder of its own, to learn the files it maps); `cold`
    /// then evicts them and the executable, and says what stayed in memory. Nil for `as-is`.
    func prepareCache(agent: String, folder: URL, environment: [String: String]) throws -> Profile.CacheState? {
        guard cache != .asIs else { return nil }
        let first = agentOptions.launch(
            library: agent, folder: AgentLaunch.recordingsFolder(beside: folder.appendingPathComponent(".agent-first-run")))
        try first.prepare()
        defer { first.cleanUp() }
        let log = folder.appendingPathComponent(".first-run.log")
        defer { unlink(log.path) }
        var firstEnvironment = environment
        firstEnvironment = first.environment(firstEnvironment)
        firstEnvironment[LaunchRecorder.outputVariable] = ""
        var runner = ProcessRunner(
            arguments: command, environment: firstEnvironment, log: log, ready: try watch.pattern(),
            timeoutSeconds: watch.timeout, readyStreams: watch.readyStream, durationSeconds: watch.duration,
            followsDaemons: false)
        runner.passesOutputThrough = false
        _ = try runner.run(launchVariable: ProfileRecorder.launchTimeVariable)
        guard cache.isCold else { return Profile.CacheState(mode: CacheMode.warm.rawValue) }
        let files = PageCache.filesToEvict(command, firstRun: first)
        if cache == .coldSystem { try PageCache.dropAll(keeping: first.ownLibraries) }
        return Profile.CacheState(mode: cache.rawValue, files: PageCache.evict(files))
    }

    /// `liftoff profile`'s exit status once the profile is written: the program's own, as a shell
    /// gives it (its exit status; 128 + the signal that ended it), 0 when it was stopped after its
    /// ready line, and 124 (as `timeout` gives) when `--ready` never matched or it outlived `--timeout`.
    static func exitStatus(_ outcome: ProcessRunner.Outcome, readyMissed: Bool) -> Int32 {
        if readyMissed { return 124 }
        switch outcome {
        case .exited(let status): return status
        case .signalled(let signal): return 128 &+ min(max(signal, 0), 127)
        case .timedOut: return 124
        case .interrupted(let signal): return 128 &+ min(max(signal, 0), 127)
        case .stoppedWhenReady, .stoppedAfterDuration, .unknown: return 0
        }
    }

    /// The summary's first line: what happened to the program, and the exit status that says so.
    static func headline(
        _ command: String, outcome: ProcessRunner.Outcome, afterNs: UInt64, readyMissedOn stream: String?, status: Int32,
        crashNs: UInt64? = nil
    ) -> String {
        let after = String(format: "%.1f ms", Double(afterNs) / 1e6)
        let what: String
        switch outcome {
        case .signalled(let signal) where [SIGTERM, SIGINT, SIGHUP, SIGKILL].contains(signal):
            what = "ended by \(outcome.description) after \(after)"
        case .signalled:
            what = "crashed with \(outcome.description) after \(after)"
                + (crashNs.map { crash in
                    guard crash < afterNs else { return "" }
                    return String(
                        format: " (the crash at %.1f ms, then %.1f ms in its own crash handler, not profiled)",
                        Double(crash) / 1e6, Double(afterNs - crash) / 1e6)
                } ?? "")
        case .interrupted:
            what = "\(outcome.description) after \(after), handed on to it; the profile holds what it recorded until then"
        default:
            what = "\(outcome.description) after \(after)"
        }
        var line = "Profiled \(command): \(what)."
        if let stream {
            line += " It never became ready: no output line matched --ready on \(stream)."
        }
        if status != 0 { line += " liftoff exits with \(status)." }
        return line
    }

    /// What a reader of the numbers should know of how the agent sampled: a program's own
    /// profiler it shared SIGPROF with, a thread it could not reach, a crash. One sentence each.
    static func samplingNotes(_ profile: Profile) -> [String] {
        var notes: [String] = []
        for process in profile.processes {
            if let handed = process.programProfilerSignals {
                let passed = handed == 0
                    ? "none of its own came" : "handed the program's own \(handed) signal\(handed == 1 ? "" : "s") on to it"
                notes.append(
                    "\(process.label) installed its own SIGPROF handler (a profiler of its own): Liftoff kept its "
                        + "handler first and \(passed).")
            }
            if process.blocksProfilerSignal == true {
                notes.append("\(process.label) started with SIGPROF blocked, so its main thread could not be sampled.")
            }
            if let signal = process.signal {
                let name = ProcessRunner.signalName(Int32(clamping: signal)).map { " (\($0))" } ?? ""
                notes.append("\(process.label) ended with signal \(signal)\(name); its samples up to then are kept.")
            }
            if process.recordedItself == true {
                notes.append(
                    "\(process.label) links Liftoff and ended before it wrote its profile: these are the samples its own "
                        + "recorder took, written when it ended; its spans, marks and other events are not in them.")
            }
        }
        let answered = profile.counts.captured
        // A process that crashed or was stopped early may end before its first answers came back.
        let endedEarly = profile.processes.contains { $0.signal != nil }
        if profile.samples.count == 0, profile.counts.signalsSent > (endedEarly ? 20 : 0), answered == 0 {
            notes.append(
                "None of the \(profile.counts.signalsSent) SIGPROF signals the sampler sent was answered: the program "
                    + "blocks SIGPROF on its threads, so it could not be sampled.")
        }
        return notes
    }

    /// `libLiftoffAgent.so`: `$LIFTOFF_AGENT` when set, else beside this `liftoff` executable.
    /// Where a profile goes without `--out`: a new folder per run under the user's cache
    /// (`$XDG_CACHE_HOME/liftoff/profiles`, else `~/.cache/liftoff/profiles`), never the current
    /// directory, which is often the user's package. `latest` beside it is a link to the newest.
    static func newDefaultFolder(
        program: String, environment: [String: String] = ProcessInfo.processInfo.environment, now: Date = Date()
    ) throws -> URL {
        let base: URL
        if let cache = environment["XDG_CACHE_HOME"], cache.hasPrefix("/") {
            base = URL(fileURLWithPath: cache, isDirectory: true)
        } else if let home = environment["HOME"], home.hasPrefix("/") {
            base = URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent(".cache", isDirectory: true)
        } else {
            base = FileManager.default.temporaryDirectory.appendingPathComponent("liftoff-\(getuid())", isDirectory: true)
        }
        let profiles = base.appendingPathComponent("liftoff/profiles", isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: profiles, withIntermediateDirectories: true)
        } catch {
            throw CLIError("Cannot make \(profiles.path) for the profile (\(error.localizedDescription)); name a folder with --out.")
        }
        let file = program.split(separator: "/").last.map(String.init) ?? ""
        var name = String(file.filter { $0.isLetter || $0.isNumber || "._-".contains($0) }.drop { $0 == "." })
        if name.isEmpty { name = "program" }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyyMMdd-HHmmss"
        let stamp = formatter.string(from: now)
        // A second run in the same second gets a folder of its own.
        var folder = profiles.appendingPathComponent("\(name)-\(stamp)", isDirectory: true)
        var suffix = 2
        while FileManager.default.fileExists(atPath: folder.path) {
            folder = profiles.appendingPathComponent("\(name)-\(stamp)-\(suffix)", isDirectory: true)
            suffix += 1
        }
        // latest → the new folder, replaced atomically.
        let latest = profiles.appendingPathComponent("latest")
        let link = profiles.appendingPathComponent(".latest-\(getpid())")
        unlink(link.path)
        if symlink(folder.lastPathComponent, link.path) == 0, rename(link.path, latest.path) != 0 { unlink(link.path) }
        return folder
    }

    static func agentLibrary() throws -> String {
        if let named = ProcessInfo.processInfo.environment["LIFTOFF_AGENT"], !named.isEmpty {
            guard FileManager.default.fileExists(atPath: named) else {
                throw CLIError("LIFTOFF_AGENT names \(named), which does not exist.")
            }
            return named
        }
        let candidates = agentLocations()
        guard let found = candidates.first(where: { FileManager.default.fileExists(atPath: $0) }) else {
            throw CLIError(
                "The agent libLiftoffAgent.so is neither beside liftoff nor in its lib/liftoff folder (\(candidates.joined(separator: ", "))); "
                    + "build it with swift build, install with make install, or set LIFTOFF_AGENT.")
        }
        return found
    }

    /// Where `liftoff` looks for its agent, in order: beside itself (a build folder), then
    /// `../lib/liftoff/` from its own folder (an installation, wherever it was moved).
    static func agentLocations(executable: String? = nil) -> [String] {
        let path = executable ?? (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
        return [
            folder.appendingPathComponent("libLiftoffAgent.so").path,
            folder.deletingLastPathComponent().appendingPathComponent("lib/liftoff/libLiftoffAgent.so").path,
        ]
    }
}
