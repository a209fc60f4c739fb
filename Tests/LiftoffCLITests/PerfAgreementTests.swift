import Foundation
import LiftoffTestSupport
import Testing

/// Whether `perf record` works here (installed, and allowed to open a cpu-clock event).
let perfRecordWorks: Bool = {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["perf", "record", "-q", "-e", "cpu-clock", "-o", "/dev/null", "--", "true"]
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    guard (try? process.run()) != nil else { return false }
    process.waitUntilExit()
    return process.terminationStatus == 0
}()

@Suite("Agreement with perf", .processState(timeLimit: .seconds(300)))
struct PerfAgreementTests {
    @Test(
        "on CPU-bound launches, the main thread's on-CPU leaf functions match perf's within sampling noise",
        .enabled(if: perfRecordWorks, "perf record is unavailable or not permitted here"))
    func mainThreadLeavesMatchPerf() throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/perf_agreement.py")
        let output = temporaryFolder().appendingPathComponent("agreement.json")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        // Three launches of the demo slowed down tenfold, everything on its main thread.
        process.arguments = ["python3", script.path, try BuiltTool.find().url.path, output.path, "--slowdown", "1000%"]
        process.standardOutput = FileHandle.nullDevice
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "perf_agreement.py exited with \(process.terminationStatus): \(message)")

        struct Report: Decodable {
            struct Row: Decodable, CustomStringConvertible {
                var liftoff: Int
                var liftoffRows: Int
                var perf: Int
                var distance: Double
                var noise: Double
                var description: String {
                    "\(liftoff) ticks in \(liftoffRows) rows against \(perf), distance \(distance), noise \(noise)"
                }
            }
            var launches: [Row]
            var pooled: Row
        }
        let report = try JSONDecoder().decode(Report.self, from: Data(contentsOf: output))
        let pooled = report.pooled
        // Both tools saw the same seconds of computing on the same thread, three launches pooled.
        #expect(report.launches.count == 3)
        #expect(pooled.liftoff >= 300 && pooled.perf >= 300, "\(pooled)")
        // Two samplers of one distribution differ by the sampling noise alone (about 0.075 for 1,600
        // samples a side). Liftoff's rows count by the ticks they stand for (a sampler that fell behind
        // answers once for the ticks it missed), and the noise is drawn in that shape. Measured here: 0.079 and 0.082 on an idle machine; 0.124 against a noise of
        // 0.084 during the whole suite; 1.1 to 1.2 times the noise with both cores busy. The aim is 0.10;
        // the bound allows twice the noise, since a busy machine breaks a thread's running into pieces
        // that the two tools count differently. (A sampler losing its signals measured 0.45.)
        let bound = max(0.12, 2 * pooled.noise)
        #expect(
            pooled.distance <= min(bound, 0.2),
            "total-variation distance \(pooled.distance), sampling noise \(pooled.noise) (\(pooled.liftoff) vs \(pooled.perf) samples); launches: \(report.launches)")
    }
}
