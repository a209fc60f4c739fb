extension Profile {
    /// How a Swift task was created.
    public enum AsyncTaskKind: String, Codable, Sendable, Equatable, CaseIterable {
        /// `async let`: a child of the task that created it.
        case asyncLet
        /// A child of a task group (`withTaskGroup`, `withThrowingTaskGroup`, discarding groups).
        case groupChild
        /// `Task {}`: not a child, but it inherits its creator's task-local values, so it belongs
        /// to the span it was created in.
        case unstructured
        /// `Task.detached`: inherits nothing and belongs to no span it did not open itself.
        case detached
        /// Created before recording began (the program's main task, say), or by code the
        /// recording could not see.
        case unknown
    }

    /// One job of a Swift task that ran: the task resumed on a thread until it next suspended
    /// or ended.
    public struct AsyncTaskRun: Codable, Sendable, Equatable {
        /// When it was enqueued (became ready to run), ns since the origin.
        public var enqueuedNs: UInt64
        /// When it started running, ns since the origin.
        public var startNs: UInt64
        /// When it returned to its executor, ns since the origin.
        public var endNs: UInt64
        /// Kernel thread id it ran on.
        public var threadID: Int
        /// Kernel thread id that enqueued it.
        public var enqueuerThreadID: Int

        /// Creates a run.
        public init(enqueuedNs: UInt64, startNs: UInt64, endNs: UInt64, threadID: Int, enqueuerThreadID: Int) {
            self.enqueuedNs = enqueuedNs
            self.startNs = startNs
            self.endNs = endNs
            self.threadID = threadID
            self.enqueuerThreadID = enqueuerThreadID
        }

        /// How long it waited to run after it was enqueued: its scheduling delay.
        public var scheduledNs: UInt64 { NanosecondDuration.between(enqueuedNs, startNs).nanoseconds }
    }

    /// A Swift task seen during the recording: who created it, its jobs that ran, and the span
    /// that owns its work.
    public struct AsyncTask: Codable, Sendable, Equatable {
        /// The task's runtime id (matching ``SampleTable/task`` and ``Span/task``).
        public var id: UInt64
        /// How it was created.
        public var kind: AsyncTaskKind
        /// The id of the task that created it; nil when it was created outside any task (on a
        /// thread running synchronous code) or before recording began.
        public var creator: UInt64?
        /// Kernel thread id it was created on.
        public var creatorThreadID: Int?
        /// When it was created, ns since the origin.
        public var createdNs: UInt64?
        /// Its jobs that ran through the global or main executor, in start order (jobs run by
        /// an actor's executor are not seen).
        public var runs: [AsyncTaskRun]
        /// The innermost span its work belongs to (an index into ``Profile/spans``): the span
        /// open in its creator when it was created, or the one its creator belongs to. Nil for
        /// detached tasks and tasks created outside every span. Set by ``Profile/attributeSamples()``.
        public var span: Int?
        /// Running samples of the task. Set by ``Profile/attributeSamples()``.
        public var samples: Int?
        /// Waiting samples of the task. Set by ``Profile/attributeSamples()``.
        public var waitingSamples: Int?
        /// CPU time of its running samples. Set by ``Profile/attributeSamples()``.
        public var cpuNs: UInt64?

        /// Creates a task record.
        public init(
            id: UInt64, kind: AsyncTaskKind, creator: UInt64? = nil, creatorThreadID: Int? = nil, createdNs: UInt64? = nil,
            runs: [AsyncTaskRun] = []
        ) {
            self.id = id
            self.kind = kind
            self.creator = creator
            self.creatorThreadID = creatorThreadID
            self.createdNs = createdNs
            self.runs = runs
        }

        /// Whether its work belongs to the span it was created in (every kind but detached).
        public var inheritsSpan: Bool { kind != .detached }

        /// How long its jobs waited, in total, between being enqueued and running.
        public var scheduledNs: UInt64 {
            runs.reduce(0) { total, run in total.addingReportingOverflow(run.scheduledNs).overflow ? .max : total + run.scheduledNs }
        }

        /// The longest any of its jobs waited to run.
        public var longestScheduledNs: UInt64 { runs.map(\.scheduledNs).max() ?? 0 }
    }
}
