import Foundation

/// Student's t-test on two samples summarized by their means, standard deviations and sizes, with
/// the pooled variance (equal variances), as SciPy's `ttest_ind_from_stats` computes it.
enum StudentT {
    /// The two-sided p-value of the difference between two means; NaN when both samples have no
    /// spread and the same mean (no evidence either way).
    static func twoSidedPValue(mean1: Double, std1: Double, count1: Int, mean2: Double, std2: Double, count2: Int) -> Double {
        let n1 = Double(count1), n2 = Double(count2)
        let degrees = n1 + n2 - 2
        guard degrees > 0 else { return .nan }
        let pooled = ((n1 - 1) * std1 * std1 + (n2 - 1) * std2 * std2) / degrees
        let denominator = (pooled * (1 / n1 + 1 / n2)).squareRoot()
        let t = (mean1 - mean2) / denominator
        if t.isNaN { return .nan }
        if t.isInfinite { return 0 }
        return min(1, 2 * survival(abs(t), degrees: degrees))
    }

    /// P(T > t) for t ≥ 0 with `degrees` degrees of freedom: half the regularized incomplete beta
    /// function at ν / (ν + t²).
    static func survival(_ t: Double, degrees: Double) -> Double {
        let x = degrees / (degrees + t * t)
        return 0.5 * regularizedIncompleteBeta(x, degrees / 2, 0.5)
    }

    /// I_x(a, b), by its continued fraction (evaluated with the modified Lentz method) on the side of
    /// x where it converges fast.
    static func regularizedIncompleteBeta(_ x: Double, _ a: Double, _ b: Double) -> Double {
        if x <= 0 { return 0 }
        if x >= 1 { return 1 }
        let logFront = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x)
        if x < (a + 1) / (a + b + 2) {
            return exp(logFront) * continuedFraction(x, a, b) / a
        }
        return 1 - exp(logFront) * continuedFraction(1 - x, b, a) / b
    }

    private static func continuedFraction(_ x: Double, _ a: Double, _ b: Double) -> Double {
        let tiny = 1e-300
        var c = 1.0
        var d = 1 - (a + b) * x / (a + 1)
        if abs(d) < tiny { d = tiny }
        d = 1 / d
        var result = d
        for m in 1...400 {
            let m = Double(m)
            // The even step, then the odd one.
            var numerator = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
            d = 1 + numerator * d
            if abs(d) < tiny { d = tiny }
            c = 1 + numerator / c
            if abs(c) < tiny { c = tiny }
            d = 1 / d
            result *= d * c
            numerator = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
            d = 1 + numerator * d
            if abs(d) < tiny { d = tiny }
            c = 1 + numerator / c
            if abs(c) < tiny { c = tiny }
            d = 1 / d
            let step = d * c
            result *= step
            if abs(step - 1) < 1e-16 { break }
        }
        return result
    }
}
