import Foundation
import LiftoffProfile
import LiftoffSampler
import Synchronization

/// The launch watchdog: a launch that has not reached its first frame (or, in the background,
/// finished launching) within ``Application/Configuration/launchWatchdogNs`` ends the app.
///
/// It looks twice. At the start of each run-loop iteration it checks the clock (the only check
/// on a manual clock). On a real clock a thread of its own also watches, so a main thread stuck
/// inside a callback is caught too: it captures the main thread's stack and ends the process
/// through ``WatchdogReport``. ``watchCallback(_:limitNs:)`` watches one callback the same way.
// `@unchecked`: its state belongs to the main thread, except `shared`, which the watching thread
// reads under its lock.
final class LaunchWatchdog: @unchecked Sendable {
    private unowned let application: Application
    /// What the watching thread may read: whether the launch is still in progress, and its phase.
    private let shared = Mutex((launching: false, phase: ""))
    private var threadStarted = false

    init(application: Application) {
        self.application = application
    }

    /// The launch began: thread rules see a launch in progress, and the watching thread starts.
    func launchBegan(atNs startNs: UInt64) {
        shared.withLock { $0 = (true, "launch") }
        ThreadRules.setLaunching(true)
        startThread(deadline: NanosecondDuration(nanoseconds: application.configuration.launchWatchdogNs).after(startNs))
    }

    /// The launch is in `phase` now (what a report names when it is stuck there).
    func enter(phase: String) {
        shared.withLock { if $0.launching { $0.phase = phase } }
    }

    /// The launch is over (first frame, background launch returned, or the app ended): thread
    /// rules stop counting it as a launch, and the watching thread lets go.
    func launchIsOver() {
        ThreadRules.setLaunching(false)
        shared.withLock { $0.launching = false }
    }

    /// The run-loop check: ends the app when the launch is past its deadline.
    func check() {
        guard let progress = application.launchProgress else { return }
        let deadline = NanosecondDuration(nanoseconds: application.configuration.launchWatchdogNs).after(progress.startNs)
        guard application.runLoop.clock.nowNs >= deadline else { return }
        let phase = progress.phases.first { $0.startNs <= deadline && ($0.endNs ?? UInt64.max) >= deadline }?.name
            ?? progress.phases.last?.name ?? "launch"
        application.terminate(
            reason: WatchdogReport.launchReason(limitMs: application.configuration.launchWatchdogNs / 1_000_000, phase: phase),
            phase: phase, stack: Sampler.captureCurrentStack(), status: Application.exitWatchdog)
    }

    private func startThread(deadline: UInt64) {
        guard !application.runLoop.clock.isManual, !threadStarted else { return }
        threadStarted = true
        let clock = application.runLoop.clock
        let mainID = CurrentThread.id
        let limitMs = application.configuration.launchWatchdogNs / 1_000_000
        let recorder = application.configuration.recorder
        let thread = Thread { [weak self] in
            let waited = Sampler.withCurrentThreadExcluded { () -> Bool in
                while clock.nowNs < deadline {
                    Thread.sleep(forTimeInterval: 0.05)
                    if self == nil { return false }
                }
                return true
            }
            guard waited, let self else { return }
            let stuck = self.shared.withLock { $0 }
            guard stuck.launching else { return }
            let stack = Sampler.captureStack(ofThread: mainID) ?? []
            WatchdogReport.endProcess(
                reason: WatchdogReport.launchReason(limitMs: limitMs, phase: stuck.phase), phase: stuck.phase,
                stack: stack, recorder: recorder, status: Application.exitWatchdog)
        }
        thread.name = "liftoff-watchdog"
        thread.start()
    }

    /// On a real clock, watches a callback from a thread of its own: if it has not returned within
    /// `limitNs`, ends the process through ``WatchdogReport``. Returns the flag to set once the
    /// callback returned (nil on a manual clock).
    func watchCallback(_ name: String, limitNs: UInt64) -> ReturnFlag? {
        guard !application.runLoop.clock.isManual else { return nil }
        let returned = ReturnFlag()
        let deadline = NanosecondDuration(nanoseconds: limitNs).after(MonotonicClock.nowNs)
        let mainID = CurrentThread.id
        let recorder = application.configuration.recorder
        let thread = Thread { [returned] in
            let waited = Sampler.withCurrentThreadExcluded { () -> Bool in
                while MonotonicClock.nowNs < deadline {
                    if returned.isSet { return false }
                    Thread.sleep(forTimeInterval: 0.02)
                }
                return !returned.isSet
            }
            guard waited else { return }
            let stack = Sampler.captureStack(ofThread: mainID) ?? []
            WatchdogReport.endProcess(
                reason: "\(name) did not return within \(limitNs / 1_000_000) ms", phase: name, stack: stack,
                recorder: recorder, status: Application.exitBackgroundLimit)
        }
        thread.name = "liftoff-watchdog"
        thread.start()
        return returned
    }
}

/// Set once a watched callback has returned.
final class ReturnFlag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}
