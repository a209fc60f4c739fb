import ArgumentParser
import Foundation
import LiftoffDemo
import LiftoffProfile
import LiftoffReports
import LiftoffSampler

/// `liftoff demo`: records the bundled demo app's launch and writes its reports.
struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run the bundled demo app under the sampler and write its reports.",
        discussion: """
            Writes profile.json, flame.folded and flame.svg to the output folder and prints a
            summary: samples, drops and the functions with the most self time.
            """
    )

    @Option(name: .long, help: "Folder for the reports.")
    var out: String = "Reports/demo"

    @Option(name: .long, help: "Samples per second per thread, 1 to 10000.")
    var rate: Int = 1000

    @Option(name: .long, help: "How many times the demo parses, indexes and hashes its catalogue.")
    var rounds: Int = 3

    func validate() throws {
        guard (1...10_000).contains(rate) else {
            throw ValidationError("--rate must be between 1 and 10000 samples per second, not \(rate).")
        }
        guard rounds >= 1 else {
            throw ValidationError("--rounds must be at least 1, not \(rounds).")
        }
    }

    func run() throws {
        let folder = URL(fileURLWithPath: out, isDirectory: true)
        let recorder: ProfileRecorder
        do {
            recorder = try ProfileRecorder.start(configuration: SamplerConfiguration(rateHz: rate))
        } catch let error as SamplerError {
            throw CLIError(error.message)
        }
        let result: DemoWorkload.Result
        do {
            result = try DemoWorkload.run(rounds: rounds)
        } catch {
            _ = recorder.finish()
            throw CLIError("The demo could not read its bundled catalogue: \(error.localizedDescription)")
        }
        let profile = recorder.finish()

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
    }

    static func summary(_ profile: Profile, result: DemoWorkload.Result, folder: String) -> String {
        let summary = ProfileSummary(profile, limit: 10)
        let seconds = Double(profile.phases.endNs - profile.phases.mainEntryNs) / 1e9
        var lines: [String] = []
        lines.append(
            "Recorded \(summary.samples) samples in \(String(format: "%.2f", seconds)) s at "
                + "\(profile.metadata.samplingRateHz) Hz (dropped \(summary.dropped), failed \(profile.counts.failed), skipped \(profile.counts.skipped)).")
        lines.append(
            "Demo: \(result.items) items, search tree height \(result.treeHeight), \(result.categories) index keys.")
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
