import Foundation
import LiftoffComparison
import LiftoffProfile

/// A comparison as text for a terminal, Markdown for a pull request and JSON for other tools.
extension LaunchComparison {
    /// One sentence on the gated outcome.
    public var headline: String {
        if let instructions, gated.contains(LaunchComparison.instructionsMetric),
            instructions.verdict == verdict || !metrics.contains(where: { gated.contains($0.metric) && $0.verdict == verdict })
        {
            return instructions.headline
        }
        let gatedMetrics = metrics.filter { gated.contains($0.metric) }
        let focus = gatedMetrics.first { $0.verdict == verdict } ?? gatedMetrics.first
        guard let focus else { return "Nothing was compared." }
        let change = LaunchComparison.percent(focus.ratio)
        let numbers = "\(focus.metric) \(LaunchComparison.amount(focus.baseMedian, focus.metric)) → "
            + "\(LaunchComparison.amount(focus.headMedian, focus.metric)) "
            + "(\(change), p = \(LaunchComparison.pValue(focus.pValue)), \(base.runs) base and \(head.runs) head runs)"
        // What changed most, when the launch did: the function, by how much, how sure.
        let culprit = functions.changes.first { verdict == .regressed ? $0.changeMs > 0 : $0.changeMs < 0 }
        let named = culprit.map { " Most of it: \(FunctionComparison.sentence($0))." } ?? ""
        switch verdict {
        case .regressed: return "Launch time regressed: \(numbers).\(named)"
        case .improved: return "Launch time improved: \(numbers).\(named)"
        case .unchanged: return "Launch time unchanged: \(numbers); the threshold is ±\(fmt(settings.threshold * 100))%."
        case .inconclusive:
            return "Inconclusive: \(numbers). The runs cannot tell a change of \(fmt(settings.threshold * 100))% from noise; record more runs."
        }
    }

    /// A plain-text table for a terminal.
    public func text() -> String {
        var lines = [headline, ""]
        let header = ["metric", "base median", "head median", "ratio", "\(fmt(settings.confidence * 100))% interval", "p", "verdict"]
        var rows = [header]
        for metric in shownMetrics {
            rows.append([
                metric.metric + (gated.contains(metric.metric) ? " *" : ""), LaunchComparison.amount(metric.baseMedian, metric.metric),
                LaunchComparison.amount(metric.headMedian, metric.metric), LaunchComparison.ratio(metric.ratio),
                "\(LaunchComparison.ratio(metric.lower)) – \(LaunchComparison.ratio(metric.upper))",
                LaunchComparison.pValue(metric.pValue), metric.verdict.rawValue,
            ])
        }
        let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        for row in rows {
            lines.append(
                row.enumerated().map { column, cell in
                    column == 0 || column == row.count - 1
                        ? cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
                        : String(repeating: " ", count: widths[column] - cell.count) + cell
                }.joined(separator: "  ").trimmingCharacters(in: .whitespaces))
        }
        lines.append("")
        if let instructions {
            lines += instructions.textLines()
            lines.append("")
        }
        lines += functions.textLines()
        lines.append("")
        if !insights.isEmpty {
            lines.append("Insights that appeared or grew in head (liftoff explain shows them whole):")
            for change in insights { lines.append("  \(change.id): \(LaunchComparison.insightChange(change)). \(change.finding)") }
            lines.append("")
        }
        lines.append(
            "* decides the verdict. Base: \(base.runs) runs in \(base.folder)" + (base.failed > 0 ? " (\(base.failed) failed)" : "")
                + "; head: \(head.runs) runs in \(head.folder)" + (head.failed > 0 ? " (\(head.failed) failed)" : "") + ".")
        lines.append(
            "Threshold ±\(fmt(settings.threshold * 100))%, Mann–Whitney U at α = \(fmt(settings.alpha, digits: 3)), "
                + "bootstrap interval of the ratio of medians.")
        return lines.joined(separator: "\n") + "\n"
    }

    /// Markdown for a pull-request comment, under `limit` characters; `diffFlameGraph` is where
    /// the differential flame graph's page is, to link to.
    public func markdown(limit: Int = 65_000, diffFlameGraph: String? = nil) -> String {
        let icon: String
        switch verdict {
        case .regressed: icon = "🔴"
        case .improved: icon = "🟢"
        case .unchanged: icon = "⚪"
        case .inconclusive: icon = "🟡"
        }
        var lines = ["## \(icon) Liftoff launch comparison: \(verdict.rawValue)", "", MarkdownRenderer.inline(headline), ""]
        lines.append("| Metric | Base median | Head median | Change | \(fmt(settings.confidence * 100))% interval | p | Verdict |")
        lines.append("|---|---:|---:|---:|---:|---:|---|")
        for metric in shownMetrics {
            let name = MarkdownRenderer.cell(metric.metric) + (gated.contains(metric.metric) ? " (gated)" : "")
            let verdictText = metric.verdict == .regressed ? "**regressed**" : metric.verdict.rawValue
            lines.append(
                "| \(name) | \(LaunchComparison.amount(metric.baseMedian, metric.metric)) | "
                    + "\(LaunchComparison.amount(metric.headMedian, metric.metric)) | "
                    + "\(LaunchComparison.percent(metric.ratio)) | \(LaunchComparison.percent(metric.lower)) to "
                    + "\(LaunchComparison.percent(metric.upper)) | \(LaunchComparison.pValue(metric.pValue)) | \(verdictText) |")
        }
        lines.append("")
        if !insights.isEmpty {
            lines += ["### Insights that appeared or grew", "", "| Insight | Base median | Head median | Runs | Finding (head's costliest run) |", "|---|---:|---:|---|---|"]
            for change in insights {
                lines.append(
                    "| \(MarkdownRenderer.cell(change.title)) (`\(change.id)`) | \(LaunchComparison.ms(change.baseMedianMs)) | "
                        + "\(LaunchComparison.ms(change.headMedianMs)) | \(change.appeared ? "appeared: " : "")"
                        + "\(change.headRuns.fired) of \(change.headRuns.of) head runs, \(change.baseRuns.fired) of \(change.baseRuns.of) base | "
                        + "\(MarkdownRenderer.cell(change.finding)) |")
            }
            lines.append("")
        }
        if let instructions { lines += instructions.markdownLines() }
        lines += functions.markdownLines(diffFlameGraph: diffFlameGraph)
        lines.append(
            "\(base.runs) base and \(head.runs) head runs" + (base.failed + head.failed > 0 ? " (\(base.failed + head.failed) failed runs left out)" : "")
                + ". Threshold ±\(fmt(settings.threshold * 100))%, two-sided Mann–Whitney U at α = \(fmt(settings.alpha, digits: 3)).")
        return MarkdownRenderer.bounded(lines, limit: limit)
    }

    /// JSON for other tools: the verdict, the settings and every metric (nan as null).
    public func json() -> String {
        var json = JSONWriter()
        json.raw("{")
        json.key("schema")
        json.string("liftoff.compare/1")
        json.field("verdict", verdict.rawValue)
        json.field("headline", headline)
        json.field("threshold", settings.threshold, digits: 6)
        json.field("alpha", settings.alpha, digits: 6)
        json.field("confidence", settings.confidence, digits: 6)
        for (key, side) in [("base", base), ("head", head)] {
            json.raw(",")
            json.string(key)
            json.raw(":{")
            json.key("folder")
            json.string(side.folder)
            json.field("runs", side.runs)
            json.field("failed", side.failed)
            json.raw("}")
        }
        json.nextKey("metrics")
        json.raw("[")
        for (index, metric) in metrics.enumerated() {
            if index > 0 { json.raw(",") }
            json.raw("{")
            json.key("metric")
            json.string(metric.metric)
            json.field("gated", gated.contains(metric.metric))
            json.field("baseCount", metric.baseCount)
            json.field("headCount", metric.headCount)
            json.field("baseMedianMs", metric.baseMedian, digits: 6)
            json.field("headMedianMs", metric.headMedian, digits: 6)
            json.field("ratio", metric.ratio, digits: 6)
            json.field("lower", metric.lower, digits: 6)
            json.field("upper", metric.upper, digits: 6)
            json.nextKey("pValue")
            json.raw(bytes: Array(LaunchComparison.pValue(metric.pValue, json: true).utf8))
            json.field("verdict", metric.verdict.rawValue)
            json.raw("}")
        }
        json.raw("]")
        if let instructions {
            json.nextKey("instructions")
            instructions.writeJSON(&json)
        }
        json.field("falseDiscoveryRate", settings.falseDiscoveryRate, digits: 6)
        if let span = functions.span { json.field("functionSpan", span) }
        json.nextKey("functions")
        functions.writeJSON(&json)
        json.nextKey("insights")
        json.raw("[")
        for (index, change) in insights.enumerated() {
            if index > 0 { json.raw(",") }
            json.raw("{")
            json.key("id")
            json.string(change.id)
            json.field("title", change.title)
            json.field("baseMedianMs", change.baseMedianMs, digits: 6)
            json.field("headMedianMs", change.headMedianMs, digits: 6)
            json.field("baseFired", change.baseRuns.fired)
            json.field("headFired", change.headRuns.fired)
            json.field("appeared", change.appeared)
            json.field("finding", change.finding)
            json.raw("}")
        }
        json.raw("]}\n")
        return json.text
    }

    /// The metrics a table lists: every one asked for, and of the kernel's counters (always
    /// compared) those that regressed or improved, unless all were asked for.
    var shownMetrics: [MetricComparison] {
        metrics.filter { metric in
            !metric.metric.hasPrefix("counter: ") || listsAllCounters || gated.contains(metric.metric)
                || metric.verdict == .regressed || metric.verdict == .improved
        }
    }

    /// A metric's value with its unit: milliseconds, or for a counter its count (bytes in kB or MB).
    static func amount(_ value: Double, _ metric: String) -> String {
        guard metric.hasPrefix("counter: "), value.isFinite else { return ms(value) }
        if metric.hasSuffix(" ms") { return ms(value) }
        if metric.contains("bytes") {
            if value >= 1e6 { return fmt(value / 1e6, digits: 1, fixed: true) + " MB" }
            if value >= 1e3 { return fmt(value / 1e3, digits: 1, fixed: true) + " kB" }
            return fmt(value, digits: 0, fixed: true) + " B"
        }
        return fmt(value, digits: value == value.rounded() ? 0 : 1, fixed: true)
    }

    static func ms(_ value: Double) -> String {
        guard value.isFinite else { return "–" }
        return fmt(value, digits: value < 1 ? 3 : 1, fixed: true) + " ms"
    }

    /// `0.0 ms → 200.0 ms, appeared in 5 of 5 head runs` or `… grew, in 5 of 5 head runs`.
    static func insightChange(_ change: InsightChange) -> String {
        if change.id == InsightChange.coldPenaltyID { return "time to ready \(ms(change.baseMedianMs)) → \(ms(change.headMedianMs)) median" }
        return "\(ms(change.baseMedianMs)) → \(ms(change.headMedianMs)) median, "
            + "\(change.appeared ? "appeared" : "grew"), in \(change.headRuns.fired) of \(change.headRuns.of) head runs"
    }

    static func ratio(_ value: Double) -> String { value.isFinite ? fmt(value, digits: 3, fixed: true) + "×" : "–" }

    static func percent(_ ratio: Double) -> String {
        guard ratio.isFinite else { return "–" }
        let change = (ratio - 1) * 100
        return (change >= 0 ? "+" : "") + fmt(change, digits: 1, fixed: true) + "%"
    }

    /// A p-value with three significant digits (`0.00996`, `1.23e-07`); in JSON, every digit.
    static func pValue(_ value: Double, json: Bool = false) -> String {
        guard value.isFinite else { return json ? "null" : "–" }
        if json { return "\(value)" }
        if value == 0 || value >= 1 { return fmt(value, digits: 3) }
        if value >= 0.001 { return String(format: "%.3g", value) }
        return String(format: "%.2e", value)
    }
}
