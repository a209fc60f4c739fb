import AsyncCLICore
import Foundation
import Liftoff
import LiftoffLogging
import Logging

// An async main runs on the Swift concurrency pool, not on the OS main thread: Liftoff samples
// every thread, so the work after each `await` is seen wherever it runs.
// Violations are kept for the profile and logged as warnings where the tool logs everything else.
let logger = Logger(label: "async-cli")
var rules = ThreadRules.Configuration()
rules.defaultHandlers = [RecordingViolationHandler(), LoggingViolationHandler(logger: logger, level: .warning)]
ThreadRules.bootstrap(rules)
let recorder = try LaunchRecorder.start()
let checksum = try await startUp(recorder: recorder)
let (profile, url) = try recorder.finishAndWrite()
print("checksum \(checksum)")
for span in profile.spans {
    let cpu = (span.cpuNs ?? 0) / 1_000_000
    print("\(span.name): \(span.durationNs / 1_000_000) ms, \(span.samples ?? 0) running samples, \(cpu) ms CPU")
}
for violation in profile.violations { print("violation: \(violation.message)") }
if let url { print("profile: \(url.path)") }
