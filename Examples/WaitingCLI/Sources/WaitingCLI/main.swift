import Foundation
import Liftoff
import WaitingCLICore

// Every wait of the launch is named where it happened, for as long as it lasted: the spans'
// waiting time below, "Where threads waited" in `liftoff report PROFILE --format markdown`, and
// why the launch was slow, wait by wait, in `liftoff explain PROFILE`.
let recorder = try LaunchRecorder.start()
let result = startUp(recorder: recorder)
let (profile, url) = try recorder.finishAndWrite()
print("settings \(result.settings) bytes, \(result.entries) cache entries, \(result.remote)")
let intervalMs = Double(profile.samplingIntervalNs) / 1e6
for span in profile.spans {
    let waiting = Double(span.waitingSamples ?? 0) * intervalMs
    print("\(span.name): \(span.durationNs / 1_000_000) ms long, \(Int(waiting)) ms waiting")
}
if let url { print("profile: \(url.path)") }
