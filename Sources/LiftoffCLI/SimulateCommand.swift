import ArgumentParser
import Dispatch
import Foundation
import Liftoff
import LiftoffDemo
import LiftoffProfile
import LiftoffReports

/// `liftoff simulate`: runs the demo app under a virtual clock through a scenario of system
/// events and prints what happened as JSON lines.
struct SimulateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Drive the demo app through a scenario of system events under a virtual clock.",
        discussion: """
            The scenario has one step per line (or several separated by ';'; '#' starts a comment):
              launch | launch-background REASON | home | interrupt | interrupt-end | foreground |
              purge | kill | terminate | tap X Y | wait MS | background-task NAME MS
            'wait' costs no real time. 'background-task NAME MS' has the app begin a task that ends
            MS later; while any is open the app stays in the background instead of being suspended.
            Output is one JSON object per line: callbacks, state changes, frames, touches, and
            events that make no sense in the current state ("kind":"rejected", not acted on).

            Example:
              liftoff simulate - <<< 'launch; tap 350 60; home; wait 100; foreground; kill'
            """
    )

    @Argument(help: "Scenario file, or - for standard input.")
    var scenario: String = "-"

    @Option(name: .long, parsing: .unconditional, help: "Launch watchdog, in milliseconds.")
    var watchdog: UInt64 = 20_000

    @Option(name: .long, help: "The demo's launch plan: naive or optimized.")
    var plan: DemoAppDelegate.Plan = .optimized

    func validate() throws {
        guard (1...Scenario.maximumMilliseconds).contains(watchdog) else {
            throw ValidationError(
                "--watchdog must be between 1 and \(Scenario.maximumMilliseconds) milliseconds (about 104 days), not \(watchdog).")
        }
    }

    func run() throws {
        let text: String
        if scenario == "-" {
            text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        } else {
            guard let data = FileManager.default.contents(atPath: scenario) else {
                throw CLIError("The scenario file \(scenario) does not exist or cannot be read.")
            }
            text = String(decoding: data, as: UTF8.self)
        }
        let parsed: Scenario
        do {
            parsed = try Scenario.parse(text)
        } catch let error as Scenario.ParseError {
            throw CLIError(error.description)
        }
        let output = Simulation(watchdogMs: watchdog, plan: plan).run(parsed)
        for line in output { try StandardOutput.print(line) }
    }
}

/// Runs a scenario against the demo app and renders the events as JSON lines.
struct Simulation {
    var watchdogMs: UInt64
    var plan: DemoAppDelegate.Plan = .optimized

    func run(_ scenario: Scenario) -> [String] {
        let clock = ManualClock()
        var lines: [String] = []
        var driver: ApplicationDriver?
        var delegate: DemoAppDelegate?
        var delivered = 0

        // Background launch work runs in real time; let it (and the deferred work it releases)
        // finish before the next step, so the output does not depend on the machine's speed.
        func settle() {
            guard let driver, let scheduler = delegate?.scheduler else { return }
            let deadline = DispatchTime.now().uptimeNanoseconds + 30_000_000_000
            // Deferred work waits for a first frame, which a background launch (or an app with no
            // key window) never draws.
            func frameComing() -> Bool {
                driver.application.firstFrameNs != nil
                    || (driver.application.state.isForeground && driver.application.keyWindow != nil)
            }
            while !scheduler.isFinished, !driver.application.runLoop.isStopped, frameComing(),
                DispatchTime.now().uptimeNanoseconds < deadline
            {
                if driver.application.runLoop.hasWork { driver.application.runLoop.runUntilIdle() } else { usleep(1000) }
            }
            if !driver.application.runLoop.isStopped { driver.application.runLoop.runUntilIdle() }
        }

        func flush() {
            guard let driver else { return }
            for (time, event) in driver.events.dropFirst(delivered) {
                lines.append(Simulation.render(event, timeNs: time))
            }
            delivered = driver.events.count
        }

        for line in scenario.lines {
            lines.append(JSONLine([("t_ms", .number(Double(clock.nowNs) / 1e6)), ("kind", .string("step")),
                                   ("line", .number(Double(line.number))), ("step", .string(line.text))]).text)
            if driver == nil || driver?.application.state == .notRunning && driver?.application.runLoop.isStopped == true {
                if case .event(.launch) = line.step {
                    flush()
                    driver?.close()
                    let demo = DemoAppDelegate(plan: plan)
                    delegate = demo
                    driver = ApplicationDriver(delegate: demo, clock: clock, launchWatchdogNs: watchdogMs * 1_000_000)
                    delivered = 0
                } else if case .wait(let ms) = line.step {
                    clock.advance(byMilliseconds: ms)
                    continue
                } else {
                    lines.append(JSONLine([
                        ("t_ms", .number(Double(clock.nowNs) / 1e6)), ("kind", .string("rejected")),
                        ("event", .string(line.text)), ("state", .string("notRunning")),
                        ("reason", .string("the app is not running")),
                    ]).text)
                    continue
                }
            }
            guard let driver else { continue }
            switch line.step {
            case .event(let event):
                driver.send(event)
            case .wait(let ms):
                driver.advance(milliseconds: ms)
            case .backgroundTask(let name, let ms):
                let application = driver.application
                if let id = application.beginBackgroundTask(name: name) {
                    application.runLoop.schedule(afterNanoseconds: ms * 1_000_000, name: "end \(name)") {
                        application.endBackgroundTask(id)
                    }
                }
                driver.turn()
            }
            settle()
            flush()
        }
        flush()
        driver?.close()
        return lines
    }

    static func render(_ event: LifecycleEvent, timeNs: UInt64) -> String {
        var fields: [(String, JSONLine.Value)] = [("t_ms", .number(Double(timeNs) / 1e6))]
        switch event {
        case .callback(let name, let state):
            fields += [("kind", .string("callback")), ("name", .string(name)), ("state", .string(state.rawValue))]
        case .stateChange(let from, let to):
            fields += [("kind", .string("state")), ("from", .string(from.rawValue)), ("to", .string(to.rawValue))]
        case .frame(let index, let views):
            fields += [("kind", .string("frame")), ("index", .number(Double(index))), ("views", .number(Double(views)))]
        case .touch(let point, let handler):
            fields += [("kind", .string("touch")), ("x", .number(point.x)), ("y", .number(point.y)),
                       ("handled_by", handler.map { .string($0) } ?? .null)]
        case .rejected(let event, let state, let reason):
            fields += [("kind", .string("rejected")), ("event", .string(event)), ("state", .string(state.rawValue)),
                       ("reason", .string(reason))]
        case .backgroundTask(let name, let id, let began):
            fields += [("kind", .string("background-task")), ("name", .string(name)), ("id", .number(Double(id))),
                       ("event", .string(began ? "begin" : "end"))]
        case .expiration(let name, let id):
            fields += [("kind", .string("expiration")), ("name", .string(name)), ("id", .number(Double(id)))]
        case .violation(let rule, let message):
            fields += [("kind", .string("violation")), ("rule", .string(rule.rawValue)), ("reason", .string(message))]
        case .terminated(let reason):
            fields += [("kind", .string("terminated")), ("reason", .string(reason))]
        }
        return JSONLine(fields).text
    }
}

/// One JSON object on one line, keys in the given order, written by the reports' ``JSONWriter``.
struct JSONLine {
    enum Value {
        case string(String)
        case number(Double)
        case null
    }

    var fields: [(String, Value)]

    init(_ fields: [(String, Value)]) {
        self.fields = fields
    }

    var text: String {
        var json = JSONWriter(capacity: 128)
        json.raw("{")
        for (position, (key, value)) in fields.enumerated() {
            if position > 0 { json.raw(",") }
            json.key(key)
            switch value {
            case .string(let text): json.string(text)
            // Times are nanoseconds shown in milliseconds: six decimals keep them exact.
            case .number(let number): json.number(number, digits: 6)
            case .null: json.raw("null")
            }
        }
        json.raw("}")
        return json.text
    }
}
