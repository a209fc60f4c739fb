extension Profile {
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

    /// Whether a sampled thread was running or waiting.
    ///
    /// A thread whose CPU time did not advance since its previous sample has not run: its stack
    /// is the one it had, and the sample is recorded as waiting, without interrupting it. A
    /// thread that ran but was blocked in a system call when the signal landed is waiting too.
    public enum SampleState: UInt8, Codable, Sendable, Hashable, CaseIterable {
        /// The thread used CPU time since its previous sample; its stack was captured now.
        case running = 0
        /// The thread did not run since its previous sample, or was blocked in a system call
        /// when sampled (sleeping, parked, waiting for a lock or for I/O).
        case waiting = 1
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

    /// The samples, in parallel columns.
    public struct SampleTable: Codable, Sendable, Equatable {
        /// Kernel thread id of the sampled thread (see ``Profile/threads``).
        public var thread: [Int]
        /// Nanoseconds since ``Profile/timeOriginNs``.
        public var timeNs: [UInt64]
        /// Index into ``Profile/stacks`` of the sample's leaf.
        public var stack: [Int]
        /// Whether the thread was running or waiting (`0` running, `1` waiting in JSON).
        public var state: [SampleState]
        /// The Swift task that was running (an opaque identity, `0` for none), to attribute
        /// samples of async code to the span that awaited it wherever the code ran.
        public var task: [UInt64]
        /// CPU time the thread used since its previous sample, in nanoseconds (`0` when waiting
        /// or unknown).
        public var cpuNs: [UInt64]

        /// Creates a sample table; missing state, task and CPU columns mean running, no task, 0 ns.
        public init(
            thread: [Int] = [], timeNs: [UInt64] = [], stack: [Int] = [], state: [SampleState]? = nil,
            task: [UInt64]? = nil, cpuNs: [UInt64]? = nil
        ) {
            self.thread = thread
            self.timeNs = timeNs
            self.stack = stack
            self.state = state ?? [SampleState](repeating: .running, count: stack.count)
            self.task = task ?? [UInt64](repeating: 0, count: stack.count)
            self.cpuNs = cpuNs ?? [UInt64](repeating: 0, count: stack.count)
        }

        private enum CodingKeys: String, CodingKey {
            case thread, timeNs, stack, state, task, cpuNs
        }

        /// Decodes the table; schema `/1` tables have no state, task or CPU column.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.init(
                thread: try container.decode([Int].self, forKey: .thread),
                timeNs: try container.decode([UInt64].self, forKey: .timeNs),
                stack: try container.decode([Int].self, forKey: .stack),
                state: try container.decodeIfPresent([SampleState].self, forKey: .state),
                task: try container.decodeIfPresent([UInt64].self, forKey: .task),
                cpuNs: try container.decodeIfPresent([UInt64].self, forKey: .cpuNs))
        }

        /// Appends one sample.
        public mutating func append(
            thread: Int, timeNs: UInt64, stack: Int, state: SampleState = .running, task: UInt64 = 0, cpuNs: UInt64 = 0
        ) {
            self.thread.append(thread)
            self.timeNs.append(timeNs)
            self.stack.append(stack)
            self.state.append(state)
            self.task.append(task)
            self.cpuNs.append(cpuNs)
        }

        /// Number of samples.
        public var count: Int { stack.count }

        /// Number of running samples.
        public var runningCount: Int { state.reduce(0) { $0 + ($1 == .running ? 1 : 0) } }
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
        /// Waiting samples recorded without a signal: threads that did not run since their
        /// previous sample.
        public var waiting: Int
        /// Signals a thread did not answer within 100 ms (signals blocked, or descheduled).
        public var unanswered: Int
        /// Distinct threads the sampler found.
        public var threadsSeen: Int

        /// Creates counters.
        public init(
            signalsSent: Int = 0, captured: Int = 0, dropped: Int = 0, failed: Int = 0, skipped: Int = 0,
            truncated: Int = 0, waiting: Int = 0, unanswered: Int = 0, threadsSeen: Int = 0
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
        }

        private enum CodingKeys: String, CodingKey {
            case signalsSent, captured, dropped, failed, skipped, truncated, waiting, unanswered, threadsSeen
        }

        /// Decodes counters; schema `/1` has no waiting, unanswered or thread counts.
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
                threadsSeen: try container.decodeIfPresent(Int.self, forKey: .threadsSeen) ?? 0)
        }
    }
}
