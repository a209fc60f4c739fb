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

    func run() throws {
        let delegate = ProbeDelegate()
        let status = Application.main(delegate: delegate)
        print(delegate.report())
        if status != 0 { throw ExitCode(status) }
    }
}

final class ProbeDelegate: ApplicationDelegate, @unchecked Sendable {
    // @unchecked Sendable: `results` is only touched on the main thread, which the probe checks.
    private var results: [String: (onMain: Bool, inLoop: Bool)] = [:]
    private weak var application: Application?

    func didFinishLaunching(_ application: Application, options: LaunchOptions) -> Bool {
        self.application = application
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

    private func record(_ name: String) {
        let inLoop = application?.runLoop.isInIteration ?? false
        results[name] = (Sampler.isMainThread, inLoop)
        if results.count == 3, let application {
            application.send(.userKill)
        }
    }

    func report() -> String {
        let parts = results.keys.sorted().map { key in
            "\"\(key)\":{\"onMainThread\":\(results[key]!.onMain),\"insideLoop\":\(results[key]!.inLoop)}"
        }
        return "{" + parts.joined(separator: ",") + "}"
    }
}
