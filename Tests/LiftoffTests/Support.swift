import Liftoff
import LiftoffTestSupport
import Testing

/// All runtime tests share the main-thread designation of `ApplicationDriver`, so they run one
/// at a time under this suite.
@Suite("Runtime", .serialized, .processState(timeLimit: .seconds(300)))
struct RuntimeTests {}

/// A delegate that logs callbacks and can run extra work in each.
final class RecordingDelegate: ApplicationDelegate {
    var log: [String] = []
    var window: Window?
    var onFinishLaunching: ((Application) -> Void)?
    var onEnterBackground: ((Application) -> Void)?
    var buildsWindow = true

    func willFinishLaunching(_ application: Application, options: LaunchOptions) -> Bool {
        log.append("willFinishLaunching")
        return true
    }

    func didFinishLaunching(_ application: Application, options: LaunchOptions) -> Bool {
        log.append("didFinishLaunching")
        if buildsWindow, !options.isBackgroundLaunch {
            let window = Window(frame: Rect(x: 0, y: 0, width: 320, height: 480), name: "main")
            window.addSubview(Label(text: "Hello", frame: Rect(x: 10, y: 10, width: 100, height: 20)))
            window.makeKeyAndVisible(in: application)
            self.window = window
        }
        onFinishLaunching?(application)
        return true
    }

    func didBecomeActive(_ application: Application) { log.append("didBecomeActive") }
    func willResignActive(_ application: Application) { log.append("willResignActive") }
    func didEnterBackground(_ application: Application) {
        log.append("didEnterBackground")
        onEnterBackground?(application)
    }
    func willEnterForeground(_ application: Application) { log.append("willEnterForeground") }
    func willTerminate(_ application: Application) { log.append("willTerminate") }
}

/// The kinds of the driver's events, in order, as short strings.
func kinds(_ driver: ApplicationDriver) -> [String] {
    driver.events.map { _, event in
        switch event {
        case .callback(let name, _): return name
        case .stateChange(let from, let to): return "\(from.rawValue)→\(to.rawValue)"
        case .frame(let index, _): return "frame \(index)"
        case .touch(_, let handler): return "touch \(handler ?? "discarded")"
        case .rejected(let event, _, _): return "rejected \(event)"
        case .backgroundTask(let name, _, let began): return "task \(name) \(began ? "begin" : "end")"
        case .violation(let rule, _): return "violation \(rule)"
        case .expiration(let name, _): return "expiration \(name)"
        case .terminated: return "terminated"
        }
    }
}
