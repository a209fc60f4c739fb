import ArgumentParser
import Foundation
import LiftoffAnalysis
import LiftoffComparison
import LiftoffProfile
import LiftoffReports

/// `liftoff check PROFILE|DIR`: fails when a launch breaks its budgets.
struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check a profile, or a folder of recorded runs, against launch budgets.",
        discussion: """
            For a folder of runs, times are the median over its successful runs, and violations \
            and hangs the most any run had. Durations take a unit: 400ms, 1.5s, 800us (ms when \
            none is given). Exits 0 when every budget holds and 2 with one sentence per breach.

            Examples:
              liftoff check profile.json --max-ttff 400ms --max-violations 0 --max-hangs 0
              liftoff check runs/head --max-ttff 250ms --max-phase pre-main=20ms
              liftoff check runs/head --max-phase 'build router=10ms' --max-phase 'read settings=30ms'
              liftoff check out/profile.json --insight main-thread-sleep=0ms --insight library-loading=30ms
            """
    )

    @Argument(help: "A profile.json, or a folder written by liftoff record.")
    var path: String

    @Option(name: [.long, .customLong("max-ready")], help: "Most time to first frame allowed (time to ready for a server or CLI).")
    var maxTtff: String?

    @Option(name: .long, parsing: .unconditional, help: "Most thread-rule violations allowed (every occurrence counts).")
    var maxViolations: Int?

    @Option(name: .long, parsing: .unconditional, help: "Most hangs allowed.")
    var maxHangs: Int?

    @Option(
        name: .long,
        help: "Most instructions to ready allowed, as a count (20M, 1.5G, 250000), for runs recorded with --count instructions (their median).")
    var maxInstructions: String?

    /// `20M`, `1.5G`, `250k` or a plain count, as instructions.
    static func instructions(_ text: String) throws -> UInt64 {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let scales: [(Character, Double)] = [("k", 1e3), ("K", 1e3), ("M", 1e6), ("G", 1e9)]
        var number = Substring(trimmed)
        var scale = 1.0
        if let last = trimmed.last, let found = scales.first(where: { $0.0 == last }) {
            number = number.dropLast()
            scale = found.1
        }
        guard let value = Double(number), value.isFinite, value >= 0, value * scale < 1.8e19 else {
            throw ValidationError("'\(text)' is not a count of instructions such as 20M, 1.5G or 250000.")
        }
        return UInt64((value * scale).rounded())
    }

    @Option(
        name: .long,
        help: "A limit as NAME=DURATION for a span, callback or launch task by its name, or pre-main and main → first frame (main → ready); repeatable.")
    var maxPhase: [String] = []

    @Option(
        name: .long,
        help: "A limit on an insight's cost as ID=DURATION (main-thread-sleep=20ms; see liftoff explain --help); repeatable.",
        transform: InsightThreshold.parse)
    var insight: [InsightThreshold] = []

    func validate() throws {
        if let maxTtff { _ = try CheckCommand.milliseconds(maxTtff) }
        for limit in maxPhase { _ = try CheckCommand.phaseLimit(limit) }
        if let maxViolations, maxViolations < 0 {
            throw ValidationError("--max-violations must be 0 or more, not \(maxViolations).")
        }
        if let maxHangs, maxHangs < 0 { throw ValidationError("--max-hangs must be 0 or more, not \(maxHangs).") }
        if let maxInstructions { _ = try CheckCommand.instructions(maxInstructions) }
        if maxTtff == nil && maxViolations == nil && maxHangs == nil && maxPhase.isEmpty && insight.isEmpty && maxInstructions == nil {
            throw ValidationError(
                "Give at least one budget: --max-ttff, --max-violations, --max-hangs, --max-phase, --max-instructions or --insight.")
        }
    }

    func run() throws {
        let runs: RunSet
        do {
            runs = try RunSet.load(path)
        } catch let error as RunSetError {
            throw CLIError(error.description)
        }
        guard !runs.profiles.isEmpty else { throw CLIError("\(path) has no successful run to check.") }
        let many = runs.profiles.count > 1
        let metrics = Dictionary(runs.metrics([.phases, .tasks, .spans]).map { ($0.name, $0.values) }, uniquingKeysWith: { a, _ in a })
        var breaches: [String] = []
        var passes: [String] = []
        var details: [String] = []
        func checkTime(_ given: String, limit: Double) {
            guard let name = RunSet.metric(named: given, among: metrics.keys), let values = metrics[name], !values.isEmpty else {
                let known = metrics.keys.filter { $0 != RunSet.timeToFirstFrame && $0 != RunSet.timeToReady }.sorted()
                breaches.append(
                    "No run recorded '\(given)', so its budget of \(fmt(limit)) ms cannot be checked"
                        + (known.isEmpty ? "." : "; the runs have: \(known.prefix(12).joined(separator: ", "))"
                            + (known.count > 12 ? " and \(known.count - 12) more." : ".")))
                return
            }
            let value = Statistics.median(values)
            let label = many ? "The median \(name) over \(values.count) runs" : name.prefix(1).uppercased() + name.dropFirst()
            if value > limit {
                breaches.append("\(label) is \(fmt(value)) ms, over its budget of \(fmt(limit)) ms.")
            } else {
                passes.append("\(label) is \(fmt(value)) ms, within its budget of \(fmt(limit)) ms.")
            }
        }
        if let maxTtff { checkTime(RunSet.timeToFirstFrame, limit: try CheckCommand.milliseconds(maxTtff)) }
        for limit in maxPhase {
            let (name, value) = try CheckCommand.phaseLimit(limit)
            checkTime(name, limit: value)
        }
        func checkCount(_ noun: String, _ count: (Profile) -> Int, limit: Int) {
            let worst = runs.profiles.map(count).max() ?? 0
            let label = (many ? "The worst run has" : "The launch has") + " \(worst) \(noun)" + (worst == 1 ? "" : "s")
            if worst > limit {
                breaches.append("\(label), over the budget of \(limit).")
            } else {
                passes.append("\(label), within the budget of \(limit).")
            }
        }
        if let maxViolations {
            // Each record stands for every time its call site broke the rule.
            let count = { (profile: Profile) in profile.violations.reduce(0) { total, violation in
                let (sum, overflow) = total.addingReportingOverflow(max(violation.count, 1))
                return overflow ? Int.max : sum
            } }
            checkCount("thread violation", count, limit: maxViolations)
            // Where the worst run's code broke the rules, so the breach can be fixed from the log.
            if let worst = runs.profiles.max(by: { count($0) < count($1) }), count(worst) > maxViolations {
                for violation in worst.violations.prefix(5) { details.append("  \(worst.sentence(for: violation))") }
                if worst.violations.count > 5 { details.append("  … and \(worst.violations.count - 5) more call sites.") }
            }
        }
        if let maxHangs { checkCount("hang", { $0.hangs.count }, limit: maxHangs) }
        if let maxInstructions {
            let limit = try CheckCommand.instructions(maxInstructions)
            let counts: [Double]
            do {
                counts = try runs.counts().map { Double($0.instructions) }
            } catch let error as RunSetError {
                throw CLIError(error.description)
            }
            let shown = { (value: Double) in fmt(value / 1e6, digits: 2, fixed: true) + " M" }
            if counts.isEmpty {
                breaches.append(
                    "No run was counted, so the budget of \(shown(Double(limit))) instructions cannot be checked; record with --count instructions.")
            } else {
                let value = Statistics.median(counts)
                let label = counts.count > 1 ? "The median instructions to ready over \(counts.count) counted runs" : "Instructions to ready"
                if value > Double(limit) {
                    breaches.append("\(label) are \(shown(value)), over the budget of \(shown(Double(limit))).")
                } else {
                    passes.append("\(label) are \(shown(value)), within the budget of \(shown(Double(limit))).")
                }
            }
        }
        for limit in insight {
            // Every run's cost of the insight, found whatever its default threshold (0 when absent).
            var settings = InsightSettings()
            settings.thresholdsNs[limit.id] = 0
            let found = runs.profiles.map { Insights.of($0, settings: settings).first { $0.id == limit.id } }
            let costs = found.map { Double($0?.costNs ?? 0) / 1e6 }
            let value = Statistics.median(costs)
            let label = many ? "The median cost of \(limit.id) over \(costs.count) runs" : "The cost of \(limit.id)"
            let budget = fmt(Double(limit.ns) / 1e6)
            if value > Double(limit.ns) / 1e6 {
                breaches.append("\(label) is \(fmt(value)) ms, over its budget of \(budget) ms.")
                if let worst = found.compactMap({ $0 }).max(by: { $0.costNs < $1.costNs }) { details.append("  \(worst.finding)") }
            } else {
                passes.append("\(label) is \(fmt(value)) ms, within its budget of \(budget) ms.")
            }
        }
        for line in passes { try StandardOutput.print("ok: \(line)") }
        for line in breaches { try StandardOutput.print("over budget: \(line)") }
        for line in details { try StandardOutput.print(line) }
        if !breaches.isEmpty { throw ExitCode(2) }
    }

    /// `400ms`, `1.5s`, `800us`, `400` as milliseconds.
    static func milliseconds(_ text: String) throws -> Double {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        for (suffix, factor) in [("ms", 1.0), ("us", 0.001), ("µs", 0.001), ("ns", 1e-6), ("s", 1000.0)] where trimmed.hasSuffix(suffix) {
            if let value = Double(trimmed.dropLast(suffix.count).trimmingCharacters(in: .whitespaces)), value >= 0, value.isFinite {
                return value * factor
            }
        }
        if let value = Double(trimmed), value >= 0, value.isFinite { return value }
        throw ValidationError("'\(text)' is not a duration such as 400ms or 1.5s.")
    }

    /// `NAME=DURATION`.
    static func phaseLimit(_ text: String) throws -> (String, Double) {
        guard let equals = text.lastIndex(of: "=") else {
            throw ValidationError("--max-phase '\(text)' needs the form NAME=DURATION, for example pre-main=20ms.")
        }
        let name = text[..<equals].trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty else { throw ValidationError("--max-phase '\(text)' names no phase.") }
        return (name, try milliseconds(String(text[text.index(after: equals)...])))
    }
}
