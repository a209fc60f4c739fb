import Benchmark
import BenchmarkPairs
import Foundation
import LiftoffComparison

// Reading a counted launch: a 50 MB callgrind output (target: at most 2 s), paired with reading
// its bytes in the same run. `Reports/benchmarks/counts.md` is written from these results by
// `make bench-counts`.

/// A callgrind output of about 50 MB in callgrind's own shape: compressed object, file and
/// function names, relative positions, and `calls=` lines with their inclusive cost lines.
let callgrindFile: URL = {
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("liftoff-count-bench.callgrind")
    var text = "# callgrind format\nversion: 1\ncreator: callgrind-3.19.0\npid: 4242\ncmd:  ./app\npart: 1\n\n"
    text += "desc: Trigger: Program termination\n\npositions: line\nevents: Ir\n\n"
    var state: UInt64 = 47
    func next(_ bound: UInt64) -> UInt64 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return (state >> 33) % bound
    }
    var data = Data(text.utf8)
    var function = 0
    while data.count < 50_000_000 {
        var block = ""
        let object = function % 40
        block += function < 40 ? "ob=(\(object + 1)) /usr/lib/lib\(object).so\n" : "ob=(\(object + 1))\n"
        block += function < 2_000 ? "fl=(\(function % 2_000 + 1)) /src/file\(function % 2_000).c\n" : "fl=(\(function % 2_000 + 1))\n"
        block += function < 30_000 ? "fn=(\(function + 1)) function_\(function)(int, char const*)\n" : "fn=(\(function % 30_000 + 1))\n"
        for line in 0..<24 { block += (line == 0 ? "\(10 + next(500))" : "+\(next(3))") + " \(1 + next(400))\n" }
        for _ in 0..<3 {
            let callee = next(30_000)
            block += "cfn=(\(callee + 1))\ncalls=\(1 + next(9)) \(next(900))\n+\(next(3)) \(next(200_000))\n"
        }
        data.append(Data(block.utf8))
        function += 1
    }
    try? data.write(to: file)
    return file
}()

let benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration(
        metrics: [ratioMetric, baselineMetric, treatedMetric],
        units: [ratioMetric: .count, baselineMetric: .count, treatedMetric: .count], warmupIterations: 1,
        maxDuration: .seconds(60), maxIterations: 20)
    // Baseline: reading the file's bytes; treatment: reading its counts, per function, self and inclusive.
    Benchmark("paired counts: read a 50 MB callgrind file vs its bytes", configuration: configuration) { benchmark in
        for (round, _) in benchmark.scaledIterations.enumerated() {
            let (base, treated) = inAlternatingOrder(
                round: round, baseline: { nanoseconds { blackHole(FileManager.default.contents(atPath: callgrindFile.path)?.count) } },
                treatment: { nanoseconds { blackHole(try? CallgrindCounts.read(files: [callgrindFile]).functions.count) } })
            benchmark.measurement(ratioMetric, Int(treated * 1_000_000 / max(base, 1)))
            benchmark.measurement(baselineMetric, Int(base))
            benchmark.measurement(treatedMetric, Int(treated))
        }
    }
}
