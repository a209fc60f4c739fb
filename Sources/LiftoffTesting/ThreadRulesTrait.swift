import Liftoff
import Testing

#if canImport(XCTest)
import XCTest
#endif

/// Fails a test for each thread-rule violation its code causes, as if its whole body ran in
/// `expectNoThreadViolations`. Put it on a suite to check every test in it.
///
/// ```swift
/// @Suite(.threadRules) struct ModelTests {
///     @Test @MainActor func reload() async { await model.reload() }
/// }
/// ```
public struct ThreadRulesTrait: TestTrait, SuiteTrait, TestScoping {
    /// Applies to every test in a suite it is on, nested suites included.
    public var isRecursive: Bool { true }

    /// Runs one test in a collection of its own and records an issue for each violation, at the
    /// line that broke the rule, with the violating stack. Violations the test collected itself
    /// (with `collectThreadViolations`) are left to it.
    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        let violations = try await collectThreadViolations { try await function() }
        for violation in violations {
            // At the code that broke the rule when its file and line are known.
            Issue.record(Comment(rawValue: violation.report()), sourceLocation: violation.sourceLocation ?? test.sourceLocation)
        }
    }
}

extension Trait where Self == ThreadRulesTrait {
    /// Fails the test for each thread-rule violation its code causes (see ``ThreadRulesTrait``).
    public static var threadRules: Self { ThreadRulesTrait() }
}

#if canImport(XCTest)
/// A test case whose every test fails for each thread-rule violation its code causes: the
/// XCTest counterpart of the `.threadRules` trait. Subclass it instead of `XCTestCase`.
///
/// ```swift
/// final class ModelTests: ThreadRulesTestCase {
///     func testReload() { model.reload() }
/// }
/// ```
open class ThreadRulesTestCase: XCTestCase {
    /// Runs the test in a collection of its own, then fails it once per violation, at the line
    /// that broke the rule when its file and line are known. Violations the test collected
    /// itself (with `collectThreadViolations`) are left to it.
    open override func invokeTest() {
        let (_, violations) = collectThreadViolations { super.invokeTest() }
        for violation in violations {
            let site = violation.sourceLocation
            recordFailure(
                withDescription: violation.report(), inFile: site?.filePath ?? #filePath, atLine: site?.line ?? #line,
                expected: true)
        }
    }
}
#endif
