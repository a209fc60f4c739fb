import ArgumentParser
import Foundation
import Liftoff
import LiftoffProfile
import LiftoffReports
import LiftoffSampler

#if canImport(Glibc)
import Glibc
import LiftoffComparison
#endif

/// `liftoff record --runs N --out DIR -- CMD ARGS…`: launches a program N times and keeps
/// every launch's profile.
struct RecordCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record",
        abstract: "Launch a program N times and record each launch, optionally interleaved with a baseline.",
        discussion: """
            Each run gets LIFTOFF_LAUNCH_NS (its spawn time, so pre-main time is measured) and \
            LIFTOFF_PROFILE_OUT (where a program linked with Liftoff writes its profile). For any \
            other program, time to first frame is the time to exit, or to the first output line \
            matching --ready, on standard output or standard error (servers often log there; \
            --ready-stream picks one); a program still running then (a server) is stopped with \
            SIGTERM and the run counts. A run lasts until every process the program started has \
            ended. All runs of a command must be measured the same way. Profiles go to \
            OUT/runs/run-NNN.json and the child's output to \
            run-NNN.log. Each finished run is appended to OUT/runs.jsonl at once; at the end \
            OUT/record.json lists every run with its times and replaces the journal. Ctrl-C or \
            SIGTERM hands the signal on to the running program (which has 5 s to end and write), \
            then record.json lists the runs finished until then and liftoff exits 130 (143 for \
            SIGTERM); a second Ctrl-C stops at once. If recording is killed, liftoff compare reads \
            the journal. --duration S stops each run after S seconds (SIGTERM, the same grace) and \
            counts it as done.

            A program that links Liftoff writes its own profile. Any other program (as its \
            executable shows, without a warm-up run) is sampled by the injected agent, with every \
            process it starts (--no-children: the program alone); --no-agent only times it. \
            record.json says, for each run, which way it was recorded.

            With --baseline, the baseline and the command run interleaved (A B B A …) into \
            OUT/base/ and OUT/head/, so drifts in machine load hit both alike. A run that \
            crashes, exits non-zero or times out is recorded as failed and the others go on.

            --cache cold evicts, before every recorded run, the executable and every file its \
            first warm-up mapped (its linked libraries, for a program the agent does not sample), \
            without root, and keeps in record.json and the run's profile each file's size, what \
            stayed in memory and what the run read of it; --cache warm makes sure a warm-up ran \
            first. --cache cold-system, as root, drops the whole page cache before every run \
            instead (sync, then drop_caches), as after a reboot. liftoff compare refuses to compare sides recorded with different modes unless \
            --allow-mixed-cache.

            Examples:
              liftoff record --runs 20 --out runs/head -- ./MyApp
              liftoff record --runs 20 --out runs --baseline '../base/MyApp' -- ./MyApp
              liftoff record --runs 10 --ready 'listening on' --out runs -- ./server
            """
    )

    @Option(name: .long, parsing: .unconditional, help: "Recorded launches of each command.")
    var runs: Int = 10

    @Option(name: .long, parsing: .unconditional, help: "Launches of each command before recording, not kept.")
    var warmup: Int = 1

    @Option(name: .long, help: "Folder for the runs (with --baseline: OUT/base and OUT/head).")
    var out: String

    @OptionGroup var watch: LaunchWatchOptions

    @Option(name: .long, help: "The base command, as one string (words split like a shell's, without expansion).")
    var baseline: String?

    @Option(
        name: .long,
        help: "The page cache each run starts with: as-is (the default), warm (at least one warm-up first) cold (the files the first warm-up mapped are evicted before every run) or cold-system (the whole page cache is dropped before every run, as root).")
    var cache: CacheMode = .asIs

    @Flag(name: .long, help: "Print neither progress nor the summary (errors still show).")
    var quiet = false

    @Flag(
        name: .long,
        help: "Do not inject the sampling agent into a program without Liftoff: time it to its exit or ready line only.")
    var noAgent = false

    @OptionGroup var agentOptions: AgentOptions

    @Option(
        name: .long,
        help: "Also count each launch: instructions, under valgrind's callgrind (no agent, deterministic hashing), to the ready point.")
    var count: CountKind?

    @Option(name: .long, parsing: .unconditional, help: "Counted launches of each command, interleaved (with --count).")
    var countRuns: Int = 3

    @Option(name: .long, help: "Send each recorded run (of head, with --baseline) to this OTLP/HTTP receiver, as liftoff push --otlp does.")
    var pushOtlp: String?

    @Option(name: .long, help: "Send each recorded run (of head, with --baseline) to this Pyroscope server, as liftoff push --pyroscope does.")
    var pushPyroscope: String?

    @Option(name: .long, help: "A header NAME=VALUE on every request --push-otlp or --push-pyroscope makes (repeatable).")
    var pushHeader: [String] = []

    @Argument(parsing: .postTerminator, help: "The command to launch, after --.")
    var command: [String] = []

    func validate() throws {
        if cache == .coldSystem { try PageCache.checkCanDrop() }
        guard !command.isEmpty else {
            throw ValidationError("Give the command to launch after --, for example: liftoff record --out runs -- ./app")
        }
        guard (1...1000).contains(runs) else { throw ValidationError("--runs must be between 1 and 1000, not \(runs).") }
        guard (0...100).contains(warmup) else { throw ValidationError("--warmup must be between 0 and 100, not \(warmup).") }
        guard (1...100).contains(countRuns) else { throw ValidationError("--count-runs must be between 1 and 100, not \(countRuns).") }
        if let baseline {
            let words = try ShellWords.split(baseline)
            guard !words.isEmpty else { throw ValidationError("--baseline is empty; give the base command.") }
        }
    }

    func run() throws {
        let root = URL(fileURLWithPath: out, isDirectory: true)
        var sides: [Side] = []
        if let baseline {
            sides.append(try Side(name: "base", command: try ShellWords.split(baseline), folder: root.appendingPathComponent("base")))
            sides.append(try Side(name: "head", command: command, folder: root.appendingPathComponent("head")))
        } else {
            sides.append(try Side(name: "", command: command, folder: root))
        }
        let pattern = try watch.pattern()
        let destinations = try PushOptions.destinations(otlp: pushOtlp, pyroscope: pushPyroscope, headers: pushHeader)
        var pushFailures: [String] = []
        // Ctrl-C or SIGTERM is handed on to the running program, which has the usual grace to end
        // and write; the runs finished until then are kept in record.json. A second one stops at once.
        ProcessRunner.forwardInterrupts()
        ProcessRunner.adoptOrphans()
        // A program without Liftoff is sampled by the agent, so each run has a profile all the same.
        for side in sides where !noAgent && !Injectability.linksLiftoff(side.command[0]) {
            if (try? Injectability.check(side.command[0])) != nil { side.agent = try? ProfileCommand.agentLibrary() }
        }
        let progress = Progress(total: runs * sides.count, quiet: quiet)
        // A cold or warm recording learns its files in a first warm-up.
        let warmups = cache == .asIs ? warmup : max(warmup, 1)
        warmup: for round in 0..<warmups {
            for side in order(sides, round: round) {
                if ProcessRunner.interruption != 0 { break warmup }
                progress.note("warm-up \(round + 1)/\(warmups)\(side.label)")
                let profile = side.folder.appendingPathComponent("runs/warmup.json")
                _ = try? launch(side, log: side.folder.appendingPathComponent("runs/warmup.log"), profile: profile, pattern: pattern)
                unlink(profile.path)
                if round == 0, cache.isCold { side.cacheFiles = PageCache.filesToEvict(side.command, firstRun: agentLaunch(side, profile: profile)) }
                agentLaunch(side, profile: profile)?.cleanUp()
            }
        }
        rounds: for round in 0..<runs {
            for side in order(sides, round: round) {
                if ProcessRunner.interruption != 0 { break rounds }
                let index = side.manifest.runs.count + 1
                let stem = String(format: "runs/run-%03d", index)
                // An interrupt that lands between the check above and the run's start ends the
                // rounds as one before the check does: the finished runs are kept.
                let cacheState = try prepareCache(side)
                let recorded = Swift.Result { try recordRun(side, index: index, stem: stem, pattern: pattern, cache: cacheState) }
                if case .failure = recorded, ProcessRunner.interruption != 0 { break rounds }
                let entry = try recorded.get()
                try side.append(entry)
                if !destinations.isEmpty, side === sides.last, let file = entry.profile {
                    // A send that fails is said and counted; the recording goes on.
                    for destination in destinations {
                        do {
                            try Pusher.push(try Profile.load(from: side.folder.appendingPathComponent(file)), to: destination)
                        } catch {
                            let sentence = "run \(index) was not sent: \((error as? CLIError)?.description ?? "\(error)")"
                            FileHandle.standardError.write(Data("\(sentence)\n".utf8))
                            pushFailures.append(sentence)
                        }
                    }
                }
                let shown = entry.succeeded ? side.lastTTFF.map { String(format: "%.1f ms", $0) } ?? "ok" : "failed: \(entry.outcome)"
                let by = entry.recordedBy.map { $0 == "agent" ? ", sampled by the agent" : ", recorded by the program" } ?? ""
                progress.advance("run \(index)/\(runs)\(side.label): \(shown)\(by)")
            }
        }
        if count == .instructions, ProcessRunner.interruption == 0 { try recordCounts(sides, pattern: pattern, progress: progress) }
        progress.finish()
        for side in sides { try side.saveManifest() }
        if !quiet { try StandardOutput.print(summary(sides)) }
        let interruption = ProcessRunner.interruption
        if interruption != 0 {
            let finished = sides.map { $0.manifest.runs.filter(\.succeeded).count }.reduce(0, +)
            let name = ProcessRunner.signalName(interruption) ?? "signal \(interruption)"
            FileHandle.standardError.write(
                Data("Interrupted by \(name): the \(finished) finished run\(finished == 1 ? "" : "s") are kept in \(root.path).\n".utf8))
            throw ExitCode(128 &+ interruption)
        }
        if let first = pushFailures.first {
            throw CLIError("\(pushFailures.count) of the runs could not be sent (they are kept in \(root.path)); the first: \(first)")
        }
        for side in sides where !side.manifest.runs.contains(where: \.succeeded) {
            let last = side.manifest.runs.last.map { " (the last: \($0.outcome))" } ?? ""
            throw CLIError(
                "Every run of \(side.command.joined(separator: " ")) failed\(last); see the logs in \(side.folder.path)/runs/.")
        }
    }

    /// `1 s`, `2.5 s`: a number of seconds as a user wrote it.
    static func seconds(_ value: Double) -> String {
        value == value.rounded() && value < 1e15 ? "\(Int(value)) s" : "\(value) s"
    }

    /// This process's environment, read once.
    private static let environment = ProcessInfo.processInfo.environment

    /// ABBA order: base first in even rounds, head first in odd ones.
    func order(_ sides: [Side], round: Int) -> [Side] {
        round % 2 == 0 ? sides : sides.reversed()
    }

    /// How a side's run is sampled by the agent, when it is: its recordings go beside the profile.
    private func agentLaunch(_ side: Side, profile: URL) -> AgentLaunch? {
        side.agent.map {
            agentOptions.launch(library: $0, folder: AgentLaunch.recordingsFolder(beside: URL(fileURLWithPath: profile.path + ".agent")))
        }
    }

    private func launch(_ side: Side, log: URL, profile: URL, pattern: NSRegularExpression?) throws -> ProcessRunner.Result {
        var environment = RecordCommand.environment
        environment[LaunchRecorder.outputVariable] = profile.path
        if let agentLaunch = agentLaunch(side, profile: profile) {
            try agentLaunch.prepare()
            environment = agentLaunch.environment(environment)
        }
        var runner = ProcessRunner(
            arguments: side.command, environment: environment, log: log, ready: pattern, timeoutSeconds: watch.timeout,
            readyStreams: watch.readyStream, durationSeconds: watch.duration,
            followsDaemons: watch.followDaemons)
        // A cold run keeps which files its page faults read.
        runner.recordsDiskFaults = cache.isCold
        var result = try runner.run(launchVariable: ProfileRecorder.launchTimeVariable)
        if result.outcome == .timedOut { result.readyNs = nil }
        return result
    }

    private func recordRun(
        _ side: Side, index: Int, stem: String, pattern: NSRegularExpression?, cache cacheBefore: Profile.CacheState?
    ) throws -> RecordManifest.Run {
        let profileURL = side.folder.appendingPathComponent(stem + ".json")
        let logName = stem + ".log"
        unlink(profileURL.path)  // a profile left from an earlier recording
        let result = try launch(side, log: side.folder.appendingPathComponent(logName), profile: profileURL, pattern: pattern)
        let cache = cacheBefore.map(PageCache.afterRun)
        if CacheMode.isCold(cache?.mode) { side.lastCache = cache }
        let exitMs = Double(result.exitNs) / 1e6
        let readyMs = result.readyNs.map { Double($0) / 1e6 }
        side.lastTTFF = nil
        func failed(_ why: String) -> RecordManifest.Run {
            RecordManifest.Run(
                index: index, profile: nil, log: logName, outcome: why, succeeded: false, exitMs: exitMs, readyMs: readyMs, cache: cache)
        }
        if result.outcome == .timedOut {
            let limit = "timed out after \(RecordCommand.seconds(watch.timeout))"
            return failed(pattern != nil && result.readyNs == nil ? limit + " without a line matching --ready on \(watch.readyStream.phrase)" : limit)
        }
        guard result.outcome.succeeded else { return failed(result.outcome.description) }
        // A program without Liftoff, sampled by the agent: its recording becomes the run's
        // profile, with the ready line (or the exit) as its first frame.
        var recordedBy = "program"
        if let agentLaunch = agentLaunch(side, profile: profileURL) {
            defer { agentLaunch.cleanUp() }
            if access(profileURL.path, F_OK) != 0 {
                if pattern != nil && result.readyNs == nil {
                    return failed("exited (\(result.outcome.description)) without a line matching --ready on \(watch.readyStream.phrase)")
                }
                do {
                    var agentProfile = try agentLaunch.profile(
                        rootProcessID: result.pid, readyNs: result.readyNs ?? result.exitNs,
                        ready: result.readyNs == nil ? nil : pattern.map { ($0, watch.readyStream) })
                    agentProfile.cache = cache
                    try agentProfile.write(to: profileURL)
                    recordedBy = "agent"
                } catch let error as AgentRecording.ReadError {
                    return failed("the agent's recording is unusable: \(error.description)")
                } catch let error as ProfileError {
                    return failed(error.message)
                }
            }
        }
        if access(profileURL.path, F_OK) == 0 {
            // Every run of one command must be measured the same way, or the runs do not compare.
            if side.measured.contains(.ready) || side.measured.contains(.exit) {
                return failed("it wrote a profile, unlike the runs before it, which were timed without one")
            }
            if let earlier = side.recordedBy, earlier != recordedBy {
                return failed(
                    recordedBy == "program"
                        ? "it recorded itself, unlike the runs before it, which the agent sampled"
                        : "the agent sampled it, unlike the runs before it, which recorded themselves")
            }
            side.recordedBy = recordedBy
            do {
                let profile = try RecordCommand.completeProfile(at: profileURL, cache: cache, run: result)
                side.lastTTFF = profile.timeToFirstFrameNs.map { Double($0) / 1e6 }
                side.measured.insert(.profile)
            } catch let error as ProfileError {
                return failed("its profile is unusable: \(error.message)")
            }
        } else {
            // A program without Liftoff: its times live in the run list alone.
            if side.measured.contains(.profile) {
                return failed("it wrote no profile to LIFTOFF_PROFILE_OUT, unlike the runs before it")
            }
            if pattern != nil && result.readyNs == nil {
                return failed("exited (\(result.outcome.description)) without a line matching --ready on \(watch.readyStream.phrase)")
            }
            side.lastTTFF = readyMs ?? exitMs
            side.measured.insert(result.readyNs != nil ? .ready : .exit)
            return RecordManifest.Run(
                index: index, profile: nil, log: logName, outcome: result.outcome.description, succeeded: true,
                exitMs: exitMs, readyMs: readyMs, counters: result.counters, cache: cache)
        }
        return RecordManifest.Run(
            index: index, profile: stem + ".json", log: logName, outcome: result.outcome.description, succeeded: true,
            exitMs: exitMs, readyMs: readyMs, recordedBy: recordedBy, counters: result.counters, cache: cache)
    }

    private func summary(_ sides: [Side]) -> String {
        var lines: [String] = []
        for side in sides {
            let set: RunSet
            do {
                set = try RunSet.load(side.folder.path)
            } catch {
                lines.append("\(side.folder.path): \(error)")
                continue
            }
            let failed = set.failedRuns
            let what = side.measured.contains(.profile) ? (set.profiles.allSatisfy(\.hasLifeCycle) ? "time to first frame" : "time to ready")
                : side.measured.contains(.ready) ? "time to the ready line (as time to ready)"
                : "time to exit (as time to ready)"
            lines.append(
                "\(side.name.isEmpty ? "Recorded" : "\(side.name.capitalized):") \(set.profiles.count) runs of "
                    + "\(side.command.joined(separator: " ")) in \(side.folder.path)/" + (failed > 0 ? ", \(failed) failed" : "")
                    + (set.profiles.isEmpty ? "; none succeeded." : "; \(what):"))
            if let state = side.lastCache {
                lines.append("  " + PageCache.sentence(state).replacingOccurrences(of: "before the launch", with: "before each run (the last shown)"))
                if let read = PageCache.readSentence(state) { lines.append("  " + read.replacingOccurrences(of: "during the run", with: "during the last run")) }
            }
            let byAgent = side.manifest.runs.filter { $0.recordedBy == "agent" }.count
            let byProgram = side.manifest.runs.filter { $0.recordedBy == "program" }.count
            if byAgent + byProgram > 0 {
                lines.append(
                    "  Profiles: " + [byProgram > 0 ? "\(byProgram) recorded by the program (it links Liftoff)" : nil,
                                      byAgent > 0 ? "\(byAgent) sampled by the agent (it does not)" : nil]
                        .compactMap { $0 }.joined(separator: ", ") + ".")
            }
            for (name, values) in set.metrics(side.measured.contains(.profile) ? [.phases, .spans] : []) where !values.isEmpty {
                let median = Statistics.median(values)
                let mad = Statistics.medianAbsoluteDeviation(values)
                lines.append(
                    String(
                        format: "  %@  median %.1f ms  MAD %.1f ms  min %.1f ms  max %.1f ms", name.padding(toLength: 32, withPad: " ", startingAt: 0),
                        median, mad, values.min() ?? 0, values.max() ?? 0))
            }
            // Why runs failed, each reason once, with a log to read.
            var reasons: [(outcome: String, count: Int, log: String)] = []
            for run in side.manifest.runs where !run.succeeded {
                if let index = reasons.firstIndex(where: { $0.outcome == run.outcome }) {
                    reasons[index].count += 1
                } else {
                    reasons.append((run.outcome, 1, side.folder.appendingPathComponent(run.log).path))
                }
            }
            for reason in reasons {
                lines.append("  \(reason.count) run\(reason.count == 1 ? "" : "s") failed: \(reason.outcome) (output in \(reason.log))")
            }
        }
        if sides.count == 2 {
            lines.append("Compare them with: liftoff compare \(sides[0].folder.path) \(sides[1].folder.path)")
        }
        return lines.joined(separator: "\n")
    }

    /// One command being recorded and its folder.
    ///
    /// Each finished run is appended to `runs.jsonl` with one write, so that a run is kept the
    /// moment it ends, even if recording is interrupted; `record.json` is written (atomically
    /// and synced) when recording ends, and replaces the journal.
    final class Side {
        let name: String
        let command: [String]
        let folder: URL
        var manifest: RecordManifest
        var lastTTFF: Double?
        var measured = Set<RunMeasure>()
        /// The agent library injected into this side's runs, when its program has no Liftoff.
        var agent: String?
        /// Who recorded the runs so far: `program` or `agent`.
        var recordedBy: String?
        /// The files evicted before each run, with `--cache cold`.
        var cacheFiles: [String] = []
        /// The page cache the last run started with, with `--cache cold`.
        var lastCache: Profile.CacheState?
        private let journal: Int32

        init(name: String, command: [String], folder: URL) throws {
            self.name = name
            self.command = command
            self.folder = folder
            manifest = RecordManifest(command: command, measure: .profile)
            do {
                try AtomicFile.createFolder(folder.appendingPathComponent("runs"))
            } catch let error as ProfileError {
                throw CLIError(error.message)
            }
            // A new recording replaces an old one in the same folder.
            try? FileManager.default.removeItem(at: folder.appendingPathComponent("record.json"))
            let path = folder.appendingPathComponent(RecordManifest.journalName).path
            journal = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0o644)
            guard journal >= 0 else { throw CLIError("Cannot write \(path): \(String(cString: strerror(errno))).") }
            try write(manifest.journalHeader())
        }

        deinit { close(journal) }

        var label: String { name.isEmpty ? "" : " (\(name))" }

        /// Keeps a finished run: in memory and, with one append, in the journal.
        func append(_ run: RecordManifest.Run) throws {
            manifest.runs.append(run)
            try write(RecordManifest.journalLine(run))
        }

        private func write(_ line: Data) throws {
            let written = line.withUnsafeBytes { Glibc.write(journal, $0.baseAddress, $0.count) }
            guard written == line.count else {
                throw CLIError("Cannot write the run journal in \(folder.path): \(String(cString: strerror(errno))).")
            }
        }

        /// Writes `record.json` and removes the journal it replaces.
        func saveManifest() throws {
            manifest.measure = measured.contains(.profile) ? .profile : measured.contains(.ready) ? .ready : .exit
            do {
                try AtomicFile.write(manifest.jsonData(), to: folder.appendingPathComponent("record.json"))
            } catch let error as ProfileError {
                throw CLIError(error.message)
            }
            try? FileManager.default.removeItem(at: folder.appendingPathComponent(RecordManifest.journalName))
        }
    }
}

/// Progress on standard error: a bar redrawn in place on a terminal, plain lines otherwise.
final class Progress {
    private let total: Int
    private let quiet: Bool
    private let terminal = isatty(2) != 0
    private var done = 0

    init(total: Int, quiet: Bool) {
        self.total = total
        self.quiet = quiet
    }

    func note(_ text: String) {
        guard !quiet else { return }
        emit(text)
    }

    func advance(_ text: String) {
        done += 1
        guard !quiet else { return }
        emit(text)
    }

    func finish() {
        if terminal && !quiet { FileHandle.standardError.write(Data("\n".utf8)) }
    }

    private func emit(_ text: String) {
        if terminal {
            let width = 30
            let filled = total > 0 ? done * width / total : width
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            FileHandle.standardError.write(Data("\r\u{1B}[K[\(bar)] \(done)/\(total)  \(text)".utf8))
        } else {
            FileHandle.standardError.write(Data("[\(done)/\(total)] \(text)\n".utf8))
        }
    }
}

