import Benchmark
import BenchmarkPairs
import Foundation
import LiftoffComparison
import LiftoffHistory
import LiftoffProfile

// The launch history: analyzing 1,000 commits of 50 metrics (target: at most 1 s), and adding one
// commit's entry (target: at most 50 ms), each paired with a baseline measured in the same run.
// `Reports/benchmarks/history.md` is written from these results by `make bench-history`.

/// A store of 1,000 entries of 50 metrics and 200 functions, with steps in some metrics.
let store: FolderHistoryStore = {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("liftoff-history-bench")
    try? FileManager.default.removeItem(at: folder)
    let store = FolderHistoryStore(folder: folder)
    var state: UInt64 = 2026
    func noise() -> Double {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Double(state >> 11) / Double(1 << 53) - 0.5
    }
    let environment = HistoryEntry.Environment(cpu: "Bench CPU", cores: 2, os: "Linux", liftoff: LiftoffVersion.current, cache: "warm")
    for commit in 0..<1_000 {
        var metrics: [String: Double] = [:]
        for metric in 0..<50 {
            let step = metric % 5 == 0 && commit >= 400 + metric ? 1.04 : 1
            metrics["span: step \(metric)"] = (10 + Double(metric)) * step * (1 + 0.01 * noise())
        }
        let functions = (0..<200).map { HistoryEntry.Function(name: "function\($0)", object: "the program", ms: 5 * (1 + 0.01 * noise())) }
        let entry = HistoryEntry(
            commit: String(format: "c%05d", commit), branch: "main", time: HistoryTime.format(1_790_000_000 + Double(commit) * 60),
            environment: environment, runs: 5, metrics: metrics, functions: functions)
        try? store.add(entry)
    }
    return store
}()

/// A recorded-like folder of 5 launch-sized profiles, and a store to add it to.
let runsFolder: String = {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("liftoff-history-runs")
    try? FileManager.default.removeItem(at: folder)
    try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    for run in 0..<5 {
        let profile = Profile.synthetic(samples: 2_000, distinctStacks: 1_000, tasks: 8, threads: 2, seed: UInt64(run))
        try? profile.write(to: folder.appendingPathComponent(String(format: "run-%03d.json", run)))
    }
    return folder.path
}()

/// The treatment's time beyond its baseline's, pair by pair: the work the baseline does not do.
let addedMetric = BenchmarkMetric.custom("addedNs", polarity: .prefersSmaller, useScalingFactor: false)

let benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration(
        metrics: [ratioMetric, baselineMetric, treatedMetric, addedMetric],
        units: [ratioMetric: .count, baselineMetric: .count, treatedMetric: .count, addedMetric: .count], warmupIterations: 1,
        maxDuration: .seconds(30), maxIterations: 20)
    // Baseline: reading the 1,000 entries; treatment: reading them and analyzing every series.
    Benchmark("paired history: analyze 1,000 commits x 50 metrics vs reading them", configuration: configuration) { benchmark in
        for (round, _) in benchmark.scaledIterations.enumerated() {
            let (base, treated) = inAlternatingOrder(
                round: round, baseline: { nanoseconds { blackHole(try? store.load().entries.count) } },
                treatment: {
                    nanoseconds {
                        let loaded = (try? store.load().entries) ?? []
                        blackHole(HistoryAnalysis(entries: loaded).changes.count)
                    }
                })
            benchmark.measurement(ratioMetric, Int(treated * 1_000_000 / max(base, 1)))
            benchmark.measurement(baselineMetric, Int(base))
            benchmark.measurement(treatedMetric, Int(treated))
            benchmark.measurement(addedMetric, max(0, Int(treated) - Int(base)))
        }
    }
    // Baseline: loading the 5 runs' profiles; treatment: making their entry and writing it.
    Benchmark("paired history: add one commit of 5 runs vs loading its runs", configuration: configuration) { benchmark in
        let targetFolder = FileManager.default.temporaryDirectory.appendingPathComponent("liftoff-history-add")
        try? FileManager.default.removeItem(at: targetFolder)
        let target = FolderHistoryStore(folder: targetFolder)
        let environment = HistoryEntry.Environment(cpu: "Bench CPU", cores: 2, os: "Linux", liftoff: LiftoffVersion.current, cache: "warm")
        for (round, _) in benchmark.scaledIterations.enumerated() {
            let (base, treated) = inAlternatingOrder(
                round: round, baseline: { nanoseconds { blackHole(try? RunSet.load(runsFolder).profiles.count) } },
                treatment: {
                    nanoseconds {
                        guard let runs = try? RunSet.load(runsFolder),
                            let entry = try? HistoryEntry.of(runs, commit: "c\(round)", branch: nil, time: "2026-11-28T00:00:00Z", environment: environment)
                        else { return }
                        try? target.add(entry)
                    }
                })
            benchmark.measurement(ratioMetric, Int(treated * 1_000_000 / max(base, 1)))
            benchmark.measurement(baselineMetric, Int(base))
            benchmark.measurement(treatedMetric, Int(treated))
            benchmark.measurement(addedMetric, max(0, Int(treated) - Int(base)))
        }
    }
}
