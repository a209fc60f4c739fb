import Foundation

/// Receives thread-rule violations: what happens when a rule is broken.
///
/// ``ThreadRules`` finds violations and hands each call site's first one to the rule's handlers
/// (``ThreadRules/Configuration/setHandlers(_:for:)``), as swift-log's `Logger` hands messages to a
/// `LogHandler`. Liftoff's own handlers record, print and trap; `LiftoffLogging` adds one that
/// writes through swift-log. Write your own to count violations in metrics, send them to a crash
/// reporter, or fail a test:
///
/// ```swift
/// struct CountingHandler: ThreadViolationHandler {
///     let counter: Counter
///     func handle(_ violation: ThreadViolation) { counter.increment(rule: violation.rule) }
/// }
/// var rules = ThreadRules.Configuration()
/// rules.defaultHandlers = [RecordingViolationHandler(), CountingHandler(counter: counter)]
/// ThreadRules.bootstrap(rules)
/// ```
public protocol ThreadViolationHandler: Sendable {
    /// Handles a violation. Called on the thread that broke the rule, once per call site (its
    /// repeats only raise ``ThreadViolation/count`` on the recorded violation); keep it quick.
    func handle(_ violation: ThreadViolation)
}

/// Keeps violations in ``ThreadRules/violations``, where profiles, `Application` events and
/// `LiftoffTesting` read them: the default handler of every rule.
public struct RecordingViolationHandler: ThreadViolationHandler {
    /// Creates the handler.
    public init() {}

    /// Keeps `violation`.
    public func handle(_ violation: ThreadViolation) {
        ThreadRules.keep(violation)
    }
}

/// Prints each violation's message to standard error, prefixed `liftoff:`.
public struct StandardErrorViolationHandler: ThreadViolationHandler {
    /// Creates the handler.
    public init() {}

    /// Prints `violation`'s message.
    public func handle(_ violation: ThreadViolation) {
        FileHandle.standardError.write(Data("liftoff: \(violation.message)\n".utf8))
    }
}

/// Prints the whole report of a violation, with its symbolized stack, then aborts the process:
/// for debugging, where a broken rule should stop the program at once.
public struct TrappingViolationHandler: ThreadViolationHandler {
    /// Creates the handler.
    public init() {}

    /// Prints `violation`'s report and aborts.
    public func handle(_ violation: ThreadViolation) {
        FileHandle.standardError.write(Data("liftoff: \(violation.report())\n".utf8))
        abort()
    }
}
