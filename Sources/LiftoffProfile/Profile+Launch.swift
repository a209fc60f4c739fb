extension Profile {
    /// A named stretch of time on one thread: a life-cycle callback, a launch step, a task.
    public struct Span: Codable, Sendable, Equatable {
        /// What ran, e.g. `didFinishLaunching` or `load settings`.
        public var name: String
        /// `callback`, `span` (a user's launch step) or `task`.
        public var category: String
        /// Kernel thread id it started on.
        public var threadID: Int
        /// Start, ns since the origin.
        public var startNs: UInt64
        /// End, ns since the origin.
        public var endNs: UInt64
        /// Index of the enclosing span, if it is nested.
        public var parent: Int?

        /// Creates a span.
        public init(name: String, category: String, threadID: Int, startNs: UInt64, endNs: UInt64, parent: Int? = nil) {
            self.name = name
            self.category = category
            self.threadID = threadID
            self.startNs = startNs
            self.endNs = endNs
            self.parent = parent
        }

        /// Duration in nanoseconds.
        public var durationNs: UInt64 { endNs >= startNs ? endNs - startNs : 0 }
    }

    /// A named instant: `firstLayout`, `firstDraw`, `firstFrame`, `ready`.
    public struct Mark: Codable, Sendable, Equatable {
        /// What happened.
        public var name: String
        /// When, ns since the origin.
        public var timeNs: UInt64

        /// Creates a mark.
        public init(name: String, timeNs: UInt64) {
            self.name = name
            self.timeNs = timeNs
        }
    }

    /// A change of the application's execution state.
    public struct StateChange: Codable, Sendable, Equatable {
        /// When, ns since the origin.
        public var timeNs: UInt64
        /// The state left.
        public var from: String
        /// The state entered.
        public var to: String

        /// Creates a state change.
        public init(timeNs: UInt64, from: String, to: String) {
            self.timeNs = timeNs
            self.from = from
            self.to = to
        }
    }

    /// One committed frame.
    public struct DisplayFrame: Codable, Sendable, Equatable {
        /// Index, from 0 (the first frame).
        public var index: Int
        /// Start of the run-loop iteration that produced it, ns since the origin.
        public var startNs: UInt64
        /// The render commit, ns since the origin.
        public var commitNs: UInt64
        /// Views drawn for it.
        public var viewsDrawn: Int

        /// Creates a frame record.
        public init(index: Int, startNs: UInt64, commitNs: UInt64, viewsDrawn: Int) {
            self.index = index
            self.startNs = startNs
            self.commitNs = commitNs
            self.viewsDrawn = viewsDrawn
        }
    }

    /// A breach of a thread rule.
    public struct Violation: Codable, Sendable, Equatable {
        /// The rule, e.g. `ui-on-main`.
        public var rule: String
        /// One sentence for people.
        public var message: String
        /// Kernel thread id of the offending thread.
        public var threadID: Int
        /// Its name.
        public var threadName: String
        /// First occurrence, ns since the origin.
        public var timeNs: UInt64
        /// Index into ``Profile/stacks`` of the offending call's stack, if one was captured.
        public var stack: Int?
        /// Occurrences from the same call site.
        public var count: Int

        /// Creates a violation record.
        public init(rule: String, message: String, threadID: Int, threadName: String, timeNs: UInt64, stack: Int?, count: Int) {
            self.rule = rule
            self.message = message
            self.threadID = threadID
            self.threadName = threadName
            self.timeNs = timeNs
            self.stack = stack
            self.count = count
        }
    }

    /// Why the app was terminated before it ended normally.
    public struct Termination: Codable, Sendable, Equatable {
        /// One sentence, e.g. `launch watchdog: no first frame after 20000 ms`.
        public var reason: String
        /// The launch phase it was in.
        public var phase: String
        /// When, ns since the origin.
        public var timeNs: UInt64
        /// Index into ``Profile/stacks`` of the main thread's stack at that moment.
        public var stack: Int?

        /// Creates a termination record.
        public init(reason: String, phase: String, timeNs: UInt64, stack: Int?) {
            self.reason = reason
            self.phase = phase
            self.timeNs = timeNs
            self.stack = stack
        }
    }

    /// Time to first frame in nanoseconds, from the process start; nil when there was none.
    public var timeToFirstFrameNs: UInt64? {
        phases.firstFrameNs.map { $0 >= phases.processStartNs ? $0 - phases.processStartNs : 0 }
    }
}
