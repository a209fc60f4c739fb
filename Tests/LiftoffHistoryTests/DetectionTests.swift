import Foundation
import LiftoffProfile
import Testing

@testable import LiftoffHistory

/// Series of launch times as CI records them: a level, noise, and sometimes a step.
enum SyntheticSeries {
    /// `count` values around 100 with relative `noise` (a standard deviation), stepping by
    /// `step` (a fraction) from index `at` on.
    static func make(count: Int, noise: Double, step: Double = 0, at: Int = .max, seed: UInt64) -> [Double] {
        var generator = SplitMix64(seed: seed)
        return (0..<count).map { index in
            let level = 100 * (index >= at ? 1 + step : 1)
            return level * (1 + noise * normal(&generator))
        }
    }

    /// A standard normal variate (Box–Muller).
    static func normal(_ generator: inout SplitMix64) -> Double {
        let u = max(Double(generator.next() >> 11) / Double(1 << 53), 1e-300)
        let v = Double(generator.next() >> 11) / Double(1 << 53)
        return (-2 * log(u)).squareRoot() * cos(2 * .pi * v)
    }
}

@Suite("Change point detection on launch series")
struct DetectionTests {
    @Test("a flat series with 0.05 % noise has no change point of 1 % or more, whatever its length", arguments: [10, 60, 150, 400])
    func flatSeries(count: Int) {
        for seed in UInt64(1)...20 {
            let series = SyntheticSeries.make(count: count, noise: 0.0005, seed: seed &* 7919 &+ UInt64(count))
            #expect(ChangePoints.find(in: series).isEmpty, "seed \(seed): \(ChangePoints.find(in: series).map(\.index))")
        }
    }

    @Test("a 2 % step at 0.85 % noise is found within 2 commits of where it happened in at least 95 % of 200 series")
    func stepIsFound() {
        var found = 0
        var misses: [String] = []
        for seed in UInt64(1)...200 {
            var generator = SplitMix64(seed: seed)
            let count = 60 + Int(generator.next() % 141)
            let at = 10 + Int(generator.next() % UInt64(count - 20))
            let series = SyntheticSeries.make(count: count, noise: 0.0085, step: 0.02, at: at, seed: seed &+ 1_000_000)
            let points = ChangePoints.find(in: series)
            if points.contains(where: { abs($0.index - at) <= 2 }) {
                found += 1
            } else {
                misses.append("seed \(seed): step at \(at) of \(count), found \(points.map(\.index))")
            }
        }
        #expect(found >= 190, "found \(found) of 200; missed \(misses.prefix(5))")
    }

    @Test("a change point's statistics: the means on its two sides, the relative change both ways, and a tiny p")
    func statistics() throws {
        let series = [Double](repeating: 100, count: 30).enumerated().map { $1 + Double($0 % 3) * 0.1 }
            + [Double](repeating: 110, count: 30).enumerated().map { $1 + Double($0 % 3) * 0.1 }
        let point = try #require(ChangePoints.find(in: series).first)
        #expect(point.index == 30)
        #expect(abs(point.meanBefore - 100.1) < 1e-9 && abs(point.meanAfter - 110.1) < 1e-9)
        #expect(abs(point.forwardChange - 10.0 / 100.1) < 1e-12)
        #expect(abs(point.magnitude - 10.0 / 100.1) < 1e-12, "the larger of the two relative changes")
        #expect(point.pValue < 1e-30)
    }

    @Test("a minimum magnitude drops a significant change that is smaller than it")
    func minimumMagnitude() {
        let series = SyntheticSeries.make(count: 100, noise: 0.0005, step: 0.005, at: 50, seed: 3)
        #expect(ChangePoints.find(in: series, options: ChangePointOptions(minMagnitude: 0)).map(\.index) == [50], "a 0.5 % step at 0.05 % noise is clear")
        #expect(ChangePoints.find(in: series).isEmpty, "but smaller than the default 1 %")
    }

    @Test("series too short, constant, or with one value never trap")
    func degenerate() {
        for series in [[], [1.0], [1.0, 2.0], [5.0, 5.0, 5.0], [0.0, 0.0, 1e300, -1e300], [Double](repeating: 0, count: 100)] {
            for point in ChangePoints.find(in: series, options: ChangePointOptions(windowLength: 2, maxPValue: 0.5)) {
                #expect(point.index > 0 && point.index < series.count)
            }
        }
    }
}
