import Foundation
import LiftoffProfile

/// Statistics for comparing two sets of launch measurements.
///
/// Everything here is deterministic. ``mannWhitneyU(_:_:)`` reproduces SciPy's
/// `scipy.stats.mannwhitneyu`, and ``bootstrapRatioOfMedians(base:head:confidence:resamples:seed:)``
/// draws from a seeded generator, so the same input always gives the same report.
public enum Statistics {
    /// Median (mean of the two middle values for an even count); nan for an empty array.
    ///
    /// - Parameter values: The sample, in any order.
    /// - Returns: The median, or nan when `values` is empty or contains nan.
    public static func median(_ values: [Double]) -> Double {
        guard !values.contains(where: \.isNaN) else { return .nan }
        return sortedMedian(values.sorted())
    }

    /// Median absolute deviation from the median (unscaled); nan for empty.
    ///
    /// This is `median(|xᵢ − median(x)|)` without the 1.4826 factor that makes it estimate a
    /// normal standard deviation.
    /// - Parameter values: The sample, in any order.
    /// - Returns: The median absolute deviation, or nan when `values` is empty or contains nan.
    public static func medianAbsoluteDeviation(_ values: [Double]) -> Double {
        let center = median(values)
        guard !center.isNaN else { return .nan }
        return median(values.map { abs($0 - center) })
    }

    /// Two-sided Mann–Whitney U test, matching SciPy's `scipy.stats.mannwhitneyu(x, y, alternative="two-sided")`
    /// with its defaults (method="auto", use_continuity=True).
    ///
    /// As in SciPy 1.17:
    /// - values are ranked together with average ranks for ties, and the reported statistic is
    ///   `U₁ = R₁ − n₁(n₁ + 1)/2`, the U of `x`;
    /// - the exact null distribution is used when at least one sample has 8 or fewer values and
    ///   no value occurs twice anywhere in `x + y`; otherwise the normal approximation with tie
    ///   and continuity corrections is used;
    /// - the p-value is `min(2 · P(U ≥ max(U₁, U₂)), 1)`.
    ///
    /// The exact path costs O((n₁n₂/2)²) operations, negligible for launch-sized samples:
    /// 8 against 1,000 values is about 16 million multiply-adds.
    ///
    /// Where SciPy returns nan (an empty sample, or any nan value) this returns `u` and `pValue`
    /// nan with `exact` false. Callers that need a decision should treat nan as "no evidence".
    /// When every value is identical the p-value is 1.
    /// - Parameters:
    ///   - x: The first sample (its U is reported).
    ///   - y: The second sample.
    /// - Returns: SciPy's statistic and two-sided p-value, and which null distribution gave it.
    public static func mannWhitneyU(_ x: [Double], _ y: [Double]) -> MannWhitneyResult {
        guard !x.isEmpty, !y.isEmpty, !x.contains(where: \.isNaN), !y.contains(where: \.isNaN) else {
            return MannWhitneyResult(u: .nan, pValue: .nan, exact: false)
        }
        let (n1, n2) = (x.count, y.count)
        let ranking = AverageRanks(x + y)
        let rankSumX = ranking.ranks[..<n1].reduce(0, +)
        let u1 = rankSumX - Double(n1 * (n1 + 1)) / 2
        let u2 = Double(n1 * n2) - u1
        let larger = max(u1, u2)

        let exact = (n1 <= 8 || n2 <= 8) && !ranking.hasTies
        let oneSided: Double
        if exact {
            // Without ties U is an integer; P(U ≥ larger) = P(U ≤ smaller) by symmetry.
            oneSided = exactNullCDF(Int(min(u1, u2)), n1, n2)
        } else {
            oneSided = normalCDF(-standardizedU(larger, n1, n2, tieTerm: ranking.tieTerm))
        }
        // Doubling counts the mass at U = n₁n₂/2 twice, so the p-value can exceed 1; SciPy clips it.
        return MannWhitneyResult(u: u1, pValue: min(2 * oneSided, 1), exact: exact)
    }

    /// Percentile bootstrap confidence interval for median(head) / median(base), deterministic for a given seed.
    ///
    /// Each of the `resamples` rounds draws `base.count` values from `base` and `head.count` values
    /// from `head`, with replacement, and records the ratio of their medians. The interval spans
    /// the `(1 − confidence)/2` and `(1 + confidence)/2` quantiles of those ratios (linear
    /// interpolation, like NumPy's default). Rounds whose ratio is undefined (0/0) are skipped.
    ///
    /// - Parameters:
    ///   - base: The reference runs.
    ///   - head: The runs being judged.
    ///   - confidence: The interval's level, in `0...1`.
    ///   - resamples: Rounds of resampling. With 0 or fewer, no resampling happens and the
    ///     interval is the point estimate alone.
    ///   - seed: Seed of the SplitMix64 generator that picks the draws.
    /// - Returns: The interval. When the ratio is undefined (an empty sample, a nan value, or
    ///   both medians 0) it is the whole line, `-.infinity ... .infinity`: a `ClosedRange` cannot
    ///   hold nan bounds.
    /// - Precondition: `confidence` is in `0...1`.
    public static func bootstrapRatioOfMedians(
        base: [Double], head: [Double], confidence: Double = 0.95, resamples: Int = 2000,
        seed: UInt64 = 0x4C49_4654_4F46_4621
    ) -> ClosedRange<Double> {
        precondition((0...1).contains(confidence), "confidence must be in 0...1, got \(confidence)")
        let point = median(head) / median(base)
        guard !point.isNaN else { return -.infinity ... .infinity }
        guard resamples > 0 else { return point...point }

        var generator = SplitMix64(seed: seed)
        var baseDraw = base
        var headDraw = head
        var ratios: [Double] = []
        ratios.reserveCapacity(resamples)
        for _ in 0..<resamples {
            generator.resample(base, into: &baseDraw)
            generator.resample(head, into: &headDraw)
            baseDraw.sort()
            headDraw.sort()
            let ratio = sortedMedian(headDraw) / sortedMedian(baseDraw)
            if !ratio.isNaN { ratios.append(ratio) }
        }
        guard !ratios.isEmpty else { return -.infinity ... .infinity }
        ratios.sort()
        let tail = (1 - confidence) / 2
        let lower = quantile(ofSorted: ratios, tail)
        let upper = quantile(ofSorted: ratios, 1 - tail)
        return min(lower, upper)...max(lower, upper)
    }
}

/// The outcome of ``Statistics/mannWhitneyU(_:_:)``.
public struct MannWhitneyResult: Sendable, Equatable, Codable {
    /// SciPy's statistic: the U of `x`, `R₁ − n₁(n₁ + 1)/2` where R₁ is the rank sum of `x`.
    public var u: Double
    /// Two-sided p-value, in `0...1` (nan when the test is undefined).
    public var pValue: Double
    /// Whether the exact null distribution gave the p-value (otherwise the normal approximation).
    public var exact: Bool

    /// Creates a result from its parts.
    /// - Parameters:
    ///   - u: The U statistic of the first sample.
    ///   - pValue: The two-sided p-value.
    ///   - exact: Whether the exact null distribution was used.
    public init(u: Double, pValue: Double, exact: Bool) {
        self.u = u
        self.pValue = pValue
        self.exact = exact
    }
}

// MARK: - Ranks

extension Statistics {
    /// 1-based ranks of values, ties sharing the mean of the ranks they span (SciPy's `rankdata`
    /// with `method="average"`).
    struct AverageRanks {
        /// The rank of each value, in input order.
        var ranks: [Double]
        /// `Σ (t³ − t)` over groups of `t` equal values: the tie correction of the normal approximation.
        var tieTerm: Double = 0
        /// Whether any value occurs more than once.
        var hasTies = false

        /// Ranks `values`, which must not contain nan.
        init(_ values: [Double]) {
            ranks = [Double](repeating: 0, count: values.count)
            let order = values.indices.sorted { values[$0] < values[$1] }
            var start = 0
            while start < order.count {
                var end = start + 1
                while end < order.count, values[order[end]] == values[order[start]] { end += 1 }
                // Positions start..<end hold ranks start + 1 ... end.
                let rank = Double(start + 1 + end) / 2
                for position in start..<end { ranks[order[position]] = rank }
                let size = Double(end - start)
                if end - start > 1 {
                    hasTies = true
                    tieTerm += size * size * size - size
                }
                start = end
            }
        }
    }
}

// MARK: - Null distributions

extension Statistics {
    /// P(U ≤ k) under the null hypothesis for samples of sizes `m` and `n` without ties.
    ///
    /// Mirrors SciPy's `_MWU.cdf`: frequencies of U from Löffler's recursion, each divided by
    /// C(m + n, min(m, n)), then summed in order.
    static func exactNullCDF(_ k: Int, _ m: Int, _ n: Int) -> Double {
        let (small, large) = (min(m, n), max(m, n))
        let total = binomial(small + large, small)
        return exactNullFrequencies(upTo: k, small, large).reduce(0) { $0 + $1 / total }
    }

    /// How many arrangements of `small` + `large` distinct values give each U in `0...maxU`.
    ///
    /// Löffler (1983): with σ(j) = Σ_{d | j, d ≤ small} d − Σ_{d | j, large < d ≤ large + small} d,
    /// f(0) = 1 and f(u) = (1/u) Σ_{i < u} f(i) σ(u − i). As in SciPy the sums are taken in
    /// floating point; the counts are integers, so each is rounded back to one.
    static func exactNullFrequencies(upTo maxU: Int, _ small: Int, _ large: Int) -> [Double] {
        guard maxU > 0 else { return [1] }
        var sigma = [Int](repeating: 0, count: maxU + 1)
        for divisor in 1...small {
            for multiple in stride(from: divisor, through: maxU, by: divisor) { sigma[multiple] += divisor }
        }
        for divisor in (large + 1)...(large + small) {
            for multiple in stride(from: divisor, through: maxU, by: divisor) { sigma[multiple] -= divisor }
        }
        var frequencies = [Double](repeating: 0, count: maxU + 1)
        frequencies[0] = 1
        for u in 1...maxU {
            var sum = 0.0
            for i in 0..<u { sum += frequencies[i] * Double(sigma[u - i]) }
            frequencies[u] = (sum / Double(u)).rounded()
        }
        return frequencies
    }

    /// C(n, k) evaluated the way SciPy's `special.binom` does for small integer k: a running
    /// product of numerator and denominator.
    static func binomial(_ n: Int, _ k: Int) -> Double {
        let k = min(k, n - k)
        var numerator = 1.0
        var denominator = 1.0
        for i in stride(from: 1, through: k, by: 1) {
            numerator *= Double(i + n - k)
            denominator *= Double(i)
            if abs(numerator) > 1e50 {
                numerator /= denominator
                denominator = 1
            }
        }
        return numerator / denominator
    }

    /// SciPy's `_get_mwu_z`: the standardized statistic with tie and continuity corrections.
    ///
    /// When every value is equal the deviation is 0 and the result is −∞ (so the p-value is 1).
    static func standardizedU(_ u: Double, _ n1: Int, _ n2: Int, tieTerm: Double) -> Double {
        let mean = Double(n1 * n2) / 2
        let n = n1 + n2
        let deviation = (Double(n1 * n2) / 12 * (Double(n + 1) - tieTerm / Double(n * (n - 1)))).squareRoot()
        // The continuity correction always moves toward the mean: U here is the larger statistic.
        return (u - mean - 0.5) / deviation
    }

    /// The standard normal CDF, evaluated like Cephes' `ndtr`: `erf` near 0, `erfc` in the
    /// tails so that small probabilities keep their relative precision.
    static func normalCDF(_ a: Double) -> Double {
        let sqrtHalf = 0.707_106_781_186_547_524_4
        guard !a.isNaN else { return .nan }
        let x = a * sqrtHalf
        if abs(x) < sqrtHalf { return 0.5 + 0.5 * erf(x) }
        let tail = 0.5 * erfc(abs(x))
        return x > 0 ? 1 - tail : tail
    }
}

// MARK: - Bootstrap support

extension Statistics {
    /// Median of an already sorted array; nan when it is empty.
    static func sortedMedian(_ sorted: [Double]) -> Double {
        guard !sorted.isEmpty else { return .nan }
        let middle = sorted.count / 2
        if sorted.count.isMultiple(of: 2) { return (sorted[middle - 1] + sorted[middle]) / 2 }
        return sorted[middle]
    }

    /// The `q` quantile of a non-empty sorted array, interpolating linearly between neighbours.
    static func quantile(ofSorted sorted: [Double], _ q: Double) -> Double {
        let position = q * Double(sorted.count - 1)
        let below = Int(position.rounded(.down))
        let above = min(below + 1, sorted.count - 1)
        let fraction = position - Double(below)
        let (low, high) = (sorted[below], sorted[above])
        // Skipping the arithmetic for equal neighbours keeps infinite ratios from becoming nan.
        if fraction == 0 || low == high { return low }
        return low + fraction * (high - low)
    }

}
