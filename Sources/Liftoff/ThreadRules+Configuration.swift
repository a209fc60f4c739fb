import LiftoffProfile
import Synchronization

extension ThreadRules {
    /// What happens when a rule is broken, and which code is exempt.
    ///
    /// A program sets its configuration once, at start-up, with ``ThreadRules/bootstrap(_:)``, as
    /// it sets up logging with swift-log's `LoggingSystem.bootstrap`. Code that needs other rules
    /// for a while, a test above all, runs under a configuration of its own with
    /// `ThreadRules.withConfiguration(_:_:)`: it holds for that code and for the launch tasks
    /// and Swift tasks it starts, and no other code sees it, so tests that configure rules
    /// differently can run side by side.
    public struct Configuration: Sendable {
        /// The handlers of every rule that has none of its own (by default a
        /// ``RecordingViolationHandler``).
        public var defaultHandlers: [any ThreadViolationHandler] = Policy.record.handlers
        /// Violations whose stack has a frame from code with one of these symbol or module
        /// prefixes (`ThirdPartyKit.`, `static ThirdPartyKit.Cache.`) are silenced.
        public var allowedPrefixes: [String] = []
        private var policies: [Profile.RuleName: Policy] = [:]
        private var handlersByRule: [Profile.RuleName: [any ThreadViolationHandler]] = [:]

        /// The default configuration: every violation recorded, nothing silenced.
        public init() {}

        /// Sets the policy of a rule: its handlers become the policy's ``Policy/handlers``.
        public mutating func setPolicy(_ policy: Policy, for rule: Profile.RuleName) {
            policies[rule] = policy
            handlersByRule[rule] = policy.handlers
        }

        /// Sets the handlers of one rule, in the order they run. Leave a
        /// ``RecordingViolationHandler`` in the list to keep the rule's violations in profiles and
        /// for `LiftoffTesting`.
        public mutating func setHandlers(_ handlers: [any ThreadViolationHandler], for rule: Profile.RuleName) {
            policies[rule] = nil
            handlersByRule[rule] = handlers
        }

        /// Silences violations whose stack has a frame from code with this prefix.
        public mutating func allow(prefix: String) {
            allowedPrefixes.append(prefix)
        }

        /// The policy set for a rule with ``setPolicy(_:for:)`` (`record` unless set).
        public func policy(for rule: Profile.RuleName) -> Policy { policies[rule] ?? .record }

        /// The handlers a violation of `rule` goes to, in order.
        public func handlers(for rule: Profile.RuleName) -> [any ThreadViolationHandler] {
            handlersByRule[rule] ?? defaultHandlers
        }
    }

    /// Where the running code stands for the rules, carried in one piece into launch tasks and,
    /// in a test executable, into blocks given to Dispatch: its collection scope, the test that
    /// handed it over, the configuration it runs under and the clock of its run loop.
    package struct Context: Sendable {
        /// The collection scope (see ``ThreadRules/scope``).
        package var scope: UInt64?
        /// The test that handed the work over.
        package var handingTest: String?
        /// A configuration of its own, instead of the process's.
        package var configuration: Configuration?
        /// The clock violation times are read from, instead of the monotonic clock.
        package var clock: (any LaunchClock)?

        /// This context with one of its parts replaced.
        package func with<Value>(_ part: WritableKeyPath<Context, Value>, _ value: Value) -> Context {
            var changed = self
            changed[keyPath: part] = value
            return changed
        }

        /// Whether anything is set, so that carrying an empty context can be skipped.
        package var isEmpty: Bool { scope == nil && handingTest == nil && configuration == nil && clock == nil }
    }

    /// The context of the running code.
    @TaskLocal package static var context = Context()

    /// The process's configuration, set by ``bootstrap(_:)``.
    private static let processConfiguration = Mutex<Configuration?>(nil)

    /// Sets the process's configuration. Call it once, at start-up, before the first check; a
    /// second call is a programming error and stops the program.
    public static func bootstrap(_ configuration: Configuration) {
        processConfiguration.withLock { current in
            precondition(
                current == nil,
                "ThreadRules.bootstrap was called twice; configure the rules once at start-up, or run code "
                    + "under ThreadRules.withConfiguration(_:_:) for a configuration of its own.")
            current = configuration
        }
    }

    /// The configuration in force where this runs: the one the running code was given with
    /// `withConfiguration(_:_:)`, else the process's.
    public static var configuration: Configuration {
        context.configuration ?? processConfiguration.withLock { $0 } ?? Configuration()
    }

    /// Runs `body` under `configuration`: for the code it runs, the launch tasks it schedules and
    /// the Swift tasks it starts.
    public static func withConfiguration<T>(_ configuration: Configuration, _ body: () throws -> T) rethrows -> T {
        try within(context.with(\.configuration, configuration), body)
    }

    /// Runs the async `body` under `configuration`.
    public static func withConfiguration<T>(
        _ configuration: Configuration, isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T
    ) async rethrows -> T {
        try await within(context.with(\.configuration, configuration), isolation: isolation, body)
    }

    /// Runs `body` with violation times read from `clock` (a run loop's, which may be manual).
    package static func withClock<T>(_ clock: any LaunchClock, _ body: () throws -> T) rethrows -> T {
        try within(context.with(\.clock, clock), body)
    }

    /// Runs `body` in collection scope `scope`.
    package static func withScope<T>(_ scope: UInt64, _ body: () throws -> T) rethrows -> T {
        try within(context.with(\.scope, scope), body)
    }

    /// Runs the async `body` in collection scope `scope`.
    package static func withScope<T>(
        _ scope: UInt64, isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T
    ) async rethrows -> T {
        try await within(context.with(\.scope, scope), isolation: isolation, body)
    }

    /// Runs `body` in a context carried from elsewhere.
    package static func within<T>(_ carried: Context, _ body: () throws -> T) rethrows -> T {
        try $context.withValue(carried, operation: body)
    }

    /// Runs the async `body` in a context carried from elsewhere.
    package static func within<T>(
        _ carried: Context, isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T
    ) async rethrows -> T {
        try await $context.withValue(carried, operation: body, isolation: isolation)
    }
}
