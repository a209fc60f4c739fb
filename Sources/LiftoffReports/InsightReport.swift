import LiftoffAnalysis
import LiftoffProfile

/// A launch's insights as text for a terminal, Markdown and JSON (`liftoff explain`, the
/// summaries and the reports).
public struct InsightReport: Sendable {
    /// The insights, the costliest first.
    public var insights: [Insight]
    /// The launch's length, in nanoseconds.
    public var launchNs: UInt64
    /// How much of the launch the insights account for, when the launch was at hand.
    public var coverage: LaunchCoverage?
    /// The path to ready the insights followed, when the launch was at hand.
    public var path: LaunchPath?
    /// The label of each thread the path names: `worker (1234)`.
    var threadLabels: [Int: String] = [:]

    /// The insights of `profile`'s launch.
    public init(_ profile: Profile, settings: InsightSettings = InsightSettings()) {
        let launch = LaunchWindow(profile)
        insights = Insights.of(launch, settings: settings)
        launchNs = launch.lengthNs
        coverage = LaunchCoverage(launch, insights: insights)
        path = launch.path
        for thread in Set(launch.path.hops.flatMap { [$0.waiter, $0.holder] } + launch.path.stops.map(\.thread)) {
            threadLabels[thread] = profile.thread(withID: thread).map(FlameTree.threadLabel) ?? "thread \(thread)"
        }
    }

    /// Insights already found.
    public init(insights: [Insight], launchNs: UInt64) {
        self.insights = insights
        self.launchNs = launchNs
    }

    static func percent(_ share: Double) -> String { "\(Int((share * 100).rounded())) %" }

    /// `45 ms, 30 % of the launch; threshold 10 ms`.
    static func cost(_ insight: Insight) -> String {
        let threshold = insight.thresholdNs > 0 ? "; threshold \(LaunchWindow.ms(insight.thresholdNs))" : ""
        guard insight.costNs > 0 else { return "threshold: any" }
        return "\(LaunchWindow.ms(insight.costNs)), \(percent(insight.share)) of the launch\(threshold)"
    }

    /// `at 10.2–210.5 ms on main (1234)`.
    static func place(_ insight: Insight) -> String {
        let evidence = insight.evidence
        let range = "at \(fmt(Double(evidence.startNs) / 1e6))–\(fmt(Double(evidence.endNs) / 1e6)) ms"
        return evidence.thread.map { "\(range) on \($0)" } ?? range
    }

    /// One line per stack: `pthread_mutex_lock ← load_config — app.c:12`.
    static func stackLine(_ stack: Insight.StackEvidence) -> String {
        let frames = stack.frames.count > 6 ? Array(stack.frames.prefix(3)) + ["…"] + stack.frames.suffix(2) : stack.frames
        let time = stack.ns > 0 ? " (\(LaunchWindow.ms(stack.ns)))" : ""
        return frames.joined(separator: " ← ") + time
    }

    /// `Explained: 250 ms of the 280 ms launch (89 %).`, then, below 80 % (and 10 ms), what is left:
    /// `Unexplained: 40 ms, mostly running in loadPlugins — main.swift:12 (30 ms).`
    public func coverageLines() -> [String] {
        guard let coverage, coverage.launchNs >= LaunchCoverage.worthSaying else { return [] }
        let ms = LaunchWindow.ms
        var lines = ["Explained: \(ms(coverage.explainedNs)) of the \(ms(coverage.launchNs)) launch (\(Self.percent(coverage.share)))."]
        if coverage.share < LaunchCoverage.enough, coverage.unexplainedNs >= LaunchCoverage.worthSaying / 2,
            let top = coverage.unexplained.first
        {
            var line = "Unexplained: \(ms(coverage.unexplainedNs)), mostly \(top.what) (\(ms(top.ns)))"
            for part in coverage.unexplained.dropFirst() { line += "; \(part.what) (\(ms(part.ns)))" }
            lines.append(line + ".")
        }
        return lines
    }

    /// The waits the path to ready followed from thread to thread, and where it stopped:
    /// `Path to ready: main (1) waited for worker (2) at 10–70 ms, which ran.` and
    /// `The path stops at main (1), 120–150 ms: no thread in the samples held it.` Nothing when
    /// the path stayed on one thread and followed every wait it met.
    public func pathLines() -> [String] {
        guard let path, !path.hops.isEmpty || !path.stops.isEmpty else { return [] }
        let label = { (thread: Int) in threadLabels[thread] ?? "thread \(thread)" }
        let range = { (start: UInt64, end: UInt64) in "\(fmt(Double(start) / 1e6))–\(fmt(Double(end) / 1e6)) ms" }
        var lines: [String] = []
        if !path.hops.isEmpty {
            let shown = path.hops.prefix(Self.pathLimit).map {
                "\(label($0.waiter)) waited for \(label($0.holder)) at \(range($0.startNs, $0.endNs)), which \($0.ran ? "ran" : "waited too")"
            }
            let more = path.hops.count > Self.pathLimit ? "; and \(path.hops.count - Self.pathLimit) more" : ""
            lines.append("Path to ready: " + shown.joined(separator: "; ") + more + ".")
        }
        for stop in path.stops.prefix(Self.pathLimit) {
            lines.append("The path stops at \(label(stop.thread)), \(range(stop.startNs, stop.endNs)): \(stop.reason.rawValue).")
        }
        if path.stops.count > Self.pathLimit { lines.append("… and \(path.stops.count - Self.pathLimit) more stops.") }
        return lines
    }

    /// How many hops and stops of the path the text and Markdown list.
    static let pathLimit = 5

    /// Text for a terminal: the insights numbered, each with its cost, place, stacks and notes.
    public func text(limit: Int = .max, details: Bool = true) -> String {
        guard !insights.isEmpty else {
            return (["No insight fired: no wait, load, runtime or scheduling cost of the launch reached its threshold."]
                + coverageLines()).joined(separator: "\n") + "\n"
        }
        var lines = ["Why the launch took \(LaunchWindow.ms(launchNs)), the costliest first:"]
        for (index, insight) in insights.prefix(limit).enumerated() {
            lines.append("\(index + 1). [\(insight.id)] \(insight.finding)")
            lines.append("   \(Self.cost(insight)), \(Self.place(insight)).")
            guard details else { continue }
            for stack in insight.evidence.stacks { lines.append("   stack: \(Self.stackLine(stack))") }
            for note in insight.evidence.notes { lines.append("   \(note)") }
        }
        if insights.count > limit { lines.append("… and \(insights.count - limit) more: liftoff explain PROFILE.") }
        if details { lines += pathLines() }
        lines += coverageLines()
        return lines.joined(separator: "\n") + "\n"
    }

    /// Markdown: a numbered list, each insight with its cost, place, the code to look at and why it
    /// matters; with `report`, the HTML report's file beside it, a link to each insight's moment on
    /// its timeline.
    public func markdown(heading: String = "## Insights", report: String? = nil) -> [String] {
        var lines = [heading, ""]
        let coverage = coverageLines().map(MarkdownRenderer.inline)
        guard !insights.isEmpty else {
            return lines + ["No insight fired: no wait, load, runtime or scheduling cost of the launch reached its threshold."]
                + coverage.map { "\n\($0)" } + [""]
        }
        for (index, insight) in insights.enumerated() {
            lines.append("\(index + 1). **\(MarkdownRenderer.inline(insight.title))** (`\(insight.id)`): \(MarkdownRenderer.inline(insight.finding))")
            let evidence = insight.evidence
            let link = report.map {
                " ([timeline](\($0)#t=\(fmt(Double(evidence.startNs) / 1e6, digits: 3, fixed: true))-\(fmt(Double(evidence.endNs) / 1e6, digits: 3, fixed: true))))"
            } ?? ""
            lines.append("   \(MarkdownRenderer.inline(Self.cost(insight))), \(MarkdownRenderer.inline(Self.place(insight)))\(link).")
            if let code = insight.evidence.stacks.first(where: { $0.programFrame != nil })?.programFrame {
                lines.append("   Look at `\(MarkdownRenderer.code(code))`.")
            }
            for note in insight.evidence.notes.prefix(3) { lines.append("   \(MarkdownRenderer.inline(note))") }
            lines.append("   *\(MarkdownRenderer.inline(insight.why))*")
        }
        let path = pathLines().map(MarkdownRenderer.inline)
        if !path.isEmpty { lines += [""] + path }
        if !coverage.isEmpty { lines += [""] + coverage }
        lines.append("")
        return lines
    }

    /// JSON for other tools (`liftoff.insights/1`): times in milliseconds from the process start.
    public func json() -> String {
        var json = JSONWriter(capacity: 4096)
        json.raw("{")
        json.key("schema")
        json.string("liftoff.insights/1")
        json.field("launchMs", Double(launchNs) / 1e6, digits: 3)
        json.nextKey("insights")
        writeInsights(&json)
        if let coverage {
            json.nextKey("coverage")
            json.raw("{")
            json.key("explainedMs")
            json.number(Double(coverage.explainedNs) / 1e6, digits: 3)
            json.field("share", coverage.share, digits: 4)
            json.nextKey("unexplained")
            json.raw("[")
            for (index, part) in coverage.unexplained.enumerated() {
                if index > 0 { json.raw(",") }
                json.raw("{")
                json.key("what")
                json.string(part.what)
                json.field("ms", Double(part.ns) / 1e6, digits: 3)
                json.raw("}")
            }
            json.raw("]}")
        }
        if let path {
            let label = { (thread: Int) in threadLabels[thread] ?? "thread \(thread)" }
            json.nextKey("path")
            json.raw("{")
            json.key("hops")
            json.objectArray(path.hops) { json, hop in
                json.key("waiter")
                json.string(label(hop.waiter))
                json.field("holder", label(hop.holder))
                json.field("startMs", Double(hop.startNs) / 1e6, digits: 3)
                json.field("endMs", Double(hop.endNs) / 1e6, digits: 3)
                json.field("holderRan", hop.ran)
            }
            json.nextKey("stops")
            json.objectArray(path.stops) { json, stop in
                json.key("thread")
                json.string(label(stop.thread))
                json.field("startMs", Double(stop.startNs) / 1e6, digits: 3)
                json.field("endMs", Double(stop.endNs) / 1e6, digits: 3)
                json.field("reason", stop.reason.rawValue)
            }
            json.raw("}")
        }
        json.raw("}\n")
        return json.text
    }

    /// The insights as a JSON array: the HTML report's `insights` and `liftoff explain --format json`'s.
    func writeInsights(_ json: inout JSONWriter) {
        json.raw("[")
        for (index, insight) in insights.enumerated() {
            if index > 0 { json.raw(",") }
            let evidence = insight.evidence
            json.raw("{")
            json.key("id")
            json.string(insight.id)
            json.field("title", insight.title)
            json.field("finding", insight.finding)
            json.field("costMs", Double(insight.costNs) / 1e6, digits: 3)
            json.field("share", insight.share, digits: 4)
            json.field("thresholdMs", Double(insight.thresholdNs) / 1e6, digits: 3)
            json.field("why", insight.why)
            json.field("thread", evidence.thread)
            json.field("startMs", Double(evidence.startNs) / 1e6, digits: 3)
            json.field("endMs", Double(evidence.endNs) / 1e6, digits: 3)
            json.nextKey("stacks")
            json.raw("[")
            for (position, stack) in evidence.stacks.enumerated() {
                if position > 0 { json.raw(",") }
                json.raw("{")
                json.key("frames")
                json.stringArray(stack.frames)
                json.field("ms", Double(stack.ns) / 1e6, digits: 3)
                json.field("programFrame", stack.programFrame)
                json.raw("}")
            }
            json.raw("]")
            json.nextKey("notes")
            json.stringArray(evidence.notes)
            json.raw("}")
        }
        json.raw("]")
    }
}
