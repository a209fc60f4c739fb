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

    /// A place where a thread waited: the leaf function of its waiting samples.
    public struct Wait: Sendable, Equatable {
        /// The thread's label, `name (tid)`.
        public var thread: String
        /// The function it waited in (`ppoll`, a futex wait…).
        public var function: String
        /// Waiting samples there.
        public var samples: Int
    }

    /// Per thread: its label, running samples and waiting samples.
    public struct ThreadCounts: Sendable, Equatable {
        /// `name (tid)`.
        public var label: String
        /// Samples taken while it ran.
        public var running: Int
        /// Samples of it waiting.
        public var waiting: Int
        /// All its samples.
        public var samples: Int { running + waiting }
    }

    /// All samples.
    public var samples: Int
    /// Running samples: where CPU time went.
    public var running: Int
    /// Waiting samples: threads that did not run.
    public var waiting: Int
    /// Samples lost because the ring was full.
    public var dropped: Int
    /// Per thread, in the profile's thread order.
    public var threads: [ThreadCounts]
    /// Functions by running self samples, most first (ties by name): where CPU time went.
    public var topSelf: [Entry]
    /// Where threads waited, most waiting samples first.
    public var topWaits: [Wait]

    /// Samples per thread label (`name (tid)`), in the profile's thread order.
    public var samplesPerThread: [(label: String, samples: Int)] { threads.map { ($0.label, $0.samples) } }

    /// Summarizes `profile`, keeping the `limit` top functions and waits.
    public init(_ profile: Profile, limit: Int = 10) {
        samples = profile.samples.count
        dropped = profile.counts.dropped
        var runningPerThread: [Int: Int] = [:]
        var waitingPerThread: [Int: Int] = [:]
        var selfByName: [String: Int] = [:]
        var waits: [WaitKey: Int] = [:]
        for index in 0..<profile.samples.count {
            let thread = profile.samples.thread[index]
            let frame = profile.frames[profile.stacks.frame[profile.samples.stack[index]]]
            if profile.samples.state[index] == .running {
                runningPerThread[thread, default: 0] += 1
                selfByName[frame.displayName, default: 0] += 1
            } else {
                waitingPerThread[thread, default: 0] += 1
                waits[WaitKey(thread: thread, function: frame.displayName), default: 0] += 1
            }
        }
        running = runningPerThread.values.reduce(0, +)
        waiting = samples - running
        threads = profile.threads.map {
            ThreadCounts(
                label: FlameTree.threadLabel($0), running: runningPerThread[$0.id] ?? 0,
                waiting: waitingPerThread[$0.id] ?? 0)
        }
        let total = max(running, 1)
        topSelf = selfByName.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
            .prefix(limit)
            .map { Entry(name: $0.key, selfSamples: $0.value, share: Double($0.value) / Double(total)) }
        let labels = Dictionary(
            profile.threads.map { ($0.id, FlameTree.threadLabel($0)) }, uniquingKeysWith: { first, _ in first })
        topWaits = waits.map { key, count in
            Wait(thread: labels[key.thread] ?? "thread \(key.thread)", function: key.function, samples: count)
        }
        .sorted {
            ($0.samples, $1.thread, $1.function) > ($1.samples, $0.thread, $0.function)
        }
        .prefix(limit).map { $0 }
    }

    private struct WaitKey: Hashable {
        var thread: Int
        var function: String
    }
}
