import ArgumentParser
import Foundation
import LiftoffComparison
import LiftoffProfile
import LiftoffReports
import LiftoffSampler

/// `liftoff compare BASE HEAD`: decides whether head's launches regressed against base's.
struct CompareCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compare",
        abstract: "Compare two sets of recorded launches and decide: regressed, improved, unchanged or inconclusive.",
        discussion: """
            BASE and HEAD are folders written by `liftoff record` (or folders of profile.json \
            files). For each metric, the ratio of medians (head / base) comes with a bootstrap \
            confidence interval and a two-sided Mann–Whitney U p-value. A metric regressed when \
            p < alpha and the ratio is at least 1 + threshold; improved when p < alpha and it is \
            at most 1 − threshold; inconclusive when the ratio is beyond the threshold but p is \
            not below alpha (record more runs); otherwise unchanged.

            Then it names the functions that changed, matched across builds whatever the executables' \
            names: each function's CPU (with the library work it asked for) and waiting \
            time per run, a permutation test per function, Benjamini–Hochberg at \
            --false-discovery-rate, the Hodges–Lehmann shift with its interval. Verdicts: \
            regressed, improved, added, removed, unchanged, unresolved (too few samples). With \
            --diff-span, within that span's samples. It lists insights that appeared or grew.

            Sides recorded with different --cache modes are refused: a cold launch reads its files \
            from storage. --allow-mixed-cache compares them anyway; a cold side against a warm one \
            then heads the insights with cold-penalty (time to ready, time before main, bytes read \
            and disk waits, cold against warm).

            Only the gated metrics (--gate, default time to first frame, or time to ready for a server or CLI) decide the exit status:
              0  unchanged or improved
              2  regressed
              3  inconclusive (0 with --inconclusive pass)
              1  an error, such as missing or incomparable runs

            Examples:
              liftoff compare runs/base runs/head
              liftoff compare base head --metrics phases --format markdown -o pr.md
              liftoff compare runs/base runs/head --diff-out runs/diff
              liftoff compare base head --metrics spans --gate 'build router' --diff-span 'build router' --diff-out diff
            """
    )

    @Argument(help: "The base runs: a folder written by liftoff record.")
    var base: String

    @Argument(help: "The head runs: a folder written by liftoff record.")
    var head: String

    @Option(
        name: .long,
        help: "Metrics to report besides time to first frame (or to ready), comma-separated: phases, tasks, cpu, spans, counters (the counters that moved are always listed), or all.")
    var metrics: String = ""

    @Option(
        name: .long,
        help: """
            Metrics that decide the verdict, comma-separated: names as printed, a span's, callback's or task's name, or \
            instructions (runs recorded with --count instructions). Default: instructions when both sides were \
            counted, else time to first frame (time to ready).
            """)
    var gate: String?

    @Option(name: .long, help: "Smallest change of counted instructions that counts, as a percentage (1% or 0.01).")
    var countThreshold: String = "1%"

    @Option(name: .long, help: "Smallest change of a median that counts, as a percentage (5% or 0.05).")
    var threshold: String = "5%"

    @Option(name: .long, parsing: .unconditional, help: "Significance level for the Mann–Whitney test.")
    var alpha: Double = 0.01

    @Option(
        name: .long,
        help: "The false-discovery rate of the per-function comparison: the expected share of wrongly named functions.")
    var falseDiscoveryRate: Double = 0.05

    @Option(name: .long, help: "What an inconclusive verdict does to the exit status: fail (3) or pass (0).")
    var inconclusive: InconclusivePolicy = .fail

    @Option(name: .long, help: "Output: text, markdown (for a pull-request comment) or json.")
    var format: OutputFormat = .text

    @Option(name: [.short, .customLong("output")], help: "Write the comparison to this file instead of standard output.")
    var output: String?

    @Option(name: .long, help: "Folder for the differential flame graph (diff-flame.svg and diff-flame.html).")
    var diffOut: String?

    @Option(name: .long, help: "Compare functions, and draw the differential flame graph, within this span's samples only (its name).")
    var diffSpan: String?

    @Flag(
        name: .long,
        help: "Compare sides recorded with different --cache modes (refused otherwise); a cold side against a warm one shows the cold penalty.")
    var allowMixedCache = false

    enum InconclusivePolicy: String, ExpressibleByArgument, CaseIterable {
        case fail, pass
    }

    enum OutputFormat: String, ExpressibleByArgument, CaseIterable {
        case text, markdown, json
    }

    /// A callgrind name as the profiles show it: Swift's demangled and shortened, C++'s shortened.
    static func readableName(_ name: String) -> String {
        let readable = name.hasPrefix("$s") || name.hasPrefix("_$s") ? SymbolNames.demangle(name) : name
        return CppNameShortener.shortName(readable) ?? readable
    }

    func validate() throws {
        _ = try groups()
        let count = try CompareCommand.fraction(countThreshold)
        guard count > 0 && count < 1 else { throw ValidationError("--count-threshold must be between 0% and 100%, not \(countThreshold).") }
        let value = try CompareCommand.fraction(threshold)
        guard value > 0 && value < 1 else { throw ValidationError("--threshold must be between 0% and 100%, not \(threshold).") }
        guard alpha > 0 && alpha < 1 else { throw ValidationError("--alpha must be between 0 and 1, not \(alpha).") }
        guard falseDiscoveryRate > 0 && falseDiscoveryRate < 1 else {
            throw ValidationError("--false-discovery-rate must be between 0 and 1, not \(falseDiscoveryRate).")
        }
    }

    func run() throws {
        let baseRuns: RunSet
        let headRuns: RunSet
        do {
            baseRuns = try RunSet.load(base)
            headRuns = try RunSet.load(head)
        } catch let error as RunSetError {
            throw CLIError(error.description)
        }
        if let diffSpan, !(baseRuns.profiles + headRuns.profiles).contains(where: { $0.spans.contains { $0.name == diffSpan } }) {
            throw CLIError("No run has a span named '\(diffSpan)', so --diff-span has nothing to compare.")
        }
        let counted = baseRuns.isCounted && headRuns.isCounted
        let gated = (gate ?? (counted ? LaunchComparison.instructionsMetric : RunSet.timeToFirstFrame))
            .split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        let comparison: LaunchComparison
        do {
            comparison = try LaunchComparison(
                base: baseRuns, head: headRuns, groups: try groups(), gated: gated,
                settings: ComparisonSettings(
                    threshold: try CompareCommand.fraction(threshold), alpha: alpha, falseDiscoveryRate: falseDiscoveryRate),
                functionSpan: diffSpan, countThreshold: try CompareCommand.fraction(countThreshold),
                demangle: CompareCommand.readableName, allowMixedCache: allowMixedCache)
        } catch let error as RunSetError {
            throw CLIError(error.description)
        }
        if let diffOut {
            let diff = DiffFlameGraph(base: baseRuns.profiles, head: headRuns.profiles, span: diffSpan)
            let folder = URL(fileURLWithPath: diffOut, isDirectory: true)
            let title = "Launch flame graph: head against base" + (diffSpan.map { ", span '\($0)'" } ?? "")
            do {
                try AtomicFile.write(diff.svg(title: title), to: folder.appendingPathComponent("diff-flame.svg"))
                try AtomicFile.write(diff.html(title: title), to: folder.appendingPathComponent("diff-flame.html"))
            } catch let error as ProfileError {
                throw CLIError(error.message)
            }
        }
        let text: String
        switch format {
        case .text: text = comparison.text()
        case .markdown: text = comparison.markdown(diffFlameGraph: diffOut.map { _ in "diff-flame.html" })
        case .json: text = comparison.json()
        }
        if let output {
            do {
                try AtomicFile.write(text, to: URL(fileURLWithPath: output))
            } catch let error as ProfileError {
                throw CLIError(error.message)
            }
            try StandardOutput.print(comparison.headline)
        } else {
            try StandardOutput.write(text)
        }
        switch comparison.verdict {
        case .regressed: throw ExitCode(2)
        case .inconclusive where inconclusive == .fail: throw ExitCode(3)
        default: return
        }
    }

    private func groups() throws -> Set<MetricGroup> {
        var result = Set<MetricGroup>()
        for word in metrics.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces).lowercased() }) where !word.isEmpty {
            if word == "all" {
                result.formUnion(MetricGroup.allCases)
                continue
            }
            guard let group = MetricGroup(rawValue: word) else {
                throw ValidationError(
                    "--metrics '\(word)' is not one of: \((MetricGroup.allCases.map(\.rawValue) + ["all"]).joined(separator: ", ")).")
            }
            result.insert(group)
        }
        return result
    }

    /// `5%` or `0.05` as 0.05.
    static func fraction(_ text: String) throws -> Double {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasSuffix("%"), let value = Double(trimmed.dropLast()) { return value / 100 }
        if let value = Double(trimmed) { return value }
        throw ValidationError("'\(text)' is not a percentage such as 5% or 0.05.")
    }
}
