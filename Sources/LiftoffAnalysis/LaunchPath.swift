import LiftoffProfile

/// The path that led to ready: from the launch's thread back to the start, each moment of the
/// launch given to the one thread whose state then held it. While the launch's thread ran, waited
/// for a core, slept or read, the moment is its own; while it waited for another thread (a lock,
/// a semaphore, a condition, a joined thread, an async `main` parked while workers run its tasks),
/// the moment goes to the thread that ended the wait (the last one to run before it ended: it
/// released the lock or signalled), and through that thread's own waits in turn, as far as the
/// samples show.
/// Each moment is counted once.
public struct LaunchPath: Sendable {
    /// One stretch of the path: a thread, the sample that shows what it did, and when.
    public struct Segment: Sendable, Equatable {
        /// The thread the stretch belongs to.
        public var thread: Int
        /// The sample (an index into the profile's samples), or -1 when no sample shows the
        /// stretch (the thread was not sampled then).
        public var sample: Int
        /// The stretch's start, in nanoseconds from the origin.
        public var startNs: UInt64
        /// Its end.
        public var endNs: UInt64
        /// How many waits were followed to reach this thread: 0 on the launch's thread.
        public var depth: Int

        /// The stretch's length.
        public var ns: UInt64 { endNs > startNs ? endNs - startNs : 0 }
    }

    /// A wait of one thread on the path that the path followed into another thread.
    public struct Hop: Sendable, Equatable {
        /// The thread that waited.
        public var waiter: Int
        /// The thread that ran meanwhile, which the path followed.
        public var holder: Int
        /// The wait's start and end, in nanoseconds from the origin.
        public var startNs: UInt64
        /// The wait's end.
        public var endNs: UInt64
        /// Whether the followed thread ran in the wait (otherwise it waited too, in the program's code).
        public var ran: Bool
    }

    /// A wait on the path for another thread that the path could not follow: where the evidence ends.
    public struct Stop: Sendable, Equatable {
        /// Why the path went no further.
        public enum Reason: String, Sendable, Equatable {
            /// No other thread ran, or waited in the program's code, while it waited: what ended
            /// the wait is not in the samples (another process, the kernel, a thread not sampled).
            case noHolder = "no thread in the samples held it"
            /// The path had already followed as many waits into other threads as it follows (four).
            case depthLimit = "waits this deep are not followed"
        }
        /// The thread that waited.
        public var thread: Int
        /// The wait's start, in nanoseconds from the origin.
        public var startNs: UInt64
        /// The wait's end.
        public var endNs: UInt64
        /// Why the path stops there.
        public var reason: Reason
    }

    /// The stretches, in time order, from the launch thread's first sample (or `main`) to the end of the launch.
    public private(set) var segments: [Segment] = []
    /// The waits the path followed into other threads, in time order.
    public private(set) var hops: [Hop] = []
    /// The launch thread's waiting samples the path followed into the thread that made the
    /// launch ready (whatever the call it waited in): waits for that thread's work.
    public private(set) var waitsForReady: Set<Int> = []
    /// The waits for another thread the path could not follow, in the order found.
    public private(set) var stops: [Stop] = []
    /// The waiting samples of the threads on the path, each while its thread was on the path,
    /// whether or not the path followed it: what the wait rules look at.
    public private(set) var waitingSamples: [Int] = []

    /// How long deep waits are followed: a lock whose holder waits for a semaphore that a third thread signals.
    static let maximumDepth = 4

    /// No path.
    init() {}

    /// The path of a launch: empty when the launch's thread is unknown.
    public init(_ launch: LaunchWindow) {
        guard let thread = launch.mainThreadID, let rows = launch.samplesByThread[thread], !rows.isEmpty else { return }
        // From `main` on (before it the loader runs, which the pre-main rules account for), or from
        // the thread's first sample when the profile does not say when `main` began.
        let mainEntry = launch.profile.phases.mainEntryNs
        let first = max(launch.startNs, mainEntry > launch.startNs ? mainEntry : launch.profile.samples.timeNs[rows[0]])
        var visiting: Set<Int> = [thread]
        walk(launch, thread: thread, from: first, to: launch.endNs, depth: 0, visiting: &visiting, parent: nil)
        // What the rules ask of the path, found once.
        var byThread: [Int: UInt64] = [:]
        var byStack = [UInt64](repeating: 0, count: launch.profile.stacks.count)
        var current: (thread: Int, ns: UInt64) = (-1, 0)  // consecutive stretches are mostly one thread's
        for segment in segments where segment.sample >= 0 {
            if segment.thread != current.thread {
                if current.ns > 0 { byThread[current.thread, default: 0] &+= current.ns }
                current = (segment.thread, 0)
            }
            current.ns &+= segment.ns
            guard launch.profile.samples.state[segment.sample] == .running else { continue }
            running.append(segment)
            let stack = launch.profile.samples.stack[segment.sample]
            if stack >= 0, stack < byStack.count { byStack[stack] &+= segment.ns }
        }
        if current.ns > 0 { byThread[current.thread, default: 0] &+= current.ns }
        for (stack, ns) in byStack.enumerated() where ns > 0 { cpuByStack[stack] = ns }
        threads = byThread.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.map { (thread: $0.key, ns: $0.value) }
    }

    /// The time each thread spent on the path, the longest first.
    public private(set) var threads: [(thread: Int, ns: UInt64)] = []

    /// The stretches in which a thread on the path ran, in time order.
    public private(set) var running: [Segment] = []

    /// The path's time on a CPU, by stack.
    public private(set) var cpuByStack: [Int: UInt64] = [:]

    /// The path's time on a CPU.
    public var cpuNs: UInt64 { running.reduce(0) { $0 &+ $1.ns } }

    /// The waiting thread's parent stretch: the samples of the thread that waited, for the parts of
    /// its wait in which the followed thread shows nothing.
    private struct Parent {
        var thread: Int
        var samples: ArraySlice<Int>
        var depth: Int
    }

    private mutating func walk(
        _ launch: LaunchWindow, thread: Int, from start: UInt64, to end: UInt64, depth: Int, visiting: inout Set<Int>,
        parent: Parent?
    ) {
        guard start < end else { return }
        let rows = launch.samplesByThread[thread] ?? []
        let range = Self.overlapping(rows, start, end, launch)
        var cursor = start
        var index = range.lowerBound
        while index < range.upperBound {
            let sample = rows[index]
            let from = max(launch.profile.samples.timeNs[sample], cursor)
            let to = min(launch.endNs(of: sample), end)
            guard from < to else {
                index += 1
                continue
            }
            if from > cursor {
                // A followed thread's gap of a tick or two between samples (a late answer on a busy
                // machine) is still that thread's: nothing shows that it stopped and the waiter resumed.
                if parent != nil, from - cursor <= 2 * launch.intervalNs, segments.last?.thread == thread, segments.last?.endNs == cursor {
                    segments.append(Segment(thread: thread, sample: sample, startNs: cursor, endNs: from, depth: depth))
                } else {
                    fillGap(launch, thread: thread, from: cursor, to: from, depth: depth, parent: parent)
                }
            }
            if launch.profile.samples.state[sample] == .blocked {
                waitingSamples.append(sample)
                // Any wait of the launch's thread (I/O, an event loop, a wait no rule names) while
                // the thread that wrote the ready line worked goes on in that thread.
                let towardReady =
                    depth == 0 && !launch.followsWait(of: sample)
                    && launch.readyThreadID.map { !visiting.contains($0) && launch.hasSamples(of: $0, from: from, to: to) } ?? false
                if depth < Self.maximumDepth, launch.followsWait(of: sample) || towardReady {
                    // The wait as one stretch: this and the following samples that wait the same way,
                    // at the same place (a gap between them, where a busy machine let no sample be
                    // taken, is still that wait: nothing shows the thread woke). A late answer's row
                    // may reach past the rows after it: the wait ends at the latest end.
                    var last = index
                    var reach = launch.endNs(of: sample)
                    let stack = launch.profile.samples.stack[sample]
                    while last + 1 < range.upperBound, launch.profile.samples.state[rows[last + 1]] == .blocked,
                        launch.profile.samples.stack[rows[last + 1]] == stack
                            || launch.followsWait(of: rows[last + 1])
                                && launch.profile.samples.timeNs[rows[last + 1]] <= reach &+ launch.intervalNs
                    {
                        last += 1
                        waitingSamples.append(rows[last])
                        reach = max(reach, launch.endNs(of: rows[last]))
                    }
                    let waitEnd = min(reach, end)
                    let parked = stack >= 0 && stack < launch.waitKindOfStack.count && launch.waitKindOfStack[stack] == .parked
                    let holding =
                        towardReady
                        ? launch.readyThreadID.map { ($0, launch.ran($0, from: from, to: waitEnd)) }
                        : launch.threadHolding(from: from, to: waitEnd, excluding: visiting, carryingMain: parked)
                    if let holder = holding {
                        if towardReady { waitsForReady.formUnion(rows[index...last]) }
                        hops.append(Hop(waiter: thread, holder: holder.thread, startNs: from, endNs: waitEnd, ran: holder.ran))
                        visiting.insert(holder.thread)
                        walk(
                            launch, thread: holder.thread, from: from, to: waitEnd, depth: depth + 1, visiting: &visiting,
                            parent: Parent(thread: thread, samples: rows[index...last], depth: depth))
                        visiting.remove(holder.thread)
                    } else {
                        stop(Stop(thread: thread, startNs: from, endNs: waitEnd, reason: .noHolder), launch)
                        for own in rows[index...last] { append(launch, thread: thread, sample: own, from: from, to: waitEnd, depth: depth) }
                    }
                    cursor = max(cursor, waitEnd)
                    index = last + 1
                    continue
                }
                if depth >= Self.maximumDepth, launch.followsWait(of: sample) {
                    stop(Stop(thread: thread, startNs: from, endNs: to, reason: .depthLimit), launch)
                }
            }
            append(launch, thread: thread, sample: sample, from: from, to: to, depth: depth)
            cursor = to
            index += 1
        }
        if cursor < end { fillGap(launch, thread: thread, from: cursor, to: end, depth: depth, parent: parent) }
    }

    /// Notes where the path stops, as one stop with the one before when it goes on from it.
    private mutating func stop(_ stop: Stop, _ launch: LaunchWindow) {
        if let last = stops.last, last.thread == stop.thread, last.reason == stop.reason,
            stop.startNs <= last.endNs &+ launch.intervalNs
        {
            stops[stops.count - 1].endNs = max(last.endNs, stop.endNs)
        } else {
            stops.append(stop)
        }
    }

    /// A stretch in which `thread` shows nothing: the waiting thread's own samples, or unknown.
    private mutating func fillGap(
        _ launch: LaunchWindow, thread: Int, from start: UInt64, to end: UInt64, depth: Int, parent: Parent?
    ) {
        guard let parent else {
            segments.append(Segment(thread: thread, sample: -1, startNs: start, endNs: end, depth: depth))
            return
        }
        var cursor = start
        for sample in parent.samples {
            let from = max(launch.profile.samples.timeNs[sample], cursor)
            let to = min(launch.endNs(of: sample), end)
            guard from < to else { continue }
            if from > cursor { segments.append(Segment(thread: parent.thread, sample: -1, startNs: cursor, endNs: from, depth: parent.depth)) }
            segments.append(Segment(thread: parent.thread, sample: sample, startNs: from, endNs: to, depth: parent.depth))
            cursor = to
        }
        if cursor < end { segments.append(Segment(thread: parent.thread, sample: -1, startNs: cursor, endNs: end, depth: parent.depth)) }
    }

    /// Appends the part of a sample between two times, after the last stretch.
    private mutating func append(_ launch: LaunchWindow, thread: Int, sample: Int, from: UInt64, to: UInt64, depth: Int) {
        let start = max(from, launch.profile.samples.timeNs[sample], segments.last?.endNs ?? 0)
        let end = min(to, launch.endNs(of: sample))
        guard start < end else { return }
        segments.append(Segment(thread: thread, sample: sample, startNs: start, endNs: end, depth: depth))
    }

    /// The indices of `rows` (one thread's samples in time order) whose time overlaps `start ..< end`.
    static func overlapping(_ rows: [Int], _ start: UInt64, _ end: UInt64, _ launch: LaunchWindow) -> Range<Int> {
        let times = launch.profile.samples.timeNs
        func firstAtOrAfter(_ time: UInt64) -> Int {
            var low = 0
            var high = rows.count
            while low < high {
                let middle = (low + high) / 2
                if times[rows[middle]] < time { low = middle + 1 } else { high = middle }
            }
            return low
        }
        var lower = firstAtOrAfter(start)
        // A row that starts before `start` may reach into it (rows are seldom longer than a few ticks).
        var steps = 0
        while lower > 0, steps < 8, launch.endNs(of: rows[lower - 1]) > start {
            lower -= 1
            steps += 1
        }
        return lower..<max(lower, firstAtOrAfter(end))
    }
}

extension LaunchWindow {
    /// Whether a waiting sample waits for another thread, so that the path follows it: a lock, a
    /// semaphore, a condition, a join, or an async `main` parked while workers run its tasks.
    /// Whether `thread` has a sample between two times.
    func hasSamples(of thread: Int, from start: UInt64, to end: UInt64) -> Bool {
        guard let rows = samplesByThread[thread] else { return false }
        return !LaunchPath.overlapping(rows, start, end, self).isEmpty
    }

    /// Whether `thread` ran (or waited for a core) between two times.
    func ran(_ thread: Int, from start: UInt64, to end: UInt64) -> Bool {
        guard let rows = samplesByThread[thread] else { return false }
        return LaunchPath.overlapping(rows, start, end, self).contains {
            profile.samples.state[rows[$0]] == .running || profile.samples.state[rows[$0]] == .runnable
        }
    }

    func followsWait(of sample: Int) -> Bool {
        let stack = profile.samples.stack[sample]
        guard stack >= 0, stack < waitKindOfStack.count, let kind = waitKindOfStack[stack] else { return false }
        return kind == .lock || kind == .task || kind == .parked
    }

    /// The thread that held a wait from `start` to `end`: the one that ran last before the wait
    /// ended (it released the lock, signalled the semaphore, finished the joined work; or, for a
    /// wait the launch's end cut, wrote the ready line), the one that ran more meanwhile among
    /// those that stopped within a tick of each other; else the one that spent most of it in the
    /// program's own code (a lock's holder waiting in turn), an idle wait (an event loop's, a
    /// parked thread's) counted only when no thread shows anything else. For a parked async `main`
    /// (`carryingMain`), a thread that carried `main`'s task meanwhile comes first, whether it ran
    /// or waited: the task went on there, and a wait of its own held the launch.
    func threadHolding(from start: UInt64, to end: UInt64, excluding: Set<Int>, carryingMain: Bool = false) -> (thread: Int, ran: Bool)? {
        threadHolding(from: start, to: end, excluding: excluding, carryingMain: carryingMain, countingIdle: false)
            ?? threadHolding(from: start, to: end, excluding: excluding, carryingMain: carryingMain, countingIdle: true)
    }

    private func threadHolding(
        from start: UInt64, to end: UInt64, excluding: Set<Int>, carryingMain: Bool, countingIdle: Bool
    ) -> (thread: Int, ran: Bool)? {
        var best: (thread: Int, lastRun: UInt64, ns: UInt64, ran: Bool)?
        var bestCarries = false
        for (thread, rows) in samplesByThread where !excluding.contains(thread) {
            var ran: UInt64 = 0
            var own: UInt64 = 0
            var lastRun: UInt64 = 0
            var carries = false
            for index in LaunchPath.overlapping(rows, start, end, self) {
                let sample = rows[index]
                let from = max(profile.samples.timeNs[sample], start)
                let to = min(endNs(of: sample), end)
                guard from < to else { continue }
                let state = profile.samples.state[sample]
                if state == .running || state == .runnable {
                    ran &+= to - from
                    lastRun = max(lastRun, to)
                }
                let stack = profile.samples.stack[sample]
                if stack >= 0, stack < programFrameOfStack.count, programFrameOfStack[stack] >= 0,
                    countingIdle || state == .running || stack >= idleWaitOfStack.count || !idleWaitOfStack[stack]
                {
                    own &+= to - from
                }
                if carryingMain, stack >= 0, stack < asyncMainOfStack.count, asyncMainOfStack[stack] { carries = true }
            }
            let candidate = ran > 0 ? (thread: thread, lastRun: lastRun, ns: ran, ran: true) : (thread: thread, lastRun: UInt64(0), ns: own, ran: false)
            guard candidate.ns > 0 else { continue }
            if best != nil, carries != bestCarries {
                if carries {
                    best = candidate
                    bestCarries = true
                }
                continue
            }
            if let current = best {
                // The waker first (the later stop, unless within a tick of the other); then
                // running beats waiting; then the most time; then the lower id.
                let apart = candidate.lastRun > current.lastRun ? candidate.lastRun - current.lastRun : current.lastRun - candidate.lastRun
                let better =
                    candidate.ran != current.ran ? candidate.ran
                    : apart > intervalNs ? candidate.lastRun > current.lastRun
                    : candidate.ns != current.ns ? candidate.ns > current.ns : candidate.thread < current.thread
                if better { best = candidate }
            } else {
                best = candidate
                bestCarries = carries
            }
        }
        return best.map { ($0.thread, $0.ran) }
    }
}
