import Foundation
import LiftoffProfile
import Testing

@testable import LiftoffComparison

@Suite("Statistics", .timeLimit(.minutes(5)))
struct StatisticsTests {
    // MARK: Mann–Whitney U against SciPy

    @Test("Mann–Whitney U matches SciPy's mannwhitneyu", arguments: mannWhitneyVectors.indices)
    func matchesSciPy(index: Int) {
        let vector = mannWhitneyVectors[index]
        let result = Statistics.mannWhitneyU(vector.x, vector.y)
        #expect(result.u == vector.u)
        let error = abs(result.pValue - vector.p)
        #expect(error <= 1e-6, "p = \(result.pValue), SciPy \(vector.p)")
        #expect(error <= 1e-6 * vector.p, "relative error \(error / vector.p)")
        // SciPy's "auto" rule: exact when a side has at most 8 values and nothing is tied.
        let distinct = Set(vector.x + vector.y).count == vector.x.count + vector.y.count
        #expect(result.exact == (min(vector.x.count, vector.y.count) <= 8 && distinct))
    }

    @Test("the SciPy documentation example is exact, and swapping the samples keeps p")
    func documentationExample() {
        let males = [19.0, 22, 16, 29, 24]
        let females = [20.0, 11, 17, 12]
        let result = Statistics.mannWhitneyU(males, females)
        #expect(result == MannWhitneyResult(u: 17, pValue: 0.1111111111111111, exact: true))
        let swapped = Statistics.mannWhitneyU(females, males)
        #expect(swapped.u == 3)
        #expect(swapped.pValue == result.pValue)
    }

    @Test("ties or two large samples switch to the normal approximation")
    func methodChoice() {
        #expect(!Statistics.mannWhitneyU([1, 2], [2, 3]).exact)
        #expect(!Statistics.mannWhitneyU([1, 1], [2, 3]).exact)
        let nine = (0..<9).map(Double.init)
        #expect(!Statistics.mannWhitneyU(nine, nine.map { $0 + 0.5 }).exact)
        #expect(Statistics.mannWhitneyU(Array(nine.prefix(8)), nine.map { $0 + 0.5 }).exact)
    }

    @Test("empty or nan input gives nan, like SciPy; identical values give p = 1")
    func edgeCases() {
        for (x, y) in [([], [1.0, 2]), ([1.0], []), ([Double](), [Double]()), ([1, .nan], [2, 3])] {
            let result = Statistics.mannWhitneyU(x, y)
            #expect(result.u.isNaN && result.pValue.isNaN && !result.exact)
        }
        #expect(Statistics.mannWhitneyU([5, 5, 5], [5, 5]).pValue == 1)
        #expect(Statistics.mannWhitneyU([5], [5]).pValue == 1)
        #expect(Statistics.mannWhitneyU([1], [2]).pValue == 1)
    }

    // MARK: Median and MAD

    @Test("median of odd, even, single and empty arrays")
    func median() {
        #expect(Statistics.median([3, 1, 2]) == 2)
        #expect(Statistics.median([4, 1, 3, 2]) == 2.5)
        #expect(Statistics.median([7]) == 7)
        #expect(Statistics.median([-1.5, 10, -3, 0.25]) == -0.625)
        #expect(Statistics.median([]).isNaN)
        #expect(Statistics.median([1, .nan, 3]).isNaN)
    }

    @Test("median absolute deviation of odd, even and empty arrays")
    func medianAbsoluteDeviation() {
        // Median 2; deviations 1, 1, 0, 0, 2, 4, 7.
        #expect(Statistics.medianAbsoluteDeviation([1, 1, 2, 2, 4, 6, 9]) == 1)
        // Median 2.5; deviations 1.5, 0.5, 0.5, 1.5.
        #expect(Statistics.medianAbsoluteDeviation([1, 2, 3, 4]) == 1)
        // Median 15; deviations 5, 5, 85, 5.
        #expect(Statistics.medianAbsoluteDeviation([10, 20, 100, 10]) == 5)
        #expect(Statistics.medianAbsoluteDeviation([42]) == 0)
        #expect(Statistics.medianAbsoluteDeviation([]).isNaN)
    }

    // MARK: Bootstrap

    @Test("bootstrap over Liftoff's draws matches NumPy's median and quantile of the same draws", arguments: bootstrapVectors.indices)
    func bootstrapMatchesNumPy(index: Int) {
        let vector = bootstrapVectors[index]
        let interval = Statistics.bootstrapRatioOfMedians(
            base: vector.base, head: vector.head, confidence: vector.confidence, resamples: vector.resamples)
        #expect(abs(interval.lowerBound - vector.exact.lowerBound) <= 1e-12, "\(vector.label): \(interval) vs \(vector.exact)")
        #expect(abs(interval.upperBound - vector.exact.upperBound) <= 1e-12, "\(vector.label): \(interval) vs \(vector.exact)")
    }

    @Test("bootstrap agrees with SciPy's percentile bootstrap within its Monte Carlo spread", arguments: bootstrapVectors.indices)
    func bootstrapMatchesSciPy(index: Int) {
        let vector = bootstrapVectors[index]
        let interval = Statistics.bootstrapRatioOfMedians(
            base: vector.base, head: vector.head, confidence: vector.confidence, resamples: 20_000)
        let lower = abs(interval.lowerBound - vector.scipy.lowerBound)
        let upper = abs(interval.upperBound - vector.scipy.upperBound)
        #expect(lower <= vector.tolerance, "\(vector.label): lower \(interval.lowerBound), SciPy \(vector.scipy.lowerBound)")
        #expect(upper <= vector.tolerance, "\(vector.label): upper \(interval.upperBound), SciPy \(vector.scipy.upperBound)")
    }

    @Test("bootstrap is deterministic for a seed and depends on it")
    func bootstrapDeterminism() {
        var normal = NormalGenerator(seed: 1)
        let base = normal.sample(20, mean: 100, sd: 5)
        let head = normal.sample(20, mean: 105, sd: 5)
        let first = Statistics.bootstrapRatioOfMedians(base: base, head: head)
        #expect(Statistics.bootstrapRatioOfMedians(base: base, head: head) == first)
        #expect(Statistics.bootstrapRatioOfMedians(base: base, head: head, seed: 7) != first)
    }

    @Test("bootstrap interval contains the point ratio and nests by confidence")
    func bootstrapContainsPoint() {
        var normal = NormalGenerator(seed: 2)
        let base = normal.sample(20, mean: 100, sd: 5)
        let head = normal.sample(20, mean: 105, sd: 5)
        let point = Statistics.median(head) / Statistics.median(base)
        let wide = Statistics.bootstrapRatioOfMedians(base: base, head: head, confidence: 0.95)
        let narrow = Statistics.bootstrapRatioOfMedians(base: base, head: head, confidence: 0.5)
        #expect(wide.contains(point))
        #expect(narrow.contains(point))
        #expect(wide.lowerBound <= narrow.lowerBound && narrow.upperBound <= wide.upperBound)
    }

    @Test("bootstrap interval narrows with more runs")
    func bootstrapNarrows() {
        var normal = NormalGenerator(seed: 3)
        func width(runs: Int) -> Double {
            let interval = Statistics.bootstrapRatioOfMedians(
                base: normal.sample(runs, mean: 100, sd: 5), head: normal.sample(runs, mean: 100, sd: 5),
                resamples: 500)
            return interval.upperBound - interval.lowerBound
        }
        // The width shrinks like 1/√n: about 3.2 times from 10 to 100 runs.
        #expect(width(runs: 100) < width(runs: 10) / 2)
    }

    @Test("bootstrap ratio is about 1.2 when head is base × 1.2")
    func bootstrapScaledHead() {
        var normal = NormalGenerator(seed: 4)
        let base = normal.sample(30, mean: 100, sd: 5)
        let interval = Statistics.bootstrapRatioOfMedians(base: base, head: base.map { $0 * 1.2 })
        #expect(interval.contains(1.2))
        #expect(abs((interval.lowerBound + interval.upperBound) / 2 - 1.2) < 0.02)
        // Medians of 30 runs are lumpy: NumPy gives 1.139 ... 1.265 for this sample (this code 1.140 ... 1.265).
        #expect(interval.upperBound - interval.lowerBound < 0.15)
    }

    @Test("bootstrap without resamples is the point ratio; an undefined ratio gives the whole line")
    func bootstrapEdgeCases() {
        #expect(Statistics.bootstrapRatioOfMedians(base: [1, 2, 3], head: [2, 4, 6], resamples: 0) == 2...2)
        #expect(Statistics.bootstrapRatioOfMedians(base: [4], head: [5]) == 1.25...1.25)
        #expect(Statistics.bootstrapRatioOfMedians(base: [], head: [1, 2]) == -.infinity ... .infinity)
        #expect(Statistics.bootstrapRatioOfMedians(base: [0, 0], head: [0, 0]) == -.infinity ... .infinity)
        #expect(Statistics.bootstrapRatioOfMedians(base: [1, .nan], head: [1, 2]) == -.infinity ... .infinity)
    }

    // MARK: Verdicts

    /// One branch of the verdict rule, with the default threshold 0.05 and alpha 0.01.
    struct VerdictCase: Sendable, CustomTestStringConvertible {
        var counts = (base: 20, head: 20)
        var baseMedian = 100.0
        var ratio: Double
        var pValue: Double
        var expected: Verdict
        var testDescription: String { "ratio \(ratio), p \(pValue), n \(counts) → \(expected)" }
    }

    static let verdictCases: [VerdictCase] = [
        VerdictCase(counts: (1, 20), ratio: 2, pValue: 1e-9, expected: .inconclusive),
        VerdictCase(counts: (20, 1), ratio: 2, pValue: 1e-9, expected: .inconclusive),
        VerdictCase(counts: (0, 0), baseMedian: .nan, ratio: .nan, pValue: .nan, expected: .inconclusive),
        VerdictCase(baseMedian: 0, ratio: .infinity, pValue: 1e-9, expected: .inconclusive),
        VerdictCase(ratio: 1.2, pValue: .nan, expected: .inconclusive),
        // Significant.
        VerdictCase(ratio: 1.2, pValue: 0.001, expected: .regressed),
        VerdictCase(ratio: 1.05, pValue: 0.001, expected: .regressed),
        VerdictCase(ratio: 0.8, pValue: 0.001, expected: .improved),
        VerdictCase(ratio: 0.95, pValue: 0.001, expected: .improved),
        VerdictCase(ratio: 1.04, pValue: 0.001, expected: .unchanged),
        VerdictCase(ratio: 0.96, pValue: 0.001, expected: .unchanged),
        // Not significant.
        VerdictCase(ratio: 1.2, pValue: 0.5, expected: .inconclusive),
        VerdictCase(ratio: 1.2, pValue: 0.01, expected: .inconclusive),
        VerdictCase(ratio: 0.8, pValue: 0.5, expected: .inconclusive),
        VerdictCase(ratio: 1.04, pValue: 0.5, expected: .unchanged),
        VerdictCase(ratio: 1, pValue: 1, expected: .unchanged),
    ]

    @Test("verdict rule, branch by branch", arguments: verdictCases)
    func verdictRule(_ rule: VerdictCase) {
        let verdict = MetricComparison.verdict(
            baseCount: rule.counts.base, headCount: rule.counts.head, baseMedian: rule.baseMedian,
            ratio: rule.ratio, pValue: rule.pValue, settings: ComparisonSettings())
        #expect(verdict == rule.expected)
    }

    @Test("comparisons of real runs reach each verdict")
    func comparisonVerdicts() {
        let base = (0..<20).map { 100 + Double($0) * 0.01 }
        func verdict(_ base: [Double], _ head: [Double]) -> Verdict {
            MetricComparison(metric: "launch", base: base, head: head).verdict
        }
        #expect(verdict(base, base.map { $0 * 1.2 }) == .regressed)
        #expect(verdict(base, base.map { $0 * 0.8 }) == .improved)
        // Every head run is slower, so p is tiny, but by 2 % only.
        #expect(verdict(base, base.map { $0 + 2 }) == .unchanged)
        #expect(verdict(base, base) == .unchanged)
        // A 24 % change in two runs a side cannot be significant (exact p ≥ 1/3).
        #expect(verdict([100, 130], [125, 160]) == .inconclusive)
        #expect(verdict([100], [200, 210, 220]) == .inconclusive)
        #expect(verdict([0, 0, 0], [1, 2, 3]) == .inconclusive)
    }

    @Test("a comparison reports medians, ratio, p and interval, and the verdict ignores the bootstrap")
    func comparisonFields() throws {
        let base = [100.0, 102, 98, 101, 99, 100.5]
        let head = [120.0, 123, 118, 121, 119, 120.5]
        let full = MetricComparison(metric: "main", base: base, head: head)
        #expect(full.baseCount == 6 && full.headCount == 6)
        #expect(full.baseMedian == 100.25 && full.headMedian == 120.25)
        #expect(full.ratio == 120.25 / 100.25)
        #expect(full.pValue == Statistics.mannWhitneyU(base, head).pValue)
        #expect(full.lower <= full.ratio && full.ratio <= full.upper && full.lower < full.upper)
        #expect(full.verdict == .regressed)

        let quick = MetricComparison(
            metric: "main", base: base, head: head, settings: ComparisonSettings(resamples: 0))
        #expect(quick.verdict == full.verdict && quick.pValue == full.pValue)
        #expect(quick.lower == quick.ratio && quick.upper == quick.ratio)

        let decoded = try JSONDecoder().decode(MetricComparison.self, from: JSONEncoder().encode(full))
        #expect(decoded == full)

        let empty = MetricComparison(metric: "main", base: [], head: head)
        #expect(empty.baseCount == 0 && empty.baseMedian.isNaN && empty.ratio.isNaN && empty.pValue.isNaN)
        #expect(empty.lower.isNaN && empty.upper.isNaN && empty.verdict == .inconclusive)
    }

    // MARK: Simulations

    /// Settings for simulations: the default rule without the (unused) bootstrap.
    static let simulationSettings = ComparisonSettings(resamples: 0)

    /// Verdicts of `trials` comparisons of `runs` base runs ~ N(100, 5) against `runs` head runs
    /// ~ N(headMean, 5 % of headMean).
    static func simulate(trials: Int, runs: Int, headMean: Double, seed: UInt64) -> [Verdict: Int] {
        var normal = NormalGenerator(seed: seed)
        var counts: [Verdict: Int] = [:]
        for _ in 0..<trials {
            let base = normal.sample(runs, mean: 100, sd: 5)
            let head = normal.sample(runs, mean: headMean, sd: headMean * 0.05)
            let comparison = MetricComparison(metric: "launch", base: base, head: head, settings: simulationSettings)
            counts[comparison.verdict, default: 0] += 1
        }
        return counts
    }

    @Test("false alarms: equal distributions are called regressed or improved at most 1 % of the time")
    func falseAlarms() {
        // Observed with this seed: 1 regressed, 2 improved, 993 unchanged, 4 inconclusive (0.3 % alarms).
        let counts = Self.simulate(trials: 1000, runs: 20, headMean: 100, seed: 0xA1A2)
        let alarms = counts[.regressed, default: 0] + counts[.improved, default: 0]
        #expect(alarms <= 10, "\(counts)")
    }

    @Test("detection: a 10 % slowdown is called regressed at least 90 % of the time")
    func detection() {
        // Observed with this seed: 991 regressed, 7 unchanged, 2 inconclusive (99.1 % detected).
        let counts = Self.simulate(trials: 1000, runs: 20, headMean: 110, seed: 0xB1B2)
        #expect(counts[.regressed, default: 0] >= 900, "\(counts)")
        #expect(counts[.improved, default: 0] == 0, "\(counts)")
    }
}

extension StatisticsTests {
    /// Normal variates from the Box–Muller transform on the library's seeded SplitMix64.
    struct NormalGenerator {
        private var uniform: SplitMix64

        init(seed: UInt64) {
            uniform = SplitMix64(seed: seed)
        }

        /// One draw from N(mean, sd²).
        mutating func next(mean: Double, sd: Double) -> Double {
            // 1 − u is in (0, 1], so the logarithm is finite.
            let radius = (-2 * log(1 - uniform.nextUnit())).squareRoot()
            return mean + sd * radius * cos(2 * Double.pi * uniform.nextUnit())
        }

        /// `count` independent draws from N(mean, sd²).
        mutating func sample(_ count: Int, mean: Double, sd: Double) -> [Double] {
            (0..<count).map { _ in next(mean: mean, sd: sd) }
        }
    }
}
