import Foundation
import LiftoffProfile

extension Application {
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
}
