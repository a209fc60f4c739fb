import Benchmark
import BenchmarkPairs
import Dispatch
import Foundation
import Synchronization
import LiftoffSampler

// The sampler's cost, measured against the same workload unsampled in the same run.
// `Reports/benchmarks/sampler.md` is written from these results by `make bench`.

/// A fixed CPU workload of about 20 ms: a multiply-xorshift mix over a small buffer.
@inline(never)
func fixedWorkload() -> UInt64 {
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    var buffer = [UInt64](repeating: 1, count: 256)
    for round in 0..<12_000 {
        for index in buffer.indices {
            state = (state ^ buffer[index]) &* 0x100_0000_01b3
            state ^= state >> 29
            buffer[index] = state &+ UInt64(round)
        }
    }
    return state
}

/// Runs `body` under `depth` async functions, each awaiting the next.
@inline(never)
func awaitingCallers(_ depth: Int, _ body: () async -> Void) async {
    if depth == 0 {
        await body()
    } else {
        await awaitingCallers(depth - 1, body)
    }
    blackHole(depth)
}

/// Takes `count` samples of the calling thread from a child task; nanoseconds per sample.
@inline(never)
func sampleInChild(_ count: Int) async -> UInt64 {
    try? Sampler.registerCurrentThread(name: "benchmark")
    let start = DispatchTime.now().uptimeNanoseconds
    for _ in 0..<count { Sampler.sampleCurrentThread() }
    let elapsed = DispatchTime.now().uptimeNanoseconds - start
    try? Sampler.unregisterCurrentThread()
    return elapsed / UInt64(max(count, 1))
}

/// Custom metrics of the paired runs: the ratio in parts per million, and each side's time.
let ratioMetric = BenchmarkMetric.custom("ratioPPM", polarity: .prefersSmaller, useScalingFactor: false)
let baseMetric = BenchmarkMetric.custom("unsampledNs", polarity: .prefersSmaller, useScalingFactor: false)
let sampledMetric = BenchmarkMetric.custom("sampledNs", polarity: .prefersSmaller, useScalingFactor: false)

@inline(never)
func timedWorkload() -> UInt64 {
    let start = DispatchTime.now().uptimeNanoseconds
    blackHole(fixedWorkload())
    return DispatchTime.now().uptimeNanoseconds - start
}

/// Walks the stack from `depth` frames below the caller.
@inline(never)
func walkAtDepth(_ depth: Int, method: Sampler.WalkMethod, cold: Bool) -> Int {
    if depth == 0 { return Sampler.walkCurrentStack(by: method, cold: cold) }
    return walkAtDepth(depth - 1, method: method, cold: cold) &+ 1
}

/// Runs the workload in pairs, unsampled and with the sampler running at `rate` on every thread
/// of the process (both unsampled when `rate` is nil: the noise floor), alternating which goes
/// first, and records each pair's ratio. The sampler starts and stops around its side, outside
/// the timed part, so its own thread's competition for the two cores counts. Pairs cancel the
/// drift that separate runs on a shared machine suffer.
func measurePairs(_ benchmark: Benchmark, rate: Int?) {
    for (round, _) in benchmark.scaledIterations.enumerated() {
        let (base, sampled) = inAlternatingOrder(
            round: round, baseline: { timedWorkload() },
            treatment: {
                if let rate { try? Sampler.start(SamplerConfiguration(rateHz: rate)) }
                let elapsed = timedWorkload()
                if rate != nil { _ = Sampler.stop() }
                return elapsed
            })
        benchmark.measurement(ratioMetric, Int(sampled * 1_000_000 / max(base, 1)))
        benchmark.measurement(baseMetric, Int(base))
        benchmark.measurement(sampledMetric, Int(sampled))
    }
}

/// CPU time of the whole process, in nanoseconds.
func processCPUNs() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// Sleeps until `deadline` (`DispatchTime` nanoseconds), however often a signal wakes it.
func sleep(untilNs deadline: UInt64) {
    while true {
        let now = DispatchTime.now().uptimeNanoseconds
        if now >= deadline { return }
        usleep(UInt32(min((deadline - now) / 1000 + 1, 1_000_000)))
    }
}

/// Threads that wait on a semaphore for as long as they exist.
final class IdleThreads: @unchecked Sendable {
    // @unchecked Sendable: the semaphores are thread-safe, `ids` is behind a lock, `count` is immutable.
    private let release = DispatchSemaphore(value: 0)
    private let started = DispatchSemaphore(value: 0)
    private let ids = Mutex<[Int]>([])
    let count: Int

    /// Kernel thread ids of the threads.
    var threadIDs: [Int] { ids.withLock { $0 } }

    init(count: Int) {
        self.count = count
        for _ in 0..<count {
            let thread = Thread { [self] in
                ids.withLock { $0.append(CurrentThread.id) }
                started.signal()
                release.wait()
            }
            thread.stackSize = 64 << 10
            thread.start()
        }
        for _ in 0..<count { started.wait() }
    }

    deinit { for _ in 0..<count { release.signal() } }
}

/// Liftoff's CPU with 100 idle threads more, in ppm of a core, plus 100,000 (a histogram holds
/// no negative value, and a small offset keeps its resolution fine).
let idleCostMetric = BenchmarkMetric.custom("idleCostPPM", polarity: .prefersSmaller, useScalingFactor: false)
let idleWindowNs: UInt64 = 1_000_000_000

/// The kernel thread id of Liftoff's sampler thread, found by its name.
func samplerThreadID() -> Int? {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.first { tid in
        (try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8))?.hasPrefix("liftoff-sampler") ?? false
    }.flatMap { Int($0) }
}

/// What sampling every thread at 1 kHz costs over one window, as a share of a core in parts per
/// million, with `idleThreads` more threads blocked on a semaphore meanwhile: the CPU time of the
/// sampler thread and of those threads (interrupting them is part of the cost). The rest of the
/// process (the benchmark harness) is left out: its own noise would drown the difference.
func windowCPU(idleThreads: Int) -> UInt64 {
    let idle = IdleThreads(count: idleThreads)
    try? Sampler.start(SamplerConfiguration(rateHz: 1000))
    // Let the first look at every thread (one signal and a first unwind each) pass. A signal ends
    // a sleep early, so sleep to a deadline.
    sleep(untilNs: DispatchTime.now().uptimeNanoseconds + 300_000_000)
    let threads = (samplerThreadID().map { [$0] } ?? []) + idle.threadIDs
    func cpu() -> UInt64 { threads.reduce(0) { $0 + (CurrentThread.cpuNs(ofThread: $1) ?? 0) } }
    let cpuStart = cpu()
    let start = DispatchTime.now().uptimeNanoseconds
    sleep(untilNs: start + idleWindowNs)
    let wall = DispatchTime.now().uptimeNanoseconds - start
    let used = cpu() - cpuStart
    _ = Sampler.stop()
    blackHole(idle.count)
    return used * 1_000_000 / max(wall, 1)
}

/// How many sampled addresses the symbolization benchmarks resolve.
let symbolizedAddressCount = 20_000

/// Return addresses from real samples of this process, as a profile holds them (repeats included).
func sampleAddresses() -> [UInt] {
    var addresses: [UInt] = []
    try? Sampler.start(SamplerConfiguration(rateHz: 1000, threads: .registered))
    try? Sampler.registerCurrentThread(name: "collector")
    for _ in 0..<2_000 {
        Sampler.sampleCurrentThread()
        blackHole(Sampler.captureCurrentStack().count)
    }
    try? Sampler.unregisterCurrentThread()
    for sample in Sampler.stop().samples { addresses += sample.addresses }
    while addresses.count < symbolizedAddressCount, !addresses.isEmpty { addresses += addresses }
    return Array(addresses.prefix(symbolizedAddressCount))
}

/// Distinct code addresses, the hardest case for a symbolizer (every one is a first lookup):
/// `count` addresses spread evenly over the executable code of this benchmark (a release build:
/// Swift with inlined functions) and of libc (named from its separate debug file), half each.
func distinctCodeAddresses(count: Int) -> [UInt] {
    let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
    let maps = (try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8)) ?? ""
    var regions: [[Range<UInt>]] = [[], []]
    for line in maps.split(separator: "\n") {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 6, fields[1].hasPrefix("r-x") else { continue }
        let bounds = fields[0].split(separator: "-").compactMap { UInt($0, radix: 16) }
        guard bounds.count == 2, bounds[0] < bounds[1] else { continue }
        let path = String(fields[5])
        if path == executable { regions[0].append(bounds[0]..<bounds[1]) }
        if path.hasSuffix("/libc.so.6") { regions[1].append(bounds[0]..<bounds[1]) }
    }
    var addresses: [UInt] = []
    for (index, ranges) in regions.enumerated() where !ranges.isEmpty {
        let wanted = UInt(index == 0 ? count / 2 : count - addresses.count)
        let size = ranges.reduce(0) { $0 + UInt($1.count) }
        // Evenly spaced offsets into the code, as if its ranges were one: distinct while the code
        // has more bytes than addresses are wanted.
        for step in 0..<min(wanted, size) {
            var offset = step * size / wanted
            for range in ranges {
                if offset < UInt(range.count) {
                    addresses.append(range.lowerBound + offset)
                    break
                }
                offset -= UInt(range.count)
            }
        }
    }
    return addresses
}

/// Frames with a source line, and inlined frames, among what `addresses` resolve to.
let linedFramesMetric = BenchmarkMetric.custom("framesWithLines", polarity: .prefersLarger, useScalingFactor: false)
let inlinedFramesMetric = BenchmarkMetric.custom("inlinedFrames", polarity: .prefersLarger, useScalingFactor: false)

let benchmarks: @Sendable () -> Void = {
    let pairs = Benchmark.Configuration(
        metrics: [ratioMetric, baseMetric, sampledMetric],
        units: [ratioMetric: .count, baseMetric: .count, sampledMetric: .count], warmupIterations: 5,
        maxDuration: .seconds(30), maxIterations: 400)

    Benchmark("paired unsampled vs unsampled", configuration: pairs) { benchmark in
        measurePairs(benchmark, rate: nil)
    }
    Benchmark("paired 100 Hz vs unsampled", configuration: pairs) { benchmark in
        measurePairs(benchmark, rate: 100)
    }
    Benchmark("paired 1 kHz vs unsampled", configuration: pairs) { benchmark in
        measurePairs(benchmark, rate: 1000)
    }
    Benchmark("paired 10 kHz vs unsampled", configuration: pairs) { benchmark in
        measurePairs(benchmark, rate: 10_000)
    }
    // What telling disk waits apart costs a thread that answers its signal in time: 10 kHz with
    // the state check against 10 kHz without it (such a thread is never checked; a late or partly
    // idle one has its /proc state read).
    Benchmark("paired disk-wait check on vs off, 10 kHz", configuration: pairs) { benchmark in
        for (round, _) in benchmark.scaledIterations.enumerated() {
            func sampled(checks: Bool) -> UInt64 {
                try? Sampler.start(SamplerConfiguration(rateHz: 10_000, checksDiskWaits: checks))
                let elapsed = timedWorkload()
                _ = Sampler.stop()
                return elapsed
            }
            let (off, on) = inAlternatingOrder(round: round, baseline: { sampled(checks: false) }, treatment: { sampled(checks: true) })
            benchmark.measurement(ratioMetric, Int(on * 1_000_000 / max(off, 1)))
            benchmark.measurement(baseMetric, Int(off))
            benchmark.measurement(sampledMetric, Int(on))
        }
    }
    // The floor: a signal with an empty handler, at the same rates, against the same workload.
    Benchmark("paired bare signals 1 kHz vs none", configuration: pairs) { benchmark in
        measureSignalFloor(benchmark, rate: 1000)
    }
    Benchmark("paired bare signals 10 kHz vs none", configuration: pairs) { benchmark in
        measureSignalFloor(benchmark, rate: 10_000)
    }

    // What idle threads add to sampling at 1 kHz: windows with 100 of them against windows
    // without them, every thread sampled in both, in interleaved pairs.
    Benchmark(
        "paired 100 idle threads sampled vs not, 1 kHz",
        configuration: .init(
            metrics: [idleCostMetric], units: [idleCostMetric: .count], warmupIterations: 2,
            maxDuration: .seconds(100), maxIterations: 36)
    ) { benchmark in
        for (round, _) in benchmark.scaledIterations.enumerated() {
            let (none, all) = inAlternatingOrder(
                round: round, baseline: { windowCPU(idleThreads: 0) }, treatment: { windowCPU(idleThreads: 100) })
            benchmark.measurement(idleCostMetric, max(1, 100_000 + Int(all) - Int(none)))
        }
    }

    Benchmark(
        "one sample (signal, unwind, ring)",
        configuration: .init(metrics: [.wallClock], timeUnits: .nanoseconds, warmupIterations: 100, scalingFactor: .kilo,
                             maxDuration: .seconds(5))
    ) { benchmark in
        try? Sampler.start(SamplerConfiguration(rateHz: 1000, ringCapacity: 1 << 16, threads: .registered))
        try? Sampler.registerCurrentThread(name: "benchmark")
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            Sampler.sampleCurrentThread()
        }
        benchmark.stopMeasurement()
        try? Sampler.unregisterCurrentThread()
        _ = Sampler.stop()
    }

    // The same sample taken in a Swift async function awaited by 10 async callers: the walk reads
    // its async context and follows the chain. In an `async let` child the chain goes on into the
    // suspended parent's 10 callers, read with process_vm_readv once and kept for the next samples.
    let oneSample = Benchmark.Configuration(
        metrics: [.wallClock], timeUnits: .nanoseconds, warmupIterations: 100, scalingFactor: .kilo, maxDuration: .seconds(5))
    Benchmark("one sample in an async function, 10 awaiting callers", configuration: oneSample) { benchmark async in
        try? Sampler.start(SamplerConfiguration(rateHz: 1000, ringCapacity: 1 << 16, threads: .registered))
        await awaitingCallers(10) {
            try? Sampler.registerCurrentThread(name: "benchmark")
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations { Sampler.sampleCurrentThread() }
            benchmark.stopMeasurement()
            try? Sampler.unregisterCurrentThread()
        }
        _ = Sampler.stop()
    }
    // The child times its own samples (registering its pool thread, which warms the unwinder there,
    // is left out): nanoseconds per sample.
    let childSampleMetric = BenchmarkMetric.custom("childSampleNs", polarity: .prefersSmaller, useScalingFactor: false)
    Benchmark(
        "one sample in an async let child, 10 awaiting callers in its parent",
        configuration: .init(metrics: [childSampleMetric], units: [childSampleMetric: .count], warmupIterations: 5, maxDuration: .seconds(5))
    ) { benchmark async in
        try? Sampler.start(SamplerConfiguration(rateHz: 1000, ringCapacity: 1 << 16, threads: .registered))
        for _ in benchmark.scaledIterations {
            await awaitingCallers(10) {
                async let sampled = sampleInChild(1000)
                benchmark.measurement(childSampleMetric, Int(await sampled))
            }
        }
        _ = Sampler.stop()
    }

    // What telling whether a waiting thread ran costs the sampler thread, per read, against an idle
    // thread: its CPU clock (each tick for busy threads, every 20 ms for idle ones) and its switches
    // in from schedstat (once per wait, at the first check after the sample that found it blocked).
    let watched = IdleThreads(count: 1)
    for (name, read) in [
        ("did it run: read a thread's CPU clock", CurrentThread.cpuNs(ofThread:)),
        ("did it run: read a thread's switches in", CurrentThread.switchesIn(ofThread:)),
    ] {
        Benchmark(
            name,
            configuration: .init(metrics: [.wallClock], timeUnits: .nanoseconds, warmupIterations: 100, scalingFactor: .kilo,
                                 maxDuration: .seconds(5))
        ) { benchmark in
            let thread = watched.threadIDs[0]
            for _ in benchmark.scaledIterations {
                blackHole(read(thread))
            }
        }
    }

    // One walk of a 30-frame stack, as a handler walks it: by call-frame rules, warm (every rule
    // cached) and cold (every rule found afresh, as through new code), and by libunwind, warm and
    // on a new thread (its per-thread cache empty, its global cache flushed).
    for (name, method, cold) in [
        ("one unwind, 30 frames: rules, warm", Sampler.WalkMethod.rules, false),
        ("one unwind, 30 frames: rules, cold", .rules, true),
        ("one unwind, 30 frames: libunwind, warm", .libunwind, false),
    ] {
        Benchmark(
            name,
            configuration: .init(metrics: [.wallClock], timeUnits: .nanoseconds, warmupIterations: 100, scalingFactor: .kilo,
                                 maxDuration: .seconds(5))
        ) { benchmark in
            try? Sampler.start(SamplerConfiguration(rateHz: 1, threads: .registered))
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                blackHole(walkAtDepth(25, method: method, cold: cold))
            }
            benchmark.stopMeasurement()
            _ = Sampler.stop()
        }
    }
    Benchmark(
        "one unwind, 30 frames: libunwind, first on a new thread",
        configuration: .init(metrics: [.wallClock], timeUnits: .nanoseconds, warmupIterations: 5, maxDuration: .seconds(10),
                             maxIterations: 300)
    ) { benchmark in
        try? Sampler.start(SamplerConfiguration(rateHz: 1, threads: .registered))
        for _ in benchmark.scaledIterations {
            let elapsed = Mutex<UInt64>(0)
            let done = DispatchSemaphore(value: 0)
            let thread = Thread {
                let start = DispatchTime.now().uptimeNanoseconds
                blackHole(walkAtDepth(25, method: .libunwind, cold: true))
                elapsed.withLock { $0 = DispatchTime.now().uptimeNanoseconds - start }
                done.signal()
            }
            thread.start()
            done.wait()
            benchmark.measurement(.wallClock, Int(elapsed.withLock { $0 }))
        }
        _ = Sampler.stop()
    }

    Benchmark(
        "capture current stack (no signal)",
        configuration: .init(metrics: [.wallClock], timeUnits: .nanoseconds, warmupIterations: 100, scalingFactor: .kilo,
                             maxDuration: .seconds(5))
    ) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(Sampler.captureCurrentStack())
        }
    }

    let addresses = sampleAddresses()
    Benchmark(
        "symbolize 20000 sampled addresses, cold",
        configuration: .init(metrics: [.wallClock, .throughput], timeUnits: .milliseconds, maxDuration: .seconds(10), maxIterations: 20)
    ) { benchmark in
        for _ in benchmark.scaledIterations {
            let symbolizer = ELFSymbolizer()
            for address in addresses { blackHole(symbolizer.symbolize(address)) }
        }
    }
    let distinct = distinctCodeAddresses(count: symbolizedAddressCount)
    Benchmark(
        "symbolize 20000 distinct code addresses, cold",
        configuration: .init(
            metrics: [.wallClock, .throughput, linedFramesMetric, inlinedFramesMetric], timeUnits: .milliseconds,
            maxDuration: .seconds(20), maxIterations: 20)
    ) { benchmark in
        var symbolizer = ELFSymbolizer()
        for _ in benchmark.scaledIterations {
            symbolizer = ELFSymbolizer()
            for address in distinct { blackHole(symbolizer.frames(at: address)) }
        }
        benchmark.stopMeasurement()
        // What the addresses resolved to: proof that lines and inlined frames were read.
        let frames = distinct.flatMap { symbolizer.frames(at: $0) }
        benchmark.measurement(linedFramesMetric, frames.filter { $0.line != nil }.count)
        benchmark.measurement(inlinedFramesMetric, frames.filter(\.isInlined).count)
    }
    let warm = ELFSymbolizer()
    for address in addresses { blackHole(warm.symbolize(address)) }
    Benchmark(
        "symbolize 20000 sampled addresses, cached",
        configuration: .init(metrics: [.wallClock, .throughput], timeUnits: .microseconds, maxDuration: .seconds(5), maxIterations: 200)
    ) { benchmark in
        for _ in benchmark.scaledIterations {
            for address in addresses { blackHole(warm.symbolize(address)) }
        }
    }
}
