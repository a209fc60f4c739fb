/// What a comparison concluded about one metric.
public enum Verdict: String, Sendable, Codable, CaseIterable {
    /// Head is slower by at least the threshold, and the difference is significant.
    case regressed
    /// Head is faster by at least the threshold, and the difference is significant.
    case improved
    /// No change as large as the threshold: either none was detected, or a significant one is small.
    case unchanged
    /// Cannot tell: too few runs, an undefined ratio, or a large change that is not significant
    /// (more runs are needed).
    case inconclusive
}

/// How comparisons decide.
public struct ComparisonSettings: Sendable, Equatable {
    /// A change smaller than this fraction of the base median is "unchanged".
    public var threshold: Double = 0.05
    /// Significance level for the Mann–Whitney test.
    public var alpha: Double = 0.01
    /// Level of the bootstrap interval reported with each comparison, in `0...1`.
    public var confidence: Double = 0.95
    /// Bootstrap rounds; 0 skips the bootstrap (the interval is then the point ratio alone).
    public var resamples: Int = 2000
    /// The false-discovery rate of the per-function comparison.
    public var falseDiscoveryRate: Double = 0.05

    /// Creates settings; the defaults suit launch times.
    /// - Parameters:
    ///   - threshold: Smallest relative change of the median that counts as a change.
    ///   - alpha: Significance level for the Mann–Whitney test.
    ///   - confidence: Level of the bootstrap interval, in `0...1`.
    ///   - resamples: Bootstrap rounds; 0 skips the bootstrap.
    ///   - falseDiscoveryRate: The false-discovery rate of the per-function comparison.
    public init(
        threshold: Double = 0.05, alpha: Double = 0.01, confidence: Double = 0.95, resamples: Int = 2000,
        falseDiscoveryRate: Double = 0.05
    ) {
        self.falseDiscoveryRate = falseDiscoveryRate
        self.threshold = threshold
        self.alpha = alpha
        self.confidence = confidence
        self.resamples = resamples
    }
}

/// One metric compared between a base and a head set of runs.
public struct MetricComparison: Sendable, Equatable, Codable {
    /// Name of the metric, such as `time-to-main`.
    public var metric: String
    /// Number of base runs.
    public var baseCount: Int
    /// Number of head runs.
    public var headCount: Int
    /// Median of the base runs (nan without runs).
    public var baseMedian: Double
    /// Median of the head runs (nan without runs).
    public var headMedian: Double
    /// `headMedian / baseMedian`: above 1 is slower.
    public var ratio: Double
    /// Lower bound of the bootstrap confidence interval of `ratio` (nan when `ratio` is).
    public var lower: Double
    /// Upper bound of the bootstrap confidence interval of `ratio` (nan when `ratio` is).
    public var upper: Double
    /// Two-sided Mann–Whitney p-value of base against head (nan without runs on a side).
    public var pValue: Double
    /// What the comparison concluded.
    public var verdict: Verdict

    /// Compares `head` against `base` (lower values are better: times).
    ///
    /// With `t = settings.threshold` and `p` the Mann–Whitney p-value, the verdict is:
    /// - **inconclusive** if either side has fewer than 2 values, the base median is 0, or the
    ///   ratio or p-value is undefined (nan values);
    /// - if `p < settings.alpha`: **regressed** when `ratio ≥ 1 + t`, **improved** when
    ///   `ratio ≤ 1 − t`, otherwise **unchanged** (a real but small change);
    /// - if `p ≥ settings.alpha`: **inconclusive** when `ratio ≥ 1 + t` or `ratio ≤ 1 − t` (it looks
    ///   like a change but is not significant: more runs are needed), otherwise **unchanged**.
    ///
    /// The verdict never depends on the bootstrap, whose interval (`lower`, `upper`) is only
    /// reported alongside; set `settings.resamples` to 0 to skip it.
    /// - Parameters:
    ///   - metric: Name of the metric.
    ///   - base: The reference runs.
    ///   - head: The runs being judged.
    ///   - settings: Threshold, significance level and bootstrap settings.
    public init(metric: String, base: [Double], head: [Double], settings: ComparisonSettings = ComparisonSettings()) {
        self.metric = metric
        baseCount = base.count
        headCount = head.count
        baseMedian = Statistics.median(base)
        headMedian = Statistics.median(head)
        ratio = headMedian / baseMedian
        pValue = Statistics.mannWhitneyU(base, head).pValue
        if ratio.isNaN {
            (lower, upper) = (.nan, .nan)
        } else {
            let interval = Statistics.bootstrapRatioOfMedians(
                base: base, head: head, confidence: settings.confidence, resamples: settings.resamples)
            (lower, upper) = (interval.lowerBound, interval.upperBound)
        }
        verdict = Self.verdict(
            baseCount: baseCount, headCount: headCount, baseMedian: baseMedian, ratio: ratio, pValue: pValue,
            settings: settings)
        // Nothing on either side in most runs (no major fault, no storage read): nothing changed.
        if baseCount >= 2, headCount >= 2, baseMedian == 0, headMedian == 0 { verdict = .unchanged }
        // Something head added (a span base never had) or removed: a change when the test says so.
        if baseCount >= 2, headCount >= 2, pValue < settings.alpha {
            if base.allSatisfy({ $0 == 0 }), headMedian > 0 { verdict = .regressed }
            if head.allSatisfy({ $0 == 0 }), baseMedian > 0 { verdict = .improved }
        }
    }

    /// The verdict rule documented on ``init(metric:base:head:settings:)``.
    static func verdict(
        baseCount: Int, headCount: Int, baseMedian: Double, ratio: Double, pValue: Double,
        settings: ComparisonSettings
    ) -> Verdict {
        guard baseCount >= 2, headCount >= 2, baseMedian != 0, !ratio.isNaN, !pValue.isNaN else {
            return .inconclusive
        }
        let change: Verdict
        if ratio >= 1 + settings.threshold {
            change = .regressed
        } else if ratio <= 1 - settings.threshold {
            change = .improved
        } else {
            return .unchanged
        }
        return pValue < settings.alpha ? change : .inconclusive
    }
}
