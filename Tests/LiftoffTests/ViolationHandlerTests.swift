import Liftoff
import LiftoffLogging
import LiftoffSampler
import LiftoffTesting
import Logging
import Synchronization
import Testing

/// Collects what it is handed.
final class CollectingHandler: ThreadViolationHandler, Sendable {
    let received = Mutex<[ThreadViolation]>([])
    func handle(_ violation: ThreadViolation) { received.withLock { $0.append(violation) } }
}

/// A swift-log handler that keeps every message with its level and metadata.
struct CapturingLogHandler: LogHandler {
    let messages: CapturedMessages
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        messages.list.withLock { $0.append((event.level, "\(event.message)", event.metadata ?? [:])) }
    }
}

final class CapturedMessages: Sendable {
    let list = Mutex<[(level: Logger.Level, text: String, metadata: Logger.Metadata)]>([])
}

@inline(never)
func breakCheckoutRule() { ThreadRules.report(rule: "no-network-before-consent", operation: "GET /checkout") }

extension RuntimeTests {
    @Suite("Thread-rule handlers")
    struct ViolationHandlerTests {
        @Test("a rule's own handlers get each call site once, repeats only raise the recorded count")
        func customHandlerSeesEachSiteOnce() {
            defer { ThreadRules.resetConfiguration() }
            let handler = CollectingHandler()
            ThreadRules.setHandlers([RecordingViolationHandler(), handler], for: "no-network-before-consent")
            let (_, recorded) = collectThreadViolations {
                for _ in 0..<3 { breakCheckoutRule() }
                ThreadRules.report(rule: "another-rule", operation: "not for this handler")
            }
            let handled = handler.received.withLock { $0 }
            #expect(handled.map(\.operation) == ["GET /checkout"])
            #expect(handled.first?.rule == "no-network-before-consent")
            #expect(recorded.first { $0.operation == "GET /checkout" }?.count == 3)
            #expect(recorded.contains { $0.rule == "another-rule" }, "other rules keep the default handlers")
        }

        @Test("without a recording handler a violation reaches the handlers but not the record")
        func handlersReplaceRecording() {
            defer { ThreadRules.resetConfiguration() }
            let handler = CollectingHandler()
            ThreadRules.setDefaultHandlers([handler])
            #expect(ThreadRules.handlers(for: "anything").count == 1)
            let (_, recorded) = collectThreadViolations { breakCheckoutRule() }
            #expect(recorded.isEmpty)
            #expect(handler.received.withLock { $0.count } == 1)
        }

        @Test("policies are sets of handlers: log adds a printer, trap a trap, reset restores recording")
        func policiesAreHandlers() {
            defer { ThreadRules.resetConfiguration() }
            #expect(ThreadRules.handlers(for: ThreadRules.uiOnMain).map { "\(type(of: $0))" } == ["RecordingViolationHandler"])
            ThreadRules.setPolicy(.log, for: ThreadRules.uiOnMain)
            #expect(ThreadRules.policy(for: ThreadRules.uiOnMain) == .log)
            #expect(
                ThreadRules.handlers(for: ThreadRules.uiOnMain).map { "\(type(of: $0))" }
                    == ["RecordingViolationHandler", "StandardErrorViolationHandler"])
            ThreadRules.setPolicy(.trap, for: ThreadRules.uiOnMain)
            #expect(ThreadRules.handlers(for: ThreadRules.uiOnMain).last is TrappingViolationHandler)
            ThreadRules.resetConfiguration()
            #expect(ThreadRules.policy(for: ThreadRules.uiOnMain) == .record)
            #expect(ThreadRules.handlers(for: ThreadRules.uiOnMain).map { "\(type(of: $0))" } == ["RecordingViolationHandler"])
        }

        @Test("LoggingViolationHandler writes one swift-log message with the rule, thread and task as metadata")
        func swiftLogHandler() {
            defer { ThreadRules.resetConfiguration() }
            let messages = CapturedMessages()
            let logger = Logger(label: "test.thread-rules") { _ in CapturingLogHandler(messages: messages) }
            ThreadRules.setHandlers(
                [RecordingViolationHandler(), LoggingViolationHandler(logger: logger)], for: "no-network-before-consent")
            let (thread, _) = collectThreadViolations { () -> (id: Int, name: String) in
                for _ in 0..<2 { breakCheckoutRule() }
                return (CurrentThread.id, CurrentThread.name)
            }
            let logged = messages.list.withLock { $0 }
            #expect(logged.count == 1, "a repeat from the same call site is not logged again")
            #expect(logged.first?.level == .error)
            #expect(logged.first?.text.hasPrefix("GET /checkout broke rule 'no-network-before-consent' on thread") == true)
            #expect(logged.first?.metadata["liftoff.rule"] == "no-network-before-consent")
            #expect(logged.first?.metadata["liftoff.thread"] == "\(thread.name)")
            #expect(logged.first?.metadata["liftoff.thread_id"] == "\(thread.id)")
        }
    }
}
