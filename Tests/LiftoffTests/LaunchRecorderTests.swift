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
        let folder = testScratch.appendingPathComponent("liftoff-recorder-\(UUID().uuidString)")
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

    @Test("the launch ends at ready: sampling stops, and spans and marks begun later are not kept but counted")
    func launchEndsAtReady() throws {
        let recorder = try LaunchRecorder.start(configuration: SamplerConfiguration(rateHz: 1000))
        let launchSpan = recorder.beginSpan("start service")
        recorder.span("load config") { recordedLaunchStep() }
        #expect(Sampler.isSampling)
        recorder.ready()
        #expect(recorder.launchEnded && !Sampler.isSampling, "ready ends the launch: the sampler is off")
        // The server runs on: its requests cost no recording.
        for request in 0..<1_000 {
            recorder.span("request \(request)") { recorder.mark("served") }
            let open = recorder.beginSpan("handler")
            #expect(!open.isRecorded)
            recorder.endSpan(open)
        }
        recordedLaunchStep()
        recorder.endSpan(launchSpan)
        #expect(recorder.droppedSpans == 2_000)
        let profile = recorder.finish(violations: [])
        #expect(profile.spans.map(\.name) == ["start service", "load config"])
        #expect(profile.spans[0].endNs > profile.spans[1].endNs, "a span of the launch ended after it keeps its end")
        #expect(profile.marks.map(\.name) == [.ready])
        let ready = try #require(profile.phases.firstFrameNs)
        let last = (0..<profile.samples.count).map { profile.samples.timeNs[$0] }.max() ?? 0
        #expect(last <= ready + 2 * profile.samplingIntervalNs, "no sample after ready: the last at \(last), ready at \(ready)")
        #expect(
            profile.frames.contains { $0.name.contains("recordedLaunchStep") },
            "the launch's work was sampled: \(Self.describeSamples(profile))")
    }

    /// Every sample of a profile, one per line, with its counts: what a failure needs to be read.
    static func describeSamples(_ profile: Profile) -> String {
        var lines = ["counts: \(profile.counts)", "spans: \(profile.spans.map { ($0.name, $0.threadID, $0.startNs, $0.endNs) })"]
        for row in 0..<profile.samples.count {
            let names = profile.frameIndices(ofStack: profile.samples.stack[row]).suffix(4).map { profile.frames[$0].name }
            lines.append(
                "\(profile.samples.thread[row]) at \(profile.samples.timeNs[row]) \(profile.samples.state[row]) ×\(profile.samples.weight[row]) \(names)")
        }
        return lines.joined(separator: "\n")
    }

    @Test("a profile prepared after sampling stops names every frame and stack as one built at once")
    func preparedProfileMatchesOneBuiltAtOnce() throws {
        let recorder = try ProfileRecorder.start(configuration: SamplerConfiguration(rateHz: 1000))
        recordedLaunchStep()
        recorder.stopSampling()
        #expect(!recorder.isPrepared)
        recorder.prepare(events: LaunchEvents())
        #expect(recorder.isPrepared)
        let prepared = recorder.finish(symbolizer: nil, events: LaunchEvents())
        let atOnce = recorder.finish(symbolizer: ELFSymbolizer(), events: LaunchEvents())
        #expect(prepared.frames == atOnce.frames)
        #expect(prepared.stacks == atOnce.stacks)
        #expect(prepared.samples == atOnce.samples)
        #expect(prepared.frames.contains { $0.name.contains("recordedLaunchStep") })
        #expect(prepared.frames.contains { $0.short == "recordedLaunchStep()" },
            "short names come from the preparation")
        // A preparation asked for after a profile was built does nothing.
        let late = try ProfileRecorder.start(configuration: SamplerConfiguration(rateHz: 1000))
        recordedLaunchStep()
        _ = late.finish(symbolizer: nil, events: LaunchEvents())
        late.prepare(events: LaunchEvents())
        #expect(!late.isPrepared)
    }

    @Test("a launch that ends a while after ready samples that while; a manual one samples until it is ended")
    func launchEndsLaterOrByHand() throws {
        let later = try LaunchRecorder.start(configuration: SamplerConfiguration(rateHz: 1000), launchEnd: .afterReady(.milliseconds(150)))
        later.ready()
        #expect(!later.launchEnded && Sampler.isSampling, "still sampling right after ready")
        later.span("warm cache") { recordedLaunchStep() }
        let giveUp = DispatchTime.now().uptimeNanoseconds + 10_000_000_000
        while !later.launchEnded && DispatchTime.now().uptimeNanoseconds < giveUp { usleep(5_000) }
        #expect(later.launchEnded && !Sampler.isSampling, "the launch ended 150 ms after ready")
        let profile = later.finish(violations: [])
        #expect(profile.spans.map(\.name) == ["warm cache"], "a span in the time after ready is the launch's")

        let manual = try LaunchRecorder.start(configuration: SamplerConfiguration(rateHz: 1000), launchEnd: .manual)
        manual.ready()
        manual.span("after ready") { recordedLaunchStep() }
        #expect(!manual.launchEnded && Sampler.isSampling)
        manual.endLaunch()
        #expect(!Sampler.isSampling)
        manual.span("after the end") {}
        #expect(manual.finish(violations: []).spans.map(\.name) == ["after ready"])
    }

    @Test("with LIFTOFF_PROFILE_OUT empty nothing is written; unset, the profile goes to liftoff-profiles/ in a writable directory")
    func profileDefaultPlace() throws {
        let recorder = try LaunchRecorder.start(configuration: SamplerConfiguration(rateHz: 100))
        recorder.ready()
        let (profile, url) = try recorder.finishAndWrite(environment: [LaunchRecorder.outputVariable: ""])
        #expect(url == nil)
        #expect(profile.phases.firstFrameNs != nil)

        let folder = testScratch.appendingPathComponent("liftoff-default-\(UUID().uuidString)")
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
