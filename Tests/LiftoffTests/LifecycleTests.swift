import Liftoff
import Testing

extension RuntimeTests {
    @Suite("Life cycle")
    struct LifecycleTests {
        @Test("a user launch goes notRunning → inactive → active, with the first frame after didFinishLaunching")
        func userLaunch() {
            let delegate = RecordingDelegate()
            let driver = ApplicationDriver(delegate: delegate)
            defer { driver.close() }
            driver.send(.launch(LaunchOptions()))
            #expect(kinds(driver) == [
                "notRunning→inactive", "willFinishLaunching", "didFinishLaunching", "inactive→active",
                "didBecomeActive", "frame 0",
            ])
            #expect(driver.application.state == .active)
            #expect(driver.application.firstFrameNs != nil)
            #expect(delegate.window?.drawCount == 1)
        }

        @Test("a background launch goes notRunning → background → suspended, with no frame")
        func backgroundLaunch() {
            let delegate = RecordingDelegate()
            let driver = ApplicationDriver(delegate: delegate)
            defer { driver.close() }
            driver.send(.launch(LaunchOptions(reason: .remoteNotification)))
            #expect(kinds(driver) == [
                "notRunning→background", "willFinishLaunching", "didFinishLaunching", "background→suspended",
            ])
            #expect(driver.application.frameCount == 0)
            #expect(driver.application.firstFrameNs == nil)
        }

        @Test("leaving resigns, enters the background and is suspended without notice; returning reverses it")
        func leaveAndReturn() {
            let delegate = RecordingDelegate()
            let driver = ApplicationDriver(delegate: delegate)
            defer { driver.close() }
            driver.send(.launch(LaunchOptions()))
            let before = driver.events.count
            driver.send(.userLeaves)
            driver.send(.returnToForeground)
            #expect(Array(kinds(driver).dropFirst(before)) == [
                "willResignActive", "active→inactive", "inactive→background", "didEnterBackground",
                "background→suspended",
                "suspended→background", "willEnterForeground", "background→inactive", "inactive→active",
                "didBecomeActive", "frame 1",
            ])
        }

        @Test("an interruption resigns active and its end makes the app active again")
        func interruption() {
            let driver = ApplicationDriver(delegate: RecordingDelegate())
            defer { driver.close() }
            driver.send(.launch(LaunchOptions()))
            let before = driver.events.count
            driver.send(.interruptionBegan)
            #expect(driver.application.state == .inactive)
            driver.send(.interruptionEnded)
            #expect(Array(kinds(driver).dropFirst(before)) == [
                "willResignActive", "active→inactive", "inactive→active", "didBecomeActive",
            ])
        }

        @Test("a purge of a suspended app and a user kill end it without any callback")
        func purgeAndKillWithoutCallbacks() {
            for (event, leaveFirst) in [(SystemEvent.memoryPurge, true), (.userKill, true), (.userKill, false)] {
                let delegate = RecordingDelegate()
                let driver = ApplicationDriver(delegate: delegate)
                driver.send(.launch(LaunchOptions()))
                if leaveFirst { driver.send(.userLeaves) }
                let callbacks = delegate.log
                driver.send(event)
                #expect(driver.application.state == .notRunning)
                #expect(delegate.log == callbacks, "no callback for \(event)")
                #expect(driver.application.runLoop.isStopped)
                driver.close()
            }
        }

        @Test("willTerminate comes only when the app runs in the background, not when it is suspended")
        func willTerminateOnlyFromBackground() {
            let running = RecordingDelegate()
            running.onEnterBackground = { app in _ = app.beginBackgroundTask(name: "upload") }
            let driver = ApplicationDriver(delegate: running)
            driver.send(.launch(LaunchOptions()))
            driver.send(.userLeaves)
            #expect(driver.application.state == .background)
            driver.send(.systemTerminate)
            #expect(running.log.last == "willTerminate")
            driver.close()

            let suspended = RecordingDelegate()
            let other = ApplicationDriver(delegate: suspended)
            other.send(.launch(LaunchOptions()))
            other.send(.userLeaves)
            #expect(other.application.state == .suspended)
            other.send(.systemTerminate)
            #expect(!suspended.log.contains("willTerminate"))
            #expect(other.application.state == .notRunning)
            other.close()
        }

        @Test("events that make no sense in the current state are reported and not acted on")
        func rejectedEvents() {
            let delegate = RecordingDelegate()
            let driver = ApplicationDriver(delegate: delegate)
            defer { driver.close() }
            driver.send(.launch(LaunchOptions()))
            let log = delegate.log
            for event in [SystemEvent.memoryPurge, .interruptionEnded, .returnToForeground, .launch(LaunchOptions())] {
                driver.send(event)
            }
            #expect(driver.application.state == .active)
            #expect(delegate.log == log)
            #expect(kinds(driver).filter { $0.hasPrefix("rejected") } == [
                "rejected purge", "rejected interrupt-end", "rejected foreground", "rejected launch",
            ])
        }

        @Test("a background task keeps the app in the background until it ends")
        func backgroundTaskDelaysSuspension() {
            let delegate = RecordingDelegate()
            delegate.onEnterBackground = { app in
                if let id = app.beginBackgroundTask(name: "upload") {
                    app.runLoop.schedule(afterNanoseconds: 5_000_000_000, name: "upload done") { app.endBackgroundTask(id) }
                }
            }
            let driver = ApplicationDriver(delegate: delegate)
            defer { driver.close() }
            driver.send(.launch(LaunchOptions()))
            driver.send(.userLeaves)
            driver.advance(milliseconds: 4_999)
            #expect(driver.application.state == .background)
            driver.advance(milliseconds: 1)
            #expect(driver.application.state == .suspended)
            #expect(!driver.application.endBackgroundTask(1), "ending it again is reported, not a crash")
            #expect(kinds(driver).last == "rejected end background task 1")
        }

        @Test("the state machine allows exactly the seeds' transitions", arguments: ApplicationState.allCases)
        func transitionTable(state: ApplicationState) throws {
            // The seeds' transitions, written out here: the app is driven through them, then asked
            // for every move from `state`, and must take exactly the allowed ones.
            let allowed: [ApplicationState: Set<ApplicationState>] = [
                .notRunning: [.inactive, .background],
                .inactive: [.active, .background, .notRunning],
                .active: [.inactive, .notRunning],
                .background: [.inactive, .suspended, .notRunning],
                .suspended: [.background, .notRunning],
            ]
            // A path from notRunning to `state` over allowed moves (breadth first).
            var paths: [ApplicationState: [ApplicationState]] = [.notRunning: []]
            var queue: [ApplicationState] = [.notRunning]
            while !queue.isEmpty {
                let current = queue.removeFirst()
                for next in allowed[current, default: []].sorted(by: { $0.rawValue < $1.rawValue }) where paths[next] == nil {
                    paths[next] = paths[current, default: []] + [next]
                    queue.append(next)
                }
            }
            let path = try #require(paths[state], "\(state) is reachable")
            for target in ApplicationState.allCases {
                let driver = ApplicationDriver(delegate: RecordingDelegate())
                defer { driver.close() }
                for step in path { try driver.application.requestTransition(to: step) }
                try #require(driver.application.state == state)
                if allowed[state, default: []].contains(target) {
                    #expect(throws: Never.self, "\(state) → \(target) is allowed") {
                        try driver.application.requestTransition(to: target)
                    }
                    #expect(driver.application.state == target)
                } else {
                    #expect(throws: LifecycleError.self, "\(state) → \(target) is refused") {
                        try driver.application.requestTransition(to: target)
                    }
                    #expect(driver.application.state == state, "a refused move leaves the state as it was")
                }
            }
        }

        @Test("an illegal transition request is an error naming both states")
        func illegalTransition() {
            let driver = ApplicationDriver(delegate: RecordingDelegate())
            defer { driver.close() }
            driver.send(.launch(LaunchOptions()))
            let error = #expect(throws: LifecycleError.self) { try driver.application.requestTransition(to: .suspended) }
            #expect(error?.message == "The app cannot go from active to suspended.")
            #expect(driver.application.state == .active)
        }

        @Test("the launch watchdog ends a launch that has no first frame after 20 s, naming the phase")
        func launchWatchdog() {
            let slow = RecordingDelegate()
            let clock = ManualClock()
            slow.onFinishLaunching = { _ in clock.advance(byMilliseconds: 21_000) }
            let driver = ApplicationDriver(delegate: slow, clock: clock)
            driver.send(.launch(LaunchOptions()))
            #expect(driver.application.exitStatus == Application.exitWatchdog)
            #expect(driver.application.state == .notRunning)
            let reason = driver.application.terminationReason ?? ""
            #expect(reason.contains("didFinishLaunching"), "\(reason)")
            #expect(reason.contains("20000 ms"))
            #expect(kinds(driver).last == "terminated")
            driver.close()

            let fast = RecordingDelegate()
            let clock2 = ManualClock()
            fast.onFinishLaunching = { _ in clock2.advance(byMilliseconds: 19_000) }
            let ok = ApplicationDriver(delegate: fast, clock: clock2)
            ok.send(.launch(LaunchOptions()))
            #expect(ok.application.exitStatus == Application.exitNormal)
            #expect(ok.application.state == .active)
            ok.close()
        }
    }
}
