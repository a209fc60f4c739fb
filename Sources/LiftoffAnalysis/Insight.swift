import LiftoffProfile

/// A reason a launch was slow, in words a user can act on: what happened, what it cost, the
/// threshold it crossed, and the evidence (thread, time range, stacks, the program's own code
/// that led there).
public struct Insight: Sendable, Equatable, Codable {
    /// The rule's stable id (`main-thread-sleep`), for `liftoff check --insight` and for tools.
    public var id: String
    /// A short title: "The main thread slept".
    public var title: String
    /// The finding in one line, naming the function and the program's code that led there.
    public var finding: String
    /// What it cost the launch, in nanoseconds (time the launch's critical thread lost to it, or
    /// the time of the work itself, as the rule says).
    public var costNs: UInt64
    /// ``costNs`` as a share of the launch, 0 ... 1.
    public var share: Double
    /// The threshold the cost crossed, in nanoseconds.
    public var thresholdNs: UInt64
    /// Why the rule matters, and what usually helps.
    public var why: String
    /// The evidence.
    public var evidence: Evidence

    /// Where and when it happened, and the stacks that show it.
    public struct Evidence: Sendable, Equatable, Codable {
        /// The thread it happened on (`name (tid)`), when one thread.
        public var thread: String?
        /// Its kernel thread id, when one thread.
        public var threadID: Int?
        /// The first moment it was seen, in nanoseconds from the process start.
        public var startNs: UInt64
        /// The last moment it was seen.
        public var endNs: UInt64
        /// The stacks that show it, heaviest first.
        public var stacks: [StackEvidence] = []
        /// More to read: what another thread did meanwhile, the tasks or violations concerned.
        public var notes: [String] = []
    }

    /// One stack of the evidence.
    public struct StackEvidence: Sendable, Equatable, Codable {
        /// Frame names, innermost first, as far as the program's own code (at most 12).
        public var frames: [String]
        /// Time sampled on this stack, in nanoseconds.
        public var ns: UInt64
        /// The innermost function of the program itself on the stack, with its file and line
        /// when known: the line of code to look at.
        public var programFrame: String?
    }
}

/// The thresholds insights fire at: each rule's default, or the one given for its id.
public struct InsightSettings: Sendable, Equatable {
    /// Thresholds by rule id, in nanoseconds, overriding the defaults.
    public var thresholdsNs: [String: UInt64] = [:]

    /// The defaults.
    public init() {}

    /// The threshold of a rule: the one set for its id, else its default.
    public func thresholdNs(for rule: any InsightRule) -> UInt64 {
        thresholdsNs[rule.id] ?? rule.defaultThresholdNs
    }
}

/// One check of a launch. A rule looks at a ``LaunchWindow`` and returns an ``Insight`` when what
/// it measures reaches its threshold. A new rule is a type conforming to this protocol and a line
/// in ``Insights/rules``.
public protocol InsightRule: Sendable {
    /// The stable id.
    var id: String { get }
    /// The title of its insight.
    var title: String { get }
    /// Why it matters, and what usually helps.
    var why: String { get }
    /// The threshold it fires at unless told otherwise, in nanoseconds.
    var defaultThresholdNs: UInt64 { get }
    /// The insight, when the launch reaches `thresholdNs`.
    func evaluate(_ launch: LaunchWindow, thresholdNs: UInt64) -> Insight?
}

extension InsightRule {
    /// An insight of this rule.
    func insight(
        _ launch: LaunchWindow, finding: String, costNs: UInt64, thresholdNs: UInt64, evidence: Insight.Evidence
    ) -> Insight {
        Insight(
            id: id, title: title, finding: finding, costNs: costNs, share: launch.share(costNs), thresholdNs: thresholdNs,
            why: why, evidence: evidence)
    }
}
