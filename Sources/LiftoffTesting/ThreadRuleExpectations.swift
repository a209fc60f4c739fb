@_exported import Liftoff
import Testing

#if canImport(XCTest)
import XCTest
#endif

/// Runs `body` and returns what it returned with the thread-rule violations recorded while it
/// ran (on any thread).
///
/// ```swift
/// let (_, violations) = collectThreadViolations { model.reload() }
/// #expect(violations.isEmpty)
/// ```
public func collectThreadViolations<T>(_ body: () throws -> T) rethrows -> (result: T, violations: [ThreadViolation]) {
    let before = ThreadRuleSnapshot()
    let result = try body()
    return (result, before.violationsSince())
}

/// The violations recorded at one moment, to tell new ones (and new repeats of old ones) apart.
struct ThreadRuleSnapshot {
    private let counts: [Int: Int]

    init() {
        counts = Dictionary(ThreadRules.violations.map { ($0.id, $0.count) }, uniquingKeysWith: { first, _ in first })
    }

    /// Violations recorded since, and earlier ones that repeated since (with the new repeats as
    /// their count).
    func violationsSince() -> [ThreadViolation] {
        ThreadRules.violations.compactMap { violation in
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
    try await body()
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
