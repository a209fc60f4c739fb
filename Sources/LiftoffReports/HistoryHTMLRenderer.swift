import Foundation
import LiftoffHistory

/// The launch history as one HTML page that works offline: a chart per metric and environment,
/// its change points marked, each point's commit on hover; two points clicked open the comparison
/// of their commits (every metric, and the functions that moved most).
public enum HistoryHTMLRenderer {
    /// The page of `analysis`, whose `entries` the comparison reads.
    public static func render(_ analysis: HistoryAnalysis, entries: [HistoryEntry]) throws -> String {
        var body = "<h1>Launch history</h1>\n"
        for (environment, count) in analysis.environments {
            body += "<p class=\"meta\">\(count) commits on \(Markup.escape(environment.description)) (environment \(environment.key)); "
            body += "window \(analysis.options.windowLength), p ≤ \(analysis.options.maxPValue), "
            body += "magnitude ≥ \(String(format: "%.1f", analysis.options.minMagnitude * 100)) %. Click two points to compare their commits.</p>\n"
            let series = analysis.series.filter { $0.environment == environment }
            // Changed metrics first, then the rest, each group by name.
            for entry in series.filter({ !$0.changes.isEmpty }) + series.filter({ $0.changes.isEmpty }) {
                body += chart(entry)
            }
        }
        if analysis.environments.isEmpty { body += "<p>No entries.</p>\n" }
        body += "<div id=\"comparison\">Click a point, then another, to compare two commits.</div>\n"
        let page = HTMLPage(
            title: "Launch history", style: HTMLReportAssets.historyCSS, body: body, data: try data(entries),
            script: HTMLReportAssets.historyJS)
        return page.render()
    }

    /// The entries the script compares, as JSON safe inside HTML.
    static func data(_ entries: [HistoryEntry]) throws -> String {
        struct Data: Encodable {
            var entries: [Entry]
        }
        struct Entry: Encodable {
            var commit: String
            var time: String
            var metrics: [String: Double]
            var functions: [HistoryEntry.Function]
        }
        let ordered = HistoryEntry.inSeriesOrder(entries)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = String(decoding: try encoder.encode(Data(entries: ordered.map {
            Entry(commit: $0.commit, time: $0.time, metrics: $0.metrics, functions: $0.functions)
        })), as: UTF8.self)
        // `<`, `>` and `&` appear only inside JSON strings: escaped there, they cannot end the script.
        return json.replacingOccurrences(of: "<", with: "\\u003c").replacingOccurrences(of: ">", with: "\\u003e")
            .replacingOccurrences(of: "&", with: "\\u0026")
    }

    /// One metric's chart: the series, each change point as a dashed line with its change, and
    /// the mean before and after it.
    static func chart(_ series: HistoryAnalysis.Series) -> String {
        let width = 960.0, height = 170.0, left = 70.0, right = 20.0, top = 18.0, bottom = 22.0
        let values = series.points.map(\.value).filter(\.isFinite)
        var html = "<h2>\(Markup.escape(series.metric))</h2>\n"
        guard let low = values.min(), let high = values.max() else { return html + "<p>No values.</p>\n" }
        let span = high > low ? high / 2 - low / 2 : max(abs(high) / 2, 0.5)
        let base = high > low ? low : low - span
        let count = max(series.points.count - 1, 1)
        func x(_ index: Int) -> Double { left + (width - left - right) * Double(index) / Double(count) }
        func y(_ value: Double) -> Double {
            let position = (value / 2 - base / 2) / span
            return top + (height - top - bottom) * (1 - (position.isFinite ? min(max(position, 0), 1) : 0.5))
        }
        html += "<svg class=\"chart\" viewBox=\"0 0 \(Int(width)) \(Int(height))\" role=\"img\" aria-label=\"\(Markup.escape(series.metric))\">"
        html += "<text class=\"axis\" x=\"4\" y=\"\(f(top + 4))\">\(Markup.escape(HistoryAnalysis.format(high, metric: series.metric)))</text>"
        html += "<text class=\"axis\" x=\"4\" y=\"\(f(height - bottom))\">\(Markup.escape(HistoryAnalysis.format(low, metric: series.metric)))</text>"
        let line = series.points.enumerated().filter { $0.element.value.isFinite }.map { "\(f(x($0.offset))),\(f(y($0.element.value)))" }
        html += "<polyline class=\"series\" points=\"\(line.joined(separator: " "))\"/>"
        var start = 0
        for change in series.changes {
            let at = x(change.index)
            html += "<line class=\"change\" x1=\"\(f(at))\" x2=\"\(f(at))\" y1=\"\(f(top))\" y2=\"\(f(height - bottom))\"/>"
            html += "<line class=\"level\" x1=\"\(f(x(start)))\" x2=\"\(f(at))\" y1=\"\(f(y(change.point.meanBefore)))\" y2=\"\(f(y(change.point.meanBefore)))\"/>"
            let label = "\(HistoryAnalysis.percent(change.point.forwardChange)) at \(HistoryAnalysis.shortCommit(change.commit))"
            html += "<text class=\"label\" x=\"\(f(at + 4))\" y=\"\(f(top - 4))\">\(Markup.escape(label))</text>"
            start = change.index
        }
        if let last = series.changes.last {
            html += "<line class=\"level\" x1=\"\(f(x(last.index)))\" x2=\"\(f(x(series.points.count - 1)))\" "
            html += "y1=\"\(f(y(last.point.meanAfter)))\" y2=\"\(f(y(last.point.meanAfter)))\"/>"
        }
        for (index, point) in series.points.enumerated() where point.value.isFinite {
            html += "<circle class=\"point\" data-commit=\"\(Markup.escape(point.commit))\" cx=\"\(f(x(index)))\" cy=\"\(f(y(point.value)))\" r=\"3.5\">"
            html += "<title>\(Markup.escape("\(point.commit) · \(point.time) · \(HistoryAnalysis.format(point.value, metric: series.metric))"))</title></circle>"
        }
        html += "</svg>\n"
        for change in series.changes {
            let functions = change.functions.map { "\($0.name) \(String(format: "%+.2f ms", $0.afterMs - $0.beforeMs))" }.joined(separator: ", ")
            html += "<p class=\"meta\">\(Markup.escape(HistoryAnalysis.shortCommit(change.commit))): "
            html += "\(Markup.escape(HistoryAnalysis.format(change.point.meanBefore, metric: series.metric))) → "
            html += "\(Markup.escape(HistoryAnalysis.format(change.point.meanAfter, metric: series.metric))) "
            html += "(\(HistoryAnalysis.percent(change.point.forwardChange)), p = \(HistoryAnalysis.pValue(change.point.pValue)))"
            html += functions.isEmpty ? "</p>\n" : "; \(Markup.escape(functions))</p>\n"
        }
        return html
    }

    private static func f(_ value: Double) -> String { String(format: "%.1f", value) }
}
