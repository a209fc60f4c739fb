import Foundation

extension HistoryAnalysis {
    /// A value as the metric reads: milliseconds for times, a count for counters and instructions.
    public static func format(_ value: Double, metric: String) -> String {
        if metric == "instructions" || (metric.hasPrefix("counter: ") && !metric.hasSuffix(" ms")) {
            let magnitude = abs(value)
            if magnitude >= 1e9 { return String(format: "%.3f G", value / 1e9) }
            if magnitude >= 1e6 { return String(format: "%.2f M", value / 1e6) }
            if magnitude >= 1e3 { return String(format: "%.1f k", value / 1e3) }
            return String(format: "%.0f", value)
        }
        return String(format: value >= 100 ? "%.1f ms" : "%.2f ms", value)
    }

    /// A relative change as a signed percentage: `+6.4 %`.
    public static func percent(_ fraction: Double) -> String { String(format: "%+.1f %%", fraction * 100) }

    /// A p-value: four decimals, or scientific notation below 0.0001.
    public static func pValue(_ p: Double) -> String { p < 0.0001 ? String(format: "%.1e", p) : String(format: "%.4f", p) }

    /// A commit's first 12 characters.
    public static func shortCommit(_ commit: String) -> String { String(commit.prefix(12)) }

    /// `▁▂▄█` for the values, scaled between their least and most.
    public static func sparkline(_ values: [Double]) -> String {
        let bars = Array("▁▂▃▄▅▆▇█")
        let finite = values.filter(\.isFinite)
        guard let low = finite.min(), let high = finite.max(), high > low else { return String(repeating: "▄", count: values.count) }
        return String(
            values.map { value in
                // Scaled in two steps, so that a range wider than the largest double stays finite.
                let position = (value / 2 - low / 2) / (high / 2 - low / 2) * Double(bars.count - 1) + 0.5
                guard position.isFinite else { return "·" }
                return bars[min(bars.count - 1, max(0, Int(position)))]
            })
    }

    /// One line per change, the functions that changed with it indented below.
    func changeLines(_ change: Change) -> [String] {
        let p = change.point
        var lines = [
            "  at \(Self.shortCommit(change.commit)) (\(change.time)): \(Self.format(p.meanBefore, metric: change.metric)) → "
                + "\(Self.format(p.meanAfter, metric: change.metric)) (\(Self.percent(p.forwardChange)), p = \(Self.pValue(p.pValue)))"
        ]
        for function in change.functions {
            lines.append(
                "    \(function.name) [\(function.object)]: \(String(format: "%.2f", function.beforeMs)) → "
                    + "\(String(format: "%.2f", function.afterMs)) ms at \(Self.shortCommit(function.commit))")
        }
        return lines
    }

    /// The analysis for a terminal.
    public func text() -> String {
        var lines: [String] = []
        let settings = "window \(options.windowLength), p ≤ \(options.maxPValue), magnitude ≥ \(Self.percent(options.minMagnitude).dropFirst())"
        for (environment, count) in environments {
            lines.append("\(count) commits on \(environment.description) (environment \(environment.key)); \(settings).")
            let mine = series.filter { $0.environment == environment }
            let changed = mine.filter { !$0.changes.isEmpty }
            for entry in changed {
                lines.append("\(entry.metric): \(entry.changes.count == 1 ? "1 change point" : "\(entry.changes.count) change points")")
                for change in entry.changes { lines += changeLines(change) }
            }
            let quiet = mine.count - changed.count
            lines.append(changed.isEmpty ? "No change point in \(quiet) metrics." : "No change point in the \(quiet) other metrics.")
        }
        if environments.isEmpty { lines.append("No entries to analyze.") }
        for reason in skipped { lines.append("Skipped: \(reason)") }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The analysis as Markdown: a table of the changed metrics with a sparkline of their last 30 commits.
    public func markdown() -> String {
        var lines = ["## Launch history", ""]
        for (environment, count) in environments {
            lines.append("\(count) commits on \(environment.description).")
            lines.append("")
            let mine = series.filter { $0.environment == environment }
            let changed = mine.filter { !$0.changes.isEmpty }
            if changed.isEmpty {
                lines.append("No change point in \(mine.count) metrics.")
                lines.append("")
                continue
            }
            lines.append("| Metric | Last 30 commits | Change point | Before → after | Change | p | Functions |")
            lines.append("|---|---|---|---|---|---|---|")
            for entry in changed {
                let spark = Self.sparkline(entry.points.suffix(30).map(\.value))
                for change in entry.changes {
                    let p = change.point
                    let functions = change.functions.map { "`\(Self.escape($0.name))` \(String(format: "%+.2f ms", $0.afterMs - $0.beforeMs))" }
                        .joined(separator: ", ")
                    lines.append(
                        "| \(Self.escape(entry.metric)) | \(spark) | `\(Self.shortCommit(change.commit))` | "
                            + "\(Self.format(p.meanBefore, metric: entry.metric)) → \(Self.format(p.meanAfter, metric: entry.metric)) | "
                            + "\(Self.percent(p.forwardChange)) | \(Self.pValue(p.pValue)) | \(functions) |")
                }
            }
            lines.append("")
        }
        return lines.joined(separator: "\n")
    }

    /// Escapes what Markdown tables and inline code would read.
    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "|", with: "\\|").replacingOccurrences(of: "`", with: "'").replacingOccurrences(of: "<", with: "&lt;")
    }

    /// The analysis as JSON (`liftoff.history-analysis/1`).
    public func json() throws -> Data {
        struct Document: Encodable {
            var schema = "liftoff.history-analysis/1"
            var options: [String: Double]
            var environments: [Environment]
            var skipped: [String]
        }
        struct Environment: Encodable {
            var key: String
            var environment: HistoryEntry.Environment
            var commits: Int
            var metrics: [Metric]
        }
        struct Metric: Encodable {
            var name: String
            var points: Int
            var changes: [ChangeJSON]
        }
        struct ChangeJSON: Encodable {
            var commit: String
            var time: String
            var index: Int
            // Null where not finite (means of values near the largest double).
            var before: Double?
            var after: Double?
            var change: Double?
            var pValue: Double
            var regression: Bool
            var functions: [Function]
        }
        struct Function: Encodable {
            var name: String
            var object: String
            var beforeMs: Double?
            var afterMs: Double?
            var commit: String
        }
        func finite(_ value: Double) -> Double? { value.isFinite ? value : nil }
        let document = Document(
            options: ["windowLength": Double(options.windowLength), "maxPValue": options.maxPValue, "minMagnitude": options.minMagnitude],
            environments: environments.map { environment, count in
                Environment(
                    key: environment.key, environment: environment, commits: count,
                    metrics: series.filter { $0.environment == environment }.map { entry in
                        Metric(
                            name: entry.metric, points: entry.points.count,
                            changes: entry.changes.map { change in
                                ChangeJSON(
                                    commit: change.commit, time: change.time, index: change.index, before: finite(change.point.meanBefore),
                                    after: finite(change.point.meanAfter), change: finite(change.point.forwardChange),
                                    pValue: change.point.pValue.isFinite ? change.point.pValue : 1, regression: change.isRegression,
                                    functions: change.functions.map {
                                        Function(
                                            name: $0.name, object: $0.object, beforeMs: finite($0.beforeMs), afterMs: finite($0.afterMs),
                                            commit: $0.commit)
                                    })
                            })
                    })
            },
            skipped: skipped)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(document) + Data("\n".utf8)
    }
}
