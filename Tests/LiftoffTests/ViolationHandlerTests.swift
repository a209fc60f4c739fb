import Dispatch
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

/// Not serialized and without the process-state lock: each test owns its configuration.
@Suite("Thread-rule handlers")
struct ViolationHandlerTests {
    @Test("a rule's own handlers get each call site once, repeats only raise the recorded count")
    func customHandlerSeesEachSiteOnce() {
        let handler = CollectingHandler()
        var rules = ThreadRules.Configuration()
        rules.setHandlers([RecordingViolationHandler(), handler], for: "no-network-before-consent")
        let (_, recorded) = ThreadRules.withConfiguration(rules) {
            collectThreadViolations {
                for _ in 0..<3 { breakCheckoutRule() }
                ThreadRules.report(rule: "another-rule", operation: "not for this handler")
            }
        }
        let handled = handler.received.withLock { $0 }
        #expect(handled.map(\.operation) == ["GET /checkout"])
        #expect(handled.first?.rule == "no-network-before-consent")
        #expect(recorded.first { $0.operation == "GET /checkout" }?.count == 3)
        #expect(recorded.contains { $0.rule == "another-rule" }, "other rules keep the default handlers")
    }

    @Test("without a recording handler a violation reaches the handlers but not the record")
    func handlersReplaceRecording() {
        let handler = CollectingHandler()
        var rules = ThreadRules.Configuration()
        rules.defaultHandlers = [handler]
        #expect(rules.handlers(for: "anything").count == 1)
        let (_, recorded) = ThreadRules.withConfiguration(rules) { collectThreadViolations { breakCheckoutRule() } }
        #expect(recorded.isEmpty)
        #expect(handler.received.withLock { $0.count } == 1)
    }

    @Test("policies are sets of handlers: log adds a printer, trap a trap; the default records")
    func policiesAreHandlers() {
        var rules = ThreadRules.Configuration()
        #expect(rules.handlers(for: ThreadRules.uiOnMain).map { "\(type(of: $0))" } == ["RecordingViolationHandler"])
        rules.setPolicy(.log, for: ThreadRules.uiOnMain)
        #expect(rules.policy(for: ThreadRules.uiOnMain) == .log)
        #expect(
            rules.handlers(for: ThreadRules.uiOnMain).map { "\(type(of: $0))" }
                == ["RecordingViolationHandler", "StandardErrorViolationHandler"])
        rules.setPolicy(.trap, for: ThreadRules.uiOnMain)
        #expect(rules.handlers(for: ThreadRules.uiOnMain).last is TrappingViolationHandler)
        #expect(ThreadRules.withConfiguration(rules) { ThreadRules.configuration.policy(for: ThreadRules.uiOnMain) } == .trap)
        #expect(ThreadRules.configuration.policy(for: ThreadRules.uiOnMain) == .record, "outside, the process's rules hold")
    }

    @Test("configurations are owned: code under one never sees another's, side by side and in Dispatch blocks")
    func configurationsSideBySide() async {
        let first = CollectingHandler()
        let second = CollectingHandler()
        func rules(_ handler: CollectingHandler) -> ThreadRules.Configuration {
            var rules = ThreadRules.Configuration()
            rules.setHandlers([RecordingViolationHandler(), handler], for: "no-network-before-consent")
            return rules
        }
        let firstRules = rules(first)
        let secondRules = rules(second)
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await ThreadRules.withConfiguration(firstRules) {
                    for _ in 0..<50 {
                        ThreadRules.report(rule: "no-network-before-consent", operation: "first")
                        await Task.yield()
                    }
                }
            }
            group.addTask {
                await ThreadRules.withConfiguration(secondRules) {
                    // A block given to Dispatch runs under the configuration of the code that gave it.
                    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                        DispatchQueue.global().async {
                            ThreadRules.report(rule: "no-network-before-consent", operation: "second")
                            done.resume()
                        }
                    }
                }
            }
        }
        #expect(Set(first.received.withLock { $0 }.map(\.operation)) == ["first"])
        #expect(second.received.withLock { $0 }.map(\.operation) == ["second"])
    }

    @Test("the process's configuration is set once: a second bootstrap stops the program with a sentence")
    func bootstrapOnce() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            var rules = ThreadRules.Configuration()
            rules.allow(prefix: "VendorKit.")
            ThreadRules.bootstrap(rules)
            guard ThreadRules.configuration.allowedPrefixes == ["VendorKit."] else { return }
            ThreadRules.bootstrap(ThreadRules.Configuration())
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("ThreadRules.bootstrap was called twice"))
    }

    @Test("LoggingViolationHandler writes one swift-log message with the rule, thread and task as metadata")
    func swiftLogHandler() {
        let messages = CapturedMessages()
        let logger = Logger(label: "test.thread-rules") { _ in CapturingLogHandler(messages: messages) }
        var rules = ThreadRules.Configuration()
        rules.setHandlers(
            [RecordingViolationHandler(), LoggingViolationHandler(logger: logger)], for: "no-network-before-consent")
        let (thread, _) = ThreadRules.withConfiguration(rules) {
            collectThreadViolations { () -> (id: Int, name: String) in
                for _ in 0..<2 { breakCheckoutRule() }
                return (CurrentThread.id, CurrentThread.name)
            }
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
