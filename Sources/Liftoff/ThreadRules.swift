import Foundation
import LiftoffProfile
import LiftoffSampler
import Synchronization

/// A breach of a thread rule, with the stack of the code that broke it.
public struct ThreadViolation: Sendable, Equatable {
    /// A process-wide sequence number: later violations have larger ids.
    public var id: Int
    /// The rule, e.g. `ui-on-main`.
    public var rule: Profile.RuleName
    /// What was done, e.g. `View.setNeedsDisplay()` or the launch task's name.
    public var operation: String
    /// The launch task that was running, if the scheduler ran the code.
    public var task: String?
    /// Kernel thread id of the offending thread.
    public var threadID: Int
    /// Its name.
    public var threadName: String
    /// Label of the Dispatch queue it ran on, or "".
    public var queueLabel: String
    /// Clock time of the first occurrence.
    public var timeNs: UInt64
    /// Code addresses of the offending call, leaf first (symbolize with an `ELFSymbolizer`).
    public var stack: [UInt]
    /// How many times it happened from the same call site.
    public var count: Int
    /// Whether this is a warning (the work was moved to the main thread) rather than an error.
    public var isWarning: Bool
    /// The collection scope (`LiftoffTesting`'s) the code ran in, if any: its task, child tasks,
    /// unstructured tasks it started and launch tasks a scheduler it started ran.
    package var scope: UInt64? = nil
    /// The test whose task broke the rule, when a test framework told (see `testIdentity`).
    package var test: String? = nil

    /// One sentence for people.
    public var message: String {
        let place = "thread \(threadName) (\(threadID))" + (queueLabel.isEmpty ? "" : ", queue \(queueLabel)")
        let inTask = task.map { operation.contains("'\($0)'") ? "" : " in launch task '\($0)'" } ?? ""
        let times = count > 1 ? " (\(count) times)" : ""
        switch rule {
        case ThreadRules.uiOnMain:
            return "\(operation)\(inTask) ran on \(place), not on the main thread\(times)."
        case ThreadRules.noBlockingOnMainDuringLaunch:
            return "\(operation)\(inTask) blocked the main thread during launch\(times)."
        case ThreadRules.uiHoppedToMain:
            return "\(operation) is UI work submitted on \(place); it was moved to the main thread\(times)."
        case _ where ThreadRules.blockingCallRules.contains(rule):
            return BlockingCalls.sentence(operation + inTask, place: place, count: count)
        default:
            return "\(operation)\(inTask) broke rule '\(rule)' on \(place)\(times)."
        }
    }

    /// The frame of the code that broke the rule: the first frame outside Liftoff and the system
    /// libraries (the C library, Foundation, Dispatch, the Swift runtime) with a source file and
    /// line, or nil when the debug information names none.
    public func callSite(symbolizer: any Symbolizer = ThreadRules.symbolizer) -> SymbolizedFrame? {
        stack.lazy.flatMap { symbolizer.frames(at: $0 &- 1) }
            .first { !Profile.Frame.isLiftoff($0.name) && !BlockingCallers.isSystem($0) && $0.file != nil && $0.line != nil }
    }

    /// The message followed by the symbolized stack, one frame a line with its `File.swift:42`,
    /// from the first frame outside Liftoff (Liftoff's own frames above it are counted in one
    /// line). Functions the compiler inlined are frames of their own, marked `inlined`. Further
    /// down, Liftoff's frames with the thunks and task-local bindings around them (a block
    /// that `LiftoffTesting` handed over to Dispatch) are counted in one line too.
    public func report(symbolizer: any Symbolizer = ThreadRules.symbolizer) -> String {
        var lines = ["Thread rule '\(rule)' violated: \(message)"]
        let frames = stack.flatMap { symbolizer.frames(at: $0 &- 1) }
        let own = frames.prefix { Profile.Frame.isLiftoff($0.name) }.count
        let shown = own < frames.count ? own : 0
        let short = SwiftNameSimplifier.shortNames(of: Array(frames.dropFirst(shown)))
        if shown > 0 { lines.append("  (\(shown) Liftoff frame\(shown == 1 ? "" : "s") above)") }
        let hidden = ThreadViolation.handOffFrames(in: frames)
        var position = shown
        while position < frames.count {
            if hidden.contains(position) {
                let run = frames[position...].indices.prefix { hidden.contains($0) }.count
                lines.append("  (\(run) frame\(run == 1 ? "" : "s") of Liftoff's hand-over)")
                position += run
                continue
            }
            let frame = frames[position]
            let place = [frame.isInlined ? "inlined" : nil, frame.location ?? frame.object].compactMap { $0 }
            lines.append("  \(position): \(short[position - shown] ?? frame.name) (\(place.joined(separator: ", ")))")
            position += 1
        }
        return lines.joined(separator: "\n")
    }

    /// Positions of Liftoff frames below the first frame outside Liftoff, with the thunks,
    /// partial applications and task-local bindings next to them.
    static func handOffFrames(in frames: [SymbolizedFrame]) -> Set<Int> {
        func isGlue(_ name: String) -> Bool {
            name.hasPrefix("thunk for ") || name.hasPrefix("partial apply for ") || name.hasPrefix("reabstraction thunk")
                || name.contains("TaskLocal.withValue") || name.contains("TaskLocal<")
        }
        guard let firstOutside = frames.firstIndex(where: { !Profile.Frame.isLiftoff($0.name) }) else { return [] }
        var hidden = Set<Int>()
        var index = firstOutside
        while index < frames.count {
            guard Profile.Frame.isLiftoff(frames[index].name) || frames[index].name.contains("LiftoffTesting.") else {
                index += 1
                continue
            }
            // Widen to the glue on both sides.
            var low = index
            while low - 1 > firstOutside, isGlue(frames[low - 1].name) || Profile.Frame.isLiftoff(frames[low - 1].name) { low -= 1 }
            var high = index
            while high + 1 < frames.count, isGlue(frames[high + 1].name) || Profile.Frame.isLiftoff(frames[high + 1].name) { high += 1 }
            for hiddenIndex in low...high { hidden.insert(hiddenIndex) }
            index = high + 1
        }
        return hidden
    }
}

/// The name of the launch task running on a thread, kept in a thread-local slot while it runs.
final class LaunchTaskName: Sendable {
    let name: String
    init(_ name: String) { self.name = name }

    /// The task running on the calling thread, if a scheduler runs one.
    static var current: String? {
        CurrentThread.context.map { Unmanaged<LaunchTaskName>.fromOpaque($0).takeUnretainedValue().name }
    }

    /// Runs `body` with this task marked as running on the calling thread.
    @inline(__always)
    func running<T>(_ body: () throws -> T) rethrows -> T {
        let previous = CurrentThread.context
        CurrentThread.context = UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque())
        defer { CurrentThread.context = previous }
        return try body()
    }
}

/// Liftoff's thread rules, enforced with real stacks.
///
/// - `ui-on-main`: views, windows, view controllers and UI-tagged launch tasks run on the main
///   thread (the thread running the application's loop).
/// - `no-blocking-on-main-during-launch`: `.blocking` and `.io` launch tasks, and code that calls
///   ``noteBlocking(_:)``, do not run on the main thread before the first frame.
/// - `disk-read-on-main`, `disk-write-on-main`, `network-on-main`, `sleep-on-main` and
///   `lock-wait-on-main`: the C library's blocking calls in UI context, caught by themselves while
///   a test collects violations or a launch runs (``blockingCallRules``).
/// - Your own rules: ``report(rule:operation:)``.
///
/// A violation carries the rule, the launch task, thread name and id, queue label, time and
/// stack. What happens to it is up to the rule's handlers (``ThreadViolationHandler``), the way
/// swift-log hands messages to a `LogHandler`: by default ``RecordingViolationHandler`` keeps it
/// for the profile and for tests; a ``Configuration``'s ``Configuration/setPolicy(_:for:)`` adds
/// printing (log) or aborting (trap), and its ``Configuration/setHandlers(_:for:)`` installs any
/// handlers, your own included. Each call site reaches the handlers once; its repeats are counted
/// on the first record. ``Configuration/allow(prefix:)`` silences code by symbol or module prefix.
///
/// Configure once at start-up with ``bootstrap(_:)``; a test runs under its own configuration with
/// `ThreadRules.withConfiguration(_:_:)`.
public enum ThreadRules {
    /// The common sets of handlers: what happens when a rule is broken.
    public enum Policy: String, Sendable, CaseIterable {
        /// Keep the violation for the profile and for tests.
        case record
        /// Keep it and print its message to standard error the first time.
        case log
        /// Keep it, print the whole report with its stack, then abort the process.
        case trap

        /// The handlers that carry out this policy.
        public var handlers: [any ThreadViolationHandler] {
            switch self {
            case .record: [RecordingViolationHandler()]
            case .log: [RecordingViolationHandler(), StandardErrorViolationHandler()]
            case .trap: [RecordingViolationHandler(), TrappingViolationHandler()]
            }
        }
    }

    /// UI work must run on the main thread.
    public static let uiOnMain = Profile.RuleName.uiOnMain
    /// Blocking and I/O work must not run on the main thread during launch.
    public static let noBlockingOnMainDuringLaunch = Profile.RuleName.noBlockingOnMainDuringLaunch
    /// UI work submitted to a background lane was moved to the main thread (a warning).
    public static let uiHoppedToMain = Profile.RuleName.uiHoppedToMain

    /// A call site seen before: its rule, operation and scope, and the violation it became.
    private struct Site {
        var rule: Profile.RuleName
        var operation: String
        var scope: UInt64?
        var test: String?
        var id: Int
    }

    private struct Record {
        var list: [ThreadViolation] = []
        /// The call sites seen since the last ``clearViolations()``, by their innermost frames
        /// (hashing six addresses is cheaper than hashing the names).
        var sites: [[UInt]: [Site]] = [:]
        var nextID = 1
    }

    private static let designated = Atomic<Int>(0)
    private static let launching = Atomic<Bool>(false)
    private static let recorded = Mutex(Record())

    /// The symbolizer used for allow-lists and reports.
    public static let symbolizer = ELFSymbolizer()

    /// The launch task running on this thread or task, set by the scheduler.
    @TaskLocal static var currentTask: String?

    /// The collection scope of the running code, so that tests running side by side each see
    /// their own violations (set by `LiftoffTesting`; carried into child and unstructured tasks,
    /// and into launch tasks by the scheduler, with the rest of ``context``).
    package static var scope: UInt64? { context.scope }

    /// Each collection scope's enclosing scope: a collection inside another belongs to both.
    private static let scopes = Mutex((next: UInt64(1), parents: [UInt64: UInt64]()))

    /// Names the test the calling task belongs to (`LiftoffTesting` installs Swift Testing's
    /// `Test.current`), so code outside any collection is still told apart by test.
    private static let testIdentity = Mutex<(@Sendable () -> String?)?>(nil)
    /// Whether `testIdentity` is set: outside tests, recording a violation reads only this.
    private static let namesTests = Atomic<Bool>(false)

    /// The test the running code belongs to: the one that handed it over (`LiftoffTesting`
    /// carries it, with the rest of ``context``, into blocks given to Dispatch queues, where the
    /// test framework's own task-local is unset), or the test framework's current test once
    /// `nameTests(with:)` was called.
    package static var currentTest: String? {
        if let handingTest = context.handingTest { return handingTest }
        return namesTests.load(ordering: .acquiring) ? testIdentity.withLock({ $0 })?() : nil
    }

    /// Installs how to name the test a violating task belongs to, once.
    package static func nameTests(with identity: @escaping @Sendable () -> String?) {
        guard !namesTests.load(ordering: .acquiring) else { return }
        testIdentity.withLock { if $0 == nil { $0 = identity } }
        namesTests.store(true, ordering: .releasing)
    }

    /// A new collection scope, inside the current one when there is one.
    package static func makeScope() -> UInt64 {
        let enclosing = scope
        return scopes.withLock { state in
            let id = state.next
            state.next += 1
            if let enclosing { state.parents[id] = enclosing }
            return id
        }
    }

    /// Whether code in scope `inner` ran inside scope `outer` (or is `outer`'s own).
    package static func scope(_ inner: UInt64, isWithin outer: UInt64) -> Bool {
        scopes.withLock { state in
            var current: UInt64? = inner
            while let id = current {
                if id == outer { return true }
                current = state.parents[id]
            }
            return false
        }
    }

    // MARK: Cheap checks

    /// Whether the calling thread is the process's main thread: a cached thread-id compare, much
    /// cheaper than `Thread.isMainThread`.
    @inline(__always)
    public static var isMainThread: Bool { CurrentThread.isMain }

    /// Stops the program with a message when not on the main thread; always on.
    @inline(__always)
    public static func preconditionMainThread(
        _ message: @autoclosure () -> String = "must run on the main thread", file: StaticString = #fileID,
        line: UInt = #line
    ) {
        if !CurrentThread.isMain { preconditionFailure(message(), file: file, line: line) }
    }

    /// Like ``preconditionMainThread(_:file:line:)`` in debug builds; compiled out in release.
    @inline(__always)
    public static func assertMainThread(
        _ message: @autoclosure () -> String = "must run on the main thread", file: StaticString = #fileID,
        line: UInt = #line
    ) {
        assert(CurrentThread.isMain, message(), file: file, line: line)
    }

    // MARK: The main thread and the launch

    /// The kernel thread id treated as the main thread for UI rules: the OS main thread unless a
    /// driver designated another.
    public static var uiThreadID: Int {
        let id = designated.load(ordering: .relaxed)
        return id != 0 ? id : CurrentThread.mainThreadID
    }

    /// Treats the calling thread as the main thread for UI rules (for a loop a test drives),
    /// until ``resetUIThread()``.
    public static func designateCurrentThreadAsUIThread() {
        designated.store(CurrentThread.id, ordering: .relaxed)
        BlockingCalls.setUIThread(CurrentThread.id)
    }

    /// Returns to treating the OS main thread as the main thread.
    public static func resetUIThread() {
        designated.store(0, ordering: .relaxed)
        BlockingCalls.setUIThread(0)
    }

    /// Whether the calling code runs where UI work belongs: on the thread UI rules treat as the
    /// main thread, or on Dispatch's main queue, where the main actor runs (under `swift test` on
    /// Linux a pool thread drains that queue, not the OS main thread).
    @inline(__always)
    public static var isUIThread: Bool { CurrentThread.id == uiThreadID || CurrentThread.isOnMainQueue }

    /// Set while a UI operation that has been checked runs: the checks of what it calls are part
    /// of it, so one statement off the main thread is one violation.
    @TaskLocal static var insideUIOperation = false

    /// Whether a launch is in progress (from launch start to the first frame).
    public static var isLaunching: Bool { launching.load(ordering: .relaxed) }

    /// Marks a launch begun or over; blocking calls are checked while one runs.
    static func setLaunching(_ value: Bool) {
        let was = launching.exchange(value, ordering: .relaxed)
        if value, !was { armBlockingCalls() }
        if !value, was { BlockingCalls.disarm() }
    }

    // MARK: Checks

    /// Records a `ui-on-main` violation when the caller is not on the main thread.
    @inline(never)
    public static func requireUIThread(_ operation: @autoclosure () -> String) {
        guard !isUIThread, !insideUIOperation else { return }
        record(rule: uiOnMain, operation: operation(), stack: Sampler.captureCurrentStack())
    }

    /// Runs `body`, the UI operation `operation`: a `ui-on-main` violation when the caller is not
    /// on the main thread, and none for the UI work `body` does in turn.
    @inline(never)
    public static func requireUIThread<T>(_ operation: @autoclosure () -> String, around body: () throws -> T) rethrows -> T {
        if isUIThread { return try body() }
        if !insideUIOperation { record(rule: uiOnMain, operation: operation(), stack: Sampler.captureCurrentStack()) }
        return try $insideUIOperation.withValue(true) { try body() }
    }

    /// Declares that the caller is about to block (file or network I/O, a lock, heavy work):
    /// a violation when it runs on the main thread during launch.
    @inline(never)
    public static func noteBlocking(_ what: @autoclosure () -> String) {
        // The launch flag first: it is one load, the UI check may ask Dispatch for the queue.
        guard isLaunching, isUIThread else { return }
        record(rule: noBlockingOnMainDuringLaunch, operation: what(), stack: Sampler.captureCurrentStack())
    }

    /// Records a violation of your own rule, with the caller's stack.
    @inline(never)
    public static func report(rule: Profile.RuleName, operation: String) {
        record(rule: rule, operation: operation, stack: Sampler.captureCurrentStack())
    }

    static func record(
        rule: Profile.RuleName, operation: String, stack: [UInt], task: String? = nil, warning: Bool = false, site: [UInt]? = nil
    ) {
        // A call site is the innermost frames: Liftoff's own, then the code that called it.
        let frames = site ?? Array(stack.prefix(6))
        let context = ThreadRules.context
        let time = context.clock?.nowNs ?? MonotonicClock.nowNs
        let taskName = task ?? currentTask ?? LaunchTaskName.current
        let scope = context.scope
        let test = currentTest
        // Repeats from one call site are counted on the first record.
        let repeated = recorded.withLock { state -> Bool in
            guard
                let id = state.sites[frames]?.first(where: {
                    $0.rule == rule && $0.operation == operation && $0.scope == scope && $0.test == test
                })?.id
            else {
                return false
            }
            if let index = state.list.lastIndex(where: { $0.id == id }) { state.list[index].count += 1 }
            return true
        }
        if repeated { return }
        let configuration = context.configuration ?? ThreadRules.configuration
        let allowed = configuration.allowedPrefixes
        if !allowed.isEmpty, isAllowed(stack, prefixes: allowed) { return }
        let handlers = configuration.handlers(for: rule)
        let violation = recorded.withLock { state -> ThreadViolation in
            let violation = ThreadViolation(
                id: state.nextID, rule: rule, operation: operation, task: taskName, threadID: CurrentThread.id,
                threadName: CurrentThread.name, queueLabel: CurrentThread.queueLabel, timeNs: time,
                stack: stack, count: 1, isWarning: warning, scope: scope, test: test)
            state.nextID += 1
            state.sites[frames, default: []].append(
                Site(rule: rule, operation: operation, scope: scope, test: test, id: violation.id))
            return violation
        }
        for handler in handlers { handler.handle(violation) }
    }

    /// Keeps a violation in ``violations`` (what ``RecordingViolationHandler`` does).
    static func keep(_ violation: ThreadViolation) {
        recorded.withLock { $0.list.append(violation) }
    }

    private static func isAllowed(_ stack: [UInt], prefixes: [String]) -> Bool {
        for address in stack.prefix(16) {
            let name = symbolizer.symbolize(address &- 1).name
            for prefix in prefixes
            where name.hasPrefix(prefix) || name.contains(" " + prefix) || name.contains("(" + prefix) {
                return true
            }
        }
        return false
    }

    // MARK: Results

    /// The violations recorded so far.
    public static var violations: [ThreadViolation] { recorded.withLock { $0.list } }

    /// Forgets recorded violations and the call sites seen (ids keep growing).
    public static func clearViolations() {
        recorded.withLock {
            $0.list.removeAll()
            $0.sites.removeAll()
        }
    }
}
