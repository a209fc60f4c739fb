import Benchmark
import Foundation
import Glibc
import LiftoffCLI
import LiftoffProfile
import LiftoffReports

// Comparing recorded runs, and what recording adds to each launch, against baselines measured
// in the same run. `Reports/benchmarks/compare.md` is written from these results by `make bench`.

/// Two folders of 100 launch-sized profiles each (2,000 samples, 1,000 distinct stacks, 8 tasks).
let folders: (base: String, head: String) = {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("liftoff-compare-bench-\(getpid())")
    var paths: [String] = []
    for side in ["base", "head"] {
        let folder = root.appendingPathComponent(side)
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for run in 0..<100 {
            let profile = Profile.synthetic(
                samples: 2_000, distinctStacks: 1_000, tasks: 8, threads: 2, seed: UInt64(run + (side == "base" ? 0 : 1_000)))
            try? profile.write(to: folder.appendingPathComponent(String(format: "run-%03d.json", run)))
        }
        paths.append(folder.path)
    }
    return (paths[0], paths[1])
}()

/// The launch being recorded: a program that takes about 10 ms.
let launch = ["/bin/sleep", "0.01"]

/// Runs `launch` bare: posix_spawn and waitpid, nothing else.
func runBare() {
    var pid: pid_t = 0
    let argv = launch.map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    guard posix_spawn(&pid, launch[0], nil, nil, argv, environ) == 0 else { return }
    var status: Int32 = 0
    waitpid(pid, &status, 0)
}

let ratioMetric = BenchmarkMetric.custom("ratioPPM", polarity: .prefersSmaller, useScalingFactor: false)
let bareMetric = BenchmarkMetric.custom("bareNs", polarity: .prefersSmaller, useScalingFactor: false)
let recordedMetric = BenchmarkMetric.custom("recordedNs", polarity: .prefersSmaller, useScalingFactor: false)

let benchmarks: @Sendable () -> Void = {
    Benchmark(
        "decode 2 x 100 profiles (baseline)",
        configuration: .init(metrics: [.wallClock], timeUnits: .milliseconds, maxDuration: .seconds(20), maxIterations: 10)
    ) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try RunSet.load(folders.base).profiles.count + RunSet.load(folders.head).profiles.count)
        }
    }
    Benchmark(
        "compare 2 x 100 profiles",
        configuration: .init(metrics: [.wallClock, .peakMemoryResident], timeUnits: .milliseconds, maxDuration: .seconds(20), maxIterations: 10)
    ) { benchmark in
        for _ in benchmark.scaledIterations {
            let base = try RunSet.load(folders.base)
            let head = try RunSet.load(folders.head)
            let comparison = try LaunchComparison(base: base, head: head, groups: [.phases, .tasks, .cpu])
            let diff = DiffFlameGraph(base: base.profiles, head: head.profiles)
            blackHole(comparison.markdown(diffFlameGraph: diff).count + diff.svg(title: "diff").count)
        }
    }
    // Ten bare launches against ten recorded ones, in pairs that alternate which goes first.
    Benchmark(
        "paired: 10 recorded launches vs 10 bare",
        configuration: .init(
            metrics: [ratioMetric, bareMetric, recordedMetric],
            units: [ratioMetric: .count, bareMetric: .count, recordedMetric: .count], warmupIterations: 2,
            maxDuration: .seconds(60), maxIterations: 60)
    ) { benchmark in
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("liftoff-record-bench-\(getpid())").path
        var flip = false
        for _ in benchmark.scaledIterations {
            flip.toggle()
            var bare: UInt64 = 0
            var recorded: UInt64 = 0
            for recording in flip ? [false, true] : [true, false] {
                let start = DispatchTime.now().uptimeNanoseconds
                if recording {
                    var command = try LiftoffCommand.parseAsRoot(
                        ["record", "--runs", "10", "--warmup", "0", "--quiet", "--out", out, "--"] + launch)
                    try command.run()
                    recorded = DispatchTime.now().uptimeNanoseconds - start
                } else {
                    for _ in 0..<10 { runBare() }
                    bare = DispatchTime.now().uptimeNanoseconds - start
                }
            }
            benchmark.measurement(ratioMetric, Int(recorded * 1_000_000 / max(bare, 1)))
            benchmark.measurement(bareMetric, Int(bare))
            benchmark.measurement(recordedMetric, Int(recorded))
        }
    }
}
