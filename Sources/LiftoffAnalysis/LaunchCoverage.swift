import LiftoffProfile

/// How much of a launch its insights account for: each moment of the path to ready (and the time
/// before `main`) counted once, as explained when an insight that fired speaks of it, and what is
/// left said in words ("running in loadPlugins", "waiting in epoll_wait", "not sampled").
public struct LaunchCoverage: Sendable, Equatable {
    /// The launch's length, in nanoseconds.
    public var launchNs: UInt64
    /// The part of it the insights account for.
    public var explainedNs: UInt64
    /// What the rest was, the longest first (at most three).
    public var unexplained: [Part]

    /// A part of the launch no insight accounts for.
    public struct Part: Sendable, Equatable {
        /// What it was: `running in loadPlugins — main.swift:12`, `waiting in epoll_wait`, `not sampled`.
        public var what: String
        /// How long, in nanoseconds.
        public var ns: UInt64
    }

    /// The share of the launch explained, 0 ... 1.
    public var share: Double { launchNs == 0 ? 1 : min(1, Double(explainedNs) / Double(launchNs)) }

    /// The time no insight accounts for.
    public var unexplainedNs: UInt64 { launchNs > explainedNs ? launchNs - explainedNs : 0 }

    /// Below this share of the launch, what is left is named.
    public static let enough = 0.8

    /// A launch shorter than this needs no account of its time (and less than half of it left
    /// unexplained, no naming).
    public static let worthSaying: UInt64 = 20_000_000

    /// The rules that speak of all of the time before `main`.
    static let preMainRules: Set<String> = ["pre-main", "static-initializers", "relocation", "library-mapping"]

    /// How much of the `ns` before `main` the insights that fired speak of: all of it for the
    /// pre-main rules (and for library-loading without the loader's timeline, when it counted
    /// loader samples before main), the disk's share of it for disk-reads.
    static func preMainExplained(_ ns: UInt64, fired: Set<String>, _ launch: LaunchWindow) -> UInt64 {
        if !fired.isDisjoint(with: preMainRules) { return ns }
        if fired.contains("library-loading"), launch.profile.phases.preMain?.loader == nil { return ns }
        if fired.contains("disk-reads") { return min(ns, DiskReadsRule.beforeMainNs(launch)) }
        return 0
    }

    /// The coverage of `insights` (found for `launch`).
    public init(_ launch: LaunchWindow, insights: [Insight]) {
        let fired = Set(insights.map(\.id))
        launchNs = launch.lengthNs
        var explained: UInt64 = 0
        var left: [String: UInt64] = [:]
        let segments = launch.path.segments
        // Before the path: the loader's time before `main`, then anything not sampled.
        let pathStart = segments.first?.startNs ?? launch.endNs
        let mainEntry = min(max(launch.profile.phases.mainEntryNs, launch.startNs), pathStart)
        if mainEntry > launch.startNs {
            // The wrappers' time (programs the process ran before the program itself), then the program's own.
            let programStart = min(max(launch.profile.phases.programStartNs ?? launch.startNs, launch.startNs), mainEntry)
            let wrappers = programStart - launch.startNs
            if fired.contains("wrappers") { explained &+= wrappers } else if wrappers > 0 { left["programs run before the program", default: 0] &+= wrappers }
            let ns = mainEntry - programStart
            let covered = Self.preMainExplained(ns, fired: fired, launch)
            explained &+= covered
            if covered < ns { left["before main", default: 0] &+= ns - covered }
        }
        if pathStart > mainEntry { left["not sampled", default: 0] &+= pathStart - mainEntry }
        let flags = Flags(launch)
        // What the rules say of a stretch depends on its sample's stack and state and on whether
        // it was a wait followed: each such kind is judged once (a launch's path has as many
        // stretches as samples).
        struct Kind: Hashable {
            var stack: Int
            var state: Profile.SampleState
            var followed: Bool
        }
        var judged: [Kind: String?] = [:]
        judged.reserveCapacity(min(segments.count, launch.profile.stacks.count))
        for segment in segments {
            guard segment.sample >= 0 else {
                left[Self.describe(segment, launch), default: 0] &+= segment.ns
                continue
            }
            let kind = Kind(
                stack: launch.profile.samples.stack[segment.sample], state: launch.profile.samples.state[segment.sample],
                followed: segment.depth > 0)
            let unexplainedAs: String?
            if let known = judged[kind] {
                unexplainedAs = known
            } else {
                let rules = Self.rules(explaining: segment, launch, flags)
                unexplainedAs = fired.isDisjoint(with: rules) ? Self.describe(segment, launch) : nil
                judged[kind] = .some(unexplainedAs)
            }
            if let what = unexplainedAs {
                left[what, default: 0] &+= segment.ns
            } else {
                explained &+= segment.ns
            }
        }
        explainedNs = min(explained, launchNs)
        unexplained = left.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.prefix(3).map { Part(what: $0.key, ns: $0.value) }
    }

    /// The ids of the rules whose insight speaks of a stretch of the path: each rule for what it
    /// counts, so that a rule that fired for one kind of time explains no other.
    /// Per stack, what the rules look for, found once.
    struct Flags {
        var loader: [Int32]
        var runtime: [Int32]

        init(_ launch: LaunchWindow) {
            loader = launch.innermost(launch.frameFlags(LibraryLoadingRule.isLoader)).frame
            runtime = launch.innermost(launch.frameFlags(SwiftRuntimeRule.isRuntime)).frame
        }
    }

    static func rules(explaining segment: LaunchPath.Segment, _ launch: LaunchWindow, _ flags: Flags) -> Set<String> {
        guard segment.sample >= 0 else { return [] }
        var rules: Set<String> = segment.depth > 0 ? ["main-thread-lock-wait", "main-thread-blocked-by-task"] : []
        let stack = launch.profile.samples.stack[segment.sample]
        switch launch.profile.samples.state[segment.sample] {
        case .running:
            rules.insert("launch-cpu")
            if launch.libraryWorkOfStack(stack) != nil { rules.insert("library-work") }
            if stack >= 0, stack < flags.loader.count, flags.loader[stack] >= 0 { rules.insert("library-loading") }
            if stack >= 0, stack < flags.runtime.count, flags.runtime[stack] >= 0 { rules.insert("swift-runtime") }
        case .runnable:
            rules.formUnion(["oversubscribed", "path-waited-for-core"])
        case .blocked:
            let kind = stack >= 0 && stack < launch.waitKindOfStack.count ? launch.waitKindOfStack[stack] : nil
            switch kind {
            case .sleep: rules.insert("main-thread-sleep")
            case .lock: rules.insert("main-thread-lock-wait")
            case .task: rules.insert("main-thread-blocked-by-task")
            case .io: rules.insert("main-thread-io")
            case .parked, nil: break
            }
        case .disk:
            rules.formUnion(["disk-reads", "main-thread-page-faults"])
        }
        return rules
    }

    /// A stretch no insight speaks of, in words.
    static func describe(_ segment: LaunchPath.Segment, _ launch: LaunchWindow) -> String {
        guard segment.sample >= 0 else { return "not sampled" }
        let stack = launch.profile.samples.stack[segment.sample]
        switch launch.profile.samples.state[segment.sample] {
        case .running:
            if let place = launch.programFrame(ofStack: stack) { return "running in \(place)" }
            return "running in \(launch.leafName(ofStack: stack) ?? "code without symbols")"
        case .runnable:
            return "waiting for a core"
        case .disk:
            return "waiting for the disk" + (launch.programFrame(ofStack: stack).map { " in \($0)" } ?? "")
        case .blocked:
            let leaf = launch.leafName(ofStack: stack).map { " in \($0)" } ?? ""
            let place = launch.programFrame(ofStack: stack).map { ", from \($0)" } ?? ""
            return "waiting\(leaf)\(place)"
        }
    }
}
