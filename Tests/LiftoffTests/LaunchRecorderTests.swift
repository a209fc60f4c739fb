import Foundation
import Liftoff
import LiftoffProfile
import LiftoffSampler
import LiftoffTestSupport
import Testing

@inline(never)
func recordedLaunchStep() {
    blockRunLoop(milliseconds: 60)
}

/// The recorder starts the process-wide sampler, so its tests hold the process state.
@Suite("Launch recorder", .serialized, .processState(timeLimit: .seconds(120)))
struct LaunchRecorderTests {
    @Test("a launch recorder nests sync and async spans, marks ready, and writes to LIFTOFF_PROFILE_OUT")
    func launchRecorderSpans() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("liftoff-recorder-\(UUID().uuidString)")
        let output = folder.appendingPathComponent("launch.json")

        let recorder = try LaunchRecorder.start(configuration: SamplerConfiguration(rateHz: 1000))
        recorder.span("load config") {
            recorder.span("parse") { recordedLaunchStep() }
        }
        await recorder.span("connect") {
            try? await Task.sleep(nanoseconds: 20_000_000)
            recorder.span("handshake") { recordedLaunchStep() }
        }
        recorder.ready()
        recorder.ready()
        // As a launcher sets it; the test process's own environment stays as it is.
        let (profile, url) = try recorder.finishAndWrite(environment: [LaunchRecorder.outputVariable: output.path])

        #expect(url == output)
        #expect(try Profile.load(from: output) == profile)
        #expect(profile.spans.map(\.name) == ["load config", "parse", "connect", "handshake"])
        #expect(profile.spans.map(\.parent) == [nil, 0, nil, 2])
        for span in profile.spans { #expect(span.endNs >= span.startNs) }
        #expect(profile.spans[1].startNs >= profile.spans[0].startNs && profile.spans[1].endNs <= profile.spans[0].endNs)
        #expect(profile.spans[2].durationNs >= 20_000_000)
        #expect(profile.marks.filter { $0.name == "ready" }.count == 1, "only the first ready counts")
        let ready = try #require(profile.phases.firstFrameNs)
        #expect(ready >= profile.spans[2].endNs)
        #expect(profile.timeToFirstFrameNs == ready)
        #expect(profile.frames.contains { $0.name.contains("recordedLaunchStep") }, "the steps' work was sampled")
    }

    @Test("with LIFTOFF_PROFILE_OUT empty nothing is written; unset, the profile goes to liftoff-profiles/ in a writable directory")
    func profileDefaultPlace() throws {
        let recorder = try LaunchRecorder.start(configuration: SamplerConfiguration(rateHz: 100))
        recorder.ready()
        let (profile, url) = try recorder.finishAndWrite(environment: [LaunchRecorder.outputVariable: ""])
        #expect(url == nil)
        #expect(profile.phases.firstFrameNs != nil)

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("liftoff-default-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let inFolder = LaunchRecorder.defaultProfileURL(executable: "MyServer", currentDirectory: folder.path)
        #expect(inFolder.path == folder.appendingPathComponent("liftoff-profiles/MyServer.json").path)
        // A current directory the process cannot write (gone, or a server started in /): the
        // temporary directory.
        let gone = folder.appendingPathComponent("removed").path
        let elsewhere = LaunchRecorder.defaultProfileURL(executable: "MyServer", currentDirectory: gone)
        #expect(elsewhere.deletingLastPathComponent().deletingLastPathComponent().path
            == FileManager.default.temporaryDirectory.path)
        #expect(elsewhere.lastPathComponent == "MyServer.json")
    }
}
