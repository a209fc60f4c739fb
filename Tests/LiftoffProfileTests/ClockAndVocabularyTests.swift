import Foundation
import LiftoffProfile
import Testing

@Suite("Clock and vocabulary")
struct ClockAndVocabularyTests {
    @Test("durations saturate: an end before its start is zero long, a sum past the end of time stops there")
    func saturatingDurations() {
        #expect(NanosecondDuration.between(5, 12).nanoseconds == 7)
        #expect(NanosecondDuration.between(12, 5) == .zero)
        #expect(NanosecondDuration(nanoseconds: 10).after(.max - 3) == .max)
        #expect(NanosecondDuration(nanoseconds: 10).after(30) == 40)
        #expect((NanosecondDuration(nanoseconds: .max - 1) + NanosecondDuration(nanoseconds: 5)).nanoseconds == .max)
        #expect((NanosecondDuration(nanoseconds: 3) - NanosecondDuration(nanoseconds: 5)) == .zero)
        #expect(NanosecondDuration(milliseconds: .max).nanoseconds == .max)
        #expect(NanosecondDuration(milliseconds: 1_500).milliseconds == 1_500)
        #expect(NanosecondDuration(nanoseconds: 2_500_000).millisecondsValue == 2.5)
        var total = NanosecondDuration.zero
        total += NanosecondDuration(nanoseconds: 4)
        #expect(total.nanoseconds == 4)
    }

    @Test("the monotonic clock never goes back and agrees with CLOCK_MONOTONIC")
    func monotonicClock() {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        let before = UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
        let first = MonotonicClock.nowNs
        let second = MonotonicClock().nowNs
        clock_gettime(CLOCK_MONOTONIC, &time)
        let after = UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
        #expect(before <= first && first <= second && second <= after)
        #expect(!MonotonicClock().isManual)
    }

    @Test("a manual clock moves only when told, never backwards, and stops at the end of time")
    func manualClock() {
        let clock = ManualClock(startNs: 100)
        clock.advance(byMilliseconds: 2)
        #expect(clock.nowNs == 2_000_100)
        clock.advance(to: 50)
        #expect(clock.nowNs == 2_000_100, "advance(to:) an earlier instant does nothing")
        clock.advance(byNanoseconds: .max)
        #expect(clock.nowNs == .max)
        #expect(clock.isManual)
    }

    @Test("vocabulary values are stored as their plain spelling and read back, known or not")
    func vocabularyCoding() throws {
        let span = Profile.Span(name: "s", category: .backgroundTask, threadID: 1, startNs: 0, endNs: 1)
        let task = Profile.TaskRecord(name: "t", lane: "main", status: .timedOut)
        let mark = Profile.Mark(name: .firstFrame, timeNs: 3)
        let violation = Profile.Violation(
            rule: .noBlockingOnMainDuringLaunch, message: "m", threadID: 1, threadName: "main", timeNs: 0, stack: nil,
            count: 1)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        #expect(String(decoding: try encoder.encode(span), as: UTF8.self).contains("\"category\":\"background-task\""))
        #expect(String(decoding: try encoder.encode(task), as: UTF8.self).contains("\"status\":\"timedOut\""))
        #expect(String(decoding: try encoder.encode(mark), as: UTF8.self).contains("\"name\":\"firstFrame\""))
        #expect(
            String(decoding: try encoder.encode(violation), as: UTF8.self)
                .contains("\"rule\":\"no-blocking-on-main-during-launch\""))
        let unknown = try JSONDecoder().decode(
            Profile.TaskRecord.self,
            from: Data(#"{"name":"t","lane":"main","status":"paused","dependencies":[],"tags":[],"waitNs":0,"onCriticalPath":false,"couldDefer":false}"#.utf8))
        #expect(unknown.status == Profile.TaskStatus("paused"))
        #expect(unknown.status.rawValue == "paused")
        #expect(!unknown.status.isSuccess && Profile.TaskStatus.completed.isSuccess)
        #expect(Profile.MarkName.expiration(ofBackgroundTask: "upload").rawValue == "expiration: upload")
        #expect(Profile.SpanCategory("callback") == .callback)
        #expect("\(Profile.RuleName.uiOnMain)" == "ui-on-main")
    }
}
