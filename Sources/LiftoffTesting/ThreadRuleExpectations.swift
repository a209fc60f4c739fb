@_exported import Liftoff
import Synchronization
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
/// violations there are collected when they happen while `body` runs. Blocking calls in the UI
/// context are checked while it runs (`ThreadRules.blockingCallRules`).
///
/// ```swift
/// let (_, violations) = collectThreadViolations { model.reload() }
/// #expect(violations.isEmpty)
/// ```
public func collectThreadViolations<T>(_ body: () throws -> T) rethrows -> (result: T, violations: [ThreadViolation]) {
    let before = ThreadRuleSnapshot()
    let result = try ThreadRules.checkingBlockingCalls { try ThreadRules.withScope(before.scope) { try body() } }
    return (result, before.violationsSince())
}

/// The violations recorded at one moment, to tell new ones (and new repeats of old ones) apart.
struct ThreadRuleSnapshot {
    /// The collection scope the collected code runs in.
    let scope = ThreadRules.makeScope()
    /// The Swift Testing test collecting, if any.
    let test: String?
    private let counts: [Int: Int]

    /// Repeats of each violation that a collection returned, by that collection's scope: an
    /// enclosing collection (a `.threadRules` test around a `collectThreadViolations`) leaves
    /// them to it.
    private static let claims = Mutex<[UInt64: [Int: Int]]>([:])

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
    /// their count), less those a collection inside this one returned. What it returns is this
    /// collection's: collections around it do not report them again.
    func violationsSince() -> [ThreadViolation] {
        let claimedInside = ThreadRuleSnapshot.claims.withLock { claims in
            claims.filter { $0.key != scope && ThreadRules.scope($0.key, isWithin: scope) }.values
                .reduce(into: [Int: Int]()) { total, claim in total.merge(claim, uniquingKeysWith: +) }
        }
        let collected = ThreadRules.violations.compactMap { violation -> ThreadViolation? in
            // Another collection's code, such as a test running beside this one.
            if let other = violation.scope, !ThreadRules.scope(other, isWithin: scope) { return nil }
            // Code of another test, outside any collection.
            if let test, let other = violation.test, other != test { return nil }
            let new = violation.count - (counts[violation.id] ?? 0) - (claimedInside[violation.id] ?? 0)
            guard new > 0 else { return nil }
            var repeated = violation
            repeated.count = new
            return repeated
        }
        ThreadRuleSnapshot.claims.withLock { claims in
            for violation in collected { claims[scope, default: [:]][violation.id, default: 0] += violation.count }
        }
        return collected
    }
}

extension ThreadViolation {
    /// Where a test framework should point for this violation: the code that broke the rule,
    /// when its debug information names a file and line.
    var sourceLocation: SourceLocation? {
        guard let site = callSite(), let path = site.file, let line = site.line else { return nil }
        let file = path.split(separator: "/").last.map(String.init) ?? path
        return SourceLocation(fileID: "\(site.moduleName ?? "Unknown")/\(file)", filePath: path, line: line, column: 1)
    }
}

extension SymbolizedFrame {
    /// The Swift module of a mangled Swift symbol (`$s5Inbox…` is in `Inbox`).
    var moduleName: String? {
        guard let symbol, symbol.hasPrefix("$s") || symbol.hasPrefix("$S") else { return nil }
        let rest = symbol.dropFirst(2)
        let digits = rest.prefix { $0.isASCII && $0.isNumber }
        guard let length = Int(digits), length > 0 else { return nil }
        let name = rest.dropFirst(digits.count).prefix(length)
        return name.count == length ? String(name) : nil
    }
}

/// Runs `body` and returns the thread-rule violations recorded while it ran. `body` runs in the
/// caller's isolation, so a `@MainActor` test can touch its views in it.
public func collectThreadViolations(
    isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> Void
) async rethrows -> [ThreadViolation] {
    let before = ThreadRuleSnapshot()
    try await ThreadRules.checkingBlockingCalls { try await ThreadRules.withScope(before.scope) { try await body() } }
    return before.violationsSince()
}

/// Fails the current Swift Testing test, with each violating stack in the message, when
/// `body` breaks a thread rule: at the line that broke it when the binary's debug information
/// names one, else at this call.
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
        Issue.record(Comment(rawValue: violation.report()), sourceLocation: violation.sourceLocation ?? sourceLocation)
    }
}

/// Fails the current Swift Testing test, with each violating stack in the message, when the
/// async `body` breaks a thread rule: at the line that broke it when the binary's debug
/// information names one, else at this call. `body` runs in the caller's isolation.
///
/// ```swift
/// @Test func reloadKeepsUIOnMain() async {
///     await expectNoThreadViolations { await model.reload() }
/// }
/// ```
public func expectNoThreadViolations(
    isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> Void,
    sourceLocation: SourceLocation = #_sourceLocation
) async rethrows {
    let violations = try await collectThreadViolations(isolation: isolation, body)
    for violation in violations {
        Issue.record(Comment(rawValue: violation.report()), sourceLocation: violation.sourceLocation ?? sourceLocation)
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

/// Fails the current XCTest test, with each violating stack in the message, when the async
/// `body` breaks a thread rule.
public func XCTAssertNoThreadViolations(
    isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> Void,
    file: StaticString = #filePath, line: UInt = #line
) async rethrows {
    let violations = try await collectThreadViolations(isolation: isolation, body)
    for violation in violations {
        XCTFail(violation.report(), file: file, line: line)
    }
}
#endif
