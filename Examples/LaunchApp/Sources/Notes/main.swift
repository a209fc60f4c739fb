import Foundation
import Liftoff
import NotesKit

// The recorder starts first, so the sampler sees the whole launch.
let recorder = try LaunchRecorder.start()
let delegate = AppDelegate(recorder: recorder, quitsAfterLaunch: CommandLine.arguments.contains("--quit-after-launch"))
// Runs the main run loop on this thread until the app is terminated.
let status = Application.main(delegate: delegate, configuration: Application.Configuration(recorder: recorder))
try recorder.finishAndWrite()   // to $LIFTOFF_PROFILE_OUT, or liftoff-profiles/Notes.json
exit(status)
