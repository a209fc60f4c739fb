import LiftoffSampler
import Synchronization

/// A breach of a thread rule, with the stack of the code that broke it.
public struct ThreadViolation: Sendable, Equatable {
    /// A process-wide sequence number: later violations have larger ids.
    public var id: Int
    /// The rule, e.g. `ui-on-main`.
    public var rule: String
    /// What was done, e.g. `View.setNeedsDisplay()`.
    public var operation: String
    /// Kernel thread id of the offending thread.
    public var threadID: Int
    /// Its name.
    public var threadName: String
    /// Clock time of the first occurrence.
    public var timeNs: UInt64
    /// Code addresses of the offending call, leaf first (symbolize with an ``ELFSymbolizer``).
    public var stack: [UInt]
    /// How many times it happened from the same call site.
    public var count: Int

    /// One sentence for people.
    public var message: String {
        "\(operation) ran on thread \(threadName) (\(threadID)), not on the main thread"
            + (count > 1 ? " (\(count) times)" : "") + "."
    }
}

/// The main-thread check behind views, windows and view controllers, and the record of
/// violations it found.
///
/// The main thread is the thread running the application's loop: the OS main thread under
/// `Application.main`, or the thread a test driver runs the loop on. The check compares cached
/// kernel thread ids, so it costs a few nanoseconds.
public enum MainThreadCheck {
    private static let designated = Atomic<Int>(0)
    private static let recorded = Mutex<(list: [ThreadViolation], nextID: Int)>(([], 1))
    private static let clockSource = Mutex<any LaunchClock>(MonotonicClock())

    /// The kernel thread id treated as the main thread: the OS main thread unless a driver
    /// designated another.
    public static var mainThreadID: Int {
        let id = designated.load(ordering: .relaxed)
        return id != 0 ? id : Sampler.mainThreadID
    }

    /// Treats the calling thread as the main thread (for a loop driven by a test), until
    /// ``resetMainThread()``.
    public static func designateCurrentThreadAsMain() {
        designated.store(Sampler.currentThreadID, ordering: .relaxed)
    }

    /// Returns to treating the OS main thread as the main thread.
    public static func resetMainThread() {
        designated.store(0, ordering: .relaxed)
    }

    /// Sets the clock violation times are read from.
    public static func useClock(_ clock: any LaunchClock) {
        clockSource.withLock { $0 = clock }
    }

    /// Whether the calling thread is the main thread.
    @inline(__always)
    public static var isMainThread: Bool { Sampler.currentThreadID == mainThreadID }

    /// Records a violation when the caller is not on the main thread. Repeats from one call site
    /// are counted on the first record.
    @inline(never)
    public static func check(_ operation: @autoclosure () -> String, rule: String = "ui-on-main") {
        guard !isMainThread else { return }
        let stack = Sampler.captureCurrentStack()
        let site = stack.dropFirst().first ?? 0
        let name = operation()
        let time = clockSource.withLock { $0.nowNs }
        let thread = Sampler.currentThreadName
        recorded.withLock { state in
            if let index = state.list.firstIndex(where: {
                $0.rule == rule && $0.operation == name && $0.stack.dropFirst().first == site
            }) {
                state.list[index].count += 1
            } else {
                state.list.append(
                    ThreadViolation(
                        id: state.nextID, rule: rule, operation: name, threadID: Sampler.currentThreadID,
                        threadName: thread, timeNs: time, stack: stack, count: 1))
                state.nextID += 1
            }
        }
    }

    /// The violations recorded so far.
    public static var violations: [ThreadViolation] { recorded.withLock { $0.list } }

    /// Forgets recorded violations.
    public static func clearViolations() {
        recorded.withLock { $0.list.removeAll() }
    }
}
