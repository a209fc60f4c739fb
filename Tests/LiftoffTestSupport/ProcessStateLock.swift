import Testing

/// One lock for the whole test process: every test target runs in one process, and suites of
/// different targets run in parallel, while the sampler, the signal handler, the thread rules and
/// the machine's two cores are shared. A test that samples, signals, touches process-wide rule
/// state or loads both cores holds this lock while it runs, so no two of them overlap.
public actor ProcessStateLock {
    /// The one lock.
    public static let shared = ProcessStateLock()

    private var held = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    /// Runs `body` holding the lock, after every earlier holder released it.
    public nonisolated func withLock(_ body: @Sendable () async throws -> Void) async throws {
        await acquire()
        do {
            try await body()
        } catch {
            await release()
            throw error
        }
        await release()
    }

    private func acquire() async {
        guard held else {
            held = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    private func release() {
        if waiting.isEmpty {
            held = false
        } else {
            // Hand the lock straight to the next waiter: it stays held.
            waiting.removeFirst().resume()
        }
    }
}

/// Runs each test of a suite (or one test) holding ``ProcessStateLock``, within a time limit that
/// counts the test's own run, not its wait for the lock: on a busy machine the holders before it
/// may take minutes between them, which says nothing about this test.
public struct ProcessStateTrait: TestTrait, SuiteTrait, TestScoping {
    /// How long each test may run once it holds the lock.
    public var timeLimit: Duration

    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        // A suite's own scope holds nothing; each of its test cases takes the lock.
        guard testCase != nil else { return try await function() }
        let limit = timeLimit
        try await ProcessStateLock.shared.withLock {
            try await withoutActuallyEscaping(function) { body in
                try await withThrowingTaskGroup(of: Bool.self) { group in
                    group.addTask {
                        try await body()
                        return true
                    }
                    group.addTask {
                        try await Task.sleep(for: limit)
                        return false
                    }
                    defer { group.cancelAll() }
                    // The first to finish decides: the test, or the limit (which cancels the test).
                    if try await group.next() == false {
                        Issue.record(
                            "Time limit was exceeded: \(limit) holding the process-state lock (its wait for the lock not counted)",
                            sourceLocation: test.sourceLocation)
                    }
                }
            }
        }
    }
}

extension Trait where Self == ProcessStateTrait {
    /// The test (or every test of the suite) holds the process-wide lock while it runs: it samples,
    /// signals, changes process-wide state or loads the machine's cores. Each test may run for
    /// `timeLimit` once it holds the lock; use this in place of `.timeLimit`, which would also count
    /// the wait for the lock.
    public static func processState(timeLimit: Duration) -> Self { ProcessStateTrait(timeLimit: timeLimit) }
}

/// Holds ``ProcessStateLock`` once around a whole suite: its tests run beside each other, as a
/// user's parallel suites do, but not beside tests that change process-wide state (clear the
/// recorded violations, replace the rules' handlers).
public struct SuiteProcessStateTrait: SuiteTrait, TestScoping {
    public var isRecursive: Bool { false }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await ProcessStateLock.shared.withLock(function)
    }
}

extension Trait where Self == SuiteProcessStateTrait {
    /// The suite holds the process-wide lock while all its tests run, side by side.
    public static var processStateForWholeSuite: Self { SuiteProcessStateTrait() }
}
