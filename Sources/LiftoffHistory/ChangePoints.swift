/// How change points are found: Apache Otava's parameters. The defaults are Otava's but for the
/// minimum magnitude, 1 % where Otava has none: the t-test alone finds a "change" of 0.1 % in
/// about one flat series of launches in ten, however quiet the series (its p-value does not
/// depend on the noise's scale), and a launch that moved 0.1 % did not change.
public struct ChangePointOptions: Sendable, Equatable {
    /// The sliding window's length, in points: the series is searched window by window, each
    /// starting half a window after the previous one (or at the last change found in it).
    public var windowLength: Int
    /// The largest p-value of a change point's t-test that keeps it (the windows search at ten
    /// times this, and the merge step keeps only the points that pass it).
    public var maxPValue: Double
    /// The smallest relative change a change point must make to be kept, as a fraction (0.02 is 2 %).
    public var minMagnitude: Double

    /// Options: by default a window of 50, p ≤ 0.001 and a change of at least 1 %.
    public init(windowLength: Int = 50, maxPValue: Double = 0.001, minMagnitude: Double = 0.01) {
        self.windowLength = windowLength
        self.maxPValue = maxPValue
        self.minMagnitude = minMagnitude
    }
}

/// A point where a series changed: the first point after the change, and the two sides' statistics.
public struct ChangePoint: Sendable, Equatable {
    /// The index of the first point after the change.
    public var index: Int
    /// The E-divisive statistic that chose the point.
    public var qhat: Double
    /// The mean of the points from the previous change point (or the start) to this one.
    public var meanBefore: Double
    /// The mean of the points from this one to the next change point (or the end).
    public var meanAfter: Double
    /// The standard deviation before (of the population, as Otava computes it).
    public var stddevBefore: Double
    /// The standard deviation after.
    public var stddevAfter: Double
    /// The two-sided p-value of Student's t-test between the two sides.
    public var pValue: Double

    /// The relative change from before to after (0.02 is 2 % more); 0 when the mean before is 0.
    public var forwardChange: Double { meanBefore == 0 ? 0 : meanAfter / meanBefore - 1 }
    /// The relative change from after to before; 0 when the mean after is 0.
    public var backwardChange: Double { meanAfter == 0 ? 0 : meanBefore / meanAfter - 1 }
    /// The larger of the two relative changes, in absolute value: what the minimum magnitude bounds.
    public var magnitude: Double { max(abs(forwardChange), abs(backwardChange)) }
}

/// Change points of a series by E-divisive means with Otava's t-test, split and merge steps
/// (Fleming et al., "Hunter: Using Change Point Detection to Hunt for Performance Regressions",
/// ICPE 2023; Matteson and James, "A Nonparametric Approach for Multiple Change Point Analysis of
/// Multivariate Data", 2014).
///
/// 1. **Split**: each window of the series is divided recursively where the E-divisive statistic
///    Q̂ (the distance between the two sides' distributions, by absolute differences) is largest, as
///    long as a t-test between the two sides gives p ≤ 10 × `maxPValue` (2 × from 0.05 up): the
///    weak change points.
/// 2. **Merge**: the weak points are tested again against their neighbours; the one with the
///    largest p-value above `maxPValue`, or else the one with the smallest magnitude below
///    `minMagnitude`, is dropped and its neighbours tested again, until every point passes.
public enum ChangePoints {
    /// The change points of `series`, in index order.
    public static func find(in series: [Double], options: ChangePointOptions = ChangePointOptions()) -> [ChangePoint] {
        let maxP = options.maxPValue
        let firstPass = maxP < 0.05 ? maxP * 10 : maxP < 0.5 ? maxP * 2 : maxP
        let weak = split(series, windowLength: max(options.windowLength, 2), maxPValue: firstPass)
        return merge(weak, series, maxPValue: maxP, minMagnitude: options.minMagnitude)
    }

    /// The weak change points: each window searched on its own, their union tested on the whole series.
    static func split(_ series: [Double], windowLength: Int, maxPValue: Double) -> [ChangePoint] {
        var points: [ChangePoint] = []
        let step = windowLength / 2
        var start = 0
        while start < series.count {
            let end = min(start + windowLength, series.count)
            let found = detect(Array(series[start..<end]), maxPValue: maxPValue).map { point -> ChangePoint in
                var shifted = point
                shifted.index += start
                return shifted
            }
            start = max(found.last?.index ?? 0, start + step)
            for point in found where !points.contains(where: { $0.index == point.index }) { points.append(point) }
        }
        points.sort { $0.index < $1.index }
        let bounds = intervals(points.map(\.index), count: series.count)
        return points.map { tested(index: $0.index, qhat: $0.qhat, series, bounds) }
    }

    /// The merge step: drops the weakest point until all are significant and large enough.
    static func merge(_ weak: [ChangePoint], _ series: [Double], maxPValue: Double, minMagnitude: Double) -> [ChangePoint] {
        var points = weak
        while !points.isEmpty {
            // The largest p-value first (the first of equals, as Python's max picks).
            var weakest = 0
            for i in points.indices.dropFirst() where points[i].pValue > points[weakest].pValue { weakest = i }
            if points[weakest].pValue < maxPValue {
                weakest = 0
                for i in points.indices.dropFirst() where points[i].magnitude < points[weakest].magnitude { weakest = i }
                if points[weakest].magnitude > minMagnitude { return points }
            }
            points.remove(at: weakest)
            // The points after the one removed now span more: tested again (the one before it is
            // left as it was, as Otava leaves it).
            let bounds = intervals(points.map(\.index), count: series.count)
            for i in [weakest, weakest + 1] where i < points.count {
                points[i] = tested(index: points[i].index, qhat: points[i].qhat, series, bounds)
            }
        }
        return points
    }

    /// The change points of one window, by recursive division while the division is significant.
    static func detect(_ window: [Double], maxPValue: Double) -> [ChangePoint] {
        let distances = Distances(window)
        var points: [ChangePoint] = []
        while true {
            let bounds = intervals(points.map(\.index), count: window.count)
            var best: (index: Int, qhat: Double)?
            for bound in bounds where bound.count > 1 {
                let candidate = distances.candidate(in: bound)
                if best == nil || candidate.qhat > best!.qhat { best = candidate }
            }
            guard let best else { break }
            // The candidate divides the interval that holds it.
            let holder = bounds.first { $0.lowerBound < best.index && best.index < $0.upperBound }!
            let point = statistics(index: best.index, qhat: best.qhat, window, holder.lowerBound..<best.index, best.index..<holder.upperBound)
            guard point.pValue <= maxPValue else { break }
            points.append(point)
            points.sort { $0.index < $1.index }
        }
        return points
    }

    /// The series divided at `indices` (sorted), without empty parts.
    static func intervals(_ indices: [Int], count: Int) -> [Range<Int>] {
        var result: [Range<Int>] = []
        var lower = 0
        for index in indices + [count] {
            if index > lower { result.append(lower..<index) }
            lower = index
        }
        return result
    }

    /// A change point at an existing division: tested between the parts on its two sides.
    static func tested(index: Int, qhat: Double, _ series: [Double], _ bounds: [Range<Int>]) -> ChangePoint {
        guard let left = bounds.firstIndex(where: { $0.upperBound == index }), left + 1 < bounds.count else {
            return statistics(index: index, qhat: qhat, series, 0..<index, index..<series.count)
        }
        return statistics(index: index, qhat: qhat, series, bounds[left], bounds[left + 1])
    }

    static func statistics(index: Int, qhat: Double, _ series: [Double], _ left: Range<Int>, _ right: Range<Int>) -> ChangePoint {
        let (meanL, stdL) = meanAndDeviation(series[left])
        let (meanR, stdR) = meanAndDeviation(series[right])
        let p =
            left.count + right.count > 2
            ? StudentT.twoSidedPValue(mean1: meanL, std1: stdL, count1: left.count, mean2: meanR, std2: stdR, count2: right.count)
            : 1
        return ChangePoint(
            index: index, qhat: qhat, meanBefore: meanL, meanAfter: meanR, stddevBefore: stdL, stddevAfter: stdR, pValue: p)
    }

    /// The mean and the population standard deviation (0 for fewer than two values).
    static func meanAndDeviation(_ values: ArraySlice<Double>) -> (Double, Double) {
        guard !values.isEmpty else { return (.nan, .nan) }
        let mean = values.reduce(0, +) / Double(values.count)
        guard values.count >= 2 else { return (mean, 0) }
        let squares = values.reduce(0) { $0 + ($1 - mean) * ($1 - mean) }
        return (mean, (squares / Double(values.count)).squareRoot())
    }
}

/// The sums of absolute differences within every stretch of a window, for Q̂ in constant time.
struct Distances {
    let count: Int
    /// `within[a * (count + 1) + b]`: Σ |x_i − x_k| over a ≤ i < k < b.
    private var within: [Double]

    init(_ values: [Double]) {
        count = values.count
        let width = count + 1
        within = [Double](repeating: 0, count: width * width)
        guard count >= 2 else { return }
        for end in 2...count {
            let last = end - 1
            var sum = 0.0
            for start in stride(from: last - 1, through: 0, by: -1) {
                sum += abs(values[start] - values[last])
                within[start * width + end] = within[start * width + end - 1] + sum
            }
        }
    }

    func sum(_ start: Int, _ end: Int) -> Double { within[start * (count + 1) + end] }

    /// Q̂ of the stretch `start..<tau` against `tau..<kappa`.
    func qhat(start: Int, tau: Int, kappa: Int) -> Double {
        let n = Double(tau - start), m = Double(kappa - tau)
        let left = sum(start, tau), right = sum(tau, kappa)
        let cross = sum(start, kappa) - left - right
        var q = 2 / (m + n) * cross
        if n > 1 { q -= 2 * m / ((m + n) * (n - 1)) * left }
        if m > 1 { q -= 2 * n / ((m + n) * (m - 1)) * right }
        return q
    }

    /// The division of `bound` with the largest Q̂ over every following stretch: its index (the
    /// first point after the division) and Q̂; the first of equals.
    func candidate(in bound: Range<Int>) -> (index: Int, qhat: Double) {
        var best = (index: bound.lowerBound + 1, qhat: -Double.infinity)
        for tau in (bound.lowerBound + 1)..<bound.upperBound {
            for kappa in (tau + 1)...bound.upperBound {
                let q = qhat(start: bound.lowerBound, tau: tau, kappa: kappa)
                if q > best.qhat { best = (tau, q) }
            }
        }
        return best
    }
}
