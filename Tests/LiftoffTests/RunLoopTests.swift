import Foundation
import Liftoff
import Synchronization
import LiftoffTestSupport
import Testing

extension RuntimeTests {
    @Suite("Main run loop")
    struct RunLoopTests {
        @Test("events run serially in arrival order, then due timers, then observers")
        func orderWithinAnIteration() {
            let clock = ManualClock()
            let loop = MainRunLoop(clock: clock)
            let log = Mutex<[String]>([])
            loop.addObserver(named: "observer") { _ in log.withLock { $0.append("observer") } }
            loop.schedule(afterNanoseconds: 0, name: "timer") { log.withLock { $0.append("timer") } }
            for index in 0..<3 { loop.post("event \(index)") { log.withLock { $0.append("event \(index)") } } }
            loop.runIteration()
            #expect(log.withLock { $0 } == ["event 0", "event 1", "event 2", "timer", "observer"])
            #expect(loop.iterations.last?.ran == ["event 0", "event 1", "event 2", "timer"])
        }

        @Test("on a manual clock the loop moves time to each timer in deadline order and never sleeps")
        func manualClockTimers() {
            let clock = ManualClock()
            let loop = MainRunLoop(clock: clock)
            let fired = Mutex<[String]>([])
            loop.schedule(afterNanoseconds: 30_000_000_000, name: "late") { fired.withLock { $0.append("late@\(clock.nowNs / 1_000_000)") } }
            loop.schedule(afterNanoseconds: 5_000_000_000, name: "early") { fired.withLock { $0.append("early@\(clock.nowNs / 1_000_000)") } }
            let cancelled = loop.schedule(afterNanoseconds: 10_000_000_000, name: "cancelled") { fired.withLock { $0.append("cancelled") } }
            loop.cancelTimer(cancelled)
            loop.run()
            #expect(fired.withLock { $0 } == ["early@5000", "late@30000"])
            #expect(clock.nowNs == 30_000_000_000)
        }

        @Test("an event posted from another thread wakes a waiting loop")
        func wakesOnPost() {
            let loop = MainRunLoop()
            let ran = Atomic<Bool>(false)
            Thread.detachNewThread {
                Thread.sleep(forTimeInterval: 0.05)
                loop.post("from another thread") {
                    ran.store(true, ordering: .relaxed)
                    loop.stop()
                }
            }
            // A loop that never wakes fails this test after 10 s instead of hanging the run.
            let finished = finishing(within: 10) { loop.run() }
            #expect(finished != nil, "the loop did not wake for the posted event within 10 s")
            let didRun = ran.load(ordering: .relaxed)
            #expect(didRun)
        }
    }

    @Suite("Scenarios")
    struct ScenarioTests {
        @Test("steps parse from lines and from ';'-separated parts, with comments")
        func parse() throws {
            let scenario = try Scenario.parse("launch; tap 10 20.5  # first\n\nwait 250\nlaunch-background location\nbackground-task sync 3000")
            #expect(scenario.lines.map(\.step) == [
                .event(.launch(LaunchOptions())), .event(.tap(Point(x: 10, y: 20.5))), .wait(milliseconds: 250),
                .event(.launch(LaunchOptions(reason: .location))), .backgroundTask(name: "sync", milliseconds: 3000),
            ])
            #expect(scenario.lines.map(\.number) == [1, 1, 3, 4, 5])
        }

        @Test("a bad step is an error naming its line and word", arguments: [
            ("launch\nfly away", 2, "fly"),
            ("wait soon", 1, "soon"),
            ("launch; tap 1", 1, "tap"),
            ("home now", 1, "home"),
            ("background-task sync -3", 1, "-3"),
        ])
        func badSteps(text: String, line: Int, word: String) {
            let error = #expect(throws: Scenario.ParseError.self) { try Scenario.parse(text) }
            #expect(error?.line == line)
            #expect(error?.word == word)
            #expect(error?.description.hasPrefix("Line \(line): ") == true)
        }
    }
}
