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

    private enum Status: String {
        case pending, ready, running, completed, failed, timedOut, cancelled, skipped

        var isEnded: Bool { self != .pending && self != .ready && self != .running }
        var isSuccess: Bool { self == .completed }
    }

    private struct Entry {
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

    private struct State {
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
    private let state: Mutex<State>
    private let progress = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let indexByName: [String: Int]
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
        order = LaunchScheduler.topologicalOrder(plan.tasks, names)
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
            let wait = now - waitStart
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
        let deadline = Sampler.monotonicNs + timeoutNs
        let thread = Thread {
            // Sleeps end early when a signal arrives, so sleep to a deadline.
            Sampler.withCurrentThreadExcluded {
                while Sampler.monotonicNs < deadline {
                    let left = deadline - Sampler.monotonicNs
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

    private func execute(_ index: Int, expectedStatus: Status) {
        let lane = plan.tasks[index].lane
        // Read the clock and the thread before taking the lock: the lock is shared by every
        // worker, so the less it covers the better.
        let start = now
        let thread = Sampler.currentThreadID
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
        if blocking[index], ThreadRules.isUIThread, ThreadRules.isLaunching {
            let tags = plan.tasks[index].tags.map(\.name).sorted().joined(separator: ", ")
            ThreadRules.record(
                rule: ThreadRules.noBlockingOnMainDuringLaunch,
                operation: "launch task '\(plan.tasks[index].name)' (\(tags))",
                stack: Sampler.captureCurrentStack(), task: plan.tasks[index].name)
        }
        switch plan.tasks[index].body {
        case .sync(let body):
            let cpuStart = options.measuresCPU ? Sampler.threadCPUNs : 0
            var failure: String?
            do {
                try names[index].running { try body() }
            } catch {
                failure = "\(error)"
            }
            let cpu = options.measuresCPU ? Sampler.threadCPUNs - cpuStart : nil
            finish(index, failure: failure, cpuNs: cpu)
        case .async(let body):
            let name = plan.tasks[index].name
            let work = Task { [self] in
                let current = UInt64(Sampler.currentTask)
                state.withLock { $0.entries[index].swiftTask = current == 0 ? nil : current }
                var failure: String?
                do {
                    try await ThreadRules.$currentTask.withValue(name) { try await body() }
                } catch is CancellationError {
                    failure = "cancelled"
                } catch {
                    failure = "\(error)"
                }
                finish(index, failure: failure, cpuNs: nil)
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

    private func finish(_ index: Int, failure: String?, cpuNs: UInt64?) {
        var status: Status = failure == nil ? .completed : (failure == "cancelled" ? .cancelled : .failed)
        var message = failure
        if status == .completed || status == .cancelled, let timeout = plan.tasks[index].timeoutNs {
            let duration = state.withLock { state in now - (state.entries[index].startNs ?? now) }
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

    // MARK: Results

    /// One record per task, in plan order, with the critical path, slack and deferral analysis.
    public var records: [Profile.TaskRecord] {
        let snapshot = state.withLock { $0 }
        let entries = snapshot.entries
        let tasks = plan.tasks
        // The work the first frame needs: UI tasks and everything they depend on.
        var neededByUI = Set<Int>()
        var stack = tasks.indices.filter { tasks[$0].tags.contains(.ui) }
        while let index = stack.popLast() {
            guard neededByUI.insert(index).inserted else { continue }
            stack += tasks[index].dependencies.compactMap { indexByName[$0] }
        }
        // The critical path: from the main-lane task that ended last before the first frame,
        // walk back through whatever it waited for last, a dependency or the previous main task.
        var critical = Set<Int>()
        let mainSequence = snapshot.mainSequence
        var current = mainSequence.max { (entries[$0].endNs ?? 0) < (entries[$1].endNs ?? 0) }
        while let index = current, critical.insert(index).inserted {
            var candidates = tasks[index].dependencies.compactMap { indexByName[$0] }
            if let position = mainSequence.firstIndex(of: index), position > 0 { candidates.append(mainSequence[position - 1]) }
            let start = entries[index].startNs ?? 0
            current = candidates.filter { (entries[$0].endNs ?? .max) <= start }
                .max { (entries[$0].endNs ?? 0) < (entries[$1].endNs ?? 0) }
        }
        var threadNames: [Int: String] = [:]
        for id in Set(entries.compactMap(\.threadID)) { threadNames[id] = LaunchScheduler.threadName(id) }
        return tasks.indices.map { index in
            let entry = entries[index]
            let task = tasks[index]
            // Slack: until the first dependent started, or the first frame for a task no one waits on.
            // On the critical path there is no slack by definition. Work nothing waited for and
            // that ended after the first frame did not gate anything: no slack to speak of.
            var slack: UInt64?
            if critical.contains(index) {
                slack = 0
            } else if let end = entry.endNs {
                let dependentStarts = entry.dependents.compactMap { entries[$0].startNs }
                var limit = dependentStarts.min()
                if limit == nil, task.lane != .mainAfterFirstFrame, let frame = snapshot.firstFrameNs, end <= frame {
                    limit = frame
                }
                slack = limit.map { $0 > end ? $0 - end : 0 }
            }
            return Profile.TaskRecord(
                name: task.name, lane: task.lane.description, status: entry.status.rawValue, error: entry.error,
                dependencies: task.dependencies, tags: task.tags.map(\.name).sorted(), threadID: entry.threadID,
                threadName: entry.threadID.flatMap { threadNames[$0] }, queue: entry.queue, readyNs: entry.readyNs, startNs: entry.startNs,
                endNs: entry.endNs, waitNs: entry.waitNs, cpuNs: entry.cpuNs, onCriticalPath: critical.contains(index),
                slackNs: slack,
                couldDefer: task.lane == .main && !task.tags.contains(.ui) && !neededByUI.contains(index),
                task: entry.swiftTask)
        }
    }

    /// A thread's name from /proc (`main` for the main thread); nil once the thread is gone.
    static func threadName(_ id: Int) -> String? {
        if id == Sampler.mainThreadID { return "main" }
        guard let name = try? String(contentsOfFile: "/proc/self/task/\(id)/comm", encoding: .utf8) else { return nil }
        return name.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Task indices in dependency order, ties in plan order.
    private static func topologicalOrder(_ tasks: [LaunchTask], _ names: [String: Int]) -> [Int] {
        var remaining = tasks.map { $0.dependencies.filter { names[$0] != nil }.count }
        var dependents = [[Int]](repeating: [], count: tasks.count)
        for (index, task) in tasks.enumerated() {
            for dependency in task.dependencies { if let parent = names[dependency] { dependents[parent].append(index) } }
        }
        // A binary min-heap of ready indices: dependency order, ties in plan order, in O(n log n).
        var heap: [Int] = []
        func push(_ value: Int) {
            heap.append(value)
            var child = heap.count - 1
            while child > 0 {
                let parent = (child - 1) / 2
                guard heap[parent] > heap[child] else { break }
                heap.swapAt(parent, child)
                child = parent
            }
        }
        func pop() -> Int {
            let top = heap[0]
            let last = heap.removeLast()
            if !heap.isEmpty {
                heap[0] = last
                var parent = 0
                while true {
                    let left = 2 * parent + 1
                    let right = left + 1
                    var smallest = parent
                    if left < heap.count, heap[left] < heap[smallest] { smallest = left }
                    if right < heap.count, heap[right] < heap[smallest] { smallest = right }
                    if smallest == parent { break }
                    heap.swapAt(parent, smallest)
                    parent = smallest
                }
            }
            return top
        }
        for index in tasks.indices where remaining[index] == 0 { push(index) }
        var order: [Int] = []
        order.reserveCapacity(tasks.count)
        while !heap.isEmpty {
            let next = pop()
            order.append(next)
            for child in dependents[next] {
                remaining[child] -= 1
                if remaining[child] == 0 { push(child) }
            }
        }
        return order
    }
}
