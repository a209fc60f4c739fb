import LiftoffSampler
import Synchronization

/// Where the runtime reads time. Everything that waits or measures in Liftoff takes a clock,
/// so tests and `liftoff simulate` can run on a ``ManualClock`` and never sleep.
public protocol LaunchClock: Sendable {
    /// Nanoseconds on this clock's monotonic scale.
    var nowNs: UInt64 { get }
    /// Whether the clock advances on its own (a real clock) or only when told (a manual one).
    var isManual: Bool { get }
}

/// `CLOCK_MONOTONIC`, the clock of sample times and the launcher's `LIFTOFF_LAUNCH_NS`.
public struct MonotonicClock: LaunchClock {
    /// Creates the clock.
    public init() {}
    public var nowNs: UInt64 { Sampler.monotonicNs }
    public var isManual: Bool { false }
}

/// A clock that moves only when ``advance(byNanoseconds:)`` or ``advance(to:)`` is called.
///
/// ```swift
/// let clock = ManualClock()
/// clock.advance(byMilliseconds: 250)
/// ```
public final class ManualClock: LaunchClock {
    private let now: Atomic<UInt64>

    /// Creates a clock that starts at `startNs`.
    public init(startNs: UInt64 = 0) {
        now = Atomic(startNs)
    }

    public var nowNs: UInt64 { now.load(ordering: .acquiring) }
    public var isManual: Bool { true }

    /// Moves the clock forward.
    public func advance(byNanoseconds delta: UInt64) {
        now.add(delta, ordering: .acquiringAndReleasing)
    }

    /// Moves the clock forward by milliseconds.
    public func advance(byMilliseconds milliseconds: UInt64) {
        advance(byNanoseconds: milliseconds * 1_000_000)
    }

    /// Moves the clock to `instant` when that is later than now.
    public func advance(to instant: UInt64) {
        var current = now.load(ordering: .acquiring)
        while current < instant {
            let (exchanged, original) = now.compareExchange(
                expected: current, desired: instant, ordering: .acquiringAndReleasing)
            if exchanged { return }
            current = original
        }
    }
}
