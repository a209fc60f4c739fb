import Foundation
import Liftoff
import LiftoffAnalysis
import LiftoffProfile
import Testing
import WaitingCLICore

@Suite("Waits in a launch", .serialized)
struct WaitTests {
    @Test("each span waited as long as it lasted, and the main thread's waits are in the functions that waited")
    func spansWaitAsLongAsTheyLast() throws {
        let recorder = try LaunchRecorder.start()
        let result = startUp(recorder: recorder)
        let profile = recorder.finish(violations: [])
        #expect(result.entries == 1, "the cache was opened after the warm-up filled it")
        let intervalMs = Double(profile.samplingIntervalNs) / 1e6
        for name in ["read settings", "open cache", "fetch remote config"] {
            let span = try #require(profile.spans.first { $0.name == name })
            let duration = Double(span.durationNs) / 1e6
            let waiting = Double(span.waitingSamples ?? 0) * intervalMs
            #expect(abs(waiting - duration) <= max(duration * 0.1, 3), "\(name): \(waiting) ms waiting in \(duration) ms")
        }
        // Each wait carries its own function: the sleep in readSettings, the lock in openCache.
        let thread = try #require(profile.spans.first { $0.name == "open cache" }).threadID
        func waitingMs(in function: String) -> Double {
            var ticks = 0
            for row in 0..<profile.samples.count
            where profile.samples.thread[row] == thread && profile.samples.state[row] == .blocked {
                let names = profile.frameIndices(ofStack: profile.samples.stack[row]).map { profile.frames[$0].name }
                if names.contains(where: { $0.contains(function) }) { ticks += profile.samples.ticks(row) }
            }
            return Double(ticks) * intervalMs
        }
        #expect(waitingMs(in: "readSettings") >= 90)
        #expect(waitingMs(in: "openCache") >= 200)
        #expect(waitingMs(in: "fetchRemoteConfig") >= 135)

        // The launch explains itself: each wait is an insight naming the function that waited.
        let insights = Insights.of(profile)
        let findings = Dictionary(insights.map { ($0.id, $0.finding) }, uniquingKeysWith: { first, _ in first })
        #expect(findings["main-thread-lock-wait"]?.contains("openCache") == true, "\(findings)")
        #expect(findings["main-thread-blocked-by-task"]?.contains("fetchRemoteConfig") == true, "\(findings)")
        #expect(findings["main-thread-sleep"]?.contains("readSettings") == true, "\(findings)")
        #expect(insights.first?.id == "main-thread-lock-wait", "the longest wait first: \(insights.map(\.id))")
        // The lock's holder slept while it held it: the note says where.
        let lock = try #require(insights.first { $0.id == "main-thread-lock-wait" })
        #expect(lock.evidence.notes.contains { $0.contains("Cache.warmUp") }, "\(lock.evidence.notes)")
    }
}

extension WaitTests {
    @Test(
        "counted under callgrind, the launch stops at its LaunchRecorder's ready and counts the same within 0.1 %",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/valgrind"), "valgrind is not installed"))
    func countedToReady() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let liftoff = root.appendingPathComponent("../../.build/debug/liftoff").standardizedFileURL
        try #require(FileManager.default.isExecutableFile(atPath: liftoff.path), "run swift build at the repository root first")
        let program = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("WaitingCLI")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("waiting-count-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let process = Process()
        process.executableURL = liftoff
        process.arguments = [
            "record", "--runs", "1", "--warmup", "0", "--quiet", "--count", "instructions", "--count-runs", "2",
            "--out", folder.path, "--", program.path,
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let manifest = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("record.json"))) as? [String: Any])
        let counted = manifest["counted"] as? [[String: Any]] ?? []
        #expect(counted.count == 2)
        let counts = counted.compactMap { $0["instructions"] as? Double }
        #expect(counts.count == 2, "\(counted)")
        // Counted to ready (a dump when lo_launch_ready returned), not to the exit that writes the profile.
        #expect(counted.allSatisfy { ($0["trigger"] as? String)?.contains("lo_launch_ready") == true }, "\(counted)")
        // With no sampler while counted, its threads' waits are all that vary.
        if let low = counts.min(), let high = counts.max() { #expect((high - low) / low < 0.001, "\(counts)") }
    }
}
