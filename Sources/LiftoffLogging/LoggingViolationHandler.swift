import Liftoff
import Logging

/// Writes thread-rule violations through swift-log, for apps that already log that way: each
/// violation is one message with the rule, thread, queue, task and occurrence time as metadata.
///
/// ```swift
/// import LiftoffLogging
///
/// let logger = Logger(label: "com.example.app.thread-rules")
/// var rules = ThreadRules.Configuration()
/// rules.defaultHandlers = [RecordingViolationHandler(), LoggingViolationHandler(logger: logger)]
/// ThreadRules.bootstrap(rules)
/// ```
public struct LoggingViolationHandler: ThreadViolationHandler {
    /// The logger messages go to.
    public var logger: Logger
    /// The level of violations (`ThreadViolation.isWarning` ones are logged at `.warning`
    /// when this is more severe). Default `.error`.
    public var level: Logger.Level

    /// Creates a handler that logs to `logger` at `level`.
    public init(logger: Logger, level: Logger.Level = .error) {
        self.logger = logger
        self.level = level
    }

    /// Logs `violation`.
    public func handle(_ violation: ThreadViolation) {
        var metadata: Logger.Metadata = [
            "liftoff.rule": "\(violation.rule.rawValue)",
            "liftoff.thread": "\(violation.threadName)",
            "liftoff.thread_id": "\(violation.threadID)",
        ]
        if !violation.queueLabel.isEmpty { metadata["liftoff.queue"] = "\(violation.queueLabel)" }
        if let task = violation.task { metadata["liftoff.task"] = "\(task)" }
        let level = violation.isWarning ? min(self.level, .warning) : self.level
        logger.log(level: level, "\(violation.message)", metadata: metadata)
    }
}
