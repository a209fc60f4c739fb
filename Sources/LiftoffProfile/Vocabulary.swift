/// The words a profile uses for kinds of things: span categories, mark names, task statuses and
/// thread-rule names. The runtime writes them and the reports match them through these types,
/// so no module spells one the same way as another by hand.
///
/// Each is an open set, stored in `profile.json` as its plain string: a program may name its own
/// span categories, marks and rules, and a profile from a later version may carry a status this
/// one does not know.
public protocol ProfileVocabulary: RawRepresentable, Codable, Hashable, Sendable, ExpressibleByStringInterpolation,
    CustomStringConvertible, Comparable
where RawValue == String {
    /// Creates a value from its spelling in `profile.json`.
    init(rawValue: String)
}

extension ProfileVocabulary {
    /// Creates a value from its spelling in `profile.json`.
    public init(_ rawValue: String) { self.init(rawValue: rawValue) }
    /// Creates a value from a literal spelling.
    public init(stringLiteral value: String) { self.init(rawValue: value) }
    /// The spelling in `profile.json`.
    public var description: String { rawValue }
    /// Orders by spelling.
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

extension Profile {
    /// What kind of work a ``Span`` timed.
    public struct SpanCategory: ProfileVocabulary {
        /// The spelling in `profile.json`.
        public var rawValue: String
        /// Creates a category from its spelling.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// A life-cycle callback of the app delegate, such as `didFinishLaunching`.
        public static let callback: SpanCategory = "callback"
        /// A step the program timed itself (`LaunchRecorder.span`): the default.
        public static let span: SpanCategory = "span"
        /// A background task, from `beginBackgroundTask` to `endBackgroundTask`.
        public static let backgroundTask: SpanCategory = "background-task"
        /// A launch task the scheduler ran (in reports' timelines; a profile keeps tasks in
        /// ``Profile/tasks``).
        public static let launchTask: SpanCategory = "task"
        /// A service's start in a `ServiceGroup`, until it runs (`LiftoffServiceLifecycle`).
        public static let service: SpanCategory = "service"
    }

    /// The name of a ``Mark``: the well-known instants of a launch, or one the program chose.
    public struct MarkName: ProfileVocabulary {
        /// The spelling in `profile.json`.
        public var rawValue: String
        /// Creates a mark name from its spelling.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The first frame's render commit.
        public static let firstFrame: MarkName = "firstFrame"
        /// The first layout pass of the key window.
        public static let firstLayout: MarkName = "firstLayout"
        /// The first time a view drew.
        public static let firstDraw: MarkName = "firstDraw"
        /// A server's or tool's "ready" moment (`LaunchRecorder.ready()`).
        public static let ready: MarkName = "ready"

        /// The moment a background task's expiration handler ran.
        public static func expiration(ofBackgroundTask name: String) -> MarkName { MarkName(rawValue: "expiration: \(name)") }
    }

    /// How a launch task ended, or where it was when recording ended.
    public struct TaskStatus: ProfileVocabulary {
        /// The spelling in `profile.json`.
        public var rawValue: String
        /// Creates a status from its spelling.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// Waiting for its dependencies.
        public static let pending: TaskStatus = "pending"
        /// Its dependencies are done; waiting for a thread.
        public static let ready: TaskStatus = "ready"
        /// Running.
        public static let running: TaskStatus = "running"
        /// Returned normally.
        public static let completed: TaskStatus = "completed"
        /// Threw an error.
        public static let failed: TaskStatus = "failed"
        /// Took longer than its timeout.
        public static let timedOut: TaskStatus = "timedOut"
        /// Cancelled before or while it ran.
        public static let cancelled: TaskStatus = "cancelled"
        /// Not run because a dependency did not complete.
        public static let skipped: TaskStatus = "skipped"

        /// Whether the task ended normally.
        public var isSuccess: Bool { self == .completed }
    }

    /// The lane a launch task ran in.
    public struct LaneName: ProfileVocabulary {
        /// The spelling in `profile.json`.
        public var rawValue: String
        /// Creates a lane name from its spelling.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// On the main thread before the first frame.
        public static let main: LaneName = "main"
        /// On the main run loop after the first frame.
        public static let mainAfterFirstFrame: LaneName = "mainAfterFirstFrame"
        /// On the global Dispatch queue of a quality of service, e.g. `background(utility)`.
        public static func background(qos: String) -> LaneName { LaneName(rawValue: "background(\(qos))") }
    }

    /// The name of a thread rule: Liftoff's own, or one the program added.
    public struct RuleName: ProfileVocabulary {
        /// The spelling in `profile.json`.
        public var rawValue: String
        /// Creates a rule name from its spelling.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// UI work must run on the main thread.
        public static let uiOnMain: RuleName = "ui-on-main"
        /// Blocking and I/O work must not run on the main thread during launch.
        public static let noBlockingOnMainDuringLaunch: RuleName = "no-blocking-on-main-during-launch"
        /// UI work submitted to a background lane was moved to the main thread (a warning).
        public static let uiHoppedToMain: RuleName = "ui-hopped-to-main"
        /// The app used more CPU in the background than its limit allows.
        public static let backgroundCPU: RuleName = "background-cpu"
        /// A file was opened or read on the main thread (or main queue).
        public static let diskReadOnMain: RuleName = "disk-read-on-main"
        /// A file was opened for writing, written or synced on the main thread (or main queue).
        public static let diskWriteOnMain: RuleName = "disk-write-on-main"
        /// A name lookup or a call on an IPv4 or IPv6 socket ran on the main thread (or main queue).
        public static let networkOnMain: RuleName = "network-on-main"
        /// The main thread (or main queue) slept, or waited in poll, select or epoll with a timeout.
        public static let sleepOnMain: RuleName = "sleep-on-main"
        /// The main thread (or main queue) waited for a mutex another thread held, for the threshold or longer.
        public static let lockWaitOnMain: RuleName = "lock-wait-on-main"
    }
}
