import Foundation
import LiftoffProfile
import LiftoffSampler

/// The app's time in the background: its open background tasks, the budget that runs while it
/// is there (expiration handlers shortly before the end, termination at the end when a task is
/// still open), and the CPU monitor behind the `background-cpu` rule.
///
/// The ``Application`` owns one and calls it on the main thread only.
// `@unchecked`: like the application, it is used on the main thread only; its timers run there.
final class BackgroundExecution: @unchecked Sendable {
    private struct OpenTask {
        var name: String
        var startNs: UInt64
        var cpuStartNs: UInt64
        var expiration: (() -> Void)?
        var expired = false
    }

    private unowned let application: Application
    private var runLoop: MainRunLoop { application.runLoop }
    private var configuration: Application.Configuration { application.configuration }

    private var tasks: [Int: OpenTask] = [:]
    private var nextTask = 1
    private var budgetEndNs: UInt64?
    private var budgetTimers: [Int] = []
    private var cpuSamples: [(timeNs: UInt64, cpuNs: UInt64)] = []
    private var cpuMonitor: Int?
    private var cpuRuleReported = false
    /// CPU time the process used while the app ran in the background.
    private(set) var cpuNs: UInt64 = 0
    /// CPU time the process used while each ended background task was open, by task name.
    private(set) var taskCPUNs: [String: UInt64] = [:]

    init(application: Application) {
        self.application = application
    }

    // MARK: Tasks

    /// Whether no background task is open.
    var hasNoOpenTasks: Bool { tasks.isEmpty }

    /// Names of the open background tasks, in the order they began.
    var openTaskNames: [String] { tasks.keys.sorted().compactMap { tasks[$0]?.name } }

    /// Opens a task and returns its identifier.
    func begin(name: String, expirationHandler: (() -> Void)?) -> Int {
        let id = nextTask
        nextTask += 1
        tasks[id] = OpenTask(
            name: name, startNs: runLoop.clock.nowNs, cpuStartNs: configuration.cpuClock(), expiration: expirationHandler)
        return id
    }

    /// Closes a task, recording it as a span with the CPU time it took; nil for an unknown id.
    func end(_ id: Int) -> String? {
        guard let task = tasks.removeValue(forKey: id) else { return nil }
        let cpuUsed = NanosecondDuration.between(task.cpuStartNs, configuration.cpuClock()).nanoseconds
        taskCPUNs[task.name, default: 0] += cpuUsed
        configuration.recorder?.recordSpan(
            name: task.name, category: .backgroundTask, startNs: task.startNs, endNs: runLoop.clock.nowNs, cpuNs: cpuUsed)
        return task.name
    }

    /// Forgets every open task (the app is ending).
    func dropTasks() {
        tasks.removeAll()
    }

    // MARK: The budget

    /// Time left in the budget, or nil when none runs.
    var remainingNs: UInt64? {
        budgetEndNs.map { NanosecondDuration.between(runLoop.clock.nowNs, $0).nanoseconds }
    }

    /// Starts the budget (and the CPU monitor) from now.
    func startBudget() {
        cancelBudget()
        let budget = configuration.backgroundBudgetNs
        budgetEndNs = NanosecondDuration(nanoseconds: budget).after(runLoop.clock.nowNs)
        startCPUMonitor()
        let lead = min(configuration.expirationLeadNs, budget)
        budgetTimers.append(
            runLoop.schedule(afterNanoseconds: budget - lead, name: "background expiration") { [unowned self] in
                self.runExpirationHandlers()
            })
        budgetTimers.append(
            runLoop.schedule(afterNanoseconds: budget, name: "background budget ends") { [unowned self] in
                self.budgetEnded()
            })
    }

    /// Stops the budget's timers and the CPU monitor.
    func cancelBudget() {
        for timer in budgetTimers { runLoop.cancelTimer(timer) }
        budgetTimers = []
        budgetEndNs = nil
        stopCPUMonitor()
    }

    private func runExpirationHandlers() {
        guard application.state == .background else { return }
        for id in tasks.keys.sorted() {
            guard var task = tasks[id], !task.expired else { continue }
            task.expired = true
            tasks[id] = task
            application.emit(.expiration(name: task.name, id: id))
            configuration.recorder?.mark(.expiration(ofBackgroundTask: task.name))
            task.expiration?()
        }
    }

    private func budgetEnded() {
        guard application.state == .background, !tasks.isEmpty else { return }
        let now = runLoop.clock.nowNs
        let budgetMs = configuration.backgroundBudgetNs / 1_000_000
        let open = tasks.keys.sorted().compactMap { id -> String? in
            guard let task = tasks[id] else { return nil }
            return "'\(task.name)' (open \(NanosecondDuration.between(task.startNs, now).milliseconds) ms)"
        }
        application.terminate(
            reason: "background time of \(budgetMs) ms ran out with \(open.count) open background "
                + "task\(open.count == 1 ? "" : "s"): \(open.joined(separator: ", "))",
            phase: "background", stack: Sampler.captureCurrentStack(), status: Application.exitBackgroundLimit)
    }

    // MARK: CPU

    /// Samples the process's CPU clock once a second while the app runs in the background.
    private func startCPUMonitor() {
        stopCPUMonitor()
        cpuRuleReported = false
        cpuSamples = [(runLoop.clock.nowNs, configuration.cpuClock())]
        scheduleCPUSample()
    }

    private func scheduleCPUSample() {
        cpuMonitor = runLoop.schedule(afterNanoseconds: 1_000_000_000, name: "background CPU") { [unowned self] in
            self.sampleCPU()
        }
    }

    /// Stops the CPU monitor, counting the CPU time since its last sample.
    func stopCPUMonitor() {
        if let cpuMonitor { runLoop.cancelTimer(cpuMonitor) }
        cpuMonitor = nil
        if let last = cpuSamples.last {
            cpuNs += NanosecondDuration.between(last.cpuNs, configuration.cpuClock()).nanoseconds
        }
        cpuSamples = []
    }

    private func sampleCPU() {
        guard application.state == .background else {
            cpuMonitor = nil
            return
        }
        let now = runLoop.clock.nowNs
        let cpu = configuration.cpuClock()
        if let last = cpuSamples.last { cpuNs += NanosecondDuration.between(last.cpuNs, cpu).nanoseconds }
        cpuSamples.append((now, cpu))
        let window = configuration.backgroundCPUWindowNs
        while cpuSamples.count > 2, NanosecondDuration.between(cpuSamples[1].timeNs, now).nanoseconds >= window {
            cpuSamples.removeFirst()
        }
        if let first = cpuSamples.first, case let elapsed = NanosecondDuration.between(first.timeNs, now),
            elapsed.nanoseconds >= window, !cpuRuleReported
        {
            let share = Double(NanosecondDuration.between(first.cpuNs, cpu).nanoseconds) / Double(elapsed.nanoseconds)
            if share > configuration.backgroundCPULimit {
                cpuRuleReported = true
                ThreadRules.record(
                    rule: .backgroundCPU,
                    operation: String(
                        format: "the app used %.0f%% of a core over %d s in the background (limit %.0f%%)", share * 100,
                        Int(window / 1_000_000_000), configuration.backgroundCPULimit * 100),
                    stack: [])
            }
        }
        scheduleCPUSample()
    }
}
