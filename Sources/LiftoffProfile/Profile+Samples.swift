extension Profile {
    /// Nanoseconds between two ticks of the sampler: `1 s / samplingRateHz` (1 ms when the rate is
    /// unknown).
    public var samplingIntervalNs: UInt64 { Profile.samplingIntervalNs(rateHz: metadata.samplingRateHz) }

    /// Nanoseconds between two ticks at `rateHz` samples per second (1 ms for a rate of 0 or less).
    public static func samplingIntervalNs(rateHz: Int) -> UInt64 {
        rateHz > 0 ? UInt64(1_000_000_000 / rateHz) : 1_000_000
    }

    /// The stack prefix tree, in two parallel columns.
    public struct StackTable: Codable, Sendable, Equatable {
        /// Index of the calling stack, or `-1` for a root frame. Always less than the own index.
        public var parent: [Int]
        /// Index into ``Profile/frames`` of this stack's leaf frame.
        public var frame: [Int]

        /// Creates a stack table.
        public init(parent: [Int] = [], frame: [Int] = []) {
            self.parent = parent
            self.frame = frame
        }

        /// Number of stacks.
        public var count: Int { frame.count }
    }

    /// Whether a sampled thread was running, blocked or runnable.
    ///
    /// A thread that ran since its previous sample is signalled and its stack captured: it was
    /// running, or blocked when the handler found it in a system call. A thread that did not run
    /// since a sample that found it blocked is still blocked there, and is recorded without
    /// interrupting it. A signal that reached the thread late found it runnable: preempted,
    /// waiting for a core.
    public enum SampleState: UInt8, Codable, Sendable, Hashable, CaseIterable {
        /// The thread was on a CPU, running the code its stack shows.
        case running = 0
        /// The thread was blocked in a system call: sleeping, parked, waiting for a lock or for I/O.
        case blocked = 1
        /// The thread could run but had no core: it was preempted where its stack shows.
        case runnable = 2
        /// The thread waited for the disk where its stack shows: a page fault that reads (code or
        /// data not yet in memory), or a read the kernel cannot interrupt (state D).
        case disk = 3

        /// Whether the thread was off a CPU (blocked or runnable): wall-clock time, not CPU time.
        @inline(__always)
        public var isWaiting: Bool { self != .running }

        /// The word reports use for the state: `running`, `blocked`, `runnable` or `disk`.
        public var word: String {
            switch self {
            case .running: "running"
            case .blocked: "blocked"
            case .runnable: "runnable"
            case .disk: "disk"
            }
        }
    }

    /// Which samples a report counts.
    public enum SampleSelection: String, Codable, Sendable, CaseIterable {
        /// Running samples only: where CPU time went (the default of every report).
        case cpu
        /// Every sample, running and waiting: where wall-clock time went.
        case wall

        /// Whether a sample in `state` is counted.
        @inline(__always)
        public func includes(_ state: SampleState) -> Bool {
            self == .wall || state == .running
        }
    }

    /// The samples, in parallel columns. A row stands for ``weight`` consecutive ticks of its
    /// thread, starting at its time, all with the same stack and state: a wait that lasted N ticks
    /// is one row of weight N. Every count a report shows is a sum of weights.
    public struct SampleTable: Codable, Sendable, Equatable {
        /// Kernel thread id of the sampled thread (see ``Profile/threads``).
        public var thread: [Int]
        /// Nanoseconds since ``Profile/timeOriginNs`` of the row's first tick.
        public var timeNs: [UInt64]
        /// Index into ``Profile/stacks`` of the sample's leaf.
        public var stack: [Int]
        /// Whether the thread was running, blocked or runnable (`0`, `1`, `2` in JSON).
        public var state: [SampleState]
        /// The Swift task that was running (its runtime id, `0` for none), to attribute
        /// samples of async code to the span that awaited it wherever the code ran.
        public var task: [UInt64]
        /// CPU time the thread used since its previous sample, in nanoseconds (`0` when waiting
        /// or unknown).
        public var cpuNs: [UInt64]
        /// Ticks the row stands for, one sampling interval apart from its time on (at least 1).
        public var weight: [UInt32]

        /// Creates a sample table; missing state, task, CPU and weight columns mean running, no
        /// task, 0 ns and one tick.
        public init(
            thread: [Int] = [], timeNs: [UInt64] = [], stack: [Int] = [], state: [SampleState]? = nil,
            task: [UInt64]? = nil, cpuNs: [UInt64]? = nil, weight: [UInt32]? = nil
        ) {
            self.thread = thread
            self.timeNs = timeNs
            self.stack = stack
            self.state = state ?? [SampleState](repeating: .running, count: stack.count)
            self.task = task ?? [UInt64](repeating: 0, count: stack.count)
            self.cpuNs = cpuNs ?? [UInt64](repeating: 0, count: stack.count)
            self.weight = weight ?? [UInt32](repeating: 1, count: stack.count)
        }

        private enum CodingKeys: String, CodingKey {
            case thread, timeNs, stack, state, task, cpuNs, weight
        }

        /// Decodes the table; schema `/1` tables have no state, task or CPU column, and `/1` and
        /// `/2` tables no weight (every row is one tick).
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.init(
                thread: try container.decode([Int].self, forKey: .thread),
                timeNs: try container.decode([UInt64].self, forKey: .timeNs),
                stack: try container.decode([Int].self, forKey: .stack),
                state: try container.decodeIfPresent([SampleState].self, forKey: .state),
                task: try container.decodeIfPresent([UInt64].self, forKey: .task),
                cpuNs: try container.decodeIfPresent([UInt64].self, forKey: .cpuNs),
                weight: try container.decodeIfPresent([UInt32].self, forKey: .weight))
        }

        /// Appends one row.
        public mutating func append(
            thread: Int, timeNs: UInt64, stack: Int, state: SampleState = .running, task: UInt64 = 0, cpuNs: UInt64 = 0,
            weight: UInt32 = 1
        ) {
            self.thread.append(thread)
            self.timeNs.append(timeNs)
            self.stack.append(stack)
            self.state.append(state)
            self.task.append(task)
            self.cpuNs.append(cpuNs)
            self.weight.append(weight)
        }

        /// Number of rows (a row stands for ``weight`` ticks).
        public var count: Int { stack.count }

        /// The ticks of row `index`, as an `Int`.
        @inline(__always)
        public func ticks(_ index: Int) -> Int { Int(weight[index]) }

        /// Ticks of every row: the number of samples in the usual sense.
        public var totalTicks: Int { weight.reduce(0) { $0 + Int($1) } }

        /// Ticks of the rows in `state`.
        public func ticks(in state: SampleState) -> Int {
            var total = 0
            for index in 0..<count where self.state[index] == state { total += Int(weight[index]) }
            return total
        }

        /// Ticks of running rows.
        public var runningCount: Int { ticks(in: .running) }
    }

    /// Counters of the sampling session.
    public struct SampleCounts: Codable, Sendable, Equatable {
        /// Signals the sampler sent.
        public var signalsSent: Int
        /// Samples captured into the ring.
        public var captured: Int
        /// Samples lost because the ring was full.
        public var dropped: Int
        /// Handler runs that captured no stack.
        public var failed: Int
        /// Handler runs that gave up waiting for another thread's unwind (at most 1 ms).
        public var skipped: Int
        /// Samples cut at 128 frames.
        public var truncated: Int
        /// Waiting ticks recorded without a signal: threads that did not run since their
        /// previous sample.
        public var waiting: Int
        /// Signals a thread did not answer within 100 ms (signals blocked, or descheduled).
        public var unanswered: Int
        /// Distinct threads the sampler found.
        public var threadsSeen: Int
        /// Swift task events (creations, enqueues, runs) lost because their buffer was full: a task
        /// may then lack runs it had. 0 when none were lost or no task was followed.
        public var lostTaskEvents: Int

        /// Creates counters.
        public init(
            signalsSent: Int = 0, captured: Int = 0, dropped: Int = 0, failed: Int = 0, skipped: Int = 0,
            truncated: Int = 0, waiting: Int = 0, unanswered: Int = 0, threadsSeen: Int = 0, lostTaskEvents: Int = 0
        ) {
            self.signalsSent = signalsSent
            self.captured = captured
            self.dropped = dropped
            self.failed = failed
            self.skipped = skipped
            self.truncated = truncated
            self.waiting = waiting
            self.unanswered = unanswered
            self.threadsSeen = threadsSeen
            self.lostTaskEvents = lostTaskEvents
        }

        private enum CodingKeys: String, CodingKey {
            case signalsSent, captured, dropped, failed, skipped, truncated, waiting, unanswered, threadsSeen, lostTaskEvents
        }

        /// Decodes counters; schema `/1` has no waiting, unanswered or thread counts, and profiles
        /// written before task events were counted have no lost count.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.init(
                signalsSent: try container.decode(Int.self, forKey: .signalsSent),
                captured: try container.decode(Int.self, forKey: .captured),
                dropped: try container.decode(Int.self, forKey: .dropped),
                failed: try container.decode(Int.self, forKey: .failed),
                skipped: try container.decode(Int.self, forKey: .skipped),
                truncated: try container.decode(Int.self, forKey: .truncated),
                waiting: try container.decodeIfPresent(Int.self, forKey: .waiting) ?? 0,
                unanswered: try container.decodeIfPresent(Int.self, forKey: .unanswered) ?? 0,
                threadsSeen: try container.decodeIfPresent(Int.self, forKey: .threadsSeen) ?? 0,
                lostTaskEvents: try container.decodeIfPresent(Int.self, forKey: .lostTaskEvents) ?? 0)
        }
    }
}
