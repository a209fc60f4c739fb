import Dispatch
import Foundation
import LiftoffProfile
import LiftoffSampler
import Synchronization

/// The main run loop: one thread handles events serially, in arrival order, fires timers, and at
/// the end of every iteration runs its observers (the display pass that draws dirty views and
/// commits a frame is one).
///
/// On the OS main thread the loop also drains `DispatchQueue.main`, so main-queue blocks and
/// `@MainActor` jobs run on the main thread inside the loop; it never calls `dispatchMain()`,
/// which would end the main thread. Events and timers can be added from any thread; the loop
/// wakes at once.
///
/// With a `ManualClock` the loop never sleeps: when it is idle it moves the clock to the next
/// timer, which is how `liftoff simulate` and tests run hours of app time in milliseconds.
public final class MainRunLoop: @unchecked Sendable {
    // @unchecked Sendable: `pending` is behind a mutex; every other stored property is touched
    // only on the loop's own thread (the methods that read them say so).

    /// One turn of the loop.
    public struct Iteration: Sendable, Equatable {
        /// Index, from 0.
        public var index: Int
        /// Clock time when it started.
        public var startNs: UInt64
        /// Clock time when it ended.
        public var endNs: UInt64
        /// Names of the events, timers and observers that ran, in order.
        public var ran: [String]
    }

    private struct Timer {
        var id: Int
        var deadlineNs: UInt64
        var name: String
        var block: @Sendable () -> Void
    }

    private struct Pending {
        var events: [(name: String, block: @Sendable () -> Void)] = []
        var timers: [Timer] = []
        var nextTimerID = 1
        var stopped = false
    }

    /// The clock the loop reads.
    public let clock: any LaunchClock
    private let pending = Mutex(Pending())
    private let wakeup = DispatchSemaphore(value: 0)
    private var observers: [(name: String, body: (MainRunLoop) -> Void)] = []
    private var current: [String] = []
    private var iterationCount = 0
    /// Iterations recorded so far (the most recent 10,000). Loop thread only.
    public private(set) var iterations: [Iteration] = []
    private let loopThread = Atomic<Int>(0)
    /// The kernel thread id of the thread running the loop, once it ran. Any thread.
    public var threadID: Int { loopThread.load(ordering: .relaxed) }
    /// Clock time when the current (or last) iteration started its work. Loop thread.
    public private(set) var iterationStartNs: UInt64 = 0
    /// Whether an iteration is running now (true inside events, timers, main-queue work and
    /// observers). Loop thread.
    public private(set) var isInIteration = false

    private let busySince = Atomic<UInt64>(0)
    private let busyWith = Mutex("")
    private let tracksWork = Atomic<Bool>(false)

    /// `CLOCK_MONOTONIC` nanoseconds since the loop has been away from waiting for work, running
    /// an iteration, or nil while it waits. Any thread (a hang watcher reads it).
    public var busySinceNs: UInt64? {
        let value = busySince.load(ordering: .acquiring)
        return value == 0 ? nil : value
    }

    /// What the current iteration is running (an event, a timer or an observer), when work is
    /// tracked. Any thread.
    public var currentWork: String { busyWith.withLock { $0 } }

    /// Turns on the bookkeeping a hang watcher reads: the start of each iteration and the name
    /// of what runs. Off, the loop does not pay for it.
    public func trackWork(_ enabled: Bool) {
        tracksWork.store(enabled, ordering: .relaxed)
    }

    private func working(on name: String) {
        if tracksWork.load(ordering: .relaxed) { busyWith.withLock { $0 = name } }
    }

    /// Most iterations kept in ``iterations``.
    public static let keptIterations = 10_000

    /// Creates a loop reading `clock`.
    public init(clock: any LaunchClock = MonotonicClock()) {
        self.clock = clock
    }

    /// Adds an event to the end of the queue; the loop runs it in the next iteration. Any thread.
    public func post(_ name: String, _ block: @escaping @Sendable () -> Void) {
        pending.withLock { $0.events.append((name, block)) }
        wake()
    }

    /// Schedules `block` to run once `delayNs` from now. Any thread. Returns an id for
    /// ``cancelTimer(_:)``.
    @discardableResult
    public func schedule(afterNanoseconds delayNs: UInt64, name: String, _ block: @escaping @Sendable () -> Void) -> Int {
        let deadline = NanosecondDuration(nanoseconds: delayNs).after(clock.nowNs)
        let id = pending.withLock { state in
            let id = state.nextTimerID
            state.nextTimerID += 1
            state.timers.append(Timer(id: id, deadlineNs: deadline, name: name, block: block))
            return id
        }
        wake()
        return id
    }

    /// Cancels a timer that has not fired. Any thread.
    public func cancelTimer(_ id: Int) {
        pending.withLock { $0.timers.removeAll { $0.id == id } }
    }

    /// Asks the loop to stop after the current iteration. Any thread.
    public func stop() {
        pending.withLock { $0.stopped = true }
        wake()
    }

    /// Whether ``stop()`` was called.
    public var isStopped: Bool { pending.withLock { $0.stopped } }

    /// Adds an observer run at the end of every iteration, in the order added. Loop thread.
    public func addObserver(named name: String, _ body: @escaping (MainRunLoop) -> Void) {
        observers.append((name, body))
    }

    /// Records that `name` ran in the current iteration (for work the loop did not start itself).
    public func note(_ name: String) {
        current.append(name)
    }

    /// The earliest timer deadline, if a timer is pending. Any thread.
    public var nextTimerDeadline: UInt64? {
        pending.withLock { $0.timers.map(\.deadlineNs).min() }
    }

    /// Whether an event waits or a timer is due now. Any thread.
    public var hasWork: Bool {
        let now = clock.nowNs
        return pending.withLock { state in !state.events.isEmpty || state.timers.contains { $0.deadlineNs <= now } }
    }

    /// Runs one iteration: main-queue work (on the OS main thread), the events queued when it
    /// began, the timers due, then the observers. With `waitingForWork`, the iteration first
    /// waits (inside the loop) until an event, a due timer or main-queue work arrives; on a
    /// manual clock it moves the clock to the next timer instead. Loop thread.
    public func runIteration(waitingForWork: Bool = false) {
        // Violations of the work it runs are timed on its clock, which a test may drive by hand.
        if clock.isManual, ThreadRules.context.clock == nil {
            return ThreadRules.withClock(clock) { runIteration(waitingForWork: waitingForWork) }
        }
        loopThread.store(CurrentThread.id, ordering: .relaxed)
        isInIteration = true
        defer { isInIteration = false }
        current = []
        let onMainThread = CurrentThread.isMain
        var drained = false
        if waitingForWork, !hasWork {
            if clock.isManual {
                if let deadline = nextTimerDeadline, let manual = clock as? ManualClock { manual.advance(to: deadline) }
            } else {
                let now = clock.nowNs
                let deadline = nextTimerDeadline ?? NanosecondDuration(milliseconds: 1000).after(now)
                let timeout = Double(NanosecondDuration.between(now, deadline).nanoseconds) / 1e9
                if onMainThread {
                    // Returns once DispatchQueue.main has work (and runs it) or at the deadline;
                    // `wake()` posts to the main queue.
                    _ = RunLoop.main.run(mode: .default, before: Date(timeIntervalSinceNow: timeout))
                    drained = true
                } else {
                    _ = wakeup.wait(timeout: .now() + .nanoseconds(Int(timeout * 1e9)))
                }
            }
        }
        let start = clock.nowNs
        iterationStartNs = start
        let tracking = tracksWork.load(ordering: .relaxed)
        if tracking {
            busySince.store(MonotonicClock.nowNs, ordering: .releasing)
            working(on: "main queue")
        }
        defer { if tracking { busySince.store(0, ordering: .releasing) } }
        if onMainThread, !drained {
            // Drain DispatchQueue.main (and with it @MainActor jobs) without blocking.
            _ = RunLoop.main.run(mode: .default, before: Date(timeIntervalSinceNow: -1))
        }
        let events = pending.withLock { state in
            let taken = state.events
            state.events.removeAll(keepingCapacity: true)
            return taken
        }
        for event in events {
            current.append(event.name)
            if tracking { working(on: event.name) }
            event.block()
        }
        let now = clock.nowNs
        let due = pending.withLock { state -> [Timer] in
            let fired = state.timers.filter { $0.deadlineNs <= now }.sorted { ($0.deadlineNs, $0.id) < ($1.deadlineNs, $1.id) }
            state.timers.removeAll { $0.deadlineNs <= now }
            return fired
        }
        for timer in due {
            current.append(timer.name)
            if tracking { working(on: timer.name) }
            timer.block()
        }
        for observer in observers {
            if tracking { working(on: observer.name) }
            observer.body(self)
        }
        let iteration = Iteration(index: iterationCount, startNs: start, endNs: clock.nowNs, ran: current)
        iterationCount += 1
        iterations.append(iteration)
        if iterations.count > MainRunLoop.keptIterations {
            iterations.removeFirst(iterations.count - MainRunLoop.keptIterations)
        }
    }

    /// Runs iterations while there is work now, without waiting and without moving the clock.
    /// Loop thread.
    public func runUntilIdle(maxIterations: Int = 100_000) {
        var remaining = maxIterations
        repeat {
            runIteration()
            remaining -= 1
        } while hasWork && !isStopped && remaining > 0
    }

    /// Runs until ``stop()``, waiting for work between iterations. On a manual clock it moves
    /// the clock to the next timer when idle, and returns when nothing is left to do. Loop thread.
    public func run() {
        while !isStopped {
            if clock.isManual, !hasWork, nextTimerDeadline == nil { return }
            runIteration(waitingForWork: true)
        }
    }

    private func wake() {
        wakeup.signal()
        if !clock.isManual {
            DispatchQueue.main.async {}
        }
    }
}
