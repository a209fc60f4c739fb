import ArgumentParser
import Dispatch
import Foundation
import Liftoff
import LiftoffSampler

/// `liftoff probe-main-thread` (hidden): runs a tiny app and reports on which thread, and
/// whether inside a run-loop iteration, main-queue blocks, `@MainActor` tasks and timers ran.
/// The tests use it, since a test process has no OS main thread of its own to lend.
struct ProbeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe-main-thread", abstract: "Report where main-queue and main-actor work runs.",
        shouldDisplay: false)

    @Option(help: "Block the main thread this long inside didFinishLaunching.")
    var stallLaunchMs: UInt64 = 0

    @Option(help: "The launch watchdog, in milliseconds.")
    var watchdogMs: UInt64 = 20_000

    @Option(help: "Leave the app once it runs, and block the main thread this long in didEnterBackground.")
    var stallBackgroundMs: UInt64 = 0

    @Option(help: "How long didEnterBackground may take, in milliseconds.")
    var backgroundLimitMs: UInt64 = 5_000

    func run() throws {
        let delegate = ProbeDelegate(stallMs: stallLaunchMs, stallBackgroundMs: stallBackgroundMs)
        let status = Application.main(
            delegate: delegate,
            configuration: Application.Configuration(
                launchWatchdogNs: watchdogMs * 1_000_000, enterBackgroundLimitNs: backgroundLimitMs * 1_000_000))
        try StandardOutput.print(delegate.report())
        if status != 0 { throw ExitCode(status) }
    }
}

final class ProbeDelegate: ApplicationDelegate, @unchecked Sendable {
    // @unchecked Sendable: `results` is only touched on the main thread, which the probe checks.
    private var results: [String: (onMain: Bool, inLoop: Bool)] = [:]
    private weak var application: Application?
    private let stallMs: UInt64
    private let stallBackgroundMs: UInt64

    init(stallMs: UInt64, stallBackgroundMs: UInt64 = 0) {
        self.stallMs = stallMs
        self.stallBackgroundMs = stallBackgroundMs
    }

    func didEnterBackground(_ application: Application) {
        if stallBackgroundMs > 0 { ProbeDelegate.stallMainThread(milliseconds: stallBackgroundMs) }
    }

    func didFinishLaunching(_ application: Application, options: LaunchOptions) -> Bool {
        self.application = application
        if stallMs > 0 { ProbeDelegate.stallMainThread(milliseconds: stallMs) }
        let window = Window(frame: Rect(x: 0, y: 0, width: 100, height: 100), name: "probe")
        window.addSubview(View(frame: Rect(x: 0, y: 0, width: 10, height: 10)))
        window.makeKeyAndVisible(in: application)
        DispatchQueue.global().async {
            DispatchQueue.main.async { self.record("mainQueue") }
            Task { @MainActor in self.record("mainActor") }
        }
        application.runLoop.schedule(afterNanoseconds: 1_000_000, name: "probe timer") { self.record("timer") }
        return true
    }

    /// Blocks the calling thread, as a launch stuck on a lock or a slow disk would.
    @inline(never)
    static func stallMainThread(milliseconds: UInt64) {
        let end = DispatchTime.now().uptimeNanoseconds + milliseconds * 1_000_000
        while DispatchTime.now().uptimeNanoseconds < end {
            usleep(10_000)
        }
    }

    private func record(_ name: String) {
        let inLoop = application?.runLoop.isInIteration ?? false
        results[name] = (CurrentThread.isMain, inLoop)
        if results.count == 3, let application {
            application.send(stallBackgroundMs > 0 ? .userLeaves : .userKill)
            if stallBackgroundMs > 0 { application.send(.userKill) }
        }
    }

    func report() -> String {
        let parts = results.keys.sorted().map { key in
            "\"\(key)\":{\"onMainThread\":\(results[key]!.onMain),\"insideLoop\":\(results[key]!.inLoop)}"
        }
        return "{" + parts.joined(separator: ",") + "}"
    }
}
