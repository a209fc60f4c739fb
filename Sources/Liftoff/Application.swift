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
    /// Exit status of a run that ended normally.
    public static let exitNormal: Int32 = 0
    /// Exit status of a run a watchdog ended.
    public static let exitWatchdog: Int32 = 3
    /// Exit status when `main` was misused.
    public static let exitMisuse: Int32 = 2
    /// Exit status of a run ended for overrunning its background time.
    public static let exitBackgroundLimit: Int32 = 4

    /// CPU time used by the whole process so far, in nanoseconds.
    public static func processCPUNs() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }

    /// The rule for sustained CPU use in the background.
    public static let backgroundCPURule = Profile.RuleName.backgroundCPU

    /// The display refresh interval: 60 Hz.
    public static let frameIntervalNs: UInt64 = 16_666_667
    /// Frames longer than this are slow (16.7 ms).
    public static let slowFrameNs: UInt64 = 16_700_000
    /// Frames longer than this are frozen (700 ms).
    public static let frozenFrameNs: UInt64 = 700_000_000

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
    private var lastReportedViolation = 0
    // The jobs the application hands off, each in a file of its own.
    private lazy var background = BackgroundExecution(application: self)
    private lazy var display = DisplayPass(application: self)
    private lazy var watchdog = LaunchWatchdog(application: self)

    /// Frames committed so far.
    public var frameCount: Int { display.frameCount }
    /// Clock time of the first frame's commit.
    public var firstFrameNs: UInt64? { display.firstFrameNs }
    /// Each committed frame's duration: from the start of the run-loop iteration that produced
    /// it to its commit.
    public var frameDurationsNs: [UInt64] { display.frameDurationsNs }

    /// Frames that took longer than 16.7 ms but no longer than 700 ms.
    public var slowFrameCount: Int {
        frameDurationsNs.filter { $0 > Application.slowFrameNs && $0 <= Application.frozenFrameNs }.count
    }

    /// Frames that took longer than 700 ms.
    public var frozenFrameCount: Int { frameDurationsNs.filter { $0 > Application.frozenFrameNs }.count }

    /// CPU time the process used while the app ran in the background, in nanoseconds.
    public var backgroundCPUNs: UInt64 { background.cpuNs }
    /// CPU time the process used while each ended background task was open, by task name.
    public var backgroundTaskCPUNs: [String: UInt64] { background.taskCPUNs }

    /// Creates an application; `main` does this for you. Call its methods on one thread only:
    /// the thread that runs its loop.
    public init(delegate: any ApplicationDelegate, configuration: Configuration = Configuration()) {
        self.delegate = delegate
        self.configuration = configuration
        self.runLoop = MainRunLoop(clock: configuration.clock)
        super.init()
        lastReportedViolation = ThreadRules.violations.map(\.id).max() ?? 0
        // The watchdog looks first: a launch that overran its limit gets no first frame.
        runLoop.addObserver(named: "launch watchdog") { [unowned self] _ in self.watchdog.check() }
        runLoop.addObserver(named: "display") { [unowned self] loop in self.display.run(loop) }
        runLoop.addObserver(named: "lifecycle") { [unowned self] _ in self.endOfIteration() }
    }

    /// Runs an app on the OS main thread until it is terminated: launches it with `options`,
    /// runs the main run loop, and returns the exit status (0 normal, 3 ended by a watchdog).
    /// Called off the main thread it does nothing and returns 2.
    public static func main(
        delegate: any ApplicationDelegate, options: LaunchOptions = LaunchOptions(),
        configuration: Configuration = Configuration()
    ) -> Int32 {
        guard CurrentThread.isMain else {
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
        display.afterFirstFrame(body)
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
        let id = background.begin(name: name, expirationHandler: expirationHandler)
        emit(.backgroundTask(name: name, id: id, began: true))
        return id
    }

    /// Ends a background task. Ending an unknown or already ended identifier is reported and
    /// returns false.
    @discardableResult
    public func endBackgroundTask(_ id: Int) -> Bool {
        guard let name = background.end(id) else {
            emit(.rejected(event: "end background task \(id)", state: state, reason: "no open background task has this identifier"))
            return false
        }
        emit(.backgroundTask(name: name, id: id, began: false))
        return true
    }

    /// Time left in the background budget, or nil when no budget runs (in the foreground).
    public var backgroundTimeRemainingNs: UInt64? { background.remainingNs }

    /// Names of the open background tasks.
    public var openBackgroundTasks: [String] { background.openTaskNames }

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
            background.startBudget()
            let entered = runLoop.clock.nowNs
            let watch = watchdog.watchCallback("didEnterBackground", limitNs: configuration.enterBackgroundLimitNs)
            callback("didEnterBackground") { delegate.didEnterBackground(self) }
            watch?.set()
            let took = NanosecondDuration.between(entered, runLoop.clock.nowNs).nanoseconds
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
            background.cancelBudget()
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
        watchdog.launchBegan(atNs: launchStartNs)
        transition(to: options.isBackgroundLaunch ? .background : .inactive)
        if options.isBackgroundLaunch { background.startBudget() }
        _ = callback("willFinishLaunching") { delegate.willFinishLaunching(self, options: options) }
        _ = callback("didFinishLaunching") { delegate.didFinishLaunching(self, options: options) }
        launchReturned = true
        launchInProgress = false
        if options.isBackgroundLaunch {
            watchdog.launchIsOver()
        } else {
            transition(to: .active)
            callback("didBecomeActive") { delegate.didBecomeActive(self) }
            phases.append(("first frame", runLoop.clock.nowNs, nil))
            watchdog.enter(phase: "first frame")
        }
    }

    /// The launch's start and phases while it has not reached its end (the first frame, or a
    /// background launch's return); nil once it has, or before it began.
    var launchProgress: (startNs: UInt64, phases: [(name: String, startNs: UInt64, endNs: UInt64?)])? {
        guard let options = launchOptions, state != .notRunning else { return nil }
        let done = options.isBackgroundLaunch ? launchReturned : firstFrameNs != nil
        return done ? nil : (launchStartNs, phases)
    }

    /// The window the display pass draws, when the app shows one now.
    var displayedWindow: Window? {
        guard state.isForeground, launchReturned, !runLoop.isStopped, let window = keyWindow, !window.isHidden else {
            return nil
        }
        return window
    }

    /// The display pass committed the first frame: the launch is over.
    func firstFrameCommitted(at timeNs: UInt64) {
        watchdog.launchIsOver()
        if let last = phases.indices.last, phases[last].name == "first frame" { phases[last].endNs = timeNs }
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
        if launchInProgress { watchdog.enter(phase: name) }
        let index = phases.count - 1
        defer { phases[index].endNs = runLoop.clock.nowNs }
        runLoop.note(name)
        if let recorder = configuration.recorder {
            return recorder.span(name, category: .callback, body)
        }
        return body()
    }

    private func end(status: Int32) {
        watchdog.launchIsOver()
        background.cancelBudget()
        background.dropTasks()
        transition(to: .notRunning)
        exitStatus = status
        runLoop.stop()
    }

    func emit(_ event: LifecycleEvent) {
        let now = runLoop.clock.nowNs
        for observer in observers { observer(now, event) }
    }

    /// Ends the app for misbehaving: records why, moves to notRunning, stops the loop.
    func terminate(reason: String, phase: String, stack: [UInt], status: Int32) {
        guard state != .notRunning || !runLoop.isStopped else { return }
        terminationReason = reason
        configuration.recorder?.recordTermination(reason: reason, phase: phase, stack: stack)
        background.dropTasks()
        watchdog.launchIsOver()
        background.cancelBudget()
        if state != .notRunning { transition(to: .notRunning) }
        emit(.terminated(reason: reason))
        exitStatus = status
        runLoop.stop()
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

    private func endOfIteration() {
        for violation in ThreadRules.violations where violation.id > lastReportedViolation {
            emit(.violation(rule: violation.rule, message: violation.message))
            lastReportedViolation = violation.id
        }
        if state == .background, background.hasNoOpenTasks, launchReturned {
            background.stopCPUMonitor()
            transition(to: .suspended)
        }
    }
}
