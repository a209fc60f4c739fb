import Foundation
import LiftoffAnalysis
import LiftoffProfile

/// Head's recorded launches compared with base's, metric by metric, with the verdict of the
/// gated metrics that decides a CI job.
public struct LaunchComparison: Sendable {
    /// Base's folder, successful and failed runs.
    public var base: (folder: String, runs: Int, failed: Int)
    /// Head's folder, successful and failed runs.
    public var head: (folder: String, runs: Int, failed: Int)
    /// How each metric was decided.
    public var settings: ComparisonSettings
    /// Every metric present on both sides, gated ones first.
    public var metrics: [MetricComparison]
    /// Names of the metrics whose verdicts decide ``verdict``.
    public var gated: [String]
    /// Insights that appeared or grew in head (they inform; they do not decide the verdict).
    public var insights: [InsightChange] = []
    /// Every function compared (they name what changed; they do not decide the verdict).
    public var functions: FunctionComparison
    /// The counted launches compared, when both sides were counted (`record --count instructions`).
    public var instructions: InstructionComparison?
    /// The name that gates on the counted instructions.
    public static let instructionsMetric = "instructions"

    /// Whether every counter was asked for (`--metrics counters`); otherwise they are compared
    /// all the same, and reports list those that moved.
    public var listsAllCounters: Bool

    /// Compares head with base.
    /// - Parameters:
    ///   - base: The recorded runs of base.
    ///   - head: The recorded runs of head.
    ///   - groups: Metrics to report besides time to first frame or to ready (the groups of gated
    ///     metrics are added).
    ///   - gated: Metrics that decide the verdict (time to first frame by default, which means
    ///     time to ready for runs without the app life cycle).
    ///   - settings: The statistics' settings: significance, minimum effect, and more.
    ///   - functionSpan: Compare functions within the spans of this name only.
    ///   - countThreshold: A change in counted instructions smaller than this share of base's
    ///     count is unchanged.
    ///   - demangle: Turns callgrind's names (Swift's are mangled) into readable ones.
    ///   - allowMixedCache: Compare sides that started with different page caches (`record
    ///     --cache`); a cold side against a warm one then shows the cold penalty.
    /// - Throws: `RunSetError` when the sides were measured differently or started with
    ///   different page caches (unless allowed), a side has fewer than
    ///   two successful runs, or a gated metric is missing.
    public init(
        base: RunSet, head: RunSet, groups: Set<MetricGroup> = [], gated: [String] = [RunSet.timeToFirstFrame],
        settings: ComparisonSettings = ComparisonSettings(), functionSpan: String? = nil, countThreshold: Double = 0.01,
        demangle: (String) -> String = { $0 }, allowMixedCache: Bool = false
    ) throws {
        for (name, set) in [("base", base), ("head", head)] where set.profiles.isEmpty {
            throw RunSetError(
                "The \(name) runs in \(set.folder.path) have no successful launch to compare"
                    + (set.failedRuns > 0 ? " (\(set.failedRuns) failed)." : "."))
        }
        guard base.measure == head.measure else {
            throw RunSetError(
                "The base runs were measured by \(LaunchComparison.measureName(base.measure)) and the head runs by "
                    + "\(LaunchComparison.measureName(head.measure)), so they cannot be compared.")
        }
        if base.cacheMode != head.cacheMode, !allowMixedCache {
            throw RunSetError(
                "The base runs started with the page cache \(base.cacheMode) and the head runs \(head.cacheMode), so they do not compare: "
                    + "a cold launch reads its files from storage. Record both with the same --cache, or pass --allow-mixed-cache "
                    + "to compare them anyway and see the cold penalty.")
        }
        if base.isCounted, head.isCounted {
            instructions = InstructionComparison(
                base: try base.counts(), head: try head.counts(), threshold: countThreshold, demangle: demangle)
        } else if gated.contains(Self.instructionsMetric) {
            let missing = base.isCounted ? "head" : "base"
            let failed = (base.isCounted ? head : base).failedCounts
            throw RunSetError(
                "The runs cannot be compared on 'instructions': the \(missing) runs were not counted"
                    + (failed.isEmpty ? " (record them with --count instructions)." : "; every counted run failed: \(failed[0])."))
        }
        var groups = groups
        listsAllCounters = groups.contains(.counters)
        // The kernel's counts vary far less than wall time: always compared, where recorded.
        groups.insert(.counters)
        // A gated name may be a span's, callback's or task's plain name ("build router"), on
        // either side (a span only head has is added).
        let available = Set(base.metrics(Set(MetricGroup.allCases)).map(\.name) + head.metrics(Set(MetricGroup.allCases)).map(\.name))
        let gated = gated.map { RunSet.metric(named: $0, among: available) ?? $0 }
        for name in gated {
            if let group = RunSet.group(ofMetric: name) { groups.insert(group) }
        }
        self.base = (base.folder.path, base.profiles.count, base.failedRuns)
        self.head = (head.folder.path, head.profiles.count, head.failedRuns)
        self.settings = settings
        self.gated = gated
        // A library whose initializers stand out on one side is measured on both.
        let initializers = Set(available.filter { $0.hasPrefix(RunSet.initializersPrefix) }.map { String($0.dropFirst(RunSet.initializersPrefix.count)) })
        var baseMetrics = Dictionary(
            base.metrics(groups, initializersOf: initializers).map { ($0.name, $0.values) }, uniquingKeysWith: { a, _ in a })
        var headMetrics = head.metrics(groups, initializersOf: initializers)
        // A span, task or callback only one side has took no time on the other: 0 in each of its
        // runs, so a span head added is compared (and gated) as time head added.
        let headNames = Set(headMetrics.map(\.name))
        for (name, values) in headMetrics where baseMetrics[name] == nil && Self.appears(name) {
            if values.count >= 2, base.profiles.count >= 2 { baseMetrics[name] = Array(repeating: 0, count: base.profiles.count) }
        }
        for (name, _) in baseMetrics where !headNames.contains(name) && Self.appears(name) && head.profiles.count >= 2 {
            headMetrics.append((name, Array(repeating: 0, count: head.profiles.count)))
        }
        for name in gated where name != Self.instructionsMetric {
            let baseCount = baseMetrics[name]?.count ?? 0
            let headCount = headMetrics.first(where: { $0.name == name })?.values.count ?? 0
            guard baseCount > 0, headCount > 0 else {
                throw RunSetError(
                    "The runs cannot be compared on '\(name)': "
                        + (name == RunSet.timeToFirstFrame || name == RunSet.timeToReady
                            ? "the \(baseCount == 0 ? "base" : "head") runs recorded no \(name == RunSet.timeToReady ? "ready point" : "first frame")."
                            : "the \(baseCount == 0 ? "base" : "head") runs have no such metric."))
            }
            guard baseCount >= 2, headCount >= 2 else {
                throw RunSetError(
                    "Comparing '\(name)' needs at least 2 runs on each side; base has \(baseCount) and head \(headCount).")
            }
        }
        var comparisons: [MetricComparison] = []
        for (name, values) in headMetrics {
            guard let baseValues = baseMetrics[name] else { continue }
            comparisons.append(MetricComparison(metric: name, base: baseValues, head: values, settings: settings))
        }
        insights = InsightChange.between(base: base.profiles, head: head.profiles)
        if let penalty = InsightChange.coldPenalty(base: base, head: head) { insights.insert(penalty, at: 0) }
        functions = FunctionComparison(
            base: base.profiles, head: head.profiles, span: functionSpan, falseDiscoveryRate: settings.falseDiscoveryRate,
            threshold: settings.threshold)
        metrics = comparisons.sorted { left, right in
            let leftGated = gated.firstIndex(of: left.metric) ?? Int.max
            let rightGated = gated.firstIndex(of: right.metric) ?? Int.max
            return leftGated < rightGated
        }
    }

    /// Whether a metric can exist on one side only (a span, launch task or callback a change
    /// added or removed), rather than being missing because it was not measured.
    static func appears(_ name: String) -> Bool {
        name.hasPrefix("span: ") || name.hasPrefix("task: ") || name.hasPrefix("callback: ") || name.hasPrefix("span cpu: ")
            || name.hasPrefix("cpu: ")
    }

    /// The verdict that decides the exit code: regressed if any gated metric regressed, else
    /// inconclusive if any is, else improved if any improved, else unchanged.
    public var verdict: Verdict {
        var verdicts = metrics.filter { gated.contains($0.metric) }.map(\.verdict)
        if gated.contains(Self.instructionsMetric), let instructions { verdicts.append(instructions.verdict) }
        for candidate in [Verdict.regressed, .inconclusive, .improved] where verdicts.contains(candidate) {
            return candidate
        }
        return .unchanged
    }

    package static func measureName(_ measure: RunMeasure) -> String {
        switch measure {
        case .profile: return "their own profiles"
        case .ready: return "the time to their ready line"
        case .exit: return "the time to their exit"
        }
    }
}
