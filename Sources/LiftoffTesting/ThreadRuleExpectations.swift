@_exported import Liftoff
import Testing

#if canImport(XCTest)
import XCTest
#endif

/// Runs `body` and returns what it returned with the thread-rule violations its code caused.
///
/// The code runs in a collection scope of its own, carried into the tasks it starts (child and
/// unstructured tasks), the blocks it hands to Dispatch queues (`async`, `asyncAfter`, groups)
/// and the launch tasks of schedulers it makes: their violations are collected, and those of
/// tests running beside it are not. Threads it starts itself and `Task.detached` carry no scope;
/// violations there are collected when they happen while `body` runs.
///
/// ```swift
/// let (_, violations) = collectThreadViolations { model.reload() }
/// #expect(violations.isEmpty)
/// ```
public func collectThreadViolations<T>(_ body: () throws -> T) rethrows -> (result: T, violations: [ThreadViolation]) {
    let before = ThreadRuleSnapshot()
    let result = try ThreadRules.$scope.withValue(before.scope) { try body() }
    return (result, before.violationsSince())
}

/// The violations recorded at one moment, to tell new ones (and new repeats of old ones) apart.
struct ThreadRuleSnapshot {
    /// The collection scope the collected code runs in.
    let scope = ThreadRules.makeScope()
    /// The Swift Testing test collecting, if any.
    let test: String?
    private let counts: [Int: Int]

    init() {
        ThreadRuleSnapshot.nameTests()
        test = ThreadRuleSnapshot.currentTest()
        counts = Dictionary(ThreadRules.violations.map { ($0.id, $0.count) }, uniquingKeysWith: { first, _ in first })
    }

    /// The running Swift Testing test's identity.
    @Sendable static func currentTest() -> String? {
        Test.current.map { "\($0.id)" }
    }

    /// Tells thread rules how to name the test a violating task belongs to (once).
    static func nameTests() {
        ThreadRules.nameTests(with: currentTest)
    }

    /// Violations recorded since, and earlier ones that repeated since (with the new repeats as
    /// their count).
    func violationsSince() -> [ThreadViolation] {
        ThreadRules.violations.compactMap { violation in
            // Another collection's code, such as a test running beside this one.
            if let other = violation.scope, !ThreadRules.scope(other, isWithin: scope) { return nil }
            // Code of another test, outside any collection.
            if let test, let other = violation.test, other != test { return nil }
            guard let earlier = counts[violation.id] else { return violation }
            guard violation.count > earlier else { return nil }
            var repeated = violation
            repeated.count = violation.count - earlier
            return repeated
        }
    }
}

/// Runs `body` and returns the thread-rule violations recorded while it ran. `body` runs in the
/// caller's isolation, so a `@MainActor` test can touch its views in it.
public func collectThreadViolations(
    isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> Void
) async rethrows -> [ThreadViolation] {
    let before = ThreadRuleSnapshot()
    try await ThreadRules.$scope.withValue(before.scope) { try await body() }
    return before.violationsSince()
}

/// Fails the current Swift Testing test, with each violating stack in the message, when
/// `body` breaks a thread rule.
///
/// ```swift
/// @Test func reloadKeepsUIOnMain() {
///     expectNoThreadViolations { model.reload() }
/// }
/// ```
public func expectNoThreadViolations(
    _ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation
) rethrows {
    let (_, violations) = try collectThreadViolations(body)
    for violation in violations {
        Issue.record(Comment(rawValue: violation.report()), sourceLocation: sourceLocation)
    }
}

#if canImport(XCTest)
/// Fails the current XCTest test, with each violating stack in the message, when `body`
/// breaks a thread rule.
public func XCTAssertNoThreadViolations(
    _ body: () throws -> Void, file: StaticString = #filePath, line: UInt = #line
) rethrows {
    let (_, violations) = try collectThreadViolations(body)
    for violation in violations {
        XCTFail(violation.report(), file: file, line: line)
    }
}
#endif
