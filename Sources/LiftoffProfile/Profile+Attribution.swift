extension Profile {
    /// Gives each span and each launch task the samples of the code it ran: its sample counts
    /// and, where CPU time was not measured, the CPU time of its running samples.
    ///
    /// A span or task that ran in a Swift task owns that task's samples between its start and
    /// end, on whatever threads the task hopped to; one without a task owns the samples of its
    /// thread in that time. Nested spans' samples count for their parents too.
    public mutating func attributeSamples() {
        guard samples.count > 0 else { return }
        let index = SampleIndex(samples, intervalNs: samplingIntervalNs)
        for position in spans.indices {
            let span = spans[position]
            let tally = index.tally(
                task: span.task ?? 0, thread: span.threadID, from: span.startNs, to: span.endNs)
            spans[position].samples = tally.running
            spans[position].waitingSamples = tally.waiting
            if spans[position].cpuNs == nil, tally.running > 0 { spans[position].cpuNs = tally.cpuNs }
        }
        for position in tasks.indices {
            let task = tasks[position]
            guard let start = task.startNs, let end = task.endNs, let thread = task.threadID else { continue }
            let tally = index.tally(task: task.task ?? 0, thread: thread, from: start, to: end)
            tasks[position].samples = tally.running
            tasks[position].waitingSamples = tally.waiting
            if tasks[position].cpuNs == nil, tally.running > 0 { tasks[position].cpuNs = tally.cpuNs }
        }
    }
}

extension Profile {
    /// The samples the spans named `name` own, as ``attributeSamples()`` counts them: each
    /// span's Swift task's samples between its start and end, or its thread's when it ran in
    /// no task. A sample inside two such spans (one nested in the other) is listed once.
    public func sampleIndices(inSpansNamed name: String) -> [Int] {
        let matching = spans.filter { $0.name == name }
        guard !matching.isEmpty, samples.count > 0 else { return [] }
        let index = SampleIndex(samples, intervalNs: samplingIntervalNs)
        var found = Set<Int>()
        for span in matching {
            found.formUnion(index.indices(task: span.task ?? 0, thread: span.threadID, from: span.startNs, to: span.endNs))
        }
        return found.sorted()
    }
}

extension Profile {
    /// For each sample, the innermost span it belongs to and the launch task it ran in (indices
    /// into ``spans`` and ``tasks``), as ``attributeSamples()`` counts them.
    public func sampleOwners() -> (span: [Int?], task: [Int?]) {
        var spanOf = [Int?](repeating: nil, count: samples.count)
        var taskOf = [Int?](repeating: nil, count: samples.count)
        guard samples.count > 0 else { return (spanOf, taskOf) }
        let index = SampleIndex(samples, intervalNs: samplingIntervalNs)
        // Parents before children, so a nested span's samples end up its own.
        func depth(_ position: Int) -> Int {
            var depth = 0
            var parent = spans[position].parent
            while let at = parent, spans.indices.contains(at), depth <= spans.count {
                depth += 1
                parent = spans[at].parent
            }
            return depth
        }
        for position in spans.indices.sorted(by: { depth($0) < depth($1) }) {
            let span = spans[position]
            for sample in index.indices(task: span.task ?? 0, thread: span.threadID, from: span.startNs, to: span.endNs) {
                spanOf[sample] = position
            }
        }
        for (position, task) in tasks.enumerated() {
            guard let start = task.startNs, let end = task.endNs, let thread = task.threadID else { continue }
            for sample in index.indices(task: task.task ?? 0, thread: thread, from: start, to: end) { taskOf[sample] = position }
        }
        return (spanOf, taskOf)
    }
}

/// Samples grouped by Swift task and by thread, each group sorted by time. A row of weight N
/// stands for N ticks one interval apart; an interval counts the ticks inside it.
private struct SampleIndex {
    private var byTask: [UInt64: [Int]] = [:]
    private var byThread: [Int: [Int]] = [:]
    private let samples: Profile.SampleTable
    private let intervalNs: UInt64

    struct Tally {
        var running = 0
        var waiting = 0
        var cpuNs: UInt64 = 0
    }

    init(_ samples: Profile.SampleTable, intervalNs: UInt64) {
        self.samples = samples
        self.intervalNs = max(intervalNs, 1)
        for sample in 0..<samples.count {
            byThread[samples.thread[sample], default: []].append(sample)
            if samples.task[sample] != 0 { byTask[samples.task[sample], default: []].append(sample) }
        }
        let times = samples.timeNs
        for key in byThread.keys { byThread[key]!.sort { times[$0] < times[$1] } }
        for key in byTask.keys { byTask[key]!.sort { times[$0] < times[$1] } }
    }

    /// The rows of `task` (or, when it is 0, of `thread`) with a tick from `start` to `end`, in
    /// time order.
    func indices(task: UInt64, thread: Int, from start: UInt64, to end: UInt64) -> ArraySlice<Int> {
        let group = task != 0 ? byTask[task] ?? [] : byThread[thread] ?? []
        var first = firstIndex(in: group, atOrAfter: start)
        // The row before may be a wait that began earlier and lasts into the interval.
        if first > 0, ticks(of: group[first - 1], from: start, to: end) > 0 { first -= 1 }
        var last = first
        while last < group.count, samples.timeNs[group[last]] <= end { last += 1 }
        return group[first..<last]
    }

    /// How many of row `sample`'s ticks lie from `start` to `end`.
    func ticks(of sample: Int, from start: UInt64, to end: UInt64) -> Int {
        let first = samples.timeNs[sample]
        let weight = UInt64(samples.weight[sample])
        guard weight > 0, first <= end else { return 0 }
        let low = first >= start ? 0 : (start - first + intervalNs - 1) / intervalNs
        let high = min(weight - 1, (end - first) / intervalNs)
        return high >= low ? Int(high - low + 1) : 0
    }

    func tally(task: UInt64, thread: Int, from start: UInt64, to end: UInt64) -> Tally {
        var tally = Tally()
        for sample in indices(task: task, thread: thread, from: start, to: end) {
            let ticks = ticks(of: sample, from: start, to: end)
            guard ticks > 0 else { continue }
            if samples.state[sample] == .running {
                tally.running += ticks
            } else {
                tally.waiting += ticks
            }
            // A runnable row carries the CPU time its thread used before it was preempted.
            let (sum, overflow) = tally.cpuNs.addingReportingOverflow(samples.cpuNs[sample])
            tally.cpuNs = overflow ? .max : sum
        }
        return tally
    }

    private func firstIndex(in group: [Int], atOrAfter time: UInt64) -> Int {
        var low = 0
        var high = group.count
        while low < high {
            let middle = (low + high) / 2
            if samples.timeNs[group[middle]] < time { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
