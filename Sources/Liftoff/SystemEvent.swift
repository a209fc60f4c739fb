import LiftoffProfile

/// What the system does to an app: the role iOS plays, injected by `liftoff simulate`, tests,
/// or a host program.
public enum SystemEvent: Sendable, Equatable, CustomStringConvertible {
    /// Launch, in the foreground or (for a background reason) the background.
    case launch(LaunchOptions)
    /// The user leaves the app (the home gesture): resign, background, then suspension.
    case userLeaves
    /// An interruption (a call, an alert) begins: the app resigns active.
    case interruptionBegan
    /// The interruption ends: the app becomes active again.
    case interruptionEnded
    /// The user returns to the app from the background.
    case returnToForeground
    /// The system purges a suspended app for memory: no callback.
    case memoryPurge
    /// The user kills the app from the app switcher: no callback.
    case userKill
    /// The system terminates the app: `willTerminate` only when it runs in the background.
    case systemTerminate
    /// A tap at a point in window coordinates.
    case tap(Point)

    public var description: String {
        switch self {
        case .launch(let options):
            return options.isBackgroundLaunch ? "launch-background \(options.reason)" : "launch"
        case .userLeaves: return "home"
        case .interruptionBegan: return "interrupt"
        case .interruptionEnded: return "interrupt-end"
        case .returnToForeground: return "foreground"
        case .memoryPurge: return "purge"
        case .userKill: return "kill"
        case .systemTerminate: return "terminate"
        case .tap(let point): return "tap \(point.x) \(point.y)"
        }
    }
}

/// Something that happened in the app, as `liftoff simulate` prints it and observers see it.
public enum LifecycleEvent: Sendable, Equatable {
    /// A delegate callback began; `state` is the state it runs in.
    case callback(name: String, state: ApplicationState)
    /// The execution state changed.
    case stateChange(from: ApplicationState, to: ApplicationState)
    /// A frame was committed; index 0 is the first frame.
    case frame(index: Int, viewsDrawn: Int)
    /// A tap was handled by a responder, or discarded at the end of the chain (nil).
    case touch(Point, handledBy: String?)
    /// A system event made no sense in the current state and was not acted on.
    case rejected(event: String, state: ApplicationState, reason: String)
    /// A background task began or ended.
    case backgroundTask(name: String, id: Int, began: Bool)
    /// A background task's expiration handler ran: its background time is nearly up.
    case expiration(name: String, id: Int)
    /// A thread rule was broken.
    case violation(rule: Profile.RuleName, message: String)
    /// The app was terminated by the system for misbehaving (a watchdog).
    case terminated(reason: String)
}
