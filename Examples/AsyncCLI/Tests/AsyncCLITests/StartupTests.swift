import AsyncCLICore
import Foundation
import Liftoff
import LiftoffProfile
import Testing

// One recording at a time: the sampler is process-wide.
@Suite("Async startup", .serialized)
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

        // The frame says where the function is: its file and the line that declares it.
        let frame = try #require(profile.frames.first { $0.name.contains("checksumRows") })
        #expect(frame.location == "Startup.swift:\(try declarationLine(of: "func checksumRows"))")
        #expect(frame.short?.hasPrefix("checksumRows(") == true, "short name \(frame.short ?? "none")")
    }

    @Test("the span that warms the caches owns its async let and task group children, and their stacks name warmCaches")
    func warmCachesOwnsItsChildren() async throws {
        let recorder = try LaunchRecorder.start()
        _ = try await startUp(recorder: recorder)
        let profile = recorder.finish(violations: [])

        let index = try #require(profile.spans.firstIndex { $0.name == "warm caches" })
        let span = profile.spans[index]
        #expect(span.childTasks == 4, "an async let and three group children")
        let children = profile.asyncTasks.filter { $0.span == index }
        #expect(Set(children.map(\.kind)) == [.asyncLet, .groupChild])
        let childSamples = children.reduce(0) { $0 + ($1.samples ?? 0) }
        #expect(childSamples >= 20, "the children computed for tens of milliseconds: \(childSamples) samples")
        #expect((span.samples ?? 0) >= childSamples, "the span's samples include its children's")
        #expect(span.scheduledNs != nil, "how long the children's jobs waited to run")

        // Samples in the children's work name the function that started them, an async caller.
        let named = (0..<profile.samples.count).filter { row in
            let frames = profile.frameIndices(ofStack: profile.samples.stack[row]).map { profile.frames[$0] }
            return children.contains { $0.id == profile.samples.task[row] } && profile.samples.state[row] == .running
                && frames.contains { $0.isAsync && $0.displayName.hasPrefix("warmCaches(") }
        }
        let running = (0..<profile.samples.count).filter { row in
            children.contains { $0.id == profile.samples.task[row] } && profile.samples.state[row] == .running
        }
        #expect(named.count * 10 >= running.count * 9, "\(named.count) of \(running.count) child samples name warmCaches")
    }
}

/// The first line of `Sources/AsyncCLICore/Startup.swift` that contains `text`.
func declarationLine(of prefix: String) throws -> Int {
    let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources/AsyncCLICore/Startup.swift")
    let lines = try String(contentsOf: source, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
    let index = lines.firstIndex { line in line.range(of: prefix) != nil }
    return try #require(index, "no line contains \(prefix)") + 1
}
