import Foundation
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

@Suite("Agreement with perf")
struct PerfAgreementTests {
    @Test(
        "on CPU-bound launches, the main thread's on-CPU leaf functions match perf's within 0.12 total variation",
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
            struct Row: Decodable {
                var liftoff: Int
                var perf: Int
                var distance: Double
                var noise: Double
            }
            var launches: [Row]
            var pooled: Row
        }
        let report = try JSONDecoder().decode(Report.self, from: Data(contentsOf: output))
        let pooled = report.pooled
        // Both tools saw the same seconds of computing on the same thread, three launches pooled.
        #expect(report.launches.count == 3)
        #expect(pooled.liftoff >= 300 && pooled.perf >= 300, "\(pooled)")
        // Measured 0.079 and 0.082 here, against 0.073 to 0.077 from sampling alone; the aim is 0.10,
        // and the bound leaves room for a machine busy with other tests.
        #expect(
            pooled.distance <= 0.12,
            "total-variation distance \(pooled.distance), sampling noise \(pooled.noise) (\(pooled.liftoff) vs \(pooled.perf) samples)")
    }
}
