import Benchmark
import Dispatch

/// A pair's treatment over its baseline, in parts per million.
public let ratioMetric = BenchmarkMetric.custom("ratioPPM", polarity: .prefersSmaller, useScalingFactor: false)
/// A pair's baseline, in nanoseconds.
public let baselineMetric = BenchmarkMetric.custom("baselineNs", polarity: .prefersSmaller, useScalingFactor: false)
/// A pair's treatment, in nanoseconds.
public let treatedMetric = BenchmarkMetric.custom("treatedNs", polarity: .prefersSmaller, useScalingFactor: false)

/// How long `body` took, in nanoseconds of the monotonic clock.
public func nanoseconds(_ body: () throws -> Void) rethrows -> UInt64 {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return DispatchTime.now().uptimeNanoseconds - start
}
