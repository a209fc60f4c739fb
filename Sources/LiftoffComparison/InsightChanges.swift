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

extension InsightChange {
    /// The id of the change a cold set compared with a warm one shows.
    public static let coldPenaltyID = "cold-penalty"

    /// What starting with the page cache emptied cost, when one side was recorded cold
    /// (`record --cache cold` or `cold-system`) and the other not: each side's median time to first frame (or
    /// to ready) and, in the finding, how much more the cold side spent before `main`, read from
    /// storage and waited for the disk after `main`. Nil unless exactly one side is cold.
    public static func coldPenalty(base: RunSet, head: RunSet) -> InsightChange? {
        let baseCold = base.startsCold, headCold = head.startsCold
        guard baseCold != headCold, !base.profiles.isEmpty, !head.profiles.isEmpty else { return nil }
        let (cold, warm) = headCold ? (head, base) : (base, head)
        func median(_ values: [Double]) -> Double? {
            let finite = values.filter(\.isFinite)
            return finite.isEmpty ? nil : Statistics.median(finite)
        }
        func ready(_ set: RunSet) -> Double? { median(set.profiles.compactMap { $0.timeToFirstFrameNs.map { Double($0) / 1e6 } }) }
        func preMain(_ set: RunSet) -> Double? { median(set.profiles.compactMap { $0.phases.preMain.map { Double($0.durationNs) / 1e6 } }) }
        func bytesRead(_ set: RunSet) -> Double? {
            let counted = set.counters.compactMap { $0.map { Double($0.storageBytesRead) } }
            return median(counted.isEmpty ? set.profiles.compactMap { $0.phases.preMain.map { Double($0.bytesRead) } } : counted)
        }
        func diskWaits(_ set: RunSet) -> Double? {
            median(
                set.profiles.map { profile in
                    var ticks = 0
                    for row in 0..<profile.samples.count where profile.samples.state[row] == .disk { ticks += profile.samples.ticks(row) }
                    return Double(ticks) * Double(profile.samplingIntervalNs) / 1e6
                })
        }
        guard let coldReady = ready(cold), let warmReady = ready(warm) else { return nil }
        func ms(_ value: Double) -> String { String(format: "%.1f ms", value) }
        var parts: [String] = []
        if let coldPre = preMain(cold), let warmPre = preMain(warm) {
            parts.append("before main \(ms(warmPre)) → \(ms(coldPre))")
        }
        if let coldBytes = bytesRead(cold), let warmBytes = bytesRead(warm) {
            parts.append(String(format: "%.1f MB more read from storage", (coldBytes - warmBytes) / 1e6))
        }
        if let disk = diskWaits(cold), disk > 0 { parts.append("\(ms(disk)) of sampled disk waits") }
        let ratio = warmReady > 0 ? String(format: ", %.2f× as long to ready", coldReady / warmReady) : ""
        let finding =
            "\(headCold ? "Head" : "Base") ran cold (\(cold.cacheMode == "cold-system" ? "the whole page cache dropped" : "its files evicted") before each run) and \(headCold ? "base" : "head") \(warm.cacheMode)\(ratio)"
            + (parts.isEmpty ? "" : ": " + parts.joined(separator: ", "))
            + ". A static Swift runtime (-static-stdlib), stripped binaries and fewer libraries read less."
        return InsightChange(
            id: coldPenaltyID, title: "Cold penalty", baseMedianMs: headCold ? warmReady : coldReady,
            headMedianMs: headCold ? coldReady : warmReady,
            baseRuns: (baseCold ? base.profiles.count : 0, base.profiles.count),
            headRuns: (headCold ? head.profiles.count : 0, head.profiles.count), finding: finding)
    }
}
