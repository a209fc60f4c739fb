import LiftoffProfile

/// Runs an ``Application`` step by step on the calling thread with a `ManualClock`: for
/// deterministic launch tests and `liftoff simulate`. Waiting costs no real time.
///
/// ```swift
/// let driver = ApplicationDriver(delegate: MyDelegate())
/// driver.send(.launch(LaunchOptions()))
/// #expect(driver.application.state == .active)
/// driver.advance(milliseconds: 30_000)
/// ```
///
/// While a driver is open, the calling thread counts as the main thread for the main-thread
/// check; ``close()`` (or deinit) restores the OS main thread.
public final class ApplicationDriver {
    /// The application being driven.
    public let application: Application
    /// The clock; ``advance(milliseconds:)`` moves it.
    public let clock: ManualClock
    /// Everything that happened, with clock times, in order.
    public private(set) var events: [(timeNs: UInt64, event: LifecycleEvent)] = []
    private var closed = false

    /// Creates a driver for an app built around `delegate`.
    public init(
        delegate: any ApplicationDelegate, clock: ManualClock = ManualClock(),
        launchWatchdogNs: UInt64 = 20_000_000_000, recorder: LaunchRecorder? = nil,
        backgroundBudgetNs: UInt64 = 30_000_000_000, expirationLeadNs: UInt64 = 5_000_000_000,
        enterBackgroundLimitNs: UInt64 = 5_000_000_000,
        configure: (inout Application.Configuration) -> Void = { _ in }
    ) {
        self.clock = clock
        ThreadRules.designateCurrentThreadAsUIThread()
        var configuration = Application.Configuration(
            clock: clock, launchWatchdogNs: launchWatchdogNs, recorder: recorder,
            backgroundBudgetNs: backgroundBudgetNs, expirationLeadNs: expirationLeadNs,
            enterBackgroundLimitNs: enterBackgroundLimitNs)
        configure(&configuration)
        application = Application(delegate: delegate, configuration: configuration)
        application.addObserver { [unowned self] time, event in self.events.append((time, event)) }
    }

    deinit { close() }

    /// Delivers `event` and runs the loop until it is idle.
    public func send(_ event: SystemEvent) {
        application.send(event)
        application.runLoop.runUntilIdle()
    }

    /// Moves the clock forward, firing timers in deadline order on the way.
    public func advance(milliseconds: UInt64) {
        let target = NanosecondDuration(milliseconds: milliseconds).after(clock.nowNs)
        while !application.runLoop.isStopped, let next = application.runLoop.nextTimerDeadline, next <= target {
            clock.advance(to: next)
            application.runLoop.runUntilIdle()
        }
        clock.advance(to: target)
        if !application.runLoop.isStopped { application.runLoop.runUntilIdle() }
    }

    /// Runs one loop iteration even when there is no work (for observers and watchdogs).
    public func turn() {
        application.runLoop.runIteration()
    }

    /// Posts `block` to the loop and runs until idle.
    public func perform(_ name: String = "perform", _ block: @escaping @Sendable () -> Void) {
        application.runLoop.post(name, block)
        application.runLoop.runUntilIdle()
    }

    /// The callbacks delivered so far, by name, in order.
    public var callbacks: [String] {
        events.compactMap { if case .callback(let name, _) = $0.event { return name } else { return nil } }
    }

    /// The state changes so far, as `from→to`.
    public var stateChanges: [String] {
        events.compactMap {
            if case .stateChange(let from, let to) = $0.event { return "\(from.rawValue)→\(to.rawValue)" } else { return nil }
        }
    }

    /// Ends the driver's claim on the main-thread check.
    public func close() {
        guard !closed else { return }
        closed = true
        ThreadRules.resetUIThread()
    }
}
