import ArgumentParser
import Foundation
import LiftoffProfile
import LiftoffReports

/// `liftoff report PROFILE --format folded|svg [-o FILE]`: renders a saved profile.
struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Render a saved profile.json as folded stacks or an SVG flame graph.",
        discussion: """
            Examples:
              liftoff report Reports/demo/profile.json --format svg -o flame.svg
              liftoff report Reports/demo/profile.json --format folded --per-thread | flamegraph.pl > out.svg
            """
    )

    @Argument(help: "The profile.json to render.")
    var profile: String

    @Option(name: .long, help: "Output format: \(ReportFormat.allCases.map(\.rawValue).joined(separator: ", ")).")
    var format: ReportFormat = .svg

    @Option(name: [.short, .customLong("output")], help: "Write to this file instead of standard output.")
    var output: String?

    @Flag(name: .long, help: "Keep threads apart: each thread's stacks sit under a frame named after it.")
    var perThread = false

    func run() throws {
        let loaded: Profile
        do {
            loaded = try Profile.load(from: URL(fileURLWithPath: profile))
        } catch let error as ProfileError {
            throw CLIError(error.message)
        }
        let text = format.render(loaded, perThread: perThread)
        if let output {
            do {
                try AtomicFile.write(text, to: URL(fileURLWithPath: output))
            } catch let error as ProfileError {
                throw CLIError(error.message)
            }
        } else {
            FileHandle.standardOutput.write(Data(text.utf8))
        }
    }
}
