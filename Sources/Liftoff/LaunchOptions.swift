/// Why and how the app was launched: Liftoff's launch options dictionary.
public struct LaunchOptions: Sendable, Equatable {
    /// What started the app.
    public enum Reason: Sendable, Equatable, CustomStringConvertible {
        /// The user opened the app: a foreground launch.
        case user
        /// A location update woke the app in the background.
        case location
        /// A remote notification woke the app in the background.
        case remoteNotification
        /// A background fetch woke the app.
        case backgroundFetch
        /// The app was opened to handle a URL (a foreground launch).
        case url(String)
        /// Anything else: a background launch with this name.
        case custom(String)

        /// Whether this reason launches the app into the background.
        public var isBackground: Bool {
            switch self {
            case .user, .url: return false
            case .location, .remoteNotification, .backgroundFetch, .custom: return true
            }
        }

        /// Parses the scenario word for a background reason: `location`, `remote-notification`,
        /// `fetch`, or any other word as a custom reason.
        public init(backgroundWord word: String) {
            switch word {
            case "location": self = .location
            case "remote-notification", "remoteNotification", "push": self = .remoteNotification
            case "fetch", "background-fetch": self = .backgroundFetch
            default: self = .custom(word)
            }
        }

        public var description: String {
            switch self {
            case .user: return "user"
            case .location: return "location"
            case .remoteNotification: return "remote-notification"
            case .backgroundFetch: return "fetch"
            case .url(let url): return "url \(url)"
            case .custom(let name): return name
            }
        }
    }

    /// What started the app.
    public var reason: Reason

    /// Creates launch options.
    public init(reason: Reason = .user) {
        self.reason = reason
    }

    /// Whether the app launches into the background (no UI, no first frame).
    public var isBackgroundLaunch: Bool { reason.isBackground }
}
