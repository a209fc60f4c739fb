import Benchmark
import BenchmarkPairs
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

/// Spawns `arguments` (program first) with posix_spawn and waits for it: its wait status, or nil
/// when it could not start. With `silencingOutput`, its standard output goes to /dev/null.
@discardableResult
func spawnAndWait(_ arguments: [String], silencingOutput: Bool = false) -> Int32? {
    var pid: pid_t = 0
    let argv = arguments.map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    if silencingOutput { posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0) }
    let started = silencingOutput
        ? posix_spawn(&pid, arguments[0], &actions, nil, argv, environ)
        : posix_spawn(&pid, arguments[0], nil, nil, argv, environ)
    guard started == 0 else { return nil }
    var status: Int32 = 0
    waitpid(pid, &status, 0)
    return status
}

/// Runs `launch` bare: posix_spawn and waitpid, nothing else.
func runBare() {
    spawnAndWait(launch)
}

/// The release `liftoff` binary (`make bench` builds it): `$LIFTOFF_BINARY`, else the root package's build.
let liftoffBinary: String? = {
    let candidates = [ProcessInfo.processInfo.environment["LIFTOFF_BINARY"], "../.build/release/liftoff"]
    return candidates.compactMap { $0 }.first { FileManager.default.isExecutableFile(atPath: $0) }
}()

/// One launch of `liftoff demo` sampling at `rate`: its time to first frame, in nanoseconds.
func demoTimeToFirstFrame(rate: Int, binary: String) -> UInt64? {
    let out = FileManager.default.temporaryDirectory.appendingPathComponent("liftoff-ttff-bench-\(getpid())")
    let arguments = [binary, "demo", "--quiet", "--linger", "0", "--rate", "\(rate)", "--out", out.path]
    guard spawnAndWait(arguments, silencingOutput: true) == 0, let profile = try? Profile.load(from: out.appendingPathComponent("profile.json")) else { return nil }
    return profile.timeToFirstFrameNs
}

let ratio1kMetric = BenchmarkMetric.custom("ratio1kPPM", polarity: .prefersSmaller, useScalingFactor: false)
let ratio10kMetric = BenchmarkMetric.custom("ratio10kPPM", polarity: .prefersSmaller, useScalingFactor: false)
let ttff1Metric = BenchmarkMetric.custom("ttff1HzNs", polarity: .prefersSmaller, useScalingFactor: false)

/// `libLiftoffAgent.so` beside the release `liftoff` (`make bench` builds both).
let agentLibrary: String? = liftoffBinary.map {
    URL(fileURLWithPath: $0).deletingLastPathComponent().appendingPathComponent("libLiftoffAgent.so").path
}.flatMap { FileManager.default.fileExists(atPath: $0) ? $0 : nil }

/// Spawns `arguments` with this process's environment plus `extra`, output to /dev/null, and waits.
/// The harness's own `LD_PRELOAD` (its malloc counter) is left out, as a user's launch has none.
@discardableResult
func spawnAndWait(_ arguments: [String], adding extra: [String: String]) -> Int32? {
    var environment = ProcessInfo.processInfo.environment
    environment["LD_PRELOAD"] = nil
    for (key, value) in extra { environment[key] = value }
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    let argv = arguments.map { strdup($0) } + [nil]
    defer {
        argv.forEach { free($0) }
        envp.forEach { free($0) }
    }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    var pid: pid_t = 0
    guard posix_spawn(&pid, arguments[0], &actions, nil, argv, envp) == 0 else { return nil }
    var status: Int32 = 0
    waitpid(pid, &status, 0)
    return status
}

let agentMetric = BenchmarkMetric.custom("agentNs", polarity: .prefersSmaller, useScalingFactor: false)

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
        for (round, _) in benchmark.scaledIterations.enumerated() {
            let (bare, recorded) = try inAlternatingOrder(
                round: round,
                baseline: {
                    let start = DispatchTime.now().uptimeNanoseconds
                    for _ in 0..<10 { runBare() }
                    return DispatchTime.now().uptimeNanoseconds - start
                },
                treatment: {
                    let start = DispatchTime.now().uptimeNanoseconds
                    var command = try LiftoffCommand.parseAsRoot(
                        ["record", "--runs", "10", "--warmup", "0", "--quiet", "--out", out, "--"] + launch)
                    try command.run()
                    return DispatchTime.now().uptimeNanoseconds - start
                })
            benchmark.measurement(ratioMetric, Int(recorded * 1_000_000 / max(bare, 1)))
            benchmark.measurement(bareMetric, Int(bare))
            benchmark.measurement(recordedMetric, Int(recorded))
        }
    }

    // What the injected agent adds: twenty launches of /bin/true with the agent sampling at 1 kHz
    // and writing its recording, against twenty bare, in pairs that alternate which goes first.
    if let agent = agentLibrary {
        Benchmark(
            "paired agent: 20 launches of true with the agent vs 20 bare",
            configuration: .init(
                metrics: [ratioMetric, bareMetric, agentMetric],
                units: [ratioMetric: .count, bareMetric: .count, agentMetric: .count], warmupIterations: 2,
                maxDuration: .seconds(60), maxIterations: 60)
        ) { benchmark in
            let recording = FileManager.default.temporaryDirectory.appendingPathComponent("agent-bench-\(getpid())").path
            let injected = ["LD_PRELOAD": agent, "LIFTOFF_AGENT_OUT": recording, "LIFTOFF_AGENT_RATE": "1000"]
            for (round, _) in benchmark.scaledIterations.enumerated() {
                let (bare, withAgent) = inAlternatingOrder(
                    round: round,
                    baseline: {
                        let start = DispatchTime.now().uptimeNanoseconds
                        for _ in 0..<20 { spawnAndWait(["/bin/true"], adding: [:]) }
                        return DispatchTime.now().uptimeNanoseconds - start
                    },
                    treatment: {
                        let start = DispatchTime.now().uptimeNanoseconds
                        for _ in 0..<20 { spawnAndWait(["/bin/true"], adding: injected) }
                        return DispatchTime.now().uptimeNanoseconds - start
                    })
                benchmark.measurement(ratioMetric, Int(withAgent * 1_000_000 / max(bare, 1)))
                benchmark.measurement(bareMetric, Int(bare))
                benchmark.measurement(agentMetric, Int(withAgent))
            }
        }
    }

    // The demo (which links Liftoff and samples itself at 1 kHz) with the agent injected, against
    // bare: the agent starts, is told to stand down, and should cost nothing measurable.
    if let binary = liftoffBinary, let agent = agentLibrary {
        Benchmark(
            "paired agent: demo time to first frame at 1 kHz, agent injected vs bare",
            configuration: .init(
                metrics: [ratioMetric, bareMetric, agentMetric],
                units: [ratioMetric: .count, bareMetric: .count, agentMetric: .count], warmupIterations: 2,
                maxDuration: .seconds(90), maxIterations: 60)
        ) { benchmark in
            let out = FileManager.default.temporaryDirectory.appendingPathComponent("agent-demo-bench-\(getpid())")
            func ttff(_ extra: [String: String]) -> UInt64? {
                let arguments = [binary, "demo", "--quiet", "--linger", "0", "--rate", "1000", "--out", out.path]
                guard spawnAndWait(arguments, adding: extra) == 0 else { return nil }
                return (try? Profile.load(from: out.appendingPathComponent("profile.json")))?.timeToFirstFrameNs
            }
            let recording = FileManager.default.temporaryDirectory.appendingPathComponent("agent-demo-\(getpid())").path
            for (round, _) in benchmark.scaledIterations.enumerated() {
                let (bare, injected) = inAlternatingOrder(
                    round: round, baseline: { ttff([:]) },
                    treatment: { ttff(["LD_PRELOAD": agent, "LIFTOFF_AGENT_OUT": recording]) })
                guard let bare, let injected, bare > 0 else { continue }
                benchmark.measurement(ratioMetric, Int(injected * 1_000_000 / bare))
                benchmark.measurement(bareMetric, Int(bare))
                benchmark.measurement(agentMetric, Int(injected))
            }
        }
    }

    // The demo's time to first frame sampled at 1 kHz and at 10 kHz against 1 Hz (one look at
    // each thread, then nearly nothing): triplets of launches in rotating order.
    if let binary = liftoffBinary {
        Benchmark(
            "interleaved: demo time to first frame at 1 kHz and 10 kHz vs 1 Hz",
            configuration: .init(
                metrics: [ratio1kMetric, ratio10kMetric, ttff1Metric],
                units: [ratio1kMetric: .count, ratio10kMetric: .count, ttff1Metric: .count], warmupIterations: 2,
                maxDuration: .seconds(90), maxIterations: 60)
        ) { benchmark in
            var turn = 0
            for _ in benchmark.scaledIterations {
                var times: [Int: UInt64] = [:]
                let rates = [1, 1000, 10_000]
                for offset in 0..<3 {
                    let rate = rates[(turn + offset) % 3]
                    times[rate] = demoTimeToFirstFrame(rate: rate, binary: binary)
                }
                turn += 1
                guard let slow = times[1], let oneK = times[1000], let tenK = times[10_000], slow > 0 else { continue }
                benchmark.measurement(ratio1kMetric, Int(oneK * 1_000_000 / slow))
                benchmark.measurement(ratio10kMetric, Int(tenK * 1_000_000 / slow))
                benchmark.measurement(ttff1Metric, Int(slow))
            }
        }
    }
}
