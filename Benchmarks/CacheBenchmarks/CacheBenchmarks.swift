import Benchmark
import BenchmarkPairs
import Foundation
import Glibc
import LiftoffCLI

// What `--cache cold` costs before a launch: evicting a 100 MB file set and checking what stayed
// (target: at most 50 ms), paired in alternating order with the kernel's eviction alone
// (`posix_fadvise(POSIX_FADV_DONTNEED)` of each file). `Reports/benchmarks/cache.md` is written
// from these results by `make bench-cache`.

/// 20 files of 5 MB on a disk-backed file system (tmpfs cannot evict), written through to the disk.
let fileSet: [String] = {
    let folder = URL(fileURLWithPath: "/var/tmp/liftoff-cache-bench")
    try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    var state: UInt64 = 2026
    var bytes = [UInt8](repeating: 0, count: 5 << 20)
    return (0..<20).map { index in
        let path = folder.appendingPathComponent("file-\(index).bin").path
        if (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) != bytes.count {
            for offset in stride(from: 0, to: bytes.count, by: 8) {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                withUnsafeBytes(of: state) { bytes.replaceSubrange(offset..<offset + 8, with: $0) }
            }
            FileManager.default.createFile(atPath: path, contents: Data(bytes))
            let fd = open(path, O_RDONLY)
            if fd >= 0 {
                fsync(fd)
                close(fd)
            }
        }
        return path
    }
}()

/// Reads every file of the set, so that all of it is in the page cache again.
func warm() {
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    for path in fileSet {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { continue }
        while buffer.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 {}
        close(fd)
    }
}

/// The kernel's eviction alone, file by file.
func adviseOnly() {
    for path in fileSet {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { continue }
        _ = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)
        close(fd)
    }
}

let benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration(
        metrics: [ratioMetric, baselineMetric, treatedMetric],
        units: [ratioMetric: .count, baselineMetric: .count, treatedMetric: .count], warmupIterations: 1,
        maxDuration: .seconds(60), maxIterations: 15)
    Benchmark("paired cache: evict and check 100 MB in 20 files vs kernel eviction alone", configuration: configuration) { benchmark in
        for (round, _) in benchmark.scaledIterations.enumerated() {
            // Each side starts with the whole set in memory; the warming is not measured.
            let (base, treated) = inAlternatingOrder(
                round: round,
                baseline: {
                    warm()
                    return nanoseconds { adviseOnly() }
                },
                treatment: {
                    warm()
                    return nanoseconds { blackHole(PageCache.evict(fileSet).count) }
                })
            benchmark.measurement(ratioMetric, Int(treated * 1_000_000 / max(base, 1)))
            benchmark.measurement(baselineMetric, Int(base))
            benchmark.measurement(treatedMetric, Int(treated))
        }
    }
}
