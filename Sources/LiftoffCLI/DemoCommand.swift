import ArgumentParser
import Foundation
import Liftoff
import LiftoffAnalysis
import LiftoffDemo
import LiftoffFormats
import LiftoffProfile
import LiftoffReports
import LiftoffSampler

/// `liftoff demo`: runs the bundled demo app under the sampler and writes its reports.
struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run the bundled demo app under the sampler and write its reports.",
        discussion: """
            The demo app launches on the main run loop (parsing its bundled catalogue, reading its \
            settings, building 100 rows of views), draws its first frame, then leaves and is \
            terminated. Writes profile.json and every report (index.html, flame.svg, flame.folded, \
            flame-per-thread.folded, profile.speedscope.json, trace.json, summary.md) to the output \
            folder and prints time to first frame, the launch phases, and the functions with the \
            most self time.
            """
    )

    @Option(name: .long, help: "Folder for the reports.")
    var out: String = "Reports/demo"

    @Option(name: .long, parsing: .unconditional, help: "Samples per second per thread, 1 to 10000.")
    var rate: Int = 1000

    @Option(name: .long, parsing: .unconditional, help: "Milliseconds the app stays up after its launch work before it quits.")
    var linger: UInt64 = 100

    @Option(
        name: .long,
        help: "Launch plan: naive (everything on the main thread), optimized (only UI work there), or both (compare them).")
    var plan: PlanChoice = .optimized

    @Option(name: .long, parsing: .unconditional, help: "With --plan both: launches of each plan, interleaved.")
    var runs: Int = 3

    @Option(name: .long, parsing: .unconditional, help: "Block the main thread this many milliseconds after the first frame: a hang to find.")
    var injectHang: UInt64 = 0

    @Option(
        name: .long,
        help: "Slow the launch down by about this much (for example 20%): extra work on the critical path, in DemoWorkload.extraWork.")
    var slowdown: String = "0%"

    @Flag(name: .long, help: .hidden)
    var quiet = false

    enum PlanChoice: String, ExpressibleByArgument, CaseIterable {
        case naive, optimized, both
    }

    func validate() throws {
        guard (1...10_000).contains(rate) else {
            throw ValidationError("--rate must be between 1 and 10000 samples per second, not \(rate).")
        }
        guard (1...100).contains(runs) else {
            throw ValidationError("--runs must be between 1 and 100, not \(runs).")
        }
        let percent = try CompareCommand.fraction(slowdown) * 100
        guard (0...1000).contains(percent) else {
            throw ValidationError("--slowdown must be between 0% and 1000%, not \(slowdown).")
        }
    }

    func run() throws {
        if plan == .both { return try compareBoth() }
        let choice: DemoAppDelegate.Plan = plan == .naive ? .naive : .optimized
        let folder = URL(fileURLWithPath: out, isDirectory: true)
        let recorder: LaunchRecorder
        do {
            // The demo's launch goes on after its first frame (its deferred launch tasks), and the
            // app quits after them: its profile ends when the app does.
            recorder = try LaunchRecorder.start(configuration: SamplerConfiguration(rateHz: rate), launchEnd: .manual)
        } catch let error as SamplerError {
            throw CLIError(error.message)
        }
        let delegate = DemoAppDelegate(
            plan: choice, recorder: recorder, quitAfterLaunchMs: linger, injectHangMs: injectHang,
            slowdownPercent: try CompareCommand.fraction(slowdown) * 100)
        let status = Application.main(
            delegate: delegate, configuration: Application.Configuration(recorder: recorder))
        let profile = recorder.finish()
        guard let result = delegate.result else {
            throw CLIError("The demo app did not finish launching (exit status \(status)).")
        }
        let files = try ReportFormats.folderFiles(profile)
        do {
            try profile.write(to: folder.appendingPathComponent("profile.json"))
            for (name, data) in files {
                try AtomicFile.write(data, to: folder.appendingPathComponent(name))
            }
            // Under `liftoff record`, the profile also goes where the recorder asks.
            if let target = ProcessInfo.processInfo.environment[LaunchRecorder.outputVariable], !target.isEmpty,
                target != "/dev/null"
            {
                try profile.write(to: URL(fileURLWithPath: target))
            }
        } catch let error as ProfileError {
            throw CLIError(error.message)
        }
        if !quiet { try StandardOutput.print(DemoCommand.summary(profile, result: result, folder: folder.path)) }
        if status != Application.exitNormal {
            throw ExitCode(status)
        }
    }

    /// Launches each plan `runs` times in fresh processes, interleaved (naive, optimized,
    /// optimized, naive, …), and compares their times to first frame. The optimized plan's
    /// reports go to the output folder, the naive plan's to `naive/` inside it.
    private func compareBoth() throws {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        let folder = URL(fileURLWithPath: out, isDirectory: true)
        var times: [DemoAppDelegate.Plan: [UInt64]] = [:]
        var last: [DemoAppDelegate.Plan: Profile] = [:]
        for round in 0..<runs {
            let order: [DemoAppDelegate.Plan] = round % 2 == 0 ? [.naive, .optimized] : [.optimized, .naive]
            for choice in order {
                let target = choice == .optimized ? folder : folder.appendingPathComponent("naive")
                let status = try DemoCommand.launch(
                    executable, ["demo", "--plan", choice.rawValue, "--out", target.path, "--rate", String(rate),
                                 "--linger", "0", "--inject-hang", String(injectHang), "--slowdown", slowdown, "--quiet"])
                guard status == 0 else {
                    throw CLIError("The \(choice.rawValue) demo exited with status \(status).")
                }
                let profile: Profile
                do {
                    profile = try Profile.load(from: target.appendingPathComponent("profile.json"))
                } catch let error as ProfileError {
                    throw CLIError(error.message)
                }
                guard let ttff = profile.timeToFirstFrameNs else {
                    throw CLIError("The \(choice.rawValue) demo committed no first frame.")
                }
                times[choice, default: []].append(ttff)
                last[choice] = profile
            }
        }
        func median(_ values: [UInt64]) -> Double {
            let sorted = values.sorted()
            let middle = sorted.count / 2
            return sorted.count % 2 == 1
                ? Double(sorted[middle]) : (Double(sorted[middle - 1]) + Double(sorted[middle])) / 2
        }
        func ms(_ ns: Double) -> String { String(format: "%.1f ms", ns / 1e6) }
        var lines = ["Time to first frame over \(runs) launches of each plan, interleaved:"]
        for choice in DemoAppDelegate.Plan.allCases {
            let values = times[choice] ?? []
            let violations = last[choice]?.violations.count ?? 0
            lines.append(
                "  \(choice.rawValue.padding(toLength: 10, withPad: " ", startingAt: 0)) median \(ms(median(values)))"
                    + "  (min \(ms(Double(values.min() ?? 0))), max \(ms(Double(values.max() ?? 0))))"
                    + "  thread violations: \(violations)")
        }
        let naive = median(times[.naive] ?? [])
        let optimized = median(times[.optimized] ?? [])
        lines.append(String(format: "The optimized plan reaches its first frame %.2f× sooner (naive / optimized).", naive / optimized))
        if let profile = last[.naive] {
            lines.append("The naive plan's violations:")
            for violation in profile.violations.prefix(8) { lines.append("  \(profile.sentence(for: violation))") }
        }
        if let profile = last[.naive] {
            let deferrable = profile.tasks.filter(\.couldDefer).map(\.name)
            if !deferrable.isEmpty {
                lines.append("In the naive plan, main-thread work no UI task needs (it could move): \(deferrable.joined(separator: ", "))")
            }
        }
        if let profile = last[.optimized] {
            let critical = profile.tasks.filter(\.onCriticalPath).map(\.name)
            lines.append("Optimized critical path to the first frame: \(critical.joined(separator: " → "))")
            lines.append("")
            lines.append(DemoCommand.summary(profile, result: nil, folder: folder.path))
        }
        lines.append("Wrote the optimized plan's reports to \(folder.path)/ and the naive plan's to \(folder.path)/naive/")
        try StandardOutput.print(lines.joined(separator: "\n"))
    }

    /// Runs the program in a fresh process with `LIFTOFF_LAUNCH_NS` set to its spawn time.
    static func launch(_ executable: String, _ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment[ProfileRecorder.launchTimeVariable] = String(MonotonicClock.nowNs)
        process.environment = environment
        do {
            try process.run()
        } catch {
            throw CLIError("Cannot start \(executable): \(error.localizedDescription)")
        }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// The summary of `profile`; `readyByRecorder` says that its ready mark is the program's own
    /// (`LaunchRecorder.ready()`), not an output line that matched `--ready`.
    static func summary(_ profile: Profile, result: DemoWorkload.Result?, folder: String, readyByRecorder: Bool = false) -> String {
        let summary = ProfileSummary(profile, limit: 10)
        func ms(_ ns: UInt64) -> String { String(format: "%.1f ms", Double(ns) / 1e6) }
        var lines: [String] = []
        if profile.hasLifeCycle {
            if let ttff = profile.timeToFirstFrameNs {
                lines.append("Time to first frame: \(ms(ttff)) (target 400 ms).")
            } else {
                lines.append("No first frame was committed.")
            }
        } else if let ready = profile.marks.first(where: { $0.name == .ready }) {
            let how = readyByRecorder ? "when it called LaunchRecorder's ready()" : "its first output line matching --ready"
            lines.append("Ready at \(ms(ready.timeNs)) (\(how)).")
        }
        // Why, before the numbers: the costliest reasons the launch was slow.
        lines += InsightReport(profile).text(limit: 3, details: false).split(separator: "\n").map(String.init)
        lines.append("Launch phases:")
        let phases = profile.phases
        if let exec = phases.programStartNs {
            let programs = profile.processes.first?.programs.dropLast().map(\.fileName).joined(separator: " → ") ?? ""
            lines.append("  wrappers (\(programs)) until the program's exec: \(ms(exec &- phases.processStartNs))")
            lines.append("  program exec → main entry: \(ms(phases.mainEntryNs &- exec))")
        } else {
            lines.append("  process start → main entry: \(ms(phases.mainEntryNs &- phases.processStartNs))")
        }
        if let preMain = profile.phases.preMain {
            lines.append("    \(Profile.PreMain.label): \(preMain.sentence)")
            if let loader = preMain.loader { lines.append("    loader, object by object: \(loader.sentence)") }
            if let note = preMain.loaderNote { lines.append("    \(note)") }
        }
        for span in profile.spans where span.parent == nil {
            let indent = span.parent == nil ? "  " : "    "
            var tasks = ""
            if let started = span.childTasks {
                tasks = " (\(started) Swift task\(started == 1 ? "" : "s") started"
                tasks += span.scheduledNs.map { "; jobs waited \(ms($0)) in all to run)" } ?? ")"
            }
            lines.append("\(indent)\(span.name): \(ms(span.durationNs))\(tasks)")
        }
        for mark in profile.marks {
            lines.append("  \(mark.name) at \(ms(mark.timeNs))")
        }
        if !profile.tasks.isEmpty {
            lines.append("Launch tasks (lane, start → end, wait; * on the critical path):")
            for task in profile.tasks {
                let times = task.startNs.map { start in "\(ms(start)) → \(ms(task.endNs ?? start))" } ?? task.status.rawValue
                let wait = task.waitNs > 0 ? ", waited \(ms(task.waitNs))" : ""
                let flag = task.onCriticalPath ? "*" : " "
                let status = task.status == .completed ? "" : " [\(task.status)]"
                lines.append("  \(flag) \(task.name) (\(task.lane)): \(times)\(wait)\(status)")
            }
        }
        if profile.hasLifeCycle {
            lines.append(
                "States: " + (["notRunning"] + profile.stateChanges.map(\.to)).joined(separator: " → ")
                    + "; \(profile.displayFrames.count) frames.")
            lines.append(
                "Frames: \(profile.displayFrames.count), slow (over 16.7 ms) \(profile.slowFrameCount), "
                    + "frozen (over 700 ms) \(profile.frozenFrameCount).")
        }
        if profile.processes.count > 1 {
            lines.append("Processes: \(profile.processes.count) (start → end; programs run in turn with exec)")
            for process in profile.processes.prefix(12) {
                let programs = process.programs.map(\.fileName)
                let parent = profile.processes.contains { $0.id == process.parentID } ? ", child of \(process.parentID)" : ""
                // The time before main of the programs the agent measured (not the launch's own, said above).
                let preMain = process.programs.compactMap { program in program.preMain.map { "\(program.fileName) \(ms($0.durationNs))" } }
                // What its programs read from storage after main, and how long their main threads were blocked then.
                let afterMain = process.programs.compactMap { program -> String? in
                    guard let counts = program.afterMain, counts.bytesRead > 0 else { return nil }
                    return "\(program.fileName) read \(Profile.PreMain.amount(counts.bytesRead)), main thread blocked \(ms(counts.blockedNs))"
                }
                lines.append(
                    "  \(process.label): \(ms(process.startNs)) → \(ms(process.endNs))\(parent)"
                        + (programs.count > 1 ? "; \(programs.joined(separator: " → "))" : "")
                        + (preMain.isEmpty ? "" : "; before main: \(preMain.joined(separator: ", "))")
                        + (afterMain.isEmpty ? "" : "; after main: \(afterMain.joined(separator: ", "))")
                        + (process.unfollowedExec.map { "; then ran \($0), which the agent could not enter" } ?? ""))
            }
            if profile.processes.count > 12 { lines.append("  … and \(profile.processes.count - 12) more (see profile.json)") }
        }
        lines.append(contentsOf: ProfileCommand.samplingNotes(profile))
        if !profile.hangs.isEmpty {
            lines.append("Hangs (main thread away from its run loop for 250 ms or more): \(profile.hangs.count)")
            for hang in profile.hangs {
                var leaves: [String: Int] = [:]
                for stack in hang.stacks {
                    // The innermost frame of the demo's own code in each sampled stack.
                    let names = profile.frameIndices(ofStack: stack).map { profile.frames[$0].displayName }
                    if let own = names.last(where: { $0.contains("LiftoffDemo.") }) ?? names.last { leaves[own, default: 0] += 1 }
                }
                let top = leaves.max { $0.value < $1.value }.map { "\($0.key) in \($0.value) of \(hang.stacks.count) stacks" } ?? "no stacks"
                lines.append("  \(ms(hang.durationNs)) at \(ms(hang.startNs)) running '\(hang.running)': \(top)")
            }
        }
        if !profile.violations.isEmpty {
            lines.append("Thread violations: \(profile.violations.count)")
            for violation in profile.violations.prefix(5) { lines.append("  \(profile.sentence(for: violation))") }
        }
        lines.append(
            "Recorded \(summary.samples) samples (\(summary.running) running, \(summary.blocked) blocked, "
                + "\(summary.runnable) runnable\(summary.disk > 0 ? ", \(summary.disk) waiting for the disk" : "")) at "
                + "\(profile.metadata.samplingRateHz) Hz (dropped \(summary.dropped), failed \(profile.counts.failed), "
                + "skipped \(profile.counts.skipped)).")
        if let result {
            lines.append("Demo: \(result.items) items, search tree height \(result.treeHeight), \(result.categories) index keys.")
        }
        for thread in summary.threads {
            lines.append(
                "  \(thread.label): \(thread.running) running, \(thread.blocked) blocked, "
                    + "\(thread.runnable) runnable\(thread.disk > 0 ? ", \(thread.disk) disk" : "")")
        }
        lines.append("Top functions by CPU time (running samples):")
        for entry in summary.topSelf {
            let percent = String(format: "%5.1f%%", entry.share * 100)
            lines.append("  \(percent)  \(String(entry.name.prefix(110)))")
        }
        if !summary.topWaits.isEmpty {
            lines.append("Where threads waited:")
            let interval = 1000 / Double(max(profile.metadata.samplingRateHz, 1))
            for wait in summary.topWaits.prefix(5) {
                let time = String(format: "%7.1f ms", Double(wait.samples) * interval)
                let how = wait.state == .blocked ? "blocked " : wait.state.word.padding(toLength: 8, withPad: " ", startingAt: 0)
                lines.append("  \(time)  \(how)  \(wait.thread) in \(String(wait.function.prefix(80)))")
            }
        }
        if let idle = summary.idleLine(rateHz: profile.metadata.samplingRateHz) { lines.append(idle) }
        lines.append("Wrote profile.json and its reports (open index.html) to \(folder)/")
        return lines.joined(separator: "\n")
    }
}
