import Dispatch
import Foundation
import Liftoff
import LiftoffTesting
import LiftoffProfile
import LiftoffTestSupport
import Synchronization
import Testing

struct Boom: Error, CustomStringConvertible {
    var description: String { "boom" }
}

/// Lets a task body reach the delegate that runs it.
final class DelegateBox: @unchecked Sendable {
    // @unchecked Sendable: set once before launch, then read on the loop's thread.
    weak var delegate: SchedulingDelegate?
}

/// A delegate that starts a scheduler in didFinishLaunching and shows a window.
final class SchedulingDelegate: ApplicationDelegate {
    let makePlan: () throws -> LaunchPlan
    let clock: any LaunchClock
    var scheduler: LaunchScheduler?
    var window: Window?

    init(clock: any LaunchClock, _ makePlan: @escaping () throws -> LaunchPlan) {
        self.clock = clock
        self.makePlan = makePlan
    }

    func didFinishLaunching(_ application: Application, options: LaunchOptions) -> Bool {
        let window = Window(frame: Rect(x: 0, y: 0, width: 100, height: 100), name: "w")
        window.addSubview(View(frame: Rect(x: 0, y: 0, width: 10, height: 10), name: "content"))
        window.makeKeyAndVisible(in: application)
        self.window = window
        let scheduler = LaunchScheduler(plan: try! makePlan(), clock: clock)
        self.scheduler = scheduler
        scheduler.start(in: application)
        return true
    }
}

extension RuntimeTests {
    @Suite("Launch plans")
    struct PlanTests {
        @Test("every problem of a plan is reported at once, in one readable error")
        func validation() {
            let tasks = [
                LaunchTask("a", dependsOn: ["c"]) {},
                LaunchTask("b", dependsOn: ["a", "ghost"]) {},
                LaunchTask("c", dependsOn: ["b"]) {},
                LaunchTask("a") {},
                LaunchTask("paint", lane: .background(qos: .utility), tags: [.ui]) {},
                LaunchTask("early", lane: .main, dependsOn: ["late"]) {},
                LaunchTask("late", lane: .mainAfterFirstFrame) {},
            ]
            let error = #expect(throws: LaunchPlanError.self) { try LaunchPlan(tasks) }
            #expect(error?.problems == [
                "'a' is the name of 2 tasks; names must be unique.",
                "'b' depends on 'ghost', which is not in the plan.",
                "'paint' is UI work on lane background(utility); UI work must run on a main lane.",
                "'early' runs before the first frame but depends on 'late', which runs after it.",
                "There is a dependency cycle: a → c → b → a (each depends on the next).",
            ])
            #expect(error?.description.hasPrefix("The launch plan has 5 problems:\n  - 'a' is the name") == true)
        }

        @Test("a pre-frame task that needs deferred work through another task is refused too")
        func indirectDeferredDependency() {
            let error = #expect(throws: LaunchPlanError.self) {
                try LaunchPlan([
                    LaunchTask("show", lane: .main, dependsOn: ["fetch"], tags: [.ui]) {},
                    LaunchTask("fetch", lane: .background(qos: .utility), dependsOn: ["warm"]) {},
                    LaunchTask("warm", lane: .mainAfterFirstFrame) {},
                ])
            }
            #expect(error?.problems == ["'show' runs before the first frame but depends on 'warm', which runs after it."])
        }

        @Test("a scheduler made inside a collection hands its scope to its background launch tasks")
        func schedulerCarriesScope() throws {
            let clock = ManualClock()
            let plan = try LaunchPlan([
                LaunchTask("report from the pool", lane: .background(qos: .utility)) {
                    breakRule("scheduler-scope", "in a launch task")
                }
            ])
            let delegate = SchedulingDelegate(clock: clock) { plan }
            let (_, violations) = try collectThreadViolations { () throws -> Void in
                let driver = ApplicationDriver(delegate: delegate, clock: clock)
                defer { driver.close() }
                driver.send(.launch(LaunchOptions()))
                let scheduler = try #require(delegate.scheduler)
                #expect(scheduler.waitUntilFinished())
            }
            let violation = violations.first { $0.rule == "scheduler-scope" }
            #expect(violation?.task == "report from the pool")
            #expect(violation?.scope != nil, "the launch task ran in the collection's scope")
        }

        @Test("with the hop-to-main policy, UI work on a background lane moves to main with a warning")
        func hopToMain() throws {
            let plan = try LaunchPlan([LaunchTask("paint", lane: .background(qos: .utility), tags: [.ui]) {}], backgroundUI: .hopToMain)
            #expect(plan.tasks[0].lane == .main)
            #expect(plan.hoppedToMain == ["paint"])
            let clock = ManualClock()
            let delegate = SchedulingDelegate(clock: clock) { plan }
            let driver = ApplicationDriver(delegate: delegate, clock: clock)
            defer { driver.close() }
            ThreadRules.clearViolations()
            driver.send(.launch(LaunchOptions()))
            let warning = ThreadRules.violations.first { $0.rule == ThreadRules.uiHoppedToMain }
            #expect(warning?.isWarning == true)
            #expect(warning?.task == "paint")
            ThreadRules.clearViolations()
        }
    }

    @Suite("Launch scheduler")
    struct SchedulerTests {
        @Test("the critical path, waits, slack and deferrable tasks of a hand-made plan, on a manual clock")
        func criticalPath() throws {
            let clock = ManualClock()
            let gate = DispatchSemaphore(value: 0)
            let delegate = SchedulingDelegate(clock: clock) {
                try LaunchPlan([
                    LaunchTask("fetch", lane: .background(qos: .userInitiated)) {
                        gate.wait()
                        // analytics signals from inside its body: give the main thread time to
                        // record analytics' end before this moves the shared clock.
                        sleepThrough(milliseconds: 50)
                        clock.advance(byMilliseconds: 100)
                    },
                    LaunchTask("analytics", lane: .main) {
                        clock.advance(byMilliseconds: 10)
                        gate.signal()
                    },
                    LaunchTask("build views", lane: .main, dependsOn: ["fetch"], tags: [.ui]) {
                        clock.advance(byMilliseconds: 20)
                    },
                ])
            }
            let driver = ApplicationDriver(delegate: delegate, clock: clock)
            defer { driver.close() }
            driver.send(.launch(LaunchOptions()))
            let scheduler = try #require(delegate.scheduler)
            #expect(scheduler.waitUntilFinished())
            let records = Dictionary(uniqueKeysWithValues: scheduler.records.map { ($0.name, $0) })
            let fetch = try #require(records["fetch"])
            let analytics = try #require(records["analytics"])
            let views = try #require(records["build views"])
            #expect([fetch, analytics, views].allSatisfy { $0.status == "completed" })
            #expect(analytics.startNs == 0 && analytics.endNs == 10_000_000)
            #expect(views.startNs == 110_000_000 && views.endNs == 130_000_000)
            #expect(views.waitNs == 100_000_000, "the main thread waited for fetch")
            #expect(views.onCriticalPath && fetch.onCriticalPath)
            #expect(!analytics.onCriticalPath)
            #expect(analytics.couldDefer, "main-lane work no UI task needs could be deferred")
            #expect(!views.couldDefer && !fetch.couldDefer)
            #expect(fetch.slackNs == 0)
            #expect(analytics.slackNs == 120_000_000, "it could have ended as late as the first frame")
            #expect(driver.application.firstFrameNs == 130_000_000)
            #expect(fetch.threadID != views.threadID)
            #expect(views.threadID == analytics.threadID)
        }

        @Test("deferred tasks run after the first frame, in dependency order, one per run-loop iteration")
        func deferredOrder() throws {
            let clock = ManualClock()
            let log = Mutex<[String]>([])
            let box = DelegateBox()
            let delegate = SchedulingDelegate(clock: clock) {
                try LaunchPlan([
                    LaunchTask("prefetch", lane: .mainAfterFirstFrame, dependsOn: ["warm cache"]) {
                        log.withLock { $0.append("prefetch") }
                    },
                    LaunchTask("warm cache", lane: .mainAfterFirstFrame) {
                        log.withLock { $0.append("warm cache") }
                        box.delegate?.window?.subviews.first?.setNeedsDisplay()
                    },
                    LaunchTask("setup", lane: .main, tags: [.ui]) { log.withLock { $0.append("setup") } },
                ])
            }
            box.delegate = delegate
            let driver = ApplicationDriver(delegate: delegate, clock: clock)
            defer { driver.close() }
            driver.send(.launch(LaunchOptions()))
            driver.advance(milliseconds: 1)
            let scheduler = try #require(delegate.scheduler)
            #expect(scheduler.isFinished)
            #expect(log.withLock { $0 } == ["setup", "warm cache", "prefetch"])
            let frameIteration = try #require(driver.application.runLoop.iterations.firstIndex { $0.ran.contains("commit frame 0") })
            let taskIterations = driver.application.runLoop.iterations.enumerated().filter { _, iteration in
                iteration.ran.contains { $0.hasPrefix("launch task ") }
            }
            #expect(taskIterations.count == 2, "one deferred task per iteration")
            #expect(taskIterations.allSatisfy { $0.offset > frameIteration })
            #expect(taskIterations.first?.element.ran.contains("commit frame 1") == true, "frames keep flowing between tasks")
        }

        @Test("a failed task fails its dependents, which are reported as skipped")
        func failurePropagates() throws {
            let clock = ManualClock()
            let delegate = SchedulingDelegate(clock: clock) {
                try LaunchPlan([
                    LaunchTask("load", lane: .background(qos: .utility)) { throw Boom() },
                    LaunchTask("index", lane: .background(qos: .utility), dependsOn: ["load"]) {},
                    LaunchTask("show", lane: .mainAfterFirstFrame, dependsOn: ["index"]) {},
                    LaunchTask("independent", lane: .background(qos: .utility)) {},
                ])
            }
            let driver = ApplicationDriver(delegate: delegate, clock: clock)
            defer { driver.close() }
            driver.send(.launch(LaunchOptions()))
            let scheduler = try #require(delegate.scheduler)
            #expect(scheduler.waitUntilFinished())
            let byName = Dictionary(uniqueKeysWithValues: scheduler.records.map { ($0.name, $0) })
            #expect(byName["load"]?.status == "failed")
            #expect(byName["load"]?.error == "boom")
            #expect(byName["index"]?.status == "skipped")
            #expect(byName["index"]?.error == "skipped: 'load' did not complete")
            #expect(byName["show"]?.status == "skipped")
            #expect(byName["show"]?.error == "skipped: 'index' did not complete")
            #expect(byName["independent"]?.status == "completed")
        }

        @Test("a task past its timeout times out and its dependents are skipped")
        func timeout() throws {
            let clock = MonotonicClock()
            let delegate = SchedulingDelegate(clock: clock) {
                try LaunchPlan([
                    LaunchTask("slow", lane: .background(qos: .utility), timeoutNs: 50_000_000) {
                        sleepThrough(milliseconds: 600)
                    },
                    LaunchTask("after", lane: .background(qos: .utility), dependsOn: ["slow"]) {},
                    LaunchTask("async slow", lane: .background(qos: .utility), timeoutNs: 50_000_000, async: {
                        try await Task.sleep(nanoseconds: 5_000_000_000)
                    }),
                ])
            }
            let driver = ApplicationDriver(delegate: delegate, clock: ManualClock())
            defer { driver.close() }
            driver.send(.launch(LaunchOptions()))
            let scheduler = try #require(delegate.scheduler)
            #expect(scheduler.waitUntilFinished(timeoutNs: 4_000_000_000), "ended by the timeouts, not by the work")
            let byName = Dictionary(uniqueKeysWithValues: scheduler.records.map { ($0.name, $0) })
            #expect(byName["slow"]?.status == "timedOut")
            #expect(byName["slow"]?.error == "took longer than its timeout of 50 ms")
            #expect(byName["after"]?.status == "skipped")
            #expect(byName["async slow"]?.status == "timedOut")
        }

        @Test("a main-lane task that overruns its timeout is timed out with its duration; its dependents are skipped")
        func mainLaneTimeout() throws {
            let clock = ManualClock()
            let delegate = SchedulingDelegate(clock: clock) {
                try LaunchPlan([
                    // The main thread cannot be interrupted: the task is judged when it returns.
                    LaunchTask("migrate", lane: .main, timeoutNs: 20_000_000) { clock.advance(byMilliseconds: 65) },
                    LaunchTask("show", lane: .main, dependsOn: ["migrate"], tags: [.ui]) {},
                    LaunchTask("quick", lane: .main, timeoutNs: 20_000_000) { clock.advance(byMilliseconds: 5) },
                ])
            }
            let driver = ApplicationDriver(delegate: delegate, clock: clock)
            defer { driver.close() }
            driver.send(.launch(LaunchOptions()))
            let scheduler = try #require(delegate.scheduler)
            driver.advance(milliseconds: 1)
            #expect(scheduler.waitUntilFinished(timeoutNs: 2_000_000_000))
            let byName = Dictionary(uniqueKeysWithValues: scheduler.records.map { ($0.name, $0) })
            #expect(byName["migrate"]?.status == "timedOut")
            #expect(byName["migrate"]?.error == "took 65 ms, longer than its timeout of 20 ms")
            #expect(byName["show"]?.status == "skipped")
            #expect(byName["show"]?.error == "skipped: 'migrate' did not complete")
            #expect(byName["quick"]?.status == "completed", "a task within its timeout completes")
        }

        @Test("cancel() while background work runs: the running task finishes, waiting ones are cancelled, once")
        func cancelDuringBackgroundWork() throws {
            let started = DispatchSemaphore(value: 0)
            let gate = DispatchSemaphore(value: 0)
            let delegate = SchedulingDelegate(clock: MonotonicClock()) {
                try LaunchPlan([
                    LaunchTask("download", lane: .background(qos: .utility)) {
                        started.signal()
                        gate.wait()
                    },
                    LaunchTask("unpack", lane: .background(qos: .utility), dependsOn: ["download"]) {},
                    LaunchTask("index", lane: .mainAfterFirstFrame, dependsOn: ["unpack"]) {},
                ])
            }
            let driver = ApplicationDriver(delegate: delegate, clock: ManualClock())
            defer { driver.close() }
            driver.send(.launch(LaunchOptions()))
            let scheduler = try #require(delegate.scheduler)
            let finishedCalls = Atomic<Int>(0)
            let calledBack = DispatchSemaphore(value: 0)
            scheduler.whenFinished {
                finishedCalls.add(1, ordering: .relaxed)
                calledBack.signal()
            }
            #expect(started.wait(timeout: .now() + 5) == .success, "download started")
            scheduler.cancel()
            #expect(!scheduler.isFinished, "the running task has not ended yet")
            scheduler.cancel()  // a second cancel changes nothing
            gate.signal()
            #expect(scheduler.waitUntilFinished(timeoutNs: 5_000_000_000))
            let byName = Dictionary(uniqueKeysWithValues: scheduler.records.map { ($0.name, $0) })
            #expect(byName["download"]?.status == "completed", "a running task is not interrupted")
            #expect(byName["unpack"]?.status == "cancelled")
            #expect(byName["index"]?.status == "cancelled")
            // whenFinished runs on the thread that ended the last task, after waiters wake.
            #expect(calledBack.wait(timeout: .now() + 5) == .success)
            usleep(50_000)
            #expect(finishedCalls.load(ordering: .relaxed) == 1)
        }

        @Test("cancelling stops tasks that have not started; their dependents are reported")
        func cancellation() throws {
            let clock = ManualClock()
            let box = DelegateBox()
            let delegate = SchedulingDelegate(clock: clock) {
                try LaunchPlan([
                    // The launch changes its mind: cancel everything not started yet.
                    LaunchTask("setup", lane: .main, tags: [.ui]) { box.delegate?.scheduler?.cancel() },
                    LaunchTask("later", lane: .mainAfterFirstFrame) {},
                    LaunchTask("much later", lane: .mainAfterFirstFrame, dependsOn: ["later"]) {},
                ])
            }
            box.delegate = delegate
            let driver = ApplicationDriver(delegate: delegate, clock: clock)
            defer { driver.close() }
            driver.send(.launch(LaunchOptions()))
            let scheduler = try #require(delegate.scheduler)
            driver.advance(milliseconds: 1)
            #expect(scheduler.isFinished)
            let byName = Dictionary(uniqueKeysWithValues: scheduler.records.map { ($0.name, $0) })
            #expect(byName["setup"]?.status == "completed")
            #expect(byName["later"]?.status == "cancelled")
            #expect(byName["much later"]?.status == "cancelled")
        }

        @Test("blocking and I/O tasks on the main lane during launch are violations naming the task")
        func blockingOnMain() throws {
            let clock = ManualClock()
            let delegate = SchedulingDelegate(clock: clock) {
                try LaunchPlan([
                    LaunchTask("read settings", lane: .main, tags: [.io]) {},
                    LaunchTask("parse", lane: .background(qos: .userInitiated), tags: [.blocking]) {},
                    LaunchTask("draw", lane: .main, tags: [.ui]) {},
                ])
            }
            ThreadRules.clearViolations()
            let driver = ApplicationDriver(delegate: delegate, clock: clock)
            defer { driver.close() }
            driver.send(.launch(LaunchOptions()))
            _ = delegate.scheduler?.waitUntilFinished()
            let violations = ThreadRules.violations.filter { $0.rule == ThreadRules.noBlockingOnMainDuringLaunch }
            #expect(violations.map(\.task) == ["read settings"])
            #expect(violations.first?.message == "launch task 'read settings' (io) blocked the main thread during launch.")
            ThreadRules.clearViolations()
        }
    }
}
