import Liftoff
import Testing

extension RuntimeTests {
    @Suite("Background budgets")
    struct BudgetTests {
        /// A launched app that begins a background task named `name` as it enters the background.
        private func leaving(withTask name: String?, onExpiration: (() -> Void)? = nil) -> (ApplicationDriver, RecordingDelegate) {
            let delegate = RecordingDelegate()
            if let name {
                delegate.onEnterBackground = { app in
                    _ = app.beginBackgroundTask(name: name) {
                        delegate.log.append("expiration handler for \(name)")
                        onExpiration?()
                    }
                }
            }
            let driver = ApplicationDriver(delegate: delegate)
            driver.send(.launch(LaunchOptions()))
            driver.send(.userLeaves)
            return (driver, delegate)
        }

        @Test("a task still open when the 30 s budget ends gets expiration at 25 s, then termination naming it")
        func overrunTerminates() {
            let (driver, delegate) = leaving(withTask: "upload")
            defer { driver.close() }
            #expect(driver.application.backgroundTimeRemainingNs == 30_000_000_000)
            driver.advance(milliseconds: 24_999)
            #expect(!delegate.log.contains("expiration handler for upload"))
            driver.advance(milliseconds: 1)
            #expect(delegate.log.last == "expiration handler for upload")
            #expect(driver.application.state == .background)
            driver.advance(milliseconds: 5_000)
            #expect(driver.application.state == .notRunning)
            #expect(driver.application.exitStatus == Application.exitBackgroundLimit)
            #expect(driver.application.terminationReason
                == "background time of 30000 ms ran out with 1 open background task: 'upload' (open 30000 ms)")
            let tail = Array(kinds(driver).suffix(3))
            #expect(tail == ["expiration upload", "background→notRunning", "terminated"])
            #expect(!delegate.log.contains("willTerminate"), "a budget termination is not a polite one")
        }

        @Test("an expiration handler that ends its task lets the app be suspended instead")
        func expirationEndsTask() {
            let delegate = RecordingDelegate()
            delegate.onEnterBackground = { app in
                var id: Int?
                id = app.beginBackgroundTask(name: "sync") { if let id { app.endBackgroundTask(id) } }
            }
            let driver = ApplicationDriver(delegate: delegate)
            defer { driver.close() }
            driver.send(.launch(LaunchOptions()))
            driver.send(.userLeaves)
            driver.advance(milliseconds: 40_000)
            #expect(driver.application.state == .suspended)
            #expect(driver.application.exitStatus == Application.exitNormal)
        }

        @Test("the budget resets when the app returns to the foreground")
        func budgetResets() {
            let (driver, _) = leaving(withTask: "upload")
            defer { driver.close() }
            driver.advance(milliseconds: 20_000)
            driver.send(.returnToForeground)
            #expect(driver.application.backgroundTimeRemainingNs == nil)
            driver.advance(milliseconds: 20_000)
            #expect(driver.application.state == .active, "the old budget's timers do not fire")
            driver.send(.userLeaves)
            #expect(driver.application.backgroundTimeRemainingNs == 30_000_000_000)
        }

        @Test("a background launch gets a budget too")
        func backgroundLaunchBudget() {
            let delegate = RecordingDelegate()
            delegate.onFinishLaunching = { app in _ = app.beginBackgroundTask(name: "location") }
            let driver = ApplicationDriver(delegate: delegate)
            defer { driver.close() }
            driver.send(.launch(LaunchOptions(reason: .location)))
            #expect(driver.application.state == .background)
            driver.advance(milliseconds: 30_000)
            #expect(driver.application.exitStatus == Application.exitBackgroundLimit)
        }

        @Test("didEnterBackground must return within 5 s")
        func enterBackgroundLimit() {
            let clock = ManualClock()
            let slow = RecordingDelegate()
            slow.onEnterBackground = { _ in clock.advance(byMilliseconds: 6_000) }
            let driver = ApplicationDriver(delegate: slow, clock: clock)
            defer { driver.close() }
            driver.send(.launch(LaunchOptions()))
            driver.send(.userLeaves)
            #expect(driver.application.state == .notRunning)
            #expect(driver.application.terminationReason == "didEnterBackground took 6000 ms; the limit is 5000 ms")
        }
    }
}
