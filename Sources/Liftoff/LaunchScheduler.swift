import Dispatch
import Foundation
import LiftoffProfile
import LiftoffSampler
import Synchronization

/// Runs a ``LaunchPlan``: main-lane work on the main thread before the first frame, deferred
/// work on the main run loop after it (one task per iteration), background work on
/// `DispatchQueue.global(qos:)`, in dependency order, with as much parallelism as the
/// background lanes allow.
///
/// ```swift
/// func didFinishLaunching(_ app: Application, options: LaunchOptions) -> Bool {
///     let scheduler = LaunchScheduler(plan: try! LaunchPlan(tasks), recorder: recorder)
///     scheduler.start(in: app)   // returns once the main lane is done
///     return true
/// }
/// ```
///
/// Every task is recorded: lane, thread, queue, start, end, how long the main thread waited for
/// it, and CPU time. A task that throws or overruns its timeout fails, and its dependents are
/// skipped and reported, never silently dropped. When all tasks have ended, ``records`` names the
/// critical path to the first frame, each task's slack, and the main-lane tasks that could be
/// deferred.
public final class LaunchScheduler: @unchecked Sendable {
    // @unchecked Sendable: mutable state is behind `state`; `application` is a weak reference set
    // once in `start` before any task runs (weak loads are atomic) and read by workers only to post
    // to the run loop, which is thread-safe.

    /// Scheduler settings.
    public struct Options: Sendable {
        /// Read each synchronous task's thread CPU clock before and after it (two system calls,
        /// about 0.4 µs a task). Off by default: a recording gives each task the CPU time of its
        /// running samples instead, at no cost to the scheduler.
        public var measuresCPU: Bool
        /// Name background threads in the profile (`worker (<qos>)`) while they run a task, when
        /// a recording samples. Every thread is sampled either way.
        public var samplesBackgroundThreads: Bool

        /// Creates options.
        public init(measuresCPU: Bool = false, samplesBackgroundThreads: Bool = true) {
            self.measuresCPU = measuresCPU
            self.samplesBackgroundThreads = samplesBackgroundThreads
        }
    }

    typealias Status = Profile.TaskStatus

    /// How a task's body ended.
    private enum Outcome {
        case returned
        case threw(String)
        case cancelled
    }

    struct Entry {
        let task: LaunchTask
        var status = Status.pending
        var remaining: Int
        var dependents: [Int] = []
        var error: String?
        var readyNs: UInt64?
        var startNs: UInt64?
        var endNs: UInt64?
        var waitNs: UInt64 = 0
        var cpuNs: UInt64?
        var threadID: Int?
        var queue: String?
        var swiftTask: UInt64?
    }

    struct State {
        var entries: [Entry]
        var ended = 0
        var firstFrameNs: UInt64?
        var deferredQueue: [Int] = []
        var deferredRunning = false
        var mainSequence: [Int] = []
        var onFinish: [@Sendable () -> Void] = []
        var started = false
        var mainWaiting = false
        var endNotified = false
    }

    /// The plan.
    public let plan: LaunchPlan
    private let options: Options
    private let recorder: LaunchRecorder?
    private let clock: any LaunchClock
    let state: Mutex<State>
    private let progress = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    /// The rule context the scheduler was made in (its collection scope, configuration and clock;
    /// see `ThreadRules.context`), carried into every task.
    private let ruleContext = ThreadRules.context
    let indexByName: [String: Int]
    private let order: [Int]
    /// Where each task runs, as recorded: one shared string per lane, so recording it costs no
    /// allocation.
    private let queueLabels: [String]
    /// Per task: whether it is tagged blocking or I/O, and its name for the thread-local slot.
    private let blocking: [Bool]
    private let names: [LaunchTaskName]
    private nonisolated(unsafe) weak var application: Application?

    /// Creates a scheduler for `plan`. Times come from `recorder` (ns since the process start)
    /// when it is set, else from `clock`.
    public init(
        plan: LaunchPlan, options: Options = Options(), recorder: LaunchRecorder? = nil,
        clock: any LaunchClock = MonotonicClock()
    ) {
        self.plan = plan
        self.options = options
        self.recorder = recorder
        self.clock = clock
        let names = Dictionary(plan.tasks.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { first, _ in first })
        indexByName = names
        var entries = plan.tasks.map { Entry(task: $0, remaining: $0.dependencies.count) }
        for (index, task) in plan.tasks.enumerated() {
            for dependency in task.dependencies {
                if let parent = names[dependency] { entries[parent].dependents.append(index) }
            }
        }
        state = Mutex(State(entries: entries))
        order = DependencyOrder.of(plan.tasks, names)
        blocking = plan.tasks.map(\.isBlocking)
        self.names = plan.tasks.map { LaunchTaskName($0.name) }
        var labels: [LaunchTask.Lane: String] = [:]
        queueLabels = plan.tasks.map { task in
            if let known = labels[task.lane] { return known }
            let label: String
            switch task.lane {
            case .main, .mainAfterFirstFrame: label = "main run loop"
            case .background(let qos): label = "DispatchQueue.global(qos: .\(qos))"
            }
            labels[task.lane] = label
            return label
        }
    }

    private var now: UInt64 { recorder?.nowNs ?? clock.nowNs }

    // MARK: Running

    /// Starts the plan from the main thread: background tasks without dependencies are
    /// dispatched at once; main-lane tasks run now, in dependency order, the main thread
    /// waiting (and recording the wait) for background dependencies; deferred tasks run on the
    /// main run loop after the first frame. Returns when the main lane is done.
    public func start(in application: Application) {
        self.application = application
        let alreadyStarted = state.withLock { state -> Bool in
            defer { state.started = true }
            return state.started
        }
        guard !alreadyStarted else { return }
        for name in plan.hoppedToMain {
            ThreadRules.record(
                rule: ThreadRules.uiHoppedToMain, operation: "launch task '\(name)'", stack: Sampler.captureCurrentStack(),
                task: name, warning: true)
        }
        let initiallyReady = state.withLock { state -> [Int] in
            let time = now
            var ready: [Int] = []
            for index in state.entries.indices where state.entries[index].remaining == 0 {
                state.entries[index].status = .ready
                state.entries[index].readyNs = time
                ready.append(index)
            }
            return ready
        }
        for index in initiallyReady where !plan.tasks[index].lane.isMain {
            dispatchBackground(index)
        }
        for index in order where plan.tasks[index].lane == .main {
            runMainTask(index)
        }
        application.afterFirstFrame { [self] in
            let ready = state.withLock { state -> [Int] in
                state.firstFrameNs = now
                return state.entries.indices.filter {
                    plan.tasks[$0].lane == .mainAfterFirstFrame && state.entries[$0].status == .ready
                }
            }
            for index in ready { enqueueDeferred(index) }
        }
    }

    /// Cancels every task that has not started (each is reported as cancelled); running tasks
    /// finish.
    public func cancel() {
        let done = state.withLock { state -> Bool in
            if state.ended == state.entries.count { return false }
            state.mainWaiting = false
            for index in state.entries.indices where state.entries[index].status == .pending || state.entries[index].status == .ready {
                state.entries[index].status = .cancelled
                state.entries[index].error = "cancelled"
                state.ended += 1
            }
            return state.ended == state.entries.count
        }
        progress.signal()
        if done { allEnded() }
    }

    /// Whether every task has ended (completed, failed, timed out, cancelled or skipped).
    public var isFinished: Bool { state.withLock { $0.ended == $0.entries.count } }

    /// Calls `body` once every task has ended (at once if they have). Any thread.
    public func whenFinished(_ body: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            if state.ended == state.entries.count { return true }
            state.onFinish.append(body)
            return false
        }
        if runNow { body() }
    }

    private func runMainTask(_ index: Int) {
        // Wait for dependencies on other lanes, recording how long the main thread waited.
        let waitStart = now
        var waited = false
        while true {
            let status = state.withLock { state in
                state.mainWaiting = state.entries[index].status == .pending
                return state.entries[index].status
            }
            if status != .pending { break }
            waited = true
            progress.wait()
        }
        if waited {
            let wait = NanosecondDuration.between(waitStart, now).nanoseconds
            state.withLock { $0.entries[index].waitNs = wait }
        }
        execute(index, expectedStatus: .ready)
    }

    private func dispatchBackground(_ index: Int) {
        guard case .background(let qos) = plan.tasks[index].lane else { return }
        DispatchQueue.global(qos: qos).async { [self] in
            if options.samplesBackgroundThreads, Sampler.isSampling {
                Sampler.withCurrentThreadRegistered(name: "worker (\(qos))") {
                    execute(index, expectedStatus: .ready)
                }
            } else {
                execute(index, expectedStatus: .ready)
            }
        }
        if let timeout = plan.tasks[index].timeoutNs {
            watchTimeout(timeout) { [self] in expire(index) }
        }
    }

    /// Runs `expiry` after `timeoutNs` on a thread of its own: the Dispatch pool may be busy
    /// with the very work that overran.
    private func watchTimeout(_ timeoutNs: UInt64, _ expiry: @escaping @Sendable () -> Void) {
        let deadline = NanosecondDuration(nanoseconds: timeoutNs).after(MonotonicClock.nowNs)
        let thread = Thread {
            // Sleeps end early when a signal arrives, so sleep to a deadline.
            Sampler.withCurrentThreadExcluded {
                while MonotonicClock.nowNs < deadline {
                    let left = NanosecondDuration.between(MonotonicClock.nowNs, deadline).nanoseconds
                    usleep(UInt32(min(left / 1000 + 1, 50_000)))
                }
            }
            expiry()
        }
        thread.name = "liftoff-timeout"
        thread.start()
    }

    private func enqueueDeferred(_ index: Int) {
        let post = state.withLock { state -> Bool in
            state.deferredQueue.append(index)
            if state.deferredRunning { return false }
            state.deferredRunning = true
            return true
        }
        if post { postNextDeferred() }
    }

    /// Deferred tasks run one per run-loop iteration, so the display pass runs between them.
    private func postNextDeferred() {
        let next = state.withLock { state -> Int? in
            guard !state.deferredQueue.isEmpty else {
                state.deferredRunning = false
                return nil
            }
            return state.deferredQueue.removeFirst()
        }
        guard let next, let loop = application?.runLoop else { return }
        loop.post("launch task \(plan.tasks[next].name)") { [self] in
            execute(next, expectedStatus: .ready)
            postNextDeferred()
        }
    }

    private func execute(_ index: Int, expectedStatus: Status, carried: Bool = false) {
        // Violations of the task belong to the test (collection scope) that made the scheduler, and
        // go to the handlers of the configuration it was made under; usually there is neither, and
        // no extra frame in the task's stacks.
        if !carried, !ruleContext.isEmpty {
            return ThreadRules.within(ruleContext) { execute(index, expectedStatus: expectedStatus, carried: true) }
        }
        let lane = plan.tasks[index].lane
        // Read the clock and the thread before taking the lock: the lock is shared by every
        // worker, so the less it covers the better.
        let start = now
        let thread = CurrentThread.id
        let label = queueLabels[index]
        let claimed = state.withLock { state -> Bool in
            guard state.entries[index].status == expectedStatus else { return false }
            state.entries[index].status = .running
            state.entries[index].startNs = start
            state.entries[index].threadID = thread
            state.entries[index].queue = label
            if lane == .main { state.mainSequence.append(index) }
            return true
        }
        guard claimed else { return }
        if blocking[index], ThreadRules.isLaunching, ThreadRules.isUIThread {
            let tags = plan.tasks[index].tags.map(\.name).sorted().joined(separator: ", ")
            ThreadRules.record(
                rule: ThreadRules.noBlockingOnMainDuringLaunch,
                operation: "launch task '\(plan.tasks[index].name)' (\(tags))",
                stack: Sampler.captureCurrentStack(), task: plan.tasks[index].name)
        }
        switch plan.tasks[index].body {
        case .sync(let body):
            let cpuStart = options.measuresCPU ? CurrentThread.cpuNs : 0
            var outcome = Outcome.returned
            do {
                try names[index].running { try body() }
            } catch {
                outcome = .threw("\(error)")
            }
            let cpu = options.measuresCPU ? NanosecondDuration.between(cpuStart, CurrentThread.cpuNs).nanoseconds : nil
            finish(index, outcome, cpuNs: cpu)
        case .async(let body):
            let name = plan.tasks[index].name
            let work = Task { [self] in
                let current = UInt64(CurrentThread.swiftTask)
                state.withLock { $0.entries[index].swiftTask = current == 0 ? nil : current }
                var outcome = Outcome.returned
                do {
                    try await ThreadRules.$currentTask.withValue(name) { try await body() }
                } catch is CancellationError {
                    outcome = .cancelled
                } catch {
                    outcome = .threw("\(error)")
                }
                finish(index, outcome, cpuNs: nil)
            }
            if let timeout = plan.tasks[index].timeoutNs {
                watchTimeout(timeout) { work.cancel() }
            }
        }
    }

    /// Marks a background task that is still running at its deadline as timed out.
    private func expire(_ index: Int) {
        let timeout = plan.tasks[index].timeoutNs ?? 0
        end(index, status: .timedOut, failure: "took longer than its timeout of \(timeout / 1_000_000) ms", cpuNs: nil) {
            $0 == .running
        }
    }

    private func finish(_ index: Int, _ outcome: Outcome, cpuNs: UInt64?) {
        var status: Status
        var message: String?
        switch outcome {
        case .returned: status = .completed
        case .threw(let error): (status, message) = (.failed, error)
        case .cancelled: (status, message) = (.cancelled, "cancelled")
        }
        if status == .completed || status == .cancelled, let timeout = plan.tasks[index].timeoutNs {
            let duration = state.withLock { state in NanosecondDuration.between(state.entries[index].startNs ?? now, now).nanoseconds }
            if status == .cancelled, duration >= timeout {
                // Cancelled by its own timeout watch: a timeout, not a cancellation.
                status = .timedOut
                message = "took longer than its timeout of \(timeout / 1_000_000) ms"
            } else if status == .completed, duration > timeout {
                status = .timedOut
                message = "took \(duration / 1_000_000) ms, longer than its timeout of \(timeout / 1_000_000) ms"
            }
        }
        end(index, status: status, failure: message, cpuNs: cpuNs) { $0 == .running }
    }

    private func end(
        _ index: Int, status: Status, failure: String?, cpuNs: UInt64?, when condition: (Status) -> Bool
    ) {
        let time = now
        let outcome = state.withLock { state -> (ready: [Int], allDone: Bool, wakeMain: Bool)? in
            guard condition(state.entries[index].status) else { return nil }
            state.entries[index].status = status
            state.entries[index].error = failure
            state.entries[index].endNs = time
            state.entries[index].cpuNs = cpuNs
            state.ended += 1
            let wake = state.mainWaiting
            if wake { state.mainWaiting = false }
            if state.entries[index].dependents.isEmpty {
                return ([], state.ended == state.entries.count, wake)
            }
            var ready: [Int] = []
            var stack = [(index, status.isSuccess)]
            while let (parent, succeeded) = stack.popLast() {
                for child in state.entries[parent].dependents {
                    guard state.entries[child].status == .pending else { continue }
                    if !succeeded {
                        state.entries[child].status = .skipped
                        state.entries[child].error = "skipped: '\(plan.tasks[parent].name)' did not complete"
                        state.ended += 1
                        stack.append((child, false))
                        continue
                    }
                    state.entries[child].remaining -= 1
                    if state.entries[child].remaining == 0 {
                        state.entries[child].status = .ready
                        state.entries[child].readyNs = time
                        ready.append(child)
                    }
                }
            }
            return (ready, state.ended == state.entries.count, wake)
        }
        guard let outcome else { return }
        for child in outcome.ready {
            switch plan.tasks[child].lane {
            case .background: dispatchBackground(child)
            case .main: break  // the main thread picks it up
            case .mainAfterFirstFrame:
                if state.withLock({ $0.firstFrameNs != nil }) { enqueueDeferred(child) }
            }
        }
        if outcome.wakeMain { progress.signal() }
        if outcome.allDone { allEnded() }
    }

    private func allEnded() {
        let handlers = state.withLock { state -> [@Sendable () -> Void]? in
            guard !state.endNotified else { return nil }
            state.endNotified = true
            defer { state.onFinish = [] }
            return state.onFinish
        }
        guard let handlers else { return }
        recorder?.recordTasks(records)
        finished.signal()
        for handler in handlers { handler() }
    }

    /// Blocks until every task has ended or `timeoutNs` passes; returns whether they ended.
    /// Do not call it on the main thread while deferred tasks remain: they need the main loop.
    public func waitUntilFinished(timeoutNs: UInt64 = 60_000_000_000) -> Bool {
        if isFinished { return true }
        guard finished.wait(timeout: .now() + .nanoseconds(Int(min(timeoutNs, UInt64(Int.max))))) == .success else {
            return isFinished
        }
        finished.signal()
        return true
    }
}
