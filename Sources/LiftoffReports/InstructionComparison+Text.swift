import LiftoffComparison
import LiftoffProfile

/// Counted launches compared, as text, Markdown and JSON (within `liftoff compare`'s outputs).
extension InstructionComparison {
    /// `18.31 M`.
    static func millions(_ value: Double) -> String { fmt(value / 1e6, digits: 2, fixed: true) + " M" }

    /// `+0.18 M`.
    static func signedMillions(_ value: Double) -> String { (value >= 0 ? "+" : "−") + millions(abs(value)) }

    /// `+1.0 %`.
    var percent: String {
        guard change.isFinite else { return "–" }
        return (change >= 0 ? "+" : "−") + fmt(abs(change) * 100, digits: 2, fixed: true) + " %"
    }

    /// `extra_work — cnt.c`.
    static func place(_ function: FunctionChange) -> String {
        let file = function.file.flatMap { $0.split(separator: "/").last.map(String.init) }
        return function.name + (file.map { " — \($0)" } ?? "")
    }

    /// The sentence on the counts: `Instructions to ready +0.99 % (18.13 M → 18.31 M; 3 and 3
    /// counted runs, spread 0.00 %); most of it: extra_work +0.18 M.`
    var sentence: String {
        let spread = fmt(max(baseSpread, headSpread) * 100, digits: 2, fixed: true)
        var text = "Instructions to ready \(percent) (\(Self.millions(baseMedian)) → \(Self.millions(headMedian)); "
            + "\(base.count) and \(head.count) counted runs, spread \(spread) %)"
        if verdict != .unchanged, let top = functions.first {
            text += "; most of it: \(Self.place(top)) \(Self.signedMillions(top.change))"
        }
        return text + "."
    }

    /// The headline when the counts decide.
    var headline: String {
        switch verdict {
        case .regressed: return "Launch instructions regressed: " + sentence
        case .improved: return "Launch instructions improved: " + sentence
        case .unchanged: return "Launch instructions unchanged: \(sentence) The threshold is ±\(fmt(threshold * 100))%."
        case .inconclusive:
            let spread = fmt(max(baseSpread, headSpread) * 100, digits: 2, fixed: true)
            return "Inconclusive: \(sentence) Counts vary by \(spread) % from run to run: the launch is not deterministic "
                + "(it polls a clock, races its threads or its exit), so a change this small cannot be told from that."
        }
    }

    /// Lines for a terminal: the counts, then the functions that changed most.
    func textLines(limit: Int = 10) -> [String] {
        var lines = [sentence]
        let changed = functions.prefix(limit)
        if !changed.isEmpty {
            lines.append("Functions whose own instructions changed most (median per launch; inclusive: with what they called):")
            for function in changed {
                lines.append(
                    "  \(Self.signedMillions(function.change))  \(Self.place(function))  (\(Self.millions(function.base)) → "
                        + "\(Self.millions(function.head)); inclusive \(Self.signedMillions(function.inclusiveChange)))")
            }
        }
        return lines
    }

    /// Markdown: the counts and a table of the functions that changed most.
    func markdownLines(limit: Int = 15) -> [String] {
        var lines = ["### Counted instructions", "", MarkdownRenderer.inline(sentence), ""]
        let changed = functions.prefix(limit)
        guard !changed.isEmpty else { return lines }
        lines += ["| Function | Object | Base | Head | Change | Inclusive change |", "|---|---|---:|---:|---:|---:|"]
        for function in changed {
            lines.append(
                "| \(MarkdownRenderer.cell(Self.place(function))) | \(MarkdownRenderer.cell(function.object)) | "
                    + "\(Self.millions(function.base)) | \(Self.millions(function.head)) | \(Self.signedMillions(function.change)) | "
                    + "\(Self.signedMillions(function.inclusiveChange)) |")
        }
        lines.append("")
        return lines
    }

    /// JSON: the counts of every run, the verdict, and the functions that changed.
    func writeJSON(_ json: inout JSONWriter, limit: Int = 200) {
        json.raw("{")
        json.key("verdict")
        json.string(verdict.rawValue)
        json.nextKey("base")
        json.intArray(base.map { Int(clamping: $0) })
        json.nextKey("head")
        json.intArray(head.map { Int(clamping: $0) })
        json.field("baseMedian", baseMedian, digits: 1)
        json.field("headMedian", headMedian, digits: 1)
        json.field("change", change, digits: 6)
        json.field("baseSpread", baseSpread, digits: 6)
        json.field("headSpread", headSpread, digits: 6)
        json.field("threshold", threshold, digits: 6)
        json.nextKey("functions")
        json.raw("[")
        for (index, function) in functions.prefix(limit).enumerated() {
            if index > 0 { json.raw(",") }
            json.raw("{")
            json.key("name")
            json.string(function.name)
            json.field("object", function.object)
            if let file = function.file { json.field("file", file) }
            json.field("base", function.base, digits: 1)
            json.field("head", function.head, digits: 1)
            json.field("change", function.change, digits: 1)
            json.field("baseInclusive", function.baseInclusive, digits: 1)
            json.field("headInclusive", function.headInclusive, digits: 1)
            json.field("inclusiveChange", function.inclusiveChange, digits: 1)
            json.raw("}")
        }
        json.raw("]}")
    }
}
