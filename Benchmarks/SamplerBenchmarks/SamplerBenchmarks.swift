import Benchmark
import Dispatch
import Foundation
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

/// Runs the workload in pairs, unsampled and with the sampler running at `rate` on every thread
/// of the process (both unsampled when `rate` is nil: the noise floor), alternating which goes
/// first, and records each pair's ratio. The sampler starts and stops around its side, outside
/// the timed part, so its own thread's competition for the two cores counts. Pairs cancel the
/// drift that separate runs on a shared machine suffer.
func measurePairs(_ benchmark: Benchmark, rate: Int?) {
    var flip = false
    for _ in benchmark.scaledIterations {
        flip.toggle()
        var base: UInt64 = 0
        var sampled: UInt64 = 0
        for side in flip ? [false, true] : [true, false] {
            if side, let rate { try? Sampler.start(SamplerConfiguration(rateHz: rate)) }
            let elapsed = timedWorkload()
            if side, rate != nil { _ = Sampler.stop() }
            if side { sampled = elapsed } else { base = elapsed }
        }
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

/// Threads that wait on a semaphore for as long as they exist.
final class IdleThreads: @unchecked Sendable {
    // @unchecked Sendable: the semaphores are thread-safe; `count` is immutable.
    private let release = DispatchSemaphore(value: 0)
    private let started = DispatchSemaphore(value: 0)
    let count: Int

    init(count: Int) {
        self.count = count
        for _ in 0..<count {
            let thread = Thread { [release, started] in
                started.signal()
                release.wait()
            }
            thread.stackSize = 128 << 10
            thread.start()
        }
        for _ in 0..<count { started.wait() }
    }

    deinit { for _ in 0..<count { release.signal() } }
}

/// Extra CPU of the process with every thread sampled, in ppm of a core, plus 1,000,000.
let idleCostMetric = BenchmarkMetric.custom("idleCostPPM", polarity: .prefersSmaller, useScalingFactor: false)
let idleWindowNs: UInt64 = 200_000_000

/// The process's CPU use over one window with the sampler at 1 kHz, as a share of a core in
/// parts per million: every thread sampled, or (for the baseline) registered threads only.
func windowCPU(sampling threads: SamplerConfiguration.Threads) -> UInt64 {
    try? Sampler.start(SamplerConfiguration(rateHz: 1000, threads: threads))
    usleep(30_000)  // let the first look at every thread pass
    let cpuStart = processCPUNs()
    let start = DispatchTime.now().uptimeNanoseconds
    let end = start + idleWindowNs
    while DispatchTime.now().uptimeNanoseconds < end { usleep(UInt32((end - DispatchTime.now().uptimeNanoseconds) / 1000 + 1)) }
    let wall = DispatchTime.now().uptimeNanoseconds - start
    let cpu = processCPUNs() - cpuStart
    _ = Sampler.stop()
    return cpu * 1_000_000 / max(wall, 1)
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

    // What 100 idle threads add to the process's CPU use at 1 kHz: windows with every thread
    // sampled against windows with none, in interleaved pairs, the same threads alive in both.
    Benchmark(
        "paired 100 idle threads sampled vs not, 1 kHz",
        configuration: .init(
            metrics: [idleCostMetric], units: [idleCostMetric: .count], warmupIterations: 2,
            maxDuration: .seconds(30), maxIterations: 40)
    ) { benchmark in
        let idle = IdleThreads(count: 100)
        var flip = false
        for _ in benchmark.scaledIterations {
            flip.toggle()
            var all: UInt64 = 0
            var none: UInt64 = 0
            if flip {
                all = windowCPU(sampling: .all)
                none = windowCPU(sampling: .registered)
            } else {
                none = windowCPU(sampling: .registered)
                all = windowCPU(sampling: .all)
            }
            // Offset by one core (1,000,000 ppm): a histogram holds no negative value.
            benchmark.measurement(idleCostMetric, 1_000_000 + Int(all) - Int(none))
        }
        blackHole(idle.count)
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
