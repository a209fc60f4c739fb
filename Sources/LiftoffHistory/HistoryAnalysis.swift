/// The change points of a history: per environment, per metric, with the functions that changed
/// with each.
public struct HistoryAnalysis: Sendable {
    /// One point of a series.
    public struct Point: Sendable, Equatable {
        /// The commit.
        public var commit: String
        /// Its time, ISO 8601.
        public var time: String
        /// The metric's median.
        public var value: Double
    }

    /// A function whose own series changed at (or within two commits of) a metric's change point.
    public struct FunctionChange: Sendable, Equatable {
        /// The function's name.
        public var name: String
        /// `the program`, or a library's name up to `.so`.
        public var object: String
        /// Its mean milliseconds before its change point, and after.
        public var beforeMs: Double
        /// After.
        public var afterMs: Double
        /// The commit its own series changed at.
        public var commit: String
    }

    /// A change point of one metric.
    public struct Change: Sendable, Equatable {
        /// The metric.
        public var metric: String
        /// The first commit after the change.
        public var commit: String
        /// That commit's time.
        public var time: String
        /// Its position in the environment's series.
        public var index: Int
        /// The statistics of the change.
        public var point: ChangePoint
        /// The functions that changed with it, the largest change first (at most three).
        public var functions: [FunctionChange]

        /// Whether the metric rose (every metric is better lower).
        public var isRegression: Bool { point.meanAfter > point.meanBefore }
    }

    /// One metric's series in one environment, and its change points.
    public struct Series: Sendable {
        /// The metric.
        public var metric: String
        /// The environment.
        public var environment: HistoryEntry.Environment
        /// The points, in time order.
        public var points: [Point]
        /// Its change points, in time order.
        public var changes: [Change]
    }

    /// The options the analysis used.
    public var options: ChangePointOptions
    /// Each environment and how many entries it has, the most first.
    public var environments: [(environment: HistoryEntry.Environment, entries: Int)]
    /// Every analyzed series, environment by environment, metrics by name.
    public var series: [Series]
    /// Entries skipped, one sentence each.
    public var skipped: [String]

    /// Every change point, in time order within each series.
    public var changes: [Change] { series.flatMap(\.changes) }

    /// How many functions get series of their own per environment: those with the most time.
    public static let analyzedFunctions = 50

    /// Analyzes `entries`: within each environment, in time order (then commit), each metric
    /// (those `metrics` selects, when given) and each of the busiest functions.
    public init(
        entries: [HistoryEntry], skipped: [String] = [], options: ChangePointOptions = ChangePointOptions(),
        metrics: Set<String>? = nil, branch: String? = nil
    ) {
        self.options = options
        self.skipped = skipped
        let chosen = entries.filter { branch == nil || $0.branch == branch }
        var byEnvironment: [HistoryEntry.Environment: [HistoryEntry]] = [:]
        for entry in chosen { byEnvironment[entry.environment, default: []].append(entry) }
        environments = byEnvironment.map { ($0.key, $0.value.count) }.sorted {
            ($1.entries, $0.environment.key) < ($0.entries, $1.environment.key)
        }
        var series: [Series] = []
        for (environment, _) in environments {
            let ordered = HistoryEntry.inSeriesOrder(byEnvironment[environment]!)
            let functionChanges = Self.functionChanges(ordered, options: options)
            var names = Set<String>()
            for entry in ordered { names.formUnion(entry.metrics.keys) }
            for metric in names.sorted() where metrics == nil || metrics!.contains(metric) {
                let rows = ordered.enumerated().compactMap { index, entry in entry.metrics[metric].map { (index, entry, $0) } }
                let points = rows.map { Point(commit: $0.1.commit, time: $0.1.time, value: $0.2) }
                let found = rows.count >= 3 ? ChangePoints.find(in: rows.map(\.2), options: options) : []
                let changes = found.map { point -> Change in
                    let entryIndex = rows[point.index].0
                    let near = functionChanges.filter { abs($0.index - entryIndex) <= 2 }
                        .sorted { abs($0.change.afterMs - $0.change.beforeMs) > abs($1.change.afterMs - $1.change.beforeMs) }
                    return Change(
                        metric: metric, commit: points[point.index].commit, time: points[point.index].time, index: point.index,
                        point: point, functions: Array(near.prefix(3).map(\.change)))
                }
                series.append(Series(metric: metric, environment: environment, points: points, changes: changes))
            }
        }
        self.series = series
    }

    /// The change points of the busiest functions' own series (entries without the function are left out).
    static func functionChanges(_ ordered: [HistoryEntry], options: ChangePointOptions) -> [(index: Int, change: FunctionChange)] {
        struct Key: Hashable {
            var name: String
            var object: String
        }
        var peak: [Key: Double] = [:]
        for entry in ordered {
            for function in entry.functions {
                let key = Key(name: function.name, object: function.object)
                peak[key] = max(peak[key] ?? 0, function.ms)
            }
        }
        let busiest = peak.sorted { ($1.value, $0.key.name) < ($0.value, $1.key.name) }.prefix(analyzedFunctions).map(\.key)
        var result: [(index: Int, change: FunctionChange)] = []
        for key in busiest {
            let rows = ordered.enumerated().compactMap { index, entry in
                entry.functions.first { $0.name == key.name && $0.object == key.object }.map { (index, $0.ms) }
            }
            guard rows.count >= 3 else { continue }
            for point in ChangePoints.find(in: rows.map(\.1), options: options) {
                let index = rows[point.index].0
                result.append(
                    (index, FunctionChange(
                        name: key.name, object: key.object, beforeMs: point.meanBefore, afterMs: point.meanAfter,
                        commit: ordered[index].commit)))
            }
        }
        return result
    }
}
