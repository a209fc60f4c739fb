import Foundation
import LiftoffProfile
import LiftoffSampler
import Synchronization

/// The application object: it owns the main run loop, the life-cycle state machine, the key
/// window and the delegate, and it delivers system events, taps and frames.
///
/// `Application.main(delegate:options:)` is Liftoff's `UIApplicationMain`: it takes over the
/// OS main thread, launches the app, runs the main run loop until the app is terminated, and
/// returns an exit status.
///
/// ```swift
/// final class AppDelegate: ApplicationDelegate {
///     var window: Window?
///     func didFinishLaunching(_ app: Application, options: LaunchOptions) -> Bool {
///         let window = Window(frame: Rect(x: 0, y: 0, width: 390, height: 844))
///         window.rootViewController = HomeViewController()
///         window.makeKeyAndVisible(in: app)
///         self.window = window
///         return true
///     }
/// }
/// exit(Application.main(delegate: AppDelegate()))
/// ```
///
/// All of its state belongs to the main thread; ``send(_:)`` is the way in from other threads.
public final class Application: Responder, @unchecked Sendable {
    /// Settings of an application run.
    public struct Configuration: Sendable {
        /// The clock the run loop and the watchdog read.
        public var clock: any LaunchClock
        /// How long a launch may take to reach its first frame (or, in the background, to
        /// finish launching) before the app is terminated. Default 20 s.
        public var launchWatchdogNs: UInt64
        /// Records spans, state changes and frames into a profile, when set.
        public var recorder: LaunchRecorder?
        /// Clock time the launch counts from; the clock's now when nil.
        public var processStartNs: UInt64?
        /// Execution time in the background, from `didEnterBackground` or a background launch.
        /// Default 30 s.
        public var backgroundBudgetNs: UInt64
        /// How long before the budget ends the expiration handlers run. Default 5 s.
        public var expirationLeadNs: UInt64
        /// How long `didEnterBackground` may take. Default 5 s.
        public var enterBackgroundLimitNs: UInt64
        /// Share of one core the app may use in the background, averaged over
        /// ``backgroundCPUWindowNs``, before it is a violation. Default 0.8.
        public var backgroundCPULimit: Double = 0.8
        /// The window the background CPU rule averages over. Default 60 s.
        public var backgroundCPUWindowNs: UInt64 = 60_000_000_000
        /// The process's CPU time in nanoseconds (injectable for tests).
        public var cpuClock: @Sendable () -> UInt64 = { Application.processCPUNs() }

        /// Creates a configuration.
        public init(
            clock: any LaunchClock = MonotonicClock(), launchWatchdogNs: UInt64 = 20_000_000_000,
            recorder: LaunchRecorder? = nil, processStartNs: UInt64? = nil,
            backgroundBudgetNs: UInt64 = 30_000_000_000, expirationLeadNs: UInt64 = 5_000_000_000,
            enterBackgroundLimitNs: UInt64 = 5_000_000_000
        ) {
            self.clock = clock
            self.launchWatchdogNs = launchWatchdogNs
            self.recorder = recorder
            self.processStartNs = processStartNs
            self.backgroundBudgetNs = backgroundBudgetNs
            self.expirationLeadNs = expirationLeadNs
            self.enterBackgroundLimitNs = enterBackgroundLimitNs
        }
    }

    /// Exit status of a run that ended normally.
    public static let exitNormal: Int32 = 0
    /// Exit status of a run a watchdog ended.
    public static let exitWatchdog: Int32 = 3
    /// Exit status when `main` was misused.
    public static let exitMisuse: Int32 = 2
    /// CPU time used by the whole process so far, in nanoseconds.
    public static func processCPUNs() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// The rule for sustained CPU use in the background.
    public static let backgroundCPURule = "background-cpu"

    /// Exit status of a run ended for overrunning its background time.
    public static let exitBackgroundLimit: Int32 = 4

    /// The main run loop.
    public let runLoop: MainRunLoop
    /// The delegate.
    public let delegate: any ApplicationDelegate
    /// The current execution state.
    public private(set) var state: ApplicationState = .notRunning
    /// The options of the current launch.
    public private(set) var launchOptions: LaunchOptions?
    /// The window shown in front.
    public private(set) var keyWindow: Window?
    /// Frames committed so far.
    public private(set) var frameCount = 0
    /// Clock time of the first frame's commit.
    public private(set) var firstFrameNs: UInt64?
    /// The status `main` returns.
    public private(set) var exitStatus = Application.exitNormal
    /// Why a watchdog ended the app, if one did.
    public private(set) var terminationReason: String?

    let configuration: Configuration
    private var observers: [(UInt64, LifecycleEvent) -> Void] = []
    private var interrupted = false
    private var launchStartNs: UInt64 = 0
    private var launchInProgress = false
    private var launchReturned = false
    private var phases: [(name: String, startNs: UInt64, endNs: UInt64?)] = []
    private struct BackgroundTask {
        var name: String
        var startNs: UInt64
        var cpuStartNs: UInt64
        var expiration: (() -> Void)?
        var expired = false
    }

    private var backgroundTasks: [Int: BackgroundTask] = [:]
    private var budgetEndNs: UInt64?
    private var budgetTimers: [Int] = []
    private var cpuSamples: [(timeNs: UInt64, cpuNs: UInt64)] = []
    private var cpuMonitor: Int?
    private var cpuRuleReported = false
    /// CPU time the process used while the app ran in the background, in nanoseconds.
    public private(set) var backgroundCPUNs: UInt64 = 0
    /// CPU time the process used while each ended background task was open, by task name.
    public private(set) var backgroundTaskCPUNs: [String: UInt64] = [:]
    private var nextBackgroundTask = 1
    private var lastReportedViolation = 0
    private var firstLayoutDone = false
    private var watchdogThreadStarted = false
    /// What the watchdog thread may read: whether the launch is still in progress, and its phase.
    private let watchState = Mutex((launching: false, phase: ""))
    private var firstFrameWaiters: [() -> Void] = []
    private var lastCommitNs: UInt64?
    private var vsyncTimer: Int?
    /// Each committed frame's duration: from the start of the run-loop iteration that produced
    /// it to its commit.
    public private(set) var frameDurationsNs: [UInt64] = []

    /// The display refresh interval: 60 Hz.
    public static let frameIntervalNs: UInt64 = 16_666_667
    /// Frames longer than this are slow (16.7 ms).
    public static let slowFrameNs: UInt64 = 16_700_000
    /// Frames longer than this are frozen (700 ms).
    public static let frozenFrameNs: UInt64 = 700_000_000

    /// Frames that took longer than 16.7 ms but no longer than 700 ms.
    public var slowFrameCount: Int {
        frameDurationsNs.filter { $0 > Application.slowFrameNs && $0 <= Application.frozenFrameNs }.count
    }

    /// Frames that took longer than 700 ms.
    public var frozenFrameCount: Int { frameDurationsNs.filter { $0 > Application.frozenFrameNs }.count }

    /// Creates an application; `main` does this for you. Call its methods on one thread only:
    /// the thread that runs its loop.
    public init(delegate: any ApplicationDelegate, configuration: Configuration = Configuration()) {
        self.delegate = delegate
        self.configuration = configuration
        self.runLoop = MainRunLoop(clock: configuration.clock)
        super.init()
        ThreadRules.useClock(configuration.clock)
        lastReportedViolation = ThreadRules.violations.map(\.id).max() ?? 0
        // The watchdog looks first: a launch that overran its limit gets no first frame.
        runLoop.addObserver(named: "launch watchdog") { [unowned self] _ in self.checkLaunchWatchdog() }
        runLoop.addObserver(named: "display") { [unowned self] loop in self.displayPass(loop) }
        runLoop.addObserver(named: "lifecycle") { [unowned self] _ in self.endOfIteration() }
    }

    /// Runs an app on the OS main thread until it is terminated: launches it with `options`,
    /// runs the main run loop, and returns the exit status (0 normal, 3 ended by a watchdog).
    /// Called off the main thread it does nothing and returns 2.
    public static func main(
        delegate: any ApplicationDelegate, options: LaunchOptions = LaunchOptions(),
        configuration: Configuration = Configuration()
    ) -> Int32 {
        guard Sampler.isMainThread else {
            FileHandle.standardError.write(Data("Application.main must be called on the main thread.\n".utf8))
            return exitMisuse
        }
        let application = Application(delegate: delegate, configuration: configuration)
        let hangs = configuration.clock.isManual ? nil : HangWatcher(runLoop: application.runLoop)
        hangs?.start()
        application.send(.launch(options))
        application.runLoop.run()
        if let hangs {
            hangs.stop()
            configuration.recorder?.recordHangs(hangs.hangs)
        }
        return application.exitStatus
    }

    /// Delivers a system event; it is handled in the next run-loop iteration. Any thread.
    public func send(_ event: SystemEvent) {
        runLoop.post(event.description) { [unowned self] in self.handle(event) }
    }

    /// Adds an observer of everything that happens, with the clock time. Main thread.
    public func addObserver(_ observer: @escaping (UInt64, LifecycleEvent) -> Void) {
        observers.append(observer)
    }

    /// The end of the responder chain: taps that reach the application are discarded.
    override public var nextResponder: Responder? { nil }

    /// Runs `body` on the main run loop once the first frame has been committed (at once, in
    /// the next iteration, when it already has). Main thread.
    public func afterFirstFrame(_ body: @escaping () -> Void) {
        if firstFrameNs != nil {
            nonisolated(unsafe) let run = body
            runLoop.post("after first frame") { run() }
        } else {
            firstFrameWaiters.append(body)
        }
    }

    func setKeyWindow(_ window: Window) {
        keyWindow = window
        window.setNeedsDisplay()
    }

    // MARK: Background tasks

    /// Begins a background task: while any is open, the app stays in the background instead of
    /// being suspended, until its background time runs out. `expirationHandler` runs on the main
    /// thread shortly before that (``Configuration/expirationLeadNs``); a task still open when the
    /// time is up gets the app terminated. Returns the task's identifier, or nil when the app is
    /// not running.
    @discardableResult
    public func beginBackgroundTask(name: String, expirationHandler: (() -> Void)? = nil) -> Int? {
        guard state.isRunning else {
            emit(.rejected(event: "background-task \(name)", state: state, reason: "the app is not running"))
            return nil
        }
        let id = nextBackgroundTask
        nextBackgroundTask += 1
        backgroundTasks[id] = BackgroundTask(
            name: name, startNs: runLoop.clock.nowNs, cpuStartNs: configuration.cpuClock(), expiration: expirationHandler)
        emit(.backgroundTask(name: name, id: id, began: true))
        return id
    }

    /// Ends a background task. Ending an unknown or already ended identifier is reported and
    /// returns false.
    @discardableResult
    public func endBackgroundTask(_ id: Int) -> Bool {
        guard let task = backgroundTasks.removeValue(forKey: id) else {
            emit(.rejected(event: "end background task \(id)", state: state, reason: "no open background task has this identifier"))
            return false
        }
        let cpu = configuration.cpuClock()
        let cpuUsed = cpu > task.cpuStartNs ? cpu - task.cpuStartNs : 0
        backgroundTaskCPUNs[task.name, default: 0] += cpuUsed
        if let recorder = configuration.recorder {
            recorder.recordSpan(
                name: task.name, category: "background-task", startNs: task.startNs, endNs: runLoop.clock.nowNs,
                cpuNs: cpuUsed)
        }
        emit(.backgroundTask(name: task.name, id: id, began: false))
        return true
    }

    /// Time left in the background budget, or nil when no budget runs (in the foreground).
    public var backgroundTimeRemainingNs: UInt64? {
        guard let end = budgetEndNs else { return nil }
        let now = runLoop.clock.nowNs
        return end > now ? end - now : 0
    }

    private func startBackgroundBudget() {
        cancelBackgroundBudget()
        let now = runLoop.clock.nowNs
        let budget = configuration.backgroundBudgetNs
        budgetEndNs = now + budget
        startCPUMonitor()
        let lead = min(configuration.expirationLeadNs, budget)
        budgetTimers.append(
            runLoop.schedule(afterNanoseconds: budget - lead, name: "background expiration") { [unowned self] in
                self.runExpirationHandlers()
            })
        budgetTimers.append(
            runLoop.schedule(afterNanoseconds: budget, name: "background budget ends") { [unowned self] in
                self.backgroundBudgetEnded()
            })
    }

    private func cancelBackgroundBudget() {
        for timer in budgetTimers { runLoop.cancelTimer(timer) }
        budgetTimers = []
        budgetEndNs = nil
        stopCPUMonitor()
    }

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

    private func stopCPUMonitor() {
        if let cpuMonitor { runLoop.cancelTimer(cpuMonitor) }
        cpuMonitor = nil
        if let last = cpuSamples.last {
            let cpu = configuration.cpuClock()
            backgroundCPUNs += cpu > last.cpuNs ? cpu - last.cpuNs : 0
        }
        cpuSamples = []
    }

    private func sampleCPU() {
        guard state == .background else {
            cpuMonitor = nil
            return
        }
        let now = runLoop.clock.nowNs
        let cpu = configuration.cpuClock()
        if let last = cpuSamples.last { backgroundCPUNs += cpu > last.cpuNs ? cpu - last.cpuNs : 0 }
        cpuSamples.append((now, cpu))
        let window = configuration.backgroundCPUWindowNs
        while cpuSamples.count > 2, now - cpuSamples[1].timeNs >= window { cpuSamples.removeFirst() }
        if let first = cpuSamples.first, now - first.timeNs >= window, !cpuRuleReported {
            let share = Double(cpu - min(first.cpuNs, cpu)) / Double(now - first.timeNs)
            if share > configuration.backgroundCPULimit {
                cpuRuleReported = true
                ThreadRules.record(
                    rule: Application.backgroundCPURule,
                    operation: String(
                        format: "the app used %.0f%% of a core over %d s in the background (limit %.0f%%)", share * 100,
                        Int(window / 1_000_000_000), configuration.backgroundCPULimit * 100),
                    stack: [])
            }
        }
        scheduleCPUSample()
    }

    private func runExpirationHandlers() {
        guard state == .background else { return }
        for id in backgroundTasks.keys.sorted() {
            guard var task = backgroundTasks[id], !task.expired else { continue }
            task.expired = true
            backgroundTasks[id] = task
            emit(.expiration(name: task.name, id: id))
            configuration.recorder?.mark("expiration: \(task.name)")
            task.expiration?()
        }
    }

    private func backgroundBudgetEnded() {
        guard state == .background, !backgroundTasks.isEmpty else { return }
        let now = runLoop.clock.nowNs
        let budgetMs = configuration.backgroundBudgetNs / 1_000_000
        let open = backgroundTasks.keys.sorted().compactMap { id -> String? in
            guard let task = backgroundTasks[id] else { return nil }
            let openMs = (now - task.startNs) / 1_000_000
            return "'\(task.name)' (open \(openMs) ms)"
        }
        terminate(
            reason: "background time of \(budgetMs) ms ran out with \(open.count) open background "
                + "task\(open.count == 1 ? "" : "s"): \(open.joined(separator: ", "))",
            phase: "background", stack: Sampler.captureCurrentStack(), status: Application.exitBackgroundLimit)
    }

    /// Names of the open background tasks.
    public var openBackgroundTasks: [String] { backgroundTasks.keys.sorted().compactMap { backgroundTasks[$0]?.name } }

    // MARK: Events

    private func handle(_ event: SystemEvent) {
        switch event {
        case .launch(let options):
            guard state == .notRunning, launchOptions == nil else {
                return reject(event, "the app is already running")
            }
            launch(options)
        case .userLeaves:
            guard state.isForeground, !launchInProgress else { return reject(event, "the app is not in the foreground") }
            if state == .active {
                callback("willResignActive") { delegate.willResignActive(self) }
                transition(to: .inactive)
            }
            interrupted = false
            transition(to: .background)
            startBackgroundBudget()
            let entered = runLoop.clock.nowNs
            let watch = watchCallback("didEnterBackground", limitNs: configuration.enterBackgroundLimitNs)
            callback("didEnterBackground") { delegate.didEnterBackground(self) }
            watch?.set()
            let took = runLoop.clock.nowNs - entered
            if took > configuration.enterBackgroundLimitNs {
                terminate(
                    reason: "didEnterBackground took \(took / 1_000_000) ms; the limit is "
                        + "\(configuration.enterBackgroundLimitNs / 1_000_000) ms",
                    phase: "didEnterBackground", stack: Sampler.captureCurrentStack(),
                    status: Application.exitBackgroundLimit)
            }
        case .interruptionBegan:
            guard state == .active else { return reject(event, "only an active app can be interrupted") }
            interrupted = true
            callback("willResignActive") { delegate.willResignActive(self) }
            transition(to: .inactive)
        case .interruptionEnded:
            guard state == .inactive, interrupted else { return reject(event, "no interruption is in progress") }
            interrupted = false
            transition(to: .active)
            callback("didBecomeActive") { delegate.didBecomeActive(self) }
        case .returnToForeground:
            guard state == .background || state == .suspended else {
                return reject(event, "the app is not in the background")
            }
            if state == .suspended { transition(to: .background) }
            cancelBackgroundBudget()
            callback("willEnterForeground") { delegate.willEnterForeground(self) }
            transition(to: .inactive)
            transition(to: .active)
            callback("didBecomeActive") { delegate.didBecomeActive(self) }
            keyWindow?.setNeedsDisplay()
        case .memoryPurge:
            guard state == .suspended else { return reject(event, "only a suspended app is purged") }
            end(status: Application.exitNormal)
        case .userKill:
            guard state != .notRunning else { return reject(event, "the app is not running") }
            end(status: Application.exitNormal)
        case .systemTerminate:
            guard state != .notRunning else { return reject(event, "the app is not running") }
            if state == .background {
                callback("willTerminate") { delegate.willTerminate(self) }
            }
            end(status: Application.exitNormal)
        case .tap(let point):
            guard state == .active else { return reject(event, "only an active app receives touches") }
            deliverTap(Tap(location: point))
        }
    }

    private func launch(_ options: LaunchOptions) {
        launchOptions = options
        launchStartNs = configuration.processStartNs ?? runLoop.clock.nowNs
        launchInProgress = true
        watchState.withLock { $0 = (true, "launch") }
        ThreadRules.setLaunching(true)
        startWatchdogThread()
        transition(to: options.isBackgroundLaunch ? .background : .inactive)
        if options.isBackgroundLaunch { startBackgroundBudget() }
        _ = callback("willFinishLaunching") { delegate.willFinishLaunching(self, options: options) }
        _ = callback("didFinishLaunching") { delegate.didFinishLaunching(self, options: options) }
        launchReturned = true
        launchInProgress = false
        if options.isBackgroundLaunch {
            ThreadRules.setLaunching(false)
            watchState.withLock { $0.launching = false }
        }
        if !options.isBackgroundLaunch {
            transition(to: .active)
            callback("didBecomeActive") { delegate.didBecomeActive(self) }
            phases.append(("first frame", runLoop.clock.nowNs, nil))
            watchState.withLock { $0.phase = "first frame" }
        }
    }

    private func reject(_ event: SystemEvent, _ reason: String) {
        emit(.rejected(event: event.description, state: state, reason: reason))
    }

    private func transition(to next: ApplicationState) {
        precondition(state.successors.contains(next), "Liftoff: illegal transition \(state) → \(next)")
        let previous = state
        state = next
        configuration.recorder?.recordStateChange(from: previous, to: next)
        emit(.stateChange(from: previous, to: next))
    }

    /// Moves to `next` as a caller request: an illegal transition is an error, not ignored.
    /// - Throws: ``LifecycleError`` with code `illegalTransition`.
    public func requestTransition(to next: ApplicationState) throws {
        guard state.successors.contains(next) else {
            throw LifecycleError(
                .illegalTransition, "The app cannot go from \(state.rawValue) to \(next.rawValue).", state: state)
        }
        transition(to: next)
    }

    @discardableResult
    private func callback<T>(_ name: String, _ body: () -> T) -> T {
        emit(.callback(name: name, state: state))
        let start = runLoop.clock.nowNs
        phases.append((name, start, nil))
        if launchInProgress { watchState.withLock { $0.phase = name } }
        let index = phases.count - 1
        defer { phases[index].endNs = runLoop.clock.nowNs }
        runLoop.note(name)
        if let recorder = configuration.recorder {
            return recorder.span(name, category: "callback", body)
        }
        return body()
    }

    private func end(status: Int32) {
        ThreadRules.setLaunching(false)
        watchState.withLock { $0.launching = false }
        cancelBackgroundBudget()
        backgroundTasks.removeAll()
        transition(to: .notRunning)
        exitStatus = status
        runLoop.stop()
    }

    private func emit(_ event: LifecycleEvent) {
        let now = runLoop.clock.nowNs
        for observer in observers { observer(now, event) }
    }

    // MARK: Touches

    private func deliverTap(_ tap: Tap) {
        var responder: Responder? = keyWindow?.hitTest(tap.location)
        while let current = responder {
            if current.handleTap(tap) {
                emit(.touch(tap.location, handledBy: current.responderName))
                return
            }
            responder = current.nextResponder
        }
        emit(.touch(tap.location, handledBy: nil))
    }

    // MARK: End of each iteration

    private func displayPass(_ loop: MainRunLoop) {
        guard state.isForeground, launchReturned, !runLoop.isStopped, let window = keyWindow, !window.isHidden else { return }
        let start = loop.iterationStartNs
        if !firstLayoutDone {
            firstLayoutDone = true
            configuration.recorder?.mark("firstLayout")
        }
        // While an animation runs, frames come at the refresh interval, not at every iteration.
        if vsyncTimer != nil, let last = lastCommitNs, loop.clock.nowNs - last < Application.frameIntervalNs { return }
        let drawn = window.displayIfNeeded()
        if drawn > 0 && frameCount == 0 { configuration.recorder?.mark("firstDraw") }
        let firstPending = firstFrameNs == nil && window.hasContent
        guard drawn > 0 || firstPending else { return }
        let index = frameCount
        frameCount += 1
        if firstFrameNs == nil {
            firstFrameNs = loop.clock.nowNs
            ThreadRules.setLaunching(false)
            watchState.withLock { $0.launching = false }
            if let last = phases.indices.last, phases[last].name == "first frame" { phases[last].endNs = firstFrameNs }
        }
        loop.note("commit frame \(index)")
        let commit = loop.clock.nowNs
        lastCommitNs = commit
        frameDurationsNs.append(commit > start ? commit - start : 0)
        configuration.recorder?.recordFrame(index: index, iterationStartNs: start, viewsDrawn: drawn)
        emit(.frame(index: index, viewsDrawn: drawn))
        if index == 0 {
            let waiters = firstFrameWaiters
            firstFrameWaiters = []
            for waiter in waiters { waiter() }
        }
        // Views that marked themselves again while drawing (an animation) keep the display
        // going at 60 Hz: the next frame comes one refresh interval after this one.
        if window.subtreeNeedsDisplay, vsyncTimer == nil {
            vsyncTimer = loop.schedule(afterNanoseconds: Application.frameIntervalNs, name: "vsync") { [unowned self] in
                self.vsyncTimer = nil
            }
        }
    }

    private func endOfIteration() {
        for violation in ThreadRules.violations where violation.id > lastReportedViolation {
            emit(.violation(rule: violation.rule, message: violation.message))
            lastReportedViolation = violation.id
        }
        if state == .background, backgroundTasks.isEmpty, launchReturned {
            stopCPUMonitor()
            transition(to: .suspended)
        }
    }

    private func checkLaunchWatchdog() {
        guard let options = launchOptions, state != .notRunning else { return }
        let done = options.isBackgroundLaunch ? launchReturned : firstFrameNs != nil
        guard !done else { return }
        let now = runLoop.clock.nowNs
        let deadline = launchStartNs + configuration.launchWatchdogNs
        guard now >= deadline else { return }
        let phase = phases.first { $0.startNs <= deadline && ($0.endNs ?? UInt64.max) >= deadline }?.name
            ?? phases.last?.name ?? "launch"
        terminateForWatchdog(phase: phase, stack: Sampler.captureCurrentStack())
    }

    private func terminateForWatchdog(phase: String, stack: [UInt]) {
        let limit = configuration.launchWatchdogNs / 1_000_000
        terminate(
            reason: "launch watchdog: no first frame \(limit) ms after launch began; the launch was in \(phase)",
            phase: phase, stack: stack, status: Application.exitWatchdog)
    }

    /// Ends the app for misbehaving: records why, moves to notRunning, stops the loop.
    private func terminate(reason: String, phase: String, stack: [UInt], status: Int32) {
        guard state != .notRunning || !runLoop.isStopped else { return }
        terminationReason = reason
        configuration.recorder?.recordTermination(reason: reason, phase: phase, stack: stack)
        backgroundTasks.removeAll()
        ThreadRules.setLaunching(false)
        watchState.withLock { $0.launching = false }
        cancelBackgroundBudget()
        if state != .notRunning { transition(to: .notRunning) }
        emit(.terminated(reason: reason))
        exitStatus = status
        runLoop.stop()
    }

    /// On a real clock, watches a callback from a thread of its own: if it has not returned within
    /// `limitNs`, captures the main thread's stack, prints the report, writes the profile when one
    /// is recorded, and ends the process. Returns the flag to set once the callback returned.
    private func watchCallback(_ name: String, limitNs: UInt64) -> ReturnFlag? {
        guard !runLoop.clock.isManual else { return nil }
        let returned = ReturnFlag()
        let deadline = Sampler.monotonicNs + limitNs
        let mainID = Sampler.currentThreadID
        let recorder = configuration.recorder
        let thread = Thread { [returned] in
            let waited = Sampler.withCurrentThreadExcluded { () -> Bool in
                while Sampler.monotonicNs < deadline {
                    if returned.isSet { return false }
                    Thread.sleep(forTimeInterval: 0.02)
                }
                return !returned.isSet
            }
            guard waited else { return }
            let stack = Sampler.captureStack(ofThread: mainID) ?? []
            LaunchWatch.report(
                reason: "\(name) did not return within \(limitNs / 1_000_000) ms", phase: name, stack: stack,
                recorder: recorder, status: Application.exitBackgroundLimit)
        }
        thread.name = "liftoff-watchdog"
        thread.start()
        return returned
    }

    /// On a real clock, a watchdog thread catches a main thread stuck inside a launch callback:
    /// it captures the main thread's stack, prints a report, writes the profile when one is
    /// recorded, and ends the process.
    private func startWatchdogThread() {
        guard !runLoop.clock.isManual, !watchdogThreadStarted else { return }
        watchdogThreadStarted = true
        let deadline = launchStartNs + configuration.launchWatchdogNs
        let clock = runLoop.clock
        let mainID = Sampler.currentThreadID
        let watch = LaunchWatch(deadline: deadline, limitMs: configuration.launchWatchdogNs / 1_000_000)
        let recorder = configuration.recorder
        let thread = Thread { [weak self] in
            let waited = Sampler.withCurrentThreadExcluded { () -> Bool in
                while clock.nowNs < deadline {
                    Thread.sleep(forTimeInterval: 0.05)
                    if self == nil { return false }
                }
                return true
            }
            guard waited, let self else { return }
            let stuck = self.watchState.withLock { $0 }
            guard stuck.launching else { return }
            let stack = Sampler.captureStack(ofThread: mainID) ?? []
            watch.report(phase: stuck.phase, stack: stack, recorder: recorder)
        }
        thread.name = "liftoff-watchdog"
        thread.start()
    }
}

/// Set once a watched callback has returned.
final class ReturnFlag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}

/// The report a watchdog prints when it ends a stuck launch.
struct LaunchWatch: Sendable {
    var deadline: UInt64
    var limitMs: UInt64

    func report(phase: String, stack: [UInt], recorder: LaunchRecorder?) -> Never {
        LaunchWatch.report(
            reason: "launch watchdog: no first frame \(limitMs) ms after launch began; the launch was in \(phase)",
            phase: phase, stack: stack, recorder: recorder, status: Application.exitWatchdog)
    }

    /// Prints the reason and the stuck main thread's stack, writes the profile so far, and ends
    /// the process with `status`.
    static func report(reason: String, phase: String, stack: [UInt], recorder: LaunchRecorder?, status: Int32) -> Never {
        var lines = ["liftoff: \(reason). The main thread's stack:"]
        let symbolizer = ELFSymbolizer()
        for (index, address) in stack.enumerated() {
            // Taken from the stuck thread by a signal: the first address is an exact program counter.
            let frame = symbolizer.symbolize(index == 0 ? address : address &- 1)
            lines.append("  \(index): \(frame.name) (\(frame.object))")
        }
        if stack.isEmpty { lines.append("  (the main thread did not answer)") }
        FileHandle.standardError.write(Data((lines.joined(separator: "\n") + "\n").utf8))
        if let recorder {
            recorder.recordTermination(reason: reason, phase: phase, stack: stack, exactLeaf: true)
            if let (_, url) = try? recorder.finishAndWrite(), let url {
                FileHandle.standardError.write(Data("liftoff: wrote the profile so far to \(url.path)\n".utf8))
            }
        }
        fflush(nil)
        _exit(status)
    }
}
