import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the runtime reads time. Everything that waits or measures in Liftoff takes a clock,
/// so tests and `liftoff simulate` can run on a ``ManualClock`` and never sleep.
public protocol LaunchClock: Sendable {
    /// Nanoseconds on this clock's monotonic scale.
    var nowNs: UInt64 { get }
    /// Whether the clock advances on its own (a real clock) or only when told (a manual one).
    var isManual: Bool { get }
}

/// `CLOCK_MONOTONIC`: the clock of sample times, spans, phases and the launcher's
/// `LIFTOFF_LAUNCH_NS`. Every real time Liftoff takes is read here.
public struct MonotonicClock: LaunchClock {
    /// Creates the clock.
    public init() {}

    /// Now, in `CLOCK_MONOTONIC` nanoseconds.
    @inline(__always)
    public static var nowNs: UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }

    /// Now, in `CLOCK_MONOTONIC` nanoseconds.
    public var nowNs: UInt64 { MonotonicClock.nowNs }
    /// Always false: the clock advances on its own.
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

    /// The clock's current time.
    public var nowNs: UInt64 { now.load(ordering: .acquiring) }
    /// Always true: the clock moves only when told.
    public var isManual: Bool { true }

    /// Moves the clock forward (to the end of time at most).
    public func advance(byNanoseconds delta: UInt64) {
        let step = NanosecondDuration(nanoseconds: delta)
        var current = now.load(ordering: .acquiring)
        while true {
            let (exchanged, original) = now.compareExchange(
                expected: current, desired: step.after(current), ordering: .acquiringAndReleasing)
            if exchanged { return }
            current = original
        }
    }

    /// Moves the clock forward by milliseconds.
    public func advance(byMilliseconds milliseconds: UInt64) {
        advance(byNanoseconds: NanosecondDuration(milliseconds: milliseconds).nanoseconds)
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

/// A length of time in nanoseconds whose arithmetic saturates: a duration is never negative
/// (an end before its start is zero long) and never wraps (it stops at `UInt64.max`), so times
/// read from files, clocks of other threads or the environment cannot trap.
public struct NanosecondDuration: Comparable, Hashable, Sendable, CustomStringConvertible {
    /// The length in nanoseconds.
    public var nanoseconds: UInt64

    /// No time.
    public static let zero = NanosecondDuration(nanoseconds: 0)

    /// A duration of `nanoseconds`.
    public init(nanoseconds: UInt64) {
        self.nanoseconds = nanoseconds
    }

    /// A duration of `milliseconds`, or the longest one when that does not fit.
    public init(milliseconds: UInt64) {
        let (product, overflow) = milliseconds.multipliedReportingOverflow(by: 1_000_000)
        nanoseconds = overflow ? .max : product
    }

    /// The time from `start` to `end`, both on one clock; zero when `end` is earlier.
    @inline(__always)
    public static func between(_ start: UInt64, _ end: UInt64) -> NanosecondDuration {
        NanosecondDuration(nanoseconds: end > start ? end - start : 0)
    }

    /// The instant this long after `instant`, or the end of time when that does not fit.
    @inline(__always)
    public func after(_ instant: UInt64) -> UInt64 {
        let (sum, overflow) = instant.addingReportingOverflow(nanoseconds)
        return overflow ? .max : sum
    }

    /// Whole milliseconds, rounded down.
    public var milliseconds: UInt64 { nanoseconds / 1_000_000 }

    /// Milliseconds, with the fraction.
    public var millisecondsValue: Double { Double(nanoseconds) / 1e6 }

    /// The sum, or the longest duration when it does not fit.
    public static func + (lhs: NanosecondDuration, rhs: NanosecondDuration) -> NanosecondDuration {
        NanosecondDuration(nanoseconds: rhs.after(lhs.nanoseconds))
    }

    /// The difference, or zero when `rhs` is longer.
    public static func - (lhs: NanosecondDuration, rhs: NanosecondDuration) -> NanosecondDuration {
        between(rhs.nanoseconds, lhs.nanoseconds)
    }

    /// Adds `rhs` to `lhs`, saturating.
    public static func += (lhs: inout NanosecondDuration, rhs: NanosecondDuration) { lhs = lhs + rhs }

    /// Orders by length.
    public static func < (lhs: NanosecondDuration, rhs: NanosecondDuration) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    /// The length in milliseconds, e.g. `12.5 ms`.
    public var description: String { "\(millisecondsValue) ms" }
}
