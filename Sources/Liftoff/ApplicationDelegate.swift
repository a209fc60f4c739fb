/// The app's delegate: the seven life-cycle callbacks, called on the main thread in this order
/// where they apply. Every method has a default that does nothing (the two launch callbacks
/// return `true`).
public protocol ApplicationDelegate: AnyObject {
    /// Launch has begun; the state is `inactive` (or `background` for a background launch).
    func willFinishLaunching(_ application: Application, options: LaunchOptions) -> Bool
    /// Launch is almost done: set up the window and its views here. The UI is presented after
    /// this returns.
    func didFinishLaunching(_ application: Application, options: LaunchOptions) -> Bool
    /// The app is now `active`.
    func didBecomeActive(_ application: Application)
    /// The app is about to leave `active` (an interruption, or the user leaving).
    func willResignActive(_ application: Application)
    /// The app is now in the background and may be suspended at any time.
    func didEnterBackground(_ application: Application)
    /// The app is about to return to the foreground.
    func willEnterForeground(_ application: Application)
    /// The app is about to be terminated; called only when it runs in the background, not when
    /// it is suspended.
    func willTerminate(_ application: Application)
}

extension ApplicationDelegate {
    public func willFinishLaunching(_ application: Application, options: LaunchOptions) -> Bool { true }
    public func didFinishLaunching(_ application: Application, options: LaunchOptions) -> Bool { true }
    public func didBecomeActive(_ application: Application) {}
    public func willResignActive(_ application: Application) {}
    public func didEnterBackground(_ application: Application) {}
    public func willEnterForeground(_ application: Application) {}
    public func willTerminate(_ application: Application) {}
}
