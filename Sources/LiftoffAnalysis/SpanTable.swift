import LiftoffProfile

/// The spans of a profile as launch metrics, for the summaries: each span (not callbacks,
/// launch tasks or background tasks, which have tables of their own) in start order, nested
/// under its parent, with its duration, CPU time and samples, and the Swift tasks it started with
/// how long their jobs waited to run.
package struct SpanTable {
    /// One span.
    package struct Row {
        package var name: String
        package var category: Profile.SpanCategory
        /// How many spans of the table enclose it.
        package var depth: Int
        package var thread: String
        package var startNs: UInt64
        package var durationNs: UInt64
        package var cpuNs: UInt64?
        /// Running samples.
        package var samples: Int?
        package var waitingSamples: Int?
        package var attributes: [String: String]?
        /// Swift tasks it started, transitively.
        package var childTasks: Int?
        /// How long its jobs waited to run after they were enqueued, in total.
        package var scheduledNs: UInt64?
    }

    /// Whether any row has Swift task figures (so the tables show those columns).
    package var hasTaskFigures: Bool { rows.contains { $0.childTasks != nil || $0.scheduledNs != nil } }

    package let rows: [Row]

    package init(_ profile: Profile) {
        let spans = profile.spans
        let shown = spans.indices.filter { spans[$0].isSpanMetric }
        let shownSet = Set(shown)
        // The nearest enclosing span of the table (bounded: a malformed profile's links may loop).
        func shownParent(of index: Int) -> Int? {
            var parent = spans[index].parent
            var steps = 0
            while let at = parent, steps <= spans.count {
                guard spans.indices.contains(at) else { return nil }
                if shownSet.contains(at) { return at }
                parent = spans[at].parent
                steps += 1
            }
            return nil
        }
        var children: [Int?: [Int]] = [:]
        for index in shown { children[shownParent(of: index), default: []].append(index) }
        for key in children.keys { children[key]?.sort { spans[$0].startNs < spans[$1].startNs } }
        // Parents before their children: a depth-first walk in start order.
        var order: [(index: Int, depth: Int)] = []
        var visited = Set<Int>()
        var pending: [(index: Int, depth: Int)] = (children[nil] ?? []).reversed().map { ($0, 0) }
        while let (index, depth) = pending.popLast() {
            guard visited.insert(index).inserted else { continue }
            order.append((index, depth))
            pending.append(contentsOf: (children[index] ?? []).reversed().map { ($0, depth + 1) })
        }
        rows = order.map { index, depth in
            let span = spans[index]
            return Row(
                name: span.name, category: span.category, depth: depth,
                thread: profile.thread(withID: span.threadID)?.name ?? "thread \(span.threadID)",
                startNs: span.startNs, durationNs: span.durationNs, cpuNs: span.cpuNs, samples: span.samples,
                waitingSamples: span.waitingSamples, attributes: span.attributes, childTasks: span.childTasks,
                scheduledNs: span.scheduledNs)
        }
    }
}

extension Profile.Span {
    /// Whether the span is a launch metric of its own (`span: NAME`): every span but callbacks,
    /// launch tasks and background tasks, which have tables of their own and are measured as
    /// `callback: NAME` and `task: NAME` or budgeted.
    public var isSpanMetric: Bool {
        category != .callback && category != .launchTask && category != .backgroundTask
    }
}
