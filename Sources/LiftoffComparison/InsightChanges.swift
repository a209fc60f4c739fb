import LiftoffAnalysis
import LiftoffProfile

/// An insight that appeared in head's launches, or grew there, against base's: each side's median
/// cost over its runs (0 for a run where it did not fire).
public struct InsightChange: Sendable, Equatable {
    /// The insight's id.
    public var id: String
    /// Its title.
    public var title: String
    /// Base's median cost, in milliseconds.
    public var baseMedianMs: Double
    /// Head's median cost, in milliseconds.
    public var headMedianMs: Double
    /// In how many of base's runs it fired, and of how many.
    public var baseRuns: (fired: Int, of: Int)
    /// In how many of head's runs it fired, and of how many.
    public var headRuns: (fired: Int, of: Int)
    /// The finding of head's costliest run.
    public var finding: String

    /// It fired in most of head's runs and in fewer than half of base's.
    public var appeared: Bool { headRuns.fired * 2 > headRuns.of && baseRuns.fired * 2 < baseRuns.of }

    /// Equal when every field is (the run counts are tuples, which are not `Equatable`).
    public static func == (left: InsightChange, right: InsightChange) -> Bool {
        left.id == right.id && left.baseMedianMs == right.baseMedianMs && left.headMedianMs == right.headMedianMs
            && left.baseRuns == right.baseRuns && left.headRuns == right.headRuns && left.finding == right.finding
    }

    /// The insights that appeared in head, or whose median cost grew by at least `growth` (a
    /// fraction of base's) and 1 ms: the costliest growth first.
    public static func between(base: [Profile], head: [Profile], growth: Double = 0.2) -> [InsightChange] {
        let baseInsights = base.map { Insights.of($0) }
        let headInsights = head.map { Insights.of($0) }
        var changes: [InsightChange] = []
        for rule in Insights.rules {
            let headFound = headInsights.map { $0.first { $0.id == rule.id } }
            guard let costliest = headFound.compactMap({ $0 }).max(by: { $0.costNs < $1.costNs }) else { continue }
            let baseFound = baseInsights.map { $0.first { $0.id == rule.id } }
            let baseMedian = Statistics.median(baseFound.map { Double($0?.costNs ?? 0) / 1e6 })
            let headMedian = Statistics.median(headFound.map { Double($0?.costNs ?? 0) / 1e6 })
            let change = InsightChange(
                id: rule.id, title: rule.title, baseMedianMs: baseMedian.isNaN ? 0 : baseMedian,
                headMedianMs: headMedian.isNaN ? 0 : headMedian,
                baseRuns: (baseFound.compactMap { $0 }.count, base.count), headRuns: (headFound.compactMap { $0 }.count, head.count),
                finding: costliest.finding)
            let grew = change.headMedianMs >= change.baseMedianMs * (1 + growth) && change.headMedianMs - change.baseMedianMs >= 1
            if change.appeared || (grew && change.headRuns.fired * 2 > change.headRuns.of) { changes.append(change) }
        }
        return changes.sorted { ($0.headMedianMs - $0.baseMedianMs, $1.id) > ($1.headMedianMs - $1.baseMedianMs, $0.id) }
    }
}
