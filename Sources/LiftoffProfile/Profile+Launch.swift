extension Profile {
    /// A named stretch of time on one thread: a life-cycle callback, a launch step, a task.
    public struct Span: Codable, Sendable, Equatable {
        /// What ran, e.g. `didFinishLaunching` or `load settings`.
        public var name: String
        /// `callback`, `span` (a user's launch step) or `task`.
        public var category: SpanCategory
        /// Kernel thread id it started on.
        public var threadID: Int
        /// Start, ns since the origin.
        public var startNs: UInt64
        /// End, ns since the origin.
        public var endNs: UInt64
        /// Index of the enclosing span, if it is nested.
        public var parent: Int?
        /// CPU time used while it ran: measured for launch tasks and background tasks (the
        /// process's CPU time), otherwise the CPU time of the running samples attributed to it.
        public var cpuNs: UInt64?
        /// The Swift task it ran in (its runtime id, matching ``SampleTable/task`` and ``AsyncTask/id``), if any:
        /// samples of that task inside the span belong to it on whatever thread they ran.
        public var task: UInt64?
        /// Running samples attributed to it (its nested spans' included).
        public var samples: Int?
        /// Waiting samples attributed to it (its nested spans' included).
        public var waitingSamples: Int?
        /// What the code said about it, as text: a tracing span's attributes (`http.method`,
        /// `db.system`), its kind and status. Nil when none.
        public var attributes: [String: String]?
        /// How many Swift tasks it started (transitively: `async let`, task group children,
        /// `Task {}`, and the tasks those started). Nil when none was recorded.
        public var childTasks: Int?
        /// How long the jobs of its work waited to run after they were enqueued, in total: its own
        /// task's jobs that started while it was open and every job of the tasks it started. Nil
        /// when no job of it was recorded.
        public var scheduledNs: UInt64?

        /// Creates a span.
        public init(
            name: String, category: SpanCategory, threadID: Int, startNs: UInt64, endNs: UInt64, parent: Int? = nil,
            cpuNs: UInt64? = nil, task: UInt64? = nil, samples: Int? = nil, waitingSamples: Int? = nil,
            attributes: [String: String]? = nil
        ) {
            self.attributes = attributes
            self.name = name
            self.category = category
            self.threadID = threadID
            self.startNs = startNs
            self.endNs = endNs
            self.parent = parent
            self.cpuNs = cpuNs
            self.task = task
            self.samples = samples
            self.waitingSamples = waitingSamples
        }

        /// Duration in nanoseconds.
        public var durationNs: UInt64 { NanosecondDuration.between(startNs, endNs).nanoseconds }
    }

    /// A named instant: `firstLayout`, `firstDraw`, `firstFrame`, `ready`.
    public struct Mark: Codable, Sendable, Equatable {
        /// What happened.
        public var name: MarkName
        /// When, ns since the origin.
        public var timeNs: UInt64
        /// The thread that made it, when known: for `ready`, the thread that called
        /// `LaunchRecorder.ready()` or wrote the line `--ready` matched.
        public var threadID: Int?

        /// Creates a mark.
        public init(name: MarkName, timeNs: UInt64, threadID: Int? = nil) {
            self.name = name
            self.timeNs = timeNs
            self.threadID = threadID
        }

        private enum CodingKeys: String, CodingKey {
            case name, timeNs
            case threadID = "thread"
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
        public var rule: RuleName
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
        public init(rule: RuleName, message: String, threadID: Int, threadName: String, timeNs: UInt64, stack: Int?, count: Int) {
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

    /// One launch task the scheduler ran (or did not run).
    public struct TaskRecord: Codable, Sendable, Equatable {
        /// The task's name.
        public var name: String
        /// `main`, `mainAfterFirstFrame` or `background(<qos>)`.
        public var lane: LaneName
        /// `completed`, `failed`, `timedOut`, `cancelled`, `skipped` (a dependency failed) or `pending`.
        public var status: TaskStatus
        /// Why it failed or was skipped.
        public var error: String?
        /// Names of the tasks it depended on.
        public var dependencies: [String]
        /// Its tags, sorted.
        public var tags: [String]
        /// Kernel thread id it ran on.
        public var threadID: Int?
        /// That thread's name.
        public var threadName: String?
        /// The Dispatch queue it ran on, or "".
        public var queue: String?
        /// When it became ready to run (its dependencies done), ns since the origin.
        public var readyNs: UInt64?
        /// Start, ns since the origin.
        public var startNs: UInt64?
        /// End, ns since the origin.
        public var endNs: UInt64?
        /// How long the main thread waited for its dependencies before it could start.
        public var waitNs: UInt64
        /// CPU time of its thread while it ran: measured around synchronous bodies when the
        /// scheduler is asked to, otherwise the CPU time of its running samples.
        public var cpuNs: UInt64?
        /// The Swift task an async body ran in (its runtime id, matching ``SampleTable/task`` and ``AsyncTask/id``).
        public var task: UInt64?
        /// Running samples attributed to it.
        public var samples: Int?
        /// Waiting samples attributed to it.
        public var waitingSamples: Int?
        /// Whether it lies on the critical path to the first frame.
        public var onCriticalPath: Bool
        /// How much later it could have ended without delaying what needed it.
        public var slackNs: UInt64?
        /// A main-lane task that is not UI work and that no UI work needs: it could be deferred.
        public var couldDefer: Bool

        /// Creates a record.
        public init(
            name: String, lane: LaneName, status: TaskStatus, error: String? = nil, dependencies: [String] = [],
            tags: [String] = [], threadID: Int? = nil, threadName: String? = nil, queue: String? = nil,
            readyNs: UInt64? = nil, startNs: UInt64? = nil, endNs: UInt64? = nil, waitNs: UInt64 = 0,
            cpuNs: UInt64? = nil, onCriticalPath: Bool = false, slackNs: UInt64? = nil, couldDefer: Bool = false,
            task: UInt64? = nil, samples: Int? = nil, waitingSamples: Int? = nil
        ) {
            self.task = task
            self.samples = samples
            self.waitingSamples = waitingSamples
            self.name = name
            self.lane = lane
            self.status = status
            self.error = error
            self.dependencies = dependencies
            self.tags = tags
            self.threadID = threadID
            self.threadName = threadName
            self.queue = queue
            self.readyNs = readyNs
            self.startNs = startNs
            self.endNs = endNs
            self.waitNs = waitNs
            self.cpuNs = cpuNs
            self.onCriticalPath = onCriticalPath
            self.slackNs = slackNs
            self.couldDefer = couldDefer
        }

        /// Duration in nanoseconds, when it ran.
        public var durationNs: UInt64? {
            guard let startNs, let endNs, endNs >= startNs else { return nil }
            return endNs - startNs
        }
    }

    /// A stretch of time the main thread spent away from its run loop (250 ms or more).
    public struct HangRecord: Codable, Sendable, Equatable {
        /// Start, ns since the origin.
        public var startNs: UInt64
        /// How long it lasted.
        public var durationNs: UInt64
        /// What the run loop was running (an event, a timer or an observer).
        public var running: String
        /// Indices into ``Profile/stacks`` of the main thread's stacks sampled during the hang.
        public var stacks: [Int]

        /// Creates a hang record.
        public init(startNs: UInt64, durationNs: UInt64, running: String, stacks: [Int]) {
            self.startNs = startNs
            self.durationNs = durationNs
            self.running = running
            self.stacks = stacks
        }
    }

    /// Frames whose iteration took longer than 16.7 ms (slow) but no longer than 700 ms.
    public var slowFrameCount: Int {
        displayFrames.filter { frame in
            let duration = NanosecondDuration.between(frame.startNs, frame.commitNs).nanoseconds
            return duration > 16_700_000 && duration <= 700_000_000
        }.count
    }

    /// Frames whose iteration took longer than 700 ms.
    public var frozenFrameCount: Int {
        displayFrames.filter { NanosecondDuration.between($0.startNs, $0.commitNs).nanoseconds > 700_000_000 }.count
    }

    /// Time to first frame in nanoseconds, from the process start; nil when there was none.
    public var timeToFirstFrameNs: UInt64? {
        phases.firstFrameNs.map { NanosecondDuration.between(phases.processStartNs, $0).nanoseconds }
    }
}

extension Profile {
    /// A violation's message and where the user's code broke the rule, from its stack:
    /// `Label.text ran on … (at DemoApp.swift:42 in DemoAppDelegate.refresh())`.
    public func sentence(for violation: Violation) -> String {
        guard let stack = violation.stack, let frame = userFrame(ofStack: stack) else { return violation.message }
        let message = violation.message.hasSuffix(".") ? String(violation.message.dropLast()) : violation.message
        return "\(message) (at \(frame.placeDescription))."
    }
}
