import LiftoffAnalysis
import LiftoffProfile

/// Renders one self-contained HTML page: time to first frame against the target with a bar
/// of phases; an interactive flame graph (zoom, search, merged or per thread); a flame chart
/// per thread in time order with tasks, spans, the first frame, hangs and state changes; a
/// sortable task table; violations with their stacks; hangs; frames and background budgets.
///
/// The page loads nothing from the network. Its data sits in a JSON `<script>` element with
/// `<`, `>` and `&` written as `\u` escapes, and the page's script puts names into the page
/// as text only, so no name in a profile can add markup or script. Large profiles stay small
/// and quick: flame-graph nodes with fewer than `1 / 100,000` of the samples and flame-chart
/// bars shorter than `1 / 20,000` of their thread's time are merged into their parents, and
/// both are capped (`maxFlameNodes`, `maxBars`).
public struct HTMLReportRenderer: Sendable {
    /// The time-to-first-frame target the header compares against, in milliseconds. Nil: 400 ms
    /// for an app with a life cycle, and no target for any other program.
    public var targetMs: Double? = nil
    /// Most flame-graph nodes kept per tree (merged and per thread).
    public var maxFlameNodes = 40_000
    /// Most flame-chart bars kept over all threads.
    public var maxBars = 150_000

    /// Creates a renderer.
    public init() {}

    /// The HTML page for `profile`.
    public func render(_ profile: Profile) -> String {
        let data = dataJSON(profile)
        let title = "Liftoff launch report: " + (ReportText.programName(profile) ?? "launch")
        let body = "<div id=\"app\"><noscript>This report draws its views with JavaScript; "
            + "open it in a browser with scripts enabled.</noscript></div>\n"
        return HTMLPage(
            title: title, style: HTMLReportAssets.reportCSS, body: body, data: data, script: HTMLReportAssets.reportJS
        ).render()
    }

    /// The JSON the page's script reads (HTML-safe: it contains no `<`, `>` or `&`).
    func dataJSON(_ profile: Profile) -> String {
        var json = JSONWriter(htmlSafe: true, capacity: 1 << 16)
        var names = NameTable()
        let phases = profile.phases
        let program = ReportText.programName(profile) ?? "launch"
        let endNs = max(phases.endNs, profile.samples.timeNs.max() ?? 0)

        json.raw("{")
        json.key("title")
        json.string("Liftoff launch report: \(program)")
        json.nextKey("subtitle")
        json.string(
            [
                profile.metadata.host.name, profile.metadata.startTime, "\(profile.metadata.buildConfiguration) build",
                "\(ReportText.count(profile.samples.totalTicks, "sample")) at \(profile.metadata.samplingRateHz) Hz",
            ].filter { !$0.isEmpty }.joined(separator: " · "))
        json.field("targetMs", targetMs ?? (profile.hasLifeCycle ? 400 : nil))
        json.field("readyName", profile.readyName)
        json.field("ttffMs", profile.timeToFirstFrameNs.map { Double($0) / 1e6 })
        json.field("lifeCycle", profile.hasLifeCycle)
        json.field("durationMs", ReportTimeline.ms(endNs))
        json.field("preMain", phases.preMain.map { "\(Profile.PreMain.title): \($0.sentence)." })
        json.field("loader", phases.preMain?.loader.map { "\(Profile.Loader.title): \($0.sentence)." } ?? phases.preMain?.loaderNote)

        json.nextKey("phases")
        json.raw("[")
        let phaseList = Self.phaseBar(profile, endNs: endNs)
        for (index, phase) in phaseList.enumerated() {
            if index > 0 { json.raw(",") }
            json.raw("{")
            json.key("name")
            json.string(phase.0)
            json.field("startMs", ReportTimeline.ms(phase.1))
            json.field("endMs", ReportTimeline.ms(max(phase.2, phase.1)))
            json.raw("}")
        }
        json.raw("]")

        writeMarkers(&json, profile)

        // CPU trees count running samples; wall-clock trees count every sample and say which waited.
        var flame = JSONWriter(htmlSafe: true, capacity: 1 << 16)
        flame.raw("{")
        flame.key("merged")
        writeTree(&flame, FlameTree(profile: profile, rootName: "all"), names: &names)
        flame.nextKey("perThread")
        writeTree(&flame, FlameTree(profile: profile, rootName: "all", perThread: true), names: &names)
        flame.nextKey("mergedWall")
        writeTree(&flame, FlameTree(profile: profile, rootName: "all", samples: .wall), names: &names)
        flame.nextKey("perThreadWall")
        writeTree(&flame, FlameTree(profile: profile, rootName: "all", perThread: true, samples: .wall), names: &names)
        flame.raw("}")

        let insights = InsightReport(profile)
        var threads = JSONWriter(htmlSafe: true, capacity: 1 << 16)
        writeThreads(&threads, profile, path: insights.path, names: &names)

        json.nextKey("names")
        json.stringArray(names.names)
        // Entries of `names` that are Swift async functions of a task's logical stack.
        let asyncNames = Set(profile.frames.filter(\.isAsync).map(\.displayName))
        json.nextKey("asyncNames")
        json.intArray(names.names.indices.filter { asyncNames.contains(names.names[$0]) })
        // Per entry of `names` (null where there is nothing to add), for tooltips and search: the
        // full signature behind each short name, and where each function is and whether it was inlined.
        var full = [String: String]()
        var place = [String: String]()
        for frame in profile.frames {
            if frame.short != nil { full[frame.displayName] = frame.name }
            if place[frame.displayName] == nil, let description = Self.sourceNote(frame) {
                place[frame.displayName] = description
            }
        }
        for (key, values) in [("fullNames", full), ("locations", place)] as [(StaticString, [String: String])] {
            json.nextKey(key)
            json.raw("[")
            for (index, name) in names.names.enumerated() {
                if index > 0 { json.raw(",") }
                if let value = values[name] { json.string(value) } else { json.raw("null") }
            }
            json.raw("]")
        }
        json.nextKey("flame")
        json.raw(bytes: flame.bytes)
        json.nextKey("threads")
        json.raw(bytes: threads.bytes)
        json.nextKey("insights")
        insights.writeInsights(&json)
        json.nextKey("coverage")
        json.stringArray(insights.coverageLines())
        writeTasks(&json, profile)
        writeSpanRows(&json, profile)
        writeViolations(&json, profile)
        writeHangs(&json, profile)
        writeBudgets(&json, profile)
        let counts = profile.counts
        json.nextKey("counts")
        json.raw("{")
        json.key("signalsSent")
        json.int(counts.signalsSent)
        json.field("captured", counts.captured)
        json.field("dropped", counts.dropped)
        json.field("failed", counts.failed)
        json.field("skipped", counts.skipped)
        json.field("truncated", counts.truncated)
        json.field("waiting", counts.waiting)
        json.field("unanswered", counts.unanswered)
        json.field("threadsSeen", counts.threadsSeen)
        json.raw("}}")
        return json.text
    }

    private func writeMarkers(_ json: inout JSONWriter, _ profile: Profile) {
        var markers: [(kind: String, name: String, ns: UInt64, endNs: UInt64?)] = []
        if let firstFrame = profile.phases.firstFrameNs { markers.append(("firstFrame", profile.readyName, firstFrame, nil)) }
        for mark in profile.marks where mark.name != .firstFrame {
            markers.append(("mark", mark.name.rawValue, mark.timeNs, nil))
        }
        for change in profile.stateChanges {
            markers.append(("state", "\(change.from) → \(change.to)", change.timeNs, nil))
        }
        for hang in profile.hangs {
            markers.append(("hang", "hang: \(hang.running)", hang.startNs, hang.endNs))
        }
        if let termination = profile.termination {
            markers.append(("termination", "terminated: \(termination.reason)", termination.timeNs, nil))
        }
        json.nextKey("markers")
        json.raw("[")
        for (index, marker) in markers.sorted(by: { $0.ns < $1.ns }).enumerated() {
            if index > 0 { json.raw(",") }
            json.raw("{")
            json.key("kind")
            json.string(marker.kind)
            json.field("name", marker.name)
            json.field("timeMs", ReportTimeline.ms(marker.ns))
            json.field("endMs", marker.endNs.map(ReportTimeline.ms))
            json.raw("}")
        }
        json.raw("]")
    }

    /// A flame tree in preorder, dropping nodes with too few samples (they stay counted in
    /// their parent's total).
    private func writeTree(_ json: inout JSONWriter, _ tree: FlameTree, names: inout NameTable) {
        var minimum = max(1, tree.totalSamples / 100_000)
        let kept = tree.nodes.lazy.filter { $0.total >= minimum }.count
        let cap = max(maxFlameNodes, 1)
        if kept > cap {
            var totals = tree.nodes.map(\.total)
            totals.sort(by: >)
            minimum = max(minimum, totals[cap - 1] + 1)
        }
        var name: [Int] = []
        var total: [Int] = []
        var selfCount: [Int] = []
        var parent: [Int] = []
        var depth: [Int] = []
        var waiting: [Int] = []
        var runnable: [Int] = []
        var disk: [Int] = []
        var pending: [(node: Int, parent: Int)] = [(0, -1)]
        while let (index, parentPosition) = pending.popLast() {
            let node = tree.nodes[index]
            let position = name.count
            name.append(names.index(of: index == 0 ? "all" : node.name))
            total.append(node.total)
            selfCount.append(node.selfCount)
            parent.append(parentPosition)
            depth.append(node.depth)
            waiting.append(node.waiting)
            runnable.append(node.runnable)
            disk.append(node.disk)
            for child in node.children.reversed() where tree.nodes[child].total >= minimum {
                pending.append((child, position))
            }
        }
        json.raw("{")
        json.key("name")
        json.intArray(name)
        json.nextKey("total")
        json.intArray(total)
        json.nextKey("self")
        json.intArray(selfCount)
        json.nextKey("parent")
        json.intArray(parent)
        json.nextKey("depth")
        json.intArray(depth)
        if waiting.contains(where: { $0 > 0 }) {
            json.nextKey("waiting")
            json.intArray(waiting)
        }
        if runnable.contains(where: { $0 > 0 }) {
            json.nextKey("runnable")
            json.intArray(runnable)
        }
        if disk.contains(where: { $0 > 0 }) {
            json.nextKey("disk")
            json.intArray(disk)
        }
        json.raw("}")
    }

    private func writeTasks(_ json: inout JSONWriter, _ profile: Profile) {
        json.nextKey("tasks")
        json.raw("[")
        for (index, task) in profile.tasks.enumerated() {
            if index > 0 { json.raw(",") }
            json.raw("{")
            json.key("name")
            json.string(task.name)
            json.field("lane", task.lane.rawValue)
            json.field("status", task.status.rawValue)
            json.field("thread", ReportText.threadName(of: task, in: profile))
            json.field("queue", task.queue ?? "")
            json.field("startMs", task.startNs.map(ReportTimeline.ms))
            json.field("endMs", task.endNs.map(ReportTimeline.ms))
            json.field("durationMs", task.durationNs.map(ReportTimeline.ms))
            json.field("waitMs", ReportTimeline.ms(task.waitNs))
            json.field("cpuMs", task.cpuNs.map(ReportTimeline.ms))
            json.field("critical", task.onCriticalPath)
            json.field("slackMs", task.slackNs.map(ReportTimeline.ms))
            json.field("couldDefer", task.couldDefer)
            json.nextKey("dependencies")
            json.stringArray(task.dependencies)
            json.field("error", task.error)
            json.raw("}")
        }
        json.raw("]")
    }

    private func writeSpanRows(_ json: inout JSONWriter, _ profile: Profile) {
        json.nextKey("spanRows")
        json.raw("[")
        for (index, row) in SpanTable(profile).rows.enumerated() {
            if index > 0 { json.raw(",") }
            json.raw("{")
            json.key("name")
            json.string(row.name)
            json.field("category", row.category.rawValue)
            json.field("depth", row.depth)
            json.field("thread", row.thread)
            json.field("startMs", ReportTimeline.ms(row.startNs))
            json.field("durationMs", ReportTimeline.ms(row.durationNs))
            json.field("cpuMs", row.cpuNs.map(ReportTimeline.ms))
            if let samples = row.samples { json.field("samples", samples) }
            if let waiting = row.waitingSamples { json.field("waitingSamples", waiting) }
            if let tasks = row.childTasks { json.field("childTasks", tasks) }
            if let scheduled = row.scheduledNs { json.field("scheduledMs", ReportTimeline.ms(scheduled)) }
            if let attributes = row.attributes, !attributes.isEmpty {
                json.field("attributes", attributes.keys.sorted().map { "\($0)=\(attributes[$0] ?? "")" }.joined(separator: "  "))
            }
            json.raw("}")
        }
        json.raw("]")
    }

    /// `inlined · File.swift:42`, `async · File.swift:42`, `File.swift:42` or `inlined`: where a
    /// frame's code is, and how it ran.
    static func sourceNote(_ frame: Profile.Frame) -> String? {
        let parts = [frame.isAsync ? "async" : nil, frame.isInlined ? "inlined" : nil, frame.location].compactMap { $0 }
        return parts.isEmpty ? nil : parts.joined(separator: " · ")
    }

    /// A stack's names, leaf first, each with its file and line, from the first frame outside
    /// Liftoff (its own frames above the user's code are folded into one line saying how many).
    private func stackNames(_ stack: Int?, _ profile: Profile) -> [String] {
        guard let stack, stack >= 0, stack < profile.stacks.count else { return [] }
        let frames = profile.frameIndices(ofStack: stack).reversed().map { profile.frames[$0] }
        let own = frames.prefix { $0.isLiftoff }.count
        let described = frames.map { frame in
            Self.sourceNote(frame).map { "\(frame.displayName) — \($0)" } ?? frame.displayName
        }
        guard own > 0, own < frames.count else { return described }
        return ["(\(own) Liftoff frame\(own == 1 ? "" : "s"))"] + described.dropFirst(own)
    }

    private func writeViolations(_ json: inout JSONWriter, _ profile: Profile) {
        json.nextKey("violations")
        json.raw("[")
        for (index, violation) in profile.violations.enumerated() {
            if index > 0 { json.raw(",") }
            json.raw("{")
            json.key("rule")
            json.string(violation.rule.rawValue)
            json.field("message", violation.message)
            json.field("thread", "\(violation.threadName) (\(violation.threadID))")
            json.field("timeMs", ReportTimeline.ms(violation.timeNs))
            json.field("count", violation.count)
            json.nextKey("stack")
            json.stringArray(stackNames(violation.stack, profile))
            json.raw("}")
        }
        json.raw("]")
    }

    private func writeHangs(_ json: inout JSONWriter, _ profile: Profile) {
        json.nextKey("hangs")
        json.raw("[")
        for (index, hang) in profile.hangs.enumerated() {
            if index > 0 { json.raw(",") }
            json.raw("{")
            json.key("startMs")
            json.number(ReportTimeline.ms(hang.startNs))
            json.field("durationMs", ReportTimeline.ms(hang.durationNs))
            json.field("running", hang.running)
            json.field("stacks", hang.stacks.count)
            json.nextKey("topFrames")
            json.raw("[")
            for (position, entry) in HangDigest(hang, in: profile).topFrames.enumerated() {
                if position > 0 { json.raw(",") }
                json.raw("{")
                json.key("name")
                json.string(entry.name)
                json.field("count", entry.count)
                json.field("location", entry.location)
                json.raw("}")
            }
            json.raw("]}")
        }
        json.raw("]")
    }

    private func writeBudgets(_ json: inout JSONWriter, _ profile: Profile) {
        json.nextKey("budgets")
        json.raw("{")
        json.key("frames")
        json.raw("{")
        json.key("count")
        json.int(profile.displayFrames.count)
        json.field("slow", profile.slowFrameCount)
        json.field("frozen", profile.frozenFrameCount)
        json.raw("}")
        json.nextKey("background")
        json.raw("[")
        for (index, span) in profile.spans.filter({ $0.category == .backgroundTask }).enumerated() {
            if index > 0 { json.raw(",") }
            json.raw("{")
            json.key("name")
            json.string(span.name)
            json.field("startMs", ReportTimeline.ms(span.startNs))
            json.field("endMs", ReportTimeline.ms(span.endNs))
            json.field("durationMs", ReportTimeline.ms(span.durationNs))
            json.field("cpuMs", span.cpuNs.map(ReportTimeline.ms))
            json.raw("}")
        }
        json.raw("]")
        json.nextKey("states")
        json.raw("[")
        for (index, change) in profile.stateChanges.enumerated() {
            if index > 0 { json.raw(",") }
            json.raw("{")
            json.key("timeMs")
            json.number(ReportTimeline.ms(change.timeNs))
            json.field("from", change.from)
            json.field("to", change.to)
            json.raw("}")
        }
        json.raw("]")
        json.nextKey("termination")
        if let termination = profile.termination {
            json.raw("{")
            json.key("reason")
            json.string(termination.reason)
            json.field("phase", termination.phase)
            json.field("timeMs", ReportTimeline.ms(termination.timeNs))
            json.nextKey("stack")
            json.stringArray(stackNames(termination.stack, profile))
            json.raw("}")
        } else {
            json.raw("null")
        }
        json.raw("}")
    }
}
