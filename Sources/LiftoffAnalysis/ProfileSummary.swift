import LiftoffProfile

/// Numbers a person reads first: samples per thread, the functions with the most CPU time, and
/// where threads waited.
public struct ProfileSummary: Sendable, Equatable {
    /// A function and the samples whose leaf it was.
    public struct Entry: Sendable, Equatable {
        /// Frame name.
        public var name: String
        /// Samples with this function as the leaf.
        public var selfSamples: Int
        /// Share of the samples counted (running samples for CPU, waiting ones for waits), 0 ... 1.
        public var share: Double
    }

    /// A place where a thread waited: the leaf function of its waiting samples, and how it waited.
    public struct Wait: Sendable, Equatable {
        /// The thread's label, `name (tid)`.
        public var thread: String
        /// The function it waited in (`ppoll`, a futex wait…).
        public var function: String
        /// Waiting samples (ticks) there.
        public var samples: Int
        /// Blocked in a system call, or runnable (preempted there, waiting for a core).
        public var state: Profile.SampleState = .blocked
    }

    /// Per thread: its label, running samples and waiting samples.
    public struct ThreadCounts: Sendable, Equatable {
        /// `name (tid)`.
        public var label: String
        /// Samples taken while it ran.
        public var running: Int
        /// Samples of it waiting, blocked or runnable.
        public var waiting: Int
        /// Samples of it runnable: preempted, waiting for a core (part of ``waiting``).
        public var runnable: Int = 0
        /// Samples of it waiting for the disk: a page fault that reads (part of ``waiting``).
        public var disk: Int = 0
        /// Samples of it blocked in a system call (``waiting`` less runnable and disk).
        public var blocked: Int { waiting - runnable - disk }
        /// All its samples.
        public var samples: Int { running + waiting }
    }

    /// All samples (ticks: a wait of N ticks counts N).
    public var samples: Int
    /// Running samples: where CPU time went.
    public var running: Int
    /// Waiting samples: threads that did not run (blocked or runnable).
    public var waiting: Int
    /// Runnable samples: threads that could run but had no core (part of ``waiting``).
    public var runnable: Int
    /// Disk samples: threads waiting for the disk, a page fault that reads (part of ``waiting``).
    public var disk: Int = 0
    /// Blocked samples: threads in a system call (``waiting`` less runnable and disk).
    public var blocked: Int { waiting - runnable - disk }
    /// Samples lost because the ring was full.
    public var dropped: Int
    /// Per thread, in the profile's thread order.
    public var threads: [ThreadCounts]
    /// Functions by running self samples, most first (ties by name): where CPU time went.
    public var topSelf: [Entry]
    /// Where threads that did some work waited, most waiting samples first.
    public var topWaits: [Wait]
    /// Threads that never ran while sampled (an event loop in `epoll_wait`, an async `main`
    /// parked in `sigsuspend`, an idle pool): their waits are one line, not a list.
    public var idleThreads: [String] = []
    /// The waiting samples of ``idleThreads``.
    public var idleSamples = 0

    /// Samples per thread label (`name (tid)`), in the profile's thread order.
    public var samplesPerThread: [(label: String, samples: Int)] { threads.map { ($0.label, $0.samples) } }

    /// Summarizes `profile`, keeping the `limit` top functions and waits.
    public init(_ profile: Profile, limit: Int = 10) {
        samples = profile.samples.totalTicks
        dropped = profile.counts.dropped
        var runningPerThread: [Int: Int] = [:]
        var waitingPerThread: [Int: Int] = [:]
        var runnablePerThread: [Int: Int] = [:]
        var diskPerThread: [Int: Int] = [:]
        var selfByName: [String: Int] = [:]
        var waits: [WaitKey: Int] = [:]
        for index in 0..<profile.samples.count {
            let thread = profile.samples.thread[index]
            let frame = profile.frames[profile.stacks.frame[profile.samples.stack[index]]]
            let ticks = profile.samples.ticks(index)
            let state = profile.samples.state[index]
            if state == .running {
                runningPerThread[thread, default: 0] += ticks
                selfByName[frame.displayName, default: 0] += ticks
            } else {
                waitingPerThread[thread, default: 0] += ticks
                if state == .runnable { runnablePerThread[thread, default: 0] += ticks }
                if state == .disk { diskPerThread[thread, default: 0] += ticks }
                waits[WaitKey(thread: thread, function: frame.displayName, state: state), default: 0] += ticks
            }
        }
        running = runningPerThread.values.reduce(0, +)
        waiting = samples - running
        runnable = runnablePerThread.values.reduce(0, +)
        disk = diskPerThread.values.reduce(0, +)
        threads = profile.threads.map {
            ThreadCounts(
                label: FlameTree.threadLabel($0), running: runningPerThread[$0.id] ?? 0,
                waiting: waitingPerThread[$0.id] ?? 0, runnable: runnablePerThread[$0.id] ?? 0,
                disk: diskPerThread[$0.id] ?? 0)
        }
        let total = max(running, 1)
        topSelf = selfByName.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
            .prefix(limit)
            .map { Entry(name: $0.key, selfSamples: $0.value, share: Double($0.value) / Double(total)) }
        let labels = Dictionary(
            profile.threads.map { ($0.id, FlameTree.threadLabel($0)) }, uniquingKeysWith: { first, _ in first })
        // A main thread that never ran but waited for a lock, a join or the disk held the launch;
        // only one parked (an async main in sigsuspend) or waiting for events is idle.
        let mainThreads = Set(profile.threads.filter(\.isMain).map(\.id))
        let heldMain = Set(waits.keys.filter { mainThreads.contains($0.thread) && !MainThreadWait.isIdleWait($0.function) }.map(\.thread))
        let idle = Set(waitingPerThread.keys.filter { runningPerThread[$0, default: 0] == 0 && !heldMain.contains($0) })
        idleThreads = profile.threads.filter { idle.contains($0.id) }.map(FlameTree.threadLabel)
        idleSamples = idle.reduce(0) { $0 + waitingPerThread[$1, default: 0] }
        topWaits = waits.filter { !idle.contains($0.key.thread) }.map { key, count in
            Wait(
                thread: labels[key.thread] ?? "thread \(key.thread)", function: key.function, samples: count,
                state: key.state)
        }
        .sorted {
            ($0.samples, $1.thread, $1.function, $1.state.rawValue) > ($1.samples, $0.thread, $0.function, $0.state.rawValue)
        }
        .prefix(limit).map { $0 }
    }

    private struct WaitKey: Hashable {
        var thread: Int
        var function: String
        var state: Profile.SampleState
    }
}

extension ProfileSummary {
    /// `Idle: 3 threads never ran while sampled (1,250 ms waiting): loop (12), main (10), pool (14).`
    public func idleLine(rateHz: Int) -> String? {
        guard !idleThreads.isEmpty else { return nil }
        let ms = Double(idleSamples) * 1000 / Double(max(rateHz, 1))
        let names = idleThreads.prefix(4).joined(separator: ", ") + (idleThreads.count > 4 ? ", …" : "")
        let count = idleThreads.count == 1 ? "1 thread" : "\(idleThreads.count) threads"
        return "Idle: \(count) never ran while sampled (\(fmt(ms, digits: 0)) ms waiting in all): \(names)."
    }
}
