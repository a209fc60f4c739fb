import Foundation
import Liftoff
import LiftoffAnalysis
import LiftoffProfile
import Testing
import WaitingCLICore

@Suite("Waits in a launch")
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
