import LiftoffComparison
import LiftoffProfile

/// A per-function comparison as text, Markdown and JSON (within `liftoff compare`'s outputs).
extension FunctionComparison {
    /// `extraWork (CPU) +20.1 ms per run (12.0 to 28.3), q = 0.0012`.
    static func sentence(_ row: Row) -> String {
        "\(row.name) (\(row.kind == .cpu ? "CPU" : "waiting")) \(signed(row.changeMs)) ms per run "
            + "(\(fmt(row.lowerMs, digits: 1, fixed: true)) to \(fmt(row.upperMs, digits: 1, fixed: true))), "
            + (row.qValue < 0.001 ? "q < 0.001" : "q = \(qText(row.qValue))")
    }

    /// ` — main.swift:12`, where the debug information says where the function is.
    static func placeText(_ row: Row) -> String {
        guard let file = row.file else { return "" }
        let name = file.split(separator: "/").last.map(String.init) ?? file
        return " — " + name + (row.line.map { ":\($0)" } ?? "")
    }

    /// `, with what it called 40.2 → 61.0 ms`: a CPU row's inclusive medians, where both sides have them.
    static func inclusiveText(_ row: Row) -> String {
        guard row.kind == .cpu, let base = row.baseTotalMs, let head = row.headTotalMs, base.isFinite, head.isFinite else { return "" }
        return ", with what it called \(msText(base)) → \(msText(head)) ms"
    }

    /// The Markdown cell of a row's inclusive medians: `40.2 → 61.0 ms`, or `–`.
    static func inclusiveCell(_ row: Row) -> String {
        guard row.kind == .cpu, let base = row.baseTotalMs, let head = row.headTotalMs, base.isFinite, head.isFinite else { return "–" }
        return "\(msText(base)) → \(msText(head)) ms"
    }

    static func signed(_ value: Double) -> String {
        guard value.isFinite else { return "–" }
        return (value >= 0 ? "+" : "") + fmt(value, digits: 1, fixed: true)
    }

    static func qText(_ value: Double) -> String {
        guard value.isFinite else { return "–" }
        if value >= 0.001 { return fmt(value, digits: 3, fixed: true) }
        return "< 0.001"
    }

    static func msText(_ value: Double?) -> String {
        guard let value, value.isFinite else { return "–" }
        return fmt(value, digits: 1, fixed: true)
    }

    /// The heading that says what was compared.
    var title: String {
        "Functions that changed" + (span.map { " in span '\($0)'" } ?? "")
    }

    /// Lines for a terminal: the functions that changed, largest change first.
    public func textLines(limit: Int = 15) -> [String] {
        let changed = changes
        let fdr = fmt(falseDiscoveryRate * 100)
        guard !changed.isEmpty else {
            return ["\(title): none at a false-discovery rate of \(fdr) % (\(rows.count) functions compared)."]
        }
        var lines = ["\(title) (false-discovery rate \(fdr) %, \(rows.count) functions compared):"]
        for row in changed.prefix(limit) {
            lines.append(
                "  \(row.verdict.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0)) \(Self.sentence(row))\(Self.inclusiveText(row))"
                    + Self.placeText(row))
        }
        if changed.count > limit { lines.append("  … and \(changed.count - limit) more (--format json lists every function).") }
        return lines
    }

    /// Markdown: the changes in a table, regressions first, with a link to the differential flame graph.
    public func markdownLines(limit: Int = 20, diffFlameGraph link: String? = nil) -> [String] {
        let fdr = fmt(falseDiscoveryRate * 100)
        let changed = changes.sorted { ($0.verdict == .regressed || $0.verdict == .added ? 0 : 1, -abs($0.changeMs)) < ($1.verdict == .regressed || $1.verdict == .added ? 0 : 1, -abs($1.changeMs)) }
        var lines = ["### \(title)", ""]
        guard !changed.isEmpty else {
            return lines + ["None at a false-discovery rate of \(fdr) % (\(rows.count) functions compared).", ""]
        }
        lines += [
            "| Function | Kind | Base median | Head median | Change per run | Interval | q | Verdict | With what it called |",
            "|---|---|---:|---:|---:|---:|---:|---|---:|",
        ]
        for row in changed.prefix(limit) {
            let verdict = row.verdict == .regressed || row.verdict == .added ? "**\(row.verdict.rawValue)**" : row.verdict.rawValue
            lines.append(
                "| \(MarkdownRenderer.cell(row.name + Self.placeText(row))) | \(row.kind == .cpu ? "CPU" : "waiting") | \(Self.msText(row.baseMedianMs)) ms | "
                    + "\(Self.msText(row.headMedianMs)) ms | \(Self.signed(row.changeMs)) ms | \(Self.msText(row.lowerMs)) to "
                    + "\(Self.msText(row.upperMs)) | \(Self.qText(row.qValue)) | \(verdict) | \(Self.inclusiveCell(row)) |")
        }
        if changed.count > limit { lines.append("") ; lines.append("… and \(changed.count - limit) more.") }
        lines.append("")
        var note = "\(rows.count) functions compared: CPU time (with the library work each asked for) and waiting time per run, a permutation test per "
            + "function, Benjamini–Hochberg at a false-discovery rate of \(fdr) %; the change is the Hodges–Lehmann shift "
            + "with its 95 % interval."
        if let link { note += " Where the samples moved: [differential flame graph](\(link))." }
        lines += [note, ""]
        return lines
    }

    /// The rows as a JSON array (every function compared).
    func writeJSON(_ json: inout JSONWriter) {
        json.raw("[")
        for (index, row) in rows.enumerated() {
            if index > 0 { json.raw(",") }
            json.raw("{")
            json.key("name")
            json.string(row.name)
            json.field("object", row.object)
            if let file = row.file { json.field("file", file) }
            if let line = row.line { json.field("line", line) }
            json.field("kind", row.kind.rawValue)
            json.field("baseMedianMs", row.baseMedianMs, digits: 6)
            json.field("headMedianMs", row.headMedianMs, digits: 6)
            if row.kind == .cpu {
                json.field("baseTotalMs", row.baseTotalMs, digits: 6)
                json.field("headTotalMs", row.headTotalMs, digits: 6)
            }
            json.field("changeMs", row.changeMs, digits: 6)
            json.field("lowerMs", row.lowerMs, digits: 6)
            json.field("upperMs", row.upperMs, digits: 6)
            json.field("pValue", row.pValue, digits: 6)
            json.field("qValue", row.qValue, digits: 6)
            json.field("verdict", row.verdict.rawValue)
            json.raw("}")
        }
        json.raw("]")
    }
}
