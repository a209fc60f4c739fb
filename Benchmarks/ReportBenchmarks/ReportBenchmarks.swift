import Benchmark
import Foundation
import LiftoffFormats
import LiftoffProfile

// Every report format rendered from a profile of 1,000,000 samples, 50,000 distinct stacks and
// 10,000 tasks, against encoding the same profile as JSON (profile.json) in the same run.
// `Reports/benchmarks/reports.md` is written from these results by `make bench`.

let htmlBytes = BenchmarkMetric.custom("htmlBytes", polarity: .prefersSmaller, useScalingFactor: false)
let speedscopeBytes = BenchmarkMetric.custom("speedscopeBytes", polarity: .prefersSmaller, useScalingFactor: false)
let jsonBytes = BenchmarkMetric.custom("jsonBytes", polarity: .prefersSmaller, useScalingFactor: false)

let big = Profile.synthetic(samples: 1_000_000, distinctStacks: 50_000, tasks: 10_000)

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .peakMemoryResident],
        timeUnits: .milliseconds,
        warmupIterations: 1,
        scalingFactor: .one,
        maxDuration: .seconds(30),
        maxIterations: 8
    )

    Benchmark("encode the profile as JSON (baseline)") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(try big.jsonData()) }
    }
    // Every format there is, from the one list.
    for format in ReportFormats.all {
        Benchmark("render \(format.name)") { benchmark in
            for _ in benchmark.scaledIterations { blackHole(try format.render(big, options: ReportOptions())) }
        }
    }
    // Why the launch was slow: every insight rule over the same profile (`liftoff explain`, and
    // part of the HTML and Markdown renders above).
    Benchmark("explain (every insight rule)") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(Insights.of(big)) }
    }
    // The path to ready (the launch thread's waits followed to the threads they waited for) and
    // how much of the launch the insights explain, as `liftoff explain` finds them (target: at
    // most 100 ms); the insights themselves are found once, outside the measurement.
    let insights = Insights.of(big)
    Benchmark("path to ready and coverage") { benchmark in
        for _ in benchmark.scaledIterations {
            let window = LaunchWindow(big)
            blackHole(LaunchCoverage(window, insights: insights).explainedNs &+ window.path.cpuNs)
        }
    }
    // Output sizes, recorded once as a count metric (bytes) so the report can state them.
    Benchmark(
        "output bytes",
        configuration: .init(metrics: [htmlBytes, speedscopeBytes, jsonBytes], maxIterations: 1)
    ) { benchmark in
        benchmark.measurement(htmlBytes, HTMLReportRenderer().render(big).utf8.count)
        benchmark.measurement(speedscopeBytes, SpeedscopeRenderer().render(big).utf8.count)
        benchmark.measurement(jsonBytes, (try? big.jsonData().count) ?? 0)
    }
}
