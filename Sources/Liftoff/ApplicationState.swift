/// The execution states of an app (the seeds' table 2-3).
public enum ApplicationState: String, Sendable, CaseIterable, Codable {
    /// Not launched, or terminated.
    case notRunning
    /// In the foreground but not receiving events (launching, or interrupted).
    case inactive
    /// In the foreground and receiving events.
    case active
    /// In the background and executing code.
    case background
    /// In the background and not executing code.
    case suspended

    /// The states reachable from this one in one step.
    public var successors: Set<ApplicationState> {
        switch self {
        case .notRunning: return [.inactive, .background]
        case .inactive: return [.active, .background, .notRunning]
        case .active: return [.inactive, .notRunning]
        case .background: return [.inactive, .suspended, .notRunning]
        case .suspended: return [.background, .notRunning]
        }
    }

    /// Whether the app runs code in this state.
    public var isRunning: Bool { self == .inactive || self == .active || self == .background }

    /// Whether the app is in the foreground (its UI is on screen).
    public var isForeground: Bool { self == .inactive || self == .active }
}

/// An illegal request to the application's life cycle.
public struct LifecycleError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure.
    public enum Code: String, Sendable {
        /// A state change the state machine does not allow.
        case illegalTransition
        /// An event that makes no sense in the current state.
        case eventNotApplicable
        /// `Application.main` was called off the main thread, or twice.
        case misuse
    }

    /// The kind of failure.
    public var code: Code
    /// One sentence for people.
    public var message: String
    /// The state the application was in.
    public var state: ApplicationState

    /// Creates an error.
    public init(_ code: Code, _ message: String, state: ApplicationState) {
        self.code = code
        self.message = message
        self.state = state
    }

    public var description: String { message }
}
