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
    let before = ThreadRules.violations.map(\.id).max() ?? 0
    let result = try body()
    return (result, ThreadRules.violations.filter { $0.id > before })
}

/// Runs `body` and returns the thread-rule violations recorded while it ran.
public func collectThreadViolations(_ body: () async throws -> Void) async rethrows -> [ThreadViolation] {
    let before = ThreadRules.violations.map(\.id).max() ?? 0
    try await body()
    return ThreadRules.violations.filter { $0.id > before }
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
