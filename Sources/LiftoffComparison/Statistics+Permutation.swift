import Foundation
import LiftoffProfile

// The statistics of per-function comparisons: per-run sample counts have many ties (a function
// absent from a run is 0 there), so the test is a permutation test, and hundreds of functions
// are tested at once, so their p-values are controlled for the false-discovery rate.

extension Statistics {
    /// Two-sided permutation test of the difference in means of `x` and `y`: the share of
    /// relabellings of the pooled values whose difference is at least as large as the observed
    /// one. Sound whatever the distribution and however many values tie.
    ///
    /// The relabellings are drawn at random (seeded, so the result is reproducible) with Besag and
    /// Clifford's sequential stopping: drawing stops once `exceedances` relabellings reached the
    /// observed difference (the p-value is then `exceedances / drawn`), else after
    /// `maxPermutations` (then `(reached + 1) / (maxPermutations + 1)`). A clearly null function
    /// costs a few dozen draws; a clear difference the whole budget, which bounds the smallest
    /// p-value at `1 / (maxPermutations + 1)`.
    /// - Returns: The p-value in `0...1`; 1 when a side is empty or every value is equal.
    public static func permutationTest(
        _ x: [Double], _ y: [Double], maxPermutations: Int = 20_000, exceedances: Int = 20,
        seed: UInt64 = 0x5045_524D_5554_4521
    ) -> Double {
        let n = x.count
        let m = y.count
        guard n > 0, m > 0, maxPermutations > 0 else { return 1 }
        let pooled = x + y
        let total = pooled.reduce(0, +)
        guard let first = pooled.first, pooled.contains(where: { $0 != first }) else { return 1 }
        // |mean(y) − mean(x)| is a fixed multiple of |sum(y) − m·total/N|: only the sum of the
        // values labelled `y` matters.
        let expected = Double(m) * total / Double(n + m)
        let observed = abs(y.reduce(0, +) - expected)
        let tolerance = 1e-9 * max(abs(total), 1)
        var generator = SplitMix64(seed: seed)
        var values = pooled
        var reached = 0
        for drawn in 1...maxPermutations {
            // A partial Fisher–Yates shuffle: the first m positions are a uniform random subset.
            var sum = 0.0
            for position in 0..<m {
                let pick = position + generator.nextIndex(below: n + m - position)
                values.swapAt(position, pick)
                sum += values[position]
            }
            if abs(sum - expected) >= observed - tolerance {
                reached += 1
                if reached == exceedances { return Double(reached) / Double(drawn) }
            }
        }
        return Double(reached + 1) / Double(maxPermutations + 1)
    }

    /// Benjamini–Hochberg adjusted p-values (q-values), in the input's order: a function whose
    /// q-value is at most `q` is a discovery at false-discovery rate `q`.
    public static func benjaminiHochberg(_ pValues: [Double]) -> [Double] {
        let count = pValues.count
        guard count > 0 else { return [] }
        let order = pValues.indices.sorted { pValues[$0] < pValues[$1] }
        var adjusted = [Double](repeating: 1, count: count)
        var running = 1.0
        for rank in stride(from: count, through: 1, by: -1) {
            let index = order[rank - 1]
            running = min(running, pValues[index] * Double(count) / Double(rank))
            adjusted[index] = min(running, 1)
        }
        return adjusted
    }

    /// The shift of `head` against `base` (Hodges–Lehmann: the median of every difference
    /// head − base) with its distribution-free confidence interval (Moses: order statistics of
    /// those differences, from the Mann–Whitney null distribution's normal approximation).
    ///
    /// The order statistics are selected without listing the n·m differences: a search over
    /// their values, counting with two pointers over the sorted sides (O((n + m) log) each).
    /// - Returns: nan for each when a side is empty; the whole range of differences when the
    ///   sides are too small for the interval.
    public static func shift(base: [Double], head: [Double], confidence: Double = 0.95) -> (estimate: Double, lower: Double, upper: Double) {
        let n = base.count
        let m = head.count
        guard n > 0, m > 0, !base.contains(where: \.isNaN), !head.contains(where: \.isNaN) else { return (.nan, .nan, .nan) }
        let differences = PairwiseDifferences(base: base.sorted(), head: head.sorted())
        let count = n * m
        let estimate = count % 2 == 1
            ? differences.kth((count + 1) / 2) : (differences.kth(count / 2) + differences.kth(count / 2 + 1)) / 2
        let z = normalQuantile(1 - (1 - confidence) / 2)
        let half = z * (Double(n * m * (n + m + 1)) / 12).squareRoot()
        let k = Int((Double(n * m) / 2 - half).rounded(.down))
        guard k >= 1 else { return (estimate, differences.kth(1), differences.kth(count)) }
        return (estimate, differences.kth(k), differences.kth(count - k + 1))
    }

    /// The standard normal quantile (Acklam's rational approximation, relative error below 1.2e-9).
    static func normalQuantile(_ p: Double) -> Double {
        let a = [-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00]
        let b = [-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01, -1.328068155288572e+01]
        let c = [-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00]
        let d = [7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00]
        let low = 0.02425
        if p <= 0 { return -.infinity }
        if p >= 1 { return .infinity }
        if p < low {
            let q = (-2 * Foundation.log(p)).squareRoot()
            return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
        }
        if p > 1 - low {
            let q = (-2 * Foundation.log(1 - p)).squareRoot()
            return -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
        }
        let q = p - 0.5
        let r = q * q
        return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q
            / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
    }
}

/// The differences y − x of two sorted samples, queried by rank without being listed.
struct PairwiseDifferences {
    let base: [Double]  // x, ascending
    let head: [Double]  // y, ascending

    /// How many differences are at most `value`.
    func count(atMost value: Double) -> Int {
        var total = 0
        var i = 0
        for y in head {
            // y − x falls as x rises: skip the x that leave the difference above `value`.
            while i < base.count, y - base[i] > value { i += 1 }
            total += base.count - i
        }
        return total
    }

    /// The largest difference at most `value`, if one is.
    func largest(atMost value: Double) -> Double? {
        var best: Double?
        var i = 0
        for y in head {
            while i < base.count, y - base[i] > value { i += 1 }
            if i < base.count { best = max(best ?? -.infinity, y - base[i]) }
        }
        return best
    }

    /// The smallest difference above `value`, if one is.
    func smallest(above value: Double) -> Double? {
        var best: Double?
        var i = 0  // the first x whose difference is at most `value`
        for y in head {
            while i < base.count, y - base[i] > value { i += 1 }
            if i > 0 { best = min(best ?? .infinity, y - base[i - 1]) }
        }
        return best
    }

    /// The k-th smallest difference (1-based).
    func kth(_ k: Int) -> Double {
        var low = head[0] - base[base.count - 1]
        var high = head[head.count - 1] - base[0]
        // Both ends are differences; the answer lies between them.
        while low < high {
            let middle = low + (high - low) / 2
            guard let candidate = largest(atMost: middle) else { break }
            if count(atMost: candidate) >= k {
                if candidate >= high { break }
                high = candidate
            } else {
                guard let next = smallest(above: candidate), next > low else { break }
                low = next
            }
        }
        return count(atMost: low) >= k ? low : high
    }
}
