extension Profile {
    /// Gives each span, each launch task and each Swift task the samples of the code it ran:
    /// sample counts and, where CPU time was not measured, the CPU time of its running samples;
    /// and each Swift task the span that owns it.
    ///
    /// A span or launch task that ran in a Swift task owns that task's samples between its start
    /// and end, on whatever threads the task hopped to; one without a task owns the samples of its
    /// thread in that time. It also owns every Swift task created inside it, transitively: an
    /// `async let`, a task group's child or a `Task {}` created in its task (or on its thread)
    /// while it was open, and the tasks those created, but not a `Task.detached`. Nested spans'
    /// samples count for their parents too.
    public mutating func attributeSamples() {
        let ownership = TaskOwnership(self)
        for position in asyncTasks.indices { asyncTasks[position].span = ownership.span[position] }
        if !asyncTasks.isEmpty {
            let owned = ownership.ownedTasks(ofSpans: spans)
            for position in spans.indices {
                spans[position].childTasks = owned[position].isEmpty ? nil : owned[position].count
                let delay = scheduling(ofSpan: position, owned: owned[position])
                spans[position].scheduledNs = delay.jobs > 0 ? delay.total : nil
            }
        }
        guard samples.count > 0 else { return }
        let index = SampleIndex(samples, intervalNs: samplingIntervalNs)
        let taskTallies = asyncTasks.map { index.tally(ofTask: $0.id) }
        for position in asyncTasks.indices {
            let tally = taskTallies[position]
            asyncTasks[position].samples = tally.running
            asyncTasks[position].waitingSamples = tally.waiting
            asyncTasks[position].cpuNs = tally.running > 0 ? tally.cpuNs : nil
        }
        let spanOwned = ownership.ownedTasks(ofSpans: spans)
        for position in spans.indices {
            let span = spans[position]
            let owned = spanOwned[position]
            var tally = index.tally(
                task: span.task ?? 0, thread: span.threadID, from: span.startNs, to: span.endNs,
                excluding: Set(owned.map { asyncTasks[$0].id }))
            for task in owned { tally.add(taskTallies[task]) }
            spans[position].samples = tally.running
            spans[position].waitingSamples = tally.waiting
            if spans[position].cpuNs == nil, tally.running > 0 { spans[position].cpuNs = tally.cpuNs }
        }
        let recordOwned = ownership.ownedTasks(ofLaunchTasks: tasks)
        for position in tasks.indices {
            let task = tasks[position]
            guard let start = task.startNs, let end = task.endNs, let thread = task.threadID else { continue }
            let owned = recordOwned[position]
            var tally = index.tally(
                task: task.task ?? 0, thread: thread, from: start, to: end, excluding: Set(owned.map { asyncTasks[$0].id }))
            for child in owned { tally.add(taskTallies[child]) }
            tasks[position].samples = tally.running
            tasks[position].waitingSamples = tally.waiting
            if tasks[position].cpuNs == nil, tally.running > 0 { tasks[position].cpuNs = tally.cpuNs }
        }
    }

    /// How long the jobs of span `index`'s work waited to run after they were enqueued: its own
    /// task's jobs that started while it was open, and every job of the Swift tasks it owns.
    public func scheduling(ofSpan index: Int) -> (total: UInt64, longest: UInt64, jobs: Int) {
        guard spans.indices.contains(index) else { return (0, 0, 0) }
        return scheduling(ofSpan: index, owned: TaskOwnership(self).ownedTasks(ofSpans: spans)[index])
    }

    private func scheduling(ofSpan index: Int, owned: [Int]) -> (total: UInt64, longest: UInt64, jobs: Int) {
        let span = spans[index]
        var runs: [AsyncTaskRun] = owned.flatMap { asyncTasks[$0].runs }
        if let task = span.task, let own = asyncTasks.first(where: { $0.id == task }) {
            runs += own.runs.filter { $0.startNs >= span.startNs && $0.startNs <= span.endNs }
        }
        var total: UInt64 = 0
        for run in runs {
            let (sum, overflow) = total.addingReportingOverflow(run.scheduledNs)
            total = overflow ? .max : sum
        }
        return (total, runs.map(\.scheduledNs).max() ?? 0, runs.count)
    }
}

extension Profile {
    /// The samples the spans named `name` own, as ``attributeSamples()`` counts them: each
    /// span's Swift task's samples between its start and end (or its thread's when it ran in
    /// no task), and every sample of the Swift tasks it owns. A sample inside two such spans
    /// (one nested in the other) is listed once.
    public func sampleIndices(inSpansNamed name: String) -> [Int] {
        let matching = spans.indices.filter { spans[$0].name == name }
        guard !matching.isEmpty, samples.count > 0 else { return [] }
        let index = SampleIndex(samples, intervalNs: samplingIntervalNs)
        let owned = TaskOwnership(self).ownedTasks(ofSpans: spans)
        var found = Set<Int>()
        for position in matching {
            let span = spans[position]
            found.formUnion(index.indices(task: span.task ?? 0, thread: span.threadID, from: span.startNs, to: span.endNs))
            for task in owned[position] { found.formUnion(index.indices(ofTask: asyncTasks[task].id)) }
        }
        return found.sorted()
    }
}

extension Profile {
    /// For each sample, the innermost span it belongs to and the launch task it ran in (indices
    /// into ``spans`` and ``tasks``), as ``attributeSamples()`` counts them: a sample of a Swift
    /// task outside every span of that task belongs to the span (and launch task) that owns the task.
    public func sampleOwners() -> (span: [Int?], task: [Int?]) {
        var spanOf = [Int?](repeating: nil, count: samples.count)
        var taskOf = [Int?](repeating: nil, count: samples.count)
        guard samples.count > 0 else { return (spanOf, taskOf) }
        let index = SampleIndex(samples, intervalNs: samplingIntervalNs)
        let ownership = TaskOwnership(self)
        // Outermost owners first, so that the innermost one is the one that stays: the owners of
        // whole Swift tasks, then spans by depth.
        for (position, task) in asyncTasks.enumerated() {
            let span = ownership.span[position]
            let record = ownership.launchTask[position]
            guard span != nil || record != nil else { continue }
            for sample in index.indices(ofTask: task.id) {
                if let span { spanOf[sample] = span }
                if let record { taskOf[sample] = record }
            }
        }
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

/// Which span and which launch task own each Swift task: the innermost one open in the task (or
/// on the thread, outside any task) that created it, when it created it; failing that, the one
/// that owns its creator. Detached tasks are owned by none.
struct TaskOwnership {
    /// For each of the profile's Swift tasks, the span that owns it.
    var span: [Int?]
    /// For each of the profile's Swift tasks, the launch task that owns it.
    var launchTask: [Int?]

    init(_ profile: Profile) {
        let tasks = profile.asyncTasks
        span = Array(repeating: nil, count: tasks.count)
        launchTask = Array(repeating: nil, count: tasks.count)
        guard !tasks.isEmpty else { return }
        let spanIntervals = profile.spans.map { Interval(task: $0.task, thread: $0.threadID, start: $0.startNs, end: $0.endNs) }
        let recordIntervals = profile.tasks.map { record -> Interval? in
            guard let start = record.startNs, let end = record.endNs, let thread = record.threadID else { return nil }
            return Interval(task: record.task, thread: thread, start: start, end: end)
        }
        let spanFinder = InnermostFinder(spanIntervals.map { Optional($0) })
        let recordFinder = InnermostFinder(recordIntervals)
        var position: [UInt64: Int] = [:]
        for (index, task) in tasks.enumerated() where position[task.id] == nil { position[task.id] = index }
        // Creators come before the tasks they created; a task seen only running has no creator.
        let order = tasks.indices.sorted { (tasks[$0].createdNs ?? 0, $0) < (tasks[$1].createdNs ?? 0, $1) }
        for index in order {
            let task = tasks[index]
            guard task.inheritsSpan, let created = task.createdNs else { continue }
            let creator = task.creator.flatMap { position[$0] }
            if task.creator == nil, task.creatorThreadID == nil { continue }
            span[index] =
                spanFinder.innermost(task: task.creator, thread: task.creatorThreadID, at: created)
                ?? creator.flatMap { span[$0] }
            launchTask[index] =
                recordFinder.innermost(task: task.creator, thread: task.creatorThreadID, at: created)
                ?? creator.flatMap { launchTask[$0] }
        }
    }

    /// For each span, the Swift tasks it owns, its nested spans' included (indices into the
    /// profile's ``Profile/asyncTasks``).
    func ownedTasks(ofSpans spans: [Profile.Span]) -> [[Int]] {
        var owned = [[Int]](repeating: [], count: spans.count)
        for (task, owner) in span.enumerated() {
            var current = owner
            var steps = 0
            while let at = current, spans.indices.contains(at), steps <= spans.count {
                owned[at].append(task)
                current = spans[at].parent
                steps += 1
            }
        }
        return owned
    }

    /// For each launch task, the Swift tasks it owns.
    func ownedTasks(ofLaunchTasks records: [Profile.TaskRecord]) -> [[Int]] {
        var owned = [[Int]](repeating: [], count: records.count)
        for (task, owner) in launchTask.enumerated() {
            if let owner, records.indices.contains(owner) { owned[owner].append(task) }
        }
        return owned
    }

    struct Interval {
        var task: UInt64?
        var thread: Int
        var start: UInt64
        var end: UInt64
    }

    /// Finds the innermost interval of a task (or of a thread, among intervals in no task) that
    /// contains a moment: the one that started last.
    struct InnermostFinder {
        private var byTask: [UInt64: [(index: Int, interval: Interval)]] = [:]
        private var byThread: [Int: [(index: Int, interval: Interval)]] = [:]

        init(_ intervals: [Interval?]) {
            for (index, interval) in intervals.enumerated() {
                guard let interval else { continue }
                if let task = interval.task {
                    byTask[task, default: []].append((index, interval))
                } else {
                    byThread[interval.thread, default: []].append((index, interval))
                }
            }
        }

        func innermost(task: UInt64?, thread: Int?, at time: UInt64) -> Int? {
            let candidates: [(index: Int, interval: Interval)]
            if let task {
                candidates = byTask[task] ?? []
            } else if let thread {
                candidates = byThread[thread] ?? []
            } else {
                return nil
            }
            var best: (index: Int, start: UInt64)?
            for candidate in candidates where candidate.interval.start <= time && time <= candidate.interval.end {
                if best == nil || candidate.interval.start >= best!.start { best = (candidate.index, candidate.interval.start) }
            }
            return best?.index
        }
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

        mutating func add(_ other: Tally) {
            running += other.running
            waiting += other.waiting
            let (sum, overflow) = cpuNs.addingReportingOverflow(other.cpuNs)
            cpuNs = overflow ? .max : sum
        }

        mutating func add(row sample: Int, ticks: Int, in samples: Profile.SampleTable) {
            guard ticks > 0 else { return }
            if samples.state[sample] == .running {
                running += ticks
            } else {
                waiting += ticks
            }
            // A runnable row carries the CPU time its thread used before it was preempted.
            let (sum, overflow) = cpuNs.addingReportingOverflow(samples.cpuNs[sample])
            cpuNs = overflow ? .max : sum
        }
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

    /// Every row of Swift task `task`, in time order.
    func indices(ofTask task: UInt64) -> [Int] { byTask[task] ?? [] }

    /// Every tick of Swift task `task`.
    func tally(ofTask task: UInt64) -> Tally {
        var tally = Tally()
        for sample in byTask[task] ?? [] { tally.add(row: sample, ticks: Int(samples.weight[sample]), in: samples) }
        return tally
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

    /// The ticks of `task` (or, when it is 0, of `thread`) from `start` to `end`, leaving out
    /// rows of the Swift tasks in `excluded`.
    func tally(task: UInt64, thread: Int, from start: UInt64, to end: UInt64, excluding excluded: Set<UInt64> = []) -> Tally {
        var tally = Tally()
        for sample in indices(task: task, thread: thread, from: start, to: end) {
            if !excluded.isEmpty, excluded.contains(samples.task[sample]) { continue }
            tally.add(row: sample, ticks: ticks(of: sample, from: start, to: end), in: samples)
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
