import AsyncCLICore
import Liftoff
import LiftoffProfile
import Testing

@Suite("Async startup")
struct StartupTests {
    @Test("the CPU work after an await is sampled and belongs to the span that awaited it")
    func migrateSpanGetsItsWork() async throws {
        let recorder = try LaunchRecorder.start()
        _ = try await startUp(recorder: recorder)
        let profile = recorder.finish(violations: [])

        let migrate = try #require(profile.spans.first { $0.name == "migrate" })
        let open = try #require(profile.spans.first { $0.name == "open database" })
        #expect(migrate.parent == profile.spans.firstIndex { $0.name == "open database" })
        let samples = try #require(migrate.samples)
        #expect(samples >= 20, "the migration ran for tens of milliseconds: \(samples) running samples")
        #expect((open.samples ?? 0) >= samples, "a span counts its children's samples")
        let task = try #require(migrate.task)
        let named = (0..<profile.samples.count).filter { index in
            profile.samples.task[index] == task && profile.samples.state[index] == .running
                && profile.frameIndices(ofStack: profile.samples.stack[index]).contains {
                    profile.frames[$0].name.contains("checksumRows")
                }
        }
        #expect(named.count * 2 >= samples, "checksumRows leads the span's samples: \(named.count) of \(samples)")
    }
}
