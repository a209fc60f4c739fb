import AsyncCLICore
import Foundation
import Liftoff

// An async main runs on the Swift concurrency pool, not on the OS main thread: Liftoff samples
// every thread, so the work after each `await` is seen wherever it runs.
let recorder = try LaunchRecorder.start()
let checksum = try await startUp(recorder: recorder)
let (profile, url) = try recorder.finishAndWrite()
print("checksum \(checksum)")
for span in profile.spans {
    let cpu = (span.cpuNs ?? 0) / 1_000_000
    print("\(span.name): \(span.durationNs / 1_000_000) ms, \(span.samples ?? 0) running samples, \(cpu) ms CPU")
}
if let url { print("profile: \(url.path)") }
