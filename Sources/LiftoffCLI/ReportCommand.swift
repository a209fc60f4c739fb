import ArgumentParser
import Foundation
import LiftoffFormats
import LiftoffProfile

/// `liftoff report PROFILE [--format html|svg|folded|speedscope|chrome|markdown] [-o FILE]`: renders a saved profile.
struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Render a saved profile.json as HTML, SVG, folded stacks, speedscope, Chrome trace, Markdown, pprof or OTLP.",
        discussion: """
            Formats:
            \(ReportFormats.all.map { "  \($0.name.padding(toLength: 11, withPad: " ", startingAt: 0)) \($0.summary)" }.joined(separator: "\n"))

            Examples:
              liftoff report profile.json -o report.html
              liftoff report profile.json --format speedscope -o p.speedscope.json
              liftoff report profile.json --format chrome -o trace.json
              liftoff report profile.json --format otlp --service checkout -o profile.otlp.pb
              liftoff report p.json --format folded --per-thread | flamegraph.pl > f.svg
            """
    )

    @Argument(help: "The profile.json to render.")
    var profile: String

    @Option(name: .long, help: "Output format: \(FormatChoice.allValueStrings.joined(separator: ", ")).")
    var format = FormatChoice(HTMLFormat())

    @Option(name: [.short, .customLong("output")], help: "Write to this file instead of standard output.")
    var output: String?

    @Flag(name: .long, help: "For svg and folded: keep threads apart, each thread's stacks under a frame named after it.")
    var perThread = false

    @Option(
        name: .long,
        help: """
            For svg and folded: 'cpu' counts running samples only (where CPU time went); 'wall' counts \
            waiting samples too (where time went), with waits drawn in grey in svg.
            """)
    var samples: Profile.SampleSelection = .cpu

    @Option(name: .long, help: "For otlp: the service.name of the profile's resource (default: the program's file name).")
    var service: String?

    func run() throws {
        let loaded: Profile
        do {
            loaded = try Profile.load(from: URL(fileURLWithPath: profile))
        } catch let error as ProfileError {
            throw CLIError(error.message)
        }
        if output == nil, format.format.isBinary, isatty(1) != 0 {
            throw CLIError("--format \(format.format.name) is binary: give a file with -o, or redirect standard output.")
        }
        let bytes = try ReportFormats.output(format.format, loaded, options: ReportOptions(perThread: perThread, samples: samples, service: service))
        if let output {
            do {
                try AtomicFile.write(bytes, to: URL(fileURLWithPath: output))
            } catch let error as ProfileError {
                throw CLIError(error.message)
            }
        } else {
            try StandardOutput.write(bytes)
        }
    }
}
