import Liftoff
import Synchronization
import Testing

/// A view that marks itself again each time it draws: an animation.
final class SpinnerView: View, @unchecked Sendable {
    override func draw(_ rect: Rect) { setNeedsDisplay() }
}

extension RuntimeTests {
    @Suite("Frames and background CPU")
    struct FrameTests {
        @Test("while views stay invalid, frames are committed at 60 Hz")
        func sixtyHertz() {
            let delegate = RecordingDelegate()
            let spinner = SpinnerView(frame: Rect(x: 0, y: 0, width: 10, height: 10), name: "spinner")
            delegate.onFinishLaunching = { _ in delegate.window?.addSubview(spinner) }
            let driver = ApplicationDriver(delegate: delegate)
            defer { driver.close() }
            driver.send(.launch(LaunchOptions()))
            #expect(driver.application.frameCount == 1)
            driver.advance(milliseconds: 101)
            let frames = driver.events.compactMap { time, event -> UInt64? in
                if case .frame = event { return time } else { return nil }
            }
            #expect(frames.count == 7, "the first frame and one every 16.7 ms for 101 ms: \(frames)")
            let gaps = zip(frames.dropFirst(), frames).map { $0 - $1 }
            #expect(gaps.allSatisfy { $0 == Application.frameIntervalNs }, "\(gaps)")
        }

        @Test("frames over 16.7 ms count as slow and over 700 ms as frozen")
        func slowAndFrozen() {
            let clock = ManualClock()
            let delegate = RecordingDelegate()
            let driver = ApplicationDriver(delegate: delegate, clock: clock)
            defer { driver.close() }
            driver.send(.launch(LaunchOptions()))
            let label = delegate.window?.subviews.first
            for work in [5, 20, 800] as [UInt64] {
                driver.perform("work \(work) ms") {
                    clock.advance(byMilliseconds: work)
                    label?.setNeedsDisplay()
                }
            }
            #expect(driver.application.frameDurationsNs.suffix(3) == [5_000_000, 20_000_000, 800_000_000])
            #expect(driver.application.slowFrameCount == 1)
            #expect(driver.application.frozenFrameCount == 1)
        }

        @Test("sustained CPU above 80 % of a core over 60 s in the background is a violation; 50 % is not")
        func backgroundCPU() throws {
            for (share, expected) in [(0.95, 1), (0.5, 0)] {
                let clock = ManualClock()
                let delegate = RecordingDelegate()
                var taskID: Int?
                delegate.onEnterBackground = { app in taskID = app.beginBackgroundTask(name: "crunch") }
                // The process burns `share` of a core of (virtual) time.
                let cpu: @Sendable () -> UInt64 = { UInt64(Double(clock.nowNs) * share) }
                let driver = ApplicationDriver(
                    delegate: delegate, clock: clock, backgroundBudgetNs: 600_000_000_000,
                    configure: { $0.cpuClock = cpu })
                ThreadRules.clearViolations()
                driver.send(.launch(LaunchOptions()))
                driver.send(.userLeaves)
                driver.advance(milliseconds: 61_000)
                let violations = ThreadRules.violations.filter { $0.rule == Application.backgroundCPURule }
                #expect(violations.count == expected, "share \(share)")
                if expected == 1 {
                    #expect(violations.first?.operation == "the app used 95% of a core over 60 s in the background (limit 80%)")
                    #expect(kinds(driver).contains("violation background-cpu"))
                }
                #expect(driver.application.backgroundCPUNs >= UInt64(share * 60e9))
                // The task is still open (its budget is 600 s): ending it now records its CPU.
                let id = try #require(taskID, "the app began its background task on entering the background")
                #expect(driver.application.endBackgroundTask(id), "share \(share): the task was open")
                let used = try #require(driver.application.backgroundTaskCPUNs["crunch"])
                #expect(used == UInt64(Double(clock.nowNs) * share), "the task's CPU is what the process used while it was open")
                ThreadRules.clearViolations()
                driver.close()
            }
        }
    }
}
