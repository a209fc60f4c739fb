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

/// 2 × 30 launches of the demo recorded interleaved, head 10 % slower: its base and head folders.
let demoRuns: (base: String, head: String)? = {
    guard let binary = liftoffBinary else { return nil }
    let out = FileManager.default.temporaryDirectory.appendingPathComponent("liftoff-function-bench-\(getpid())").path
    let demo = "\(binary) demo --quiet --linger 0 --out \(out)-demo"
    let status = spawnAndWait(
        [binary, "record", "--runs", "30", "--quiet", "--out", out, "--baseline", demo, "--"]
            + demo.split(separator: " ").map(String.init) + ["--slowdown", "10%"], silencingOutput: true)
    guard status == 0 else { return nil }
    return (out + "/base", out + "/head")
}()

/// One launch of `liftoff demo` sampling at `rate`, under `perf record -g` at `perfRate` when set:
/// its main entry to first frame, in nanoseconds, from its profile.
func demoMainToFirstFrame(rate: Int, perfRate: Int? = nil, binary: String) -> UInt64? {
    let out = FileManager.default.temporaryDirectory.appendingPathComponent("liftoff-observer-bench-\(getpid())")
    let demo = [binary, "demo", "--quiet", "--linger", "0", "--rate", "\(rate)", "--out", out.path]
    let arguments = perfRate.map { perfRate in
        ["/usr/bin/perf", "record", "-q", "-e", "cpu-clock", "-F", "\(perfRate)", "-g", "-o", out.path + ".perf.data", "--"] + demo
    } ?? demo
    guard spawnAndWait(arguments, silencingOutput: true) == 0,
        let profile = try? Profile.load(from: out.appendingPathComponent("profile.json")),
        let firstFrame = profile.phases.firstFrameNs
    else { return nil }
    return firstFrame > profile.phases.mainEntryNs ? firstFrame - profile.phases.mainEntryNs : nil
}

/// Whether `perf record` works here (installed, and allowed to sample this user's processes).
let perfWorks: Bool = {
    guard FileManager.default.isExecutableFile(atPath: "/usr/bin/perf") else { return false }
    let data = FileManager.default.temporaryDirectory.appendingPathComponent("liftoff-perf-probe-\(getpid()).data").path
    defer { try? FileManager.default.removeItem(atPath: data) }
    return spawnAndWait(["/usr/bin/perf", "record", "-q", "-e", "cpu-clock", "-o", data, "--", "/bin/true"], silencingOutput: true) == 0
}()

/// The variants of the observer benchmark: its metric, Liftoff's rate, and perf's rate (nil: no perf).
let observerVariants: [(metric: BenchmarkMetric, rate: Int, perfRate: Int?)] = [
    (.custom("baseline1HzNs", polarity: .prefersSmaller, useScalingFactor: false), 1, nil),
    (.custom("noise1HzPPM", polarity: .prefersSmaller, useScalingFactor: false), 1, nil),
    (.custom("liftoff1kPPM", polarity: .prefersSmaller, useScalingFactor: false), 1000, nil),
    (.custom("liftoff10kPPM", polarity: .prefersSmaller, useScalingFactor: false), 10_000, nil),
    (.custom("perf1kPPM", polarity: .prefersSmaller, useScalingFactor: false), 1, 1000),
    (.custom("perf10kPPM", polarity: .prefersSmaller, useScalingFactor: false), 1, 10_000),
]

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

/// The agent's environment: preloaded, sampling at 1 kHz, writing into `recording`.
func agentEnvironment(_ agent: String, recording: String) -> [String: String] {
    ["LD_PRELOAD": agent, "LIFTOFF_AGENT_OUT": recording, "LIFTOFF_AGENT_RATE": "1000"]
}

/// A benchmark of twenty launches of `program` with the treatment's environment against twenty
/// with the baseline's, in pairs that alternate which goes first: the ratio, the baseline's time
/// (`bareNs`) and the treatment's (`metric`). Each environment is made for the folder the agent
/// writes its recordings into.
func pairedLaunches(
    _ name: String, program: [String], metric: BenchmarkMetric,
    baseline: @escaping @Sendable (String) -> [String: String], treatment: @escaping @Sendable (String) -> [String: String]
) {
    Benchmark(
        name,
        configuration: .init(
            metrics: [ratioMetric, bareMetric, metric], units: [ratioMetric: .count, bareMetric: .count, metric: .count],
            warmupIterations: 2, maxDuration: .seconds(60), maxIterations: 60)
    ) { benchmark in
        // Where `liftoff` has the agent write: in memory when /dev/shm is there.
        let memory = FileManager.default.fileExists(atPath: "/dev/shm") ? URL(fileURLWithPath: "/dev/shm") : nil
        let recording = (memory ?? FileManager.default.temporaryDirectory).appendingPathComponent("launch-bench-\(getpid())").path
        try? FileManager.default.createDirectory(atPath: recording, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: recording) }
        let (baseEnvironment, treatedEnvironment) = (baseline(recording), treatment(recording))
        func twenty(_ environment: [String: String]) -> UInt64 {
            let start = DispatchTime.now().uptimeNanoseconds
            for _ in 0..<20 { spawnAndWait(program, adding: environment) }
            return DispatchTime.now().uptimeNanoseconds - start
        }
        for (round, _) in benchmark.scaledIterations.enumerated() {
            let (base, treated) = inAlternatingOrder(
                round: round, baseline: { twenty(baseEnvironment) }, treatment: { twenty(treatedEnvironment) })
            benchmark.measurement(ratioMetric, Int(treated * 1_000_000 / max(base, 1)))
            benchmark.measurement(bareMetric, Int(base))
            benchmark.measurement(metric, Int(treated))
        }
    }
}

/// One round of variants, measured in rotating order (variant `round % count` first, so each takes
/// each place in turn): the first one's value under its metric, each other's as its ratio to the
/// first in parts per million. A round in which a variant failed (nil) is left out.
func measureInRotation(_ benchmark: Benchmark, round: Int, metrics: [BenchmarkMetric], _ measure: (Int) -> UInt64?) {
    var values: [UInt64?] = Array(repeating: nil, count: metrics.count)
    for offset in 0..<metrics.count {
        let index = (round + offset) % metrics.count
        values[index] = measure(index)
    }
    guard let baseline = values[0], baseline > 0, values.allSatisfy({ $0 != nil }) else { return }
    benchmark.measurement(metrics[0], Int(baseline))
    for index in 1..<metrics.count {
        benchmark.measurement(metrics[index], Int(values[index]! * 1_000_000 / baseline))
    }
}

let agentMetric = BenchmarkMetric.custom("agentNs", polarity: .prefersSmaller, useScalingFactor: false)
let auditMetric = BenchmarkMetric.custom("auditNs", polarity: .prefersSmaller, useScalingFactor: false)

/// `libLiftoffAudit.so` beside the agent (`make bench` builds it): the loader's audit library.
let auditLibrary: String? = agentLibrary.map {
    URL(fileURLWithPath: $0).deletingLastPathComponent().appendingPathComponent("libLiftoffAudit.so").path
}.flatMap { FileManager.default.fileExists(atPath: $0) ? $0 : nil }

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
            blackHole(comparison.markdown(diffFlameGraph: "diff-flame.html").count + diff.svg(title: "diff").count)
        }
    }
    // Naming the function: every function of 2 × 30 recorded demo launches (head 10 % slower)
    // compared, against decoding those 60 profiles.
    if let runs = demoRuns {
        Benchmark(
            "decode 2 x 30 demo profiles (baseline)",
            configuration: .init(metrics: [.wallClock], timeUnits: .milliseconds, maxDuration: .seconds(20), maxIterations: 10)
        ) { benchmark in
            for _ in benchmark.scaledIterations {
                blackHole(try RunSet.load(runs.base).profiles.count + RunSet.load(runs.head).profiles.count)
            }
        }
        let base = (try? RunSet.load(runs.base).profiles) ?? []
        let head = (try? RunSet.load(runs.head).profiles) ?? []
        Benchmark(
            "functions of 2 x 30 demo runs",
            configuration: .init(metrics: [.wallClock], timeUnits: .milliseconds, maxDuration: .seconds(20), maxIterations: 10)
        ) { benchmark in
            for _ in benchmark.scaledIterations { blackHole(FunctionComparison(base: base, head: head).rows.count) }
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
        pairedLaunches(
            "paired agent: 20 launches of true with the agent vs 20 bare", program: ["/bin/true"],
            metric: agentMetric, baseline: { _ in [:] }, treatment: { agentEnvironment(agent, recording: $0) })
    }

    // What the loader's audit library adds to a profiled launch: twenty launches with the agent
    // and the audit library (as `liftoff profile` sets them) against twenty with the agent alone,
    // in pairs that alternate which goes first, of /bin/true (a C program of three objects) and of
    // `liftoff --help` (a Swift program: the Swift runtime, Foundation and ICU before `main`).
    if let agent = agentLibrary, let audit = auditLibrary, let binary = liftoffBinary {
        for (name, program) in [("true", ["/bin/true"]), ("liftoff --help", [binary, "--help"])] {
            pairedLaunches(
                "paired audit: 20 launches of \(name) with the agent and audit library vs the agent alone", program: program,
                metric: auditMetric, baseline: { agentEnvironment(agent, recording: $0) },
                treatment: { agentEnvironment(agent, recording: $0).merging(["LD_AUDIT": audit]) { _, new in new } })
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
            try? FileManager.default.createDirectory(atPath: recording, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: recording) }
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

    processTreeBenchmarks()

    // The observer effect: the demo's main entry to first frame sampled by Liftoff at 1 kHz and
    // 10 kHz, and recorded by `perf record -g` at the same rates (Liftoff at 1 Hz inside), each
    // against Liftoff at 1 Hz (one look at each thread, then nearly nothing), and a second 1 Hz
    // launch against the first (the method's own noise): rounds of the six launches in rotating
    // order. `make bench` runs it three times; observer.md reports the worst.
    if let binary = liftoffBinary {
        let variants = perfWorks ? observerVariants : Array(observerVariants.prefix(4))
        Benchmark(
            "interleaved: observer, demo main entry to first frame, Liftoff and perf vs 1 Hz",
            configuration: .init(
                metrics: variants.map(\.metric), units: Dictionary(uniqueKeysWithValues: variants.map { ($0.metric, .count) }),
                warmupIterations: 2, maxDuration: .seconds(300), maxIterations: 100)
        ) { benchmark in
            for (round, _) in benchmark.scaledIterations.enumerated() {
                measureInRotation(benchmark, round: round, metrics: variants.map(\.metric)) { index in
                    demoMainToFirstFrame(rate: variants[index].rate, perfRate: variants[index].perfRate, binary: binary)
                }
            }
        }
    }
}
