import Foundation
import LiftoffProfile
import LiftoffSampler
import Synchronization

/// A stretch of time the main thread spent away from its run loop.
public struct Hang: Sendable, Equatable {
    /// `CLOCK_MONOTONIC` nanoseconds when the iteration that hung began.
    public var startNs: UInt64
    /// How long it lasted.
    public var durationNs: UInt64
    /// What the loop was running when the hang was noticed (an event, timer or observer name).
    public var running: String
    /// Stacks of the main thread sampled while it hung, leaf first.
    public var stacks: [[UInt]]
    /// How many stacks the watcher asked for while it hung (one each sampling interval, once the
    /// hang was noticed): `stacks.count` of them were answered.
    public var captures: Int = 0
    /// How long the watcher sampled: from noticing the hang to its end.
    public var sampledNs: UInt64 = 0
}

/// Notices when a run loop has been away from waiting for work for the threshold (250 ms by
/// default) or longer, samples the loop thread's stack at a high rate while that lasts, and
/// records the hang: when it began, how long it lasted, what the loop was running, and where the
/// time went.
///
/// ```swift
/// let watcher = HangWatcher(runLoop: application.runLoop)
/// watcher.start()
/// ...
/// for hang in watcher.hangs { print(hang.running, hang.durationNs) }
/// ```
public final class HangWatcher: Sendable {
    /// Default threshold: 250 ms.
    public static let defaultThresholdNs: UInt64 = 250_000_000
    /// How long one stack capture may wait for the hung thread's answer.
    public static let captureTimeoutMs = 50

    private let runLoop: MainRunLoop
    private let thresholdNs: UInt64
    private let sampleIntervalNs: UInt64
    private let recorded = Mutex<[Hang]>([])
    private let running = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    /// Creates a watcher for `runLoop` (which must run on a real clock).
    /// - Parameters:
    ///   - runLoop: the main run loop whose iterations are watched.
    ///   - thresholdNs: how long an iteration may run before it counts as a hang.
    ///   - sampleIntervalNs: how often the loop thread's stack is sampled during a hang.
    public init(
        runLoop: MainRunLoop, thresholdNs: UInt64 = HangWatcher.defaultThresholdNs, sampleIntervalNs: UInt64 = 5_000_000
    ) {
        self.runLoop = runLoop
        self.thresholdNs = thresholdNs
        self.sampleIntervalNs = sampleIntervalNs
    }

    /// Starts watching on a thread of its own; the run loop starts tracking its work.
    public func start() {
        guard !running.exchange(true, ordering: .acquiringAndReleasing) else { return }
        runLoop.trackWork(true)
        // Liftoff's own helper threads stay out of the profiles they help make.
        let thread = Thread { [self] in Sampler.withCurrentThreadExcluded { watch() } }
        thread.name = "liftoff-hangs"
        thread.start()
    }

    /// Stops watching (a hang in progress is recorded up to now).
    public func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        finished.wait()
        runLoop.trackWork(false)
    }

    /// The hangs recorded so far.
    public var hangs: [Hang] { recorded.withLock { $0 } }

    private func watch() {
        defer { finished.signal() }
        let poll = min(thresholdNs / 10, 25_000_000)
        while running.load(ordering: .acquiring) {
            pause(poll)
            guard let since = runLoop.busySinceNs, NanosecondDuration.between(since, MonotonicClock.nowNs).nanoseconds >= thresholdNs else { continue }
            // A hang: sample the loop thread until this iteration ends.
            let work = runLoop.currentWork
            var stacks: [[UInt]] = []
            var captures = 0
            let noticedNs = MonotonicClock.nowNs
            while runLoop.busySinceNs == since, running.load(ordering: .acquiring) {
                captures += 1
                if let stack = Sampler.captureStack(ofThread: runLoop.threadID, timeoutMilliseconds: Self.captureTimeoutMs), !stack.isEmpty {
                    stacks.append(stack)
                }
                pause(sampleIntervalNs)
            }
            let now = MonotonicClock.nowNs
            let hang = Hang(
                startNs: since, durationNs: NanosecondDuration.between(since, now).nanoseconds, running: work, stacks: stacks,
                captures: captures, sampledNs: NanosecondDuration.between(noticedNs, now).nanoseconds)
            recorded.withLock { $0.append(hang) }
        }
    }

    /// Sleeps about `nanoseconds`; a sampled thread's sleeps end early, so it sleeps to a deadline.
    private func pause(_ nanoseconds: UInt64) {
        let deadline = NanosecondDuration(nanoseconds: nanoseconds).after(MonotonicClock.nowNs)
        while case let left = NanosecondDuration.between(MonotonicClock.nowNs, deadline), left > .zero {
            usleep(UInt32(max(1, min(left.nanoseconds / 1000, 1_000_000))))
        }
    }
}
