import ArgumentParser
import Foundation
import Liftoff
import LiftoffDemo
import LiftoffProfile
import LiftoffReports
import LiftoffSampler

/// `liftoff demo`: runs the bundled demo app under the sampler and writes its reports.
struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run the bundled demo app under the sampler and write its reports.",
        discussion: """
            The demo app launches on the main run loop (parsing its bundled catalogue, reading its
            settings, building 100 rows of views), draws its first frame, then leaves and is
            terminated. Writes profile.json, flame.folded and flame.svg to the output folder and
            prints time to first frame, the launch phases, and the functions with the most self time.
            """
    )

    @Option(name: .long, help: "Folder for the reports.")
    var out: String = "Reports/demo"

    @Option(name: .long, help: "Samples per second per thread, 1 to 10000.")
    var rate: Int = 1000

    @Option(name: .long, help: "Milliseconds the app stays up after its first frame before it quits.")
    var linger: UInt64 = 100

    func validate() throws {
        guard (1...10_000).contains(rate) else {
            throw ValidationError("--rate must be between 1 and 10000 samples per second, not \(rate).")
        }
    }

    func run() throws {
        let folder = URL(fileURLWithPath: out, isDirectory: true)
        let recorder: LaunchRecorder
        do {
            recorder = try LaunchRecorder.start(configuration: SamplerConfiguration(rateHz: rate))
        } catch let error as SamplerError {
            throw CLIError(error.message)
        }
        let delegate = DemoAppDelegate(recorder: recorder, quitAfterLaunchMs: linger)
        let status = Application.main(
            delegate: delegate, configuration: Application.Configuration(recorder: recorder))
        let profile = recorder.finish()
        guard let result = delegate.result else {
            throw CLIError("The demo app did not finish launching (exit status \(status)).")
        }
        let files: [(String, String)] = [
            (ReportFormat.folded.demoFileName, ReportFormat.folded.render(profile, perThread: false)),
            (ReportFormat.svg.demoFileName, ReportFormat.svg.render(profile, perThread: false)),
        ]
        do {
            try profile.write(to: folder.appendingPathComponent("profile.json"))
            for (name, text) in files {
                try AtomicFile.write(text, to: folder.appendingPathComponent(name))
            }
        } catch let error as ProfileError {
            throw CLIError(error.message)
        }
        print(DemoCommand.summary(profile, result: result, folder: folder.path))
        if status != Application.exitNormal {
            throw ExitCode(status)
        }
    }

    static func summary(_ profile: Profile, result: DemoWorkload.Result, folder: String) -> String {
        let summary = ProfileSummary(profile, limit: 10)
        func ms(_ ns: UInt64) -> String { String(format: "%.1f ms", Double(ns) / 1e6) }
        var lines: [String] = []
        if let ttff = profile.timeToFirstFrameNs {
            lines.append("Time to first frame: \(ms(ttff)) (target 400 ms).")
        } else {
            lines.append("No first frame was committed.")
        }
        lines.append("Launch phases:")
        lines.append("  process start → main entry: \(ms(profile.phases.mainEntryNs - profile.phases.processStartNs))")
        for span in profile.spans where span.parent == nil || span.category == "span" {
            let indent = span.parent == nil ? "  " : "    "
            lines.append("\(indent)\(span.name): \(ms(span.durationNs))")
        }
        for mark in profile.marks {
            lines.append("  \(mark.name) at \(ms(mark.timeNs))")
        }
        lines.append(
            "States: " + (["notRunning"] + profile.stateChanges.map(\.to)).joined(separator: " → ")
                + "; \(profile.displayFrames.count) frames.")
        if !profile.violations.isEmpty {
            lines.append("Thread violations: \(profile.violations.count)")
            for violation in profile.violations.prefix(5) { lines.append("  \(violation.message)") }
        }
        lines.append(
            "Recorded \(summary.samples) samples at \(profile.metadata.samplingRateHz) Hz (dropped \(summary.dropped), "
                + "failed \(profile.counts.failed), skipped \(profile.counts.skipped)).")
        lines.append("Demo: \(result.items) items, search tree height \(result.treeHeight), \(result.categories) index keys.")
        for (label, count) in summary.samplesPerThread {
            lines.append("  \(label): \(count) samples")
        }
        lines.append("Top functions by self time:")
        for entry in summary.topSelf {
            let percent = String(format: "%5.1f%%", entry.share * 100)
            lines.append("  \(percent)  \(String(entry.name.prefix(110)))")
        }
        lines.append("Wrote profile.json, flame.folded and flame.svg to \(folder)/")
        return lines.joined(separator: "\n")
    }
}
