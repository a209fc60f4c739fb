import Foundation
import LiftoffTestSupport
import Testing

@testable import LiftoffProfile

/// A small valid profile: two threads, three frames, three stacks, four samples.
func sampleProfile() -> Profile {
    Profile(
        metadata: Profile.Metadata(
            liftoffVersion: "0.1.0", commandLine: ["/usr/bin/app", "--fast"],
            host: Profile.Host(name: "box", os: "Linux 6.1", architecture: "x86_64", cpuCount: 2),
            startTime: "2026-11-21T10:00:00.000Z", buildConfiguration: "debug", samplingRateHz: 1000),
        timeOriginNs: 5_000_000_000,
        phases: Profile.Phases(processStartNs: 0, preMainNs: 1_000, mainEntryNs: 2_000_000, endNs: 9_000_000),
        threads: [
            Profile.ThreadInfo(id: 100, name: "main", isMain: true),
            Profile.ThreadInfo(id: 101, name: "worker", isMain: false),
        ],
        frames: [
            Profile.Frame(name: "main", object: "app"),
            Profile.Frame(name: "load()", object: "app"),
            Profile.Frame(name: "parse()", object: "app"),
        ],
        stacks: Profile.StackTable(parent: [-1, 0, 1], frame: [0, 1, 2]),
        samples: Profile.SampleTable(thread: [100, 100, 101, 100], timeNs: [3_000_000, 4_000_000, 4_500_000, 5_000_000], stack: [2, 2, 1, 0]),
        counts: Profile.SampleCounts(signalsSent: 5, captured: 4, dropped: 1, failed: 0, truncated: 0))
}

@Suite("Profile JSON", .timeLimit(.minutes(5)))
struct ProfileTests {
    let folder: URL = {
        let url = testScratch.appendingPathComponent("liftoff-profile-tests-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }()

    private func write(_ text: String, name: String = "profile.json") -> URL {
        let url = folder.appendingPathComponent(name)
        try? Data(text.utf8).write(to: url)
        return url
    }

    @Test("a profile survives writing and loading unchanged, with the schema field first-class")
    func roundTrip() throws {
        let profile = sampleProfile()
        let url = folder.appendingPathComponent("round.json")
        try profile.write(to: url)
        let loaded = try Profile.load(from: url)
        #expect(loaded == profile)
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any]
        #expect(object?["schema"] as? String == "liftoff.profile/3")
        #expect(try profile.jsonData() == loaded.jsonData(), "encoding is deterministic")
    }

    @Test("atomic writes leave no temporary file and replace the old content whole")
    func atomicWrite() throws {
        let url = folder.appendingPathComponent("atomic.txt")
        try AtomicFile.write("first", to: url)
        try AtomicFile.write("second", to: url)
        #expect(try String(contentsOf: url, encoding: .utf8) == "second")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix(".atomic") }
        #expect(leftovers.isEmpty)
    }

    @Test("writing into a folder that cannot be created is an unwritable error naming it")
    func unwritable() throws {
        let blocker = folder.appendingPathComponent("file")
        try Data("x".utf8).write(to: blocker)
        let error = #expect(throws: ProfileError.self) {
            try AtomicFile.write("data", to: blocker.appendingPathComponent("inside/out.json"))
        }
        #expect(error?.code == .unwritable)
        #expect(error?.message.contains(blocker.path) == true)
    }

    @Test("a missing file is unreadable and says it does not exist")
    func missingFile() {
        let path = folder.appendingPathComponent("nope.json")
        let error = #expect(throws: ProfileError.self) { try Profile.load(from: path) }
        #expect(error?.code == .unreadable)
        #expect(error?.message == "The profile \(path.path) does not exist.")
    }

    @Test("a cut-off file is reported as truncated")
    func truncated() throws {
        let full = String(decoding: try sampleProfile().jsonData(), as: UTF8.self)
        let url = write(String(full.prefix(full.count / 2)))
        let error = #expect(throws: ProfileError.self) { try Profile.load(from: url) }
        #expect(error?.code == .truncated)
        #expect(error?.message == "\(url.path) is truncated: the JSON document ends early.")
    }

    @Test("an empty file is reported as truncated")
    func empty() {
        let url = write("")
        let error = #expect(throws: ProfileError.self) { try Profile.load(from: url) }
        #expect(error?.code == .truncated)
    }

    @Test("text that is not JSON is malformed")
    func notJSON() {
        let url = write("hello, world")
        let error = #expect(throws: ProfileError.self) { try Profile.load(from: url) }
        #expect(error?.code == .malformed)
        #expect(error?.message == "\(url.path) is not a JSON object.")
    }

    @Test("another schema version is refused with the readable versions named")
    func wrongVersion() throws {
        var object = try JSONSerialization.jsonObject(with: sampleProfile().jsonData()) as! [String: Any]
        object["schema"] = "liftoff.profile/9"
        let url = folder.appendingPathComponent("v9.json")
        try JSONSerialization.data(withJSONObject: object).write(to: url)
        let error = #expect(throws: ProfileError.self) { try Profile.load(from: url) }
        #expect(error?.code == .wrongSchema)
        #expect(error?.value == "liftoff.profile/9")
        #expect(
            error?.message
                == "\(url.path) has schema \"liftoff.profile/9\", but this Liftoff reads \"liftoff.profile/1\", "
                + "\"liftoff.profile/2\" and \"liftoff.profile/3\".")
    }

    @Test("a schema /1 profile loads with every sample running, no task and no CPU time")
    func versionOne() throws {
        var object = try JSONSerialization.jsonObject(with: sampleProfile().jsonData()) as! [String: Any]
        object["schema"] = "liftoff.profile/1"
        var samples = try #require(object["samples"] as? [String: Any])
        samples["state"] = nil
        samples["task"] = nil
        samples["cpuNs"] = nil
        samples["weight"] = nil
        object["samples"] = samples
        var counts = try #require(object["counts"] as? [String: Any])
        counts["waiting"] = nil
        counts["unanswered"] = nil
        counts["threadsSeen"] = nil
        object["counts"] = counts
        let url = folder.appendingPathComponent("v1.json")
        try JSONSerialization.data(withJSONObject: object).write(to: url)
        let loaded = try Profile.load(from: url)
        #expect(loaded.schema == "liftoff.profile/3")
        #expect(loaded.samples.weight == [1, 1, 1, 1])
        #expect(loaded.samples.count == 4)
        #expect(loaded.samples.state == [.running, .running, .running, .running])
        #expect(loaded.samples.task == [0, 0, 0, 0])
        #expect(loaded.samples.cpuNs == [0, 0, 0, 0])
        #expect(loaded.counts.waiting == 0)
        #expect(loaded.samples.stack == sampleProfile().samples.stack)
    }

    @Test("a weighted row counts its ticks inside a span, and only those")
    func weightedAttribution() {
        var profile = sampleProfile()
        // Thread 100: one running sample at 3 ms, then a wait of 50 ticks from 4 ms (4 ... 53 ms).
        profile.samples = Profile.SampleTable(
            thread: [100, 100], timeNs: [3_000_000, 4_000_000], stack: [2, 1], state: [.running, .blocked], weight: [1, 50])
        profile.spans = [
            Profile.Span(name: "all", category: .span, threadID: 100, startNs: 0, endNs: 60_000_000),
            // Starts inside the wait: ticks 10 ... 19 ms.
            Profile.Span(name: "middle", category: .span, threadID: 100, startNs: 9_500_000, endNs: 19_500_000),
            Profile.Span(name: "after", category: .span, threadID: 100, startNs: 54_000_000, endNs: 60_000_000),
        ]
        profile.attributeSamples()
        #expect(profile.spans.map(\.samples) == [1, 0, 0])
        #expect(profile.spans.map(\.waitingSamples) == [50, 10, 0])
        #expect(profile.sampleIndices(inSpansNamed: "middle") == [1])
        #expect(profile.samples.totalTicks == 51)
        #expect(profile.samples.ticks(in: .blocked) == 50)
    }

    @Test("a row of no ticks, or one that lasts past any launch, is refused")
    func weightRanges() {
        var profile = sampleProfile()
        profile.samples.weight[0] = 0
        #expect(throws: ProfileError.self) { try profile.validateRanges() }
        profile.samples.weight[0] = .max
        profile.metadata.samplingRateHz = 1
        #expect(throws: ProfileError.self) { try profile.validateRanges() }
    }

    @Test("a samples column of another length is refused, naming the samples")
    func ragged() throws {
        var object = try JSONSerialization.jsonObject(with: sampleProfile().jsonData()) as! [String: Any]
        var samples = try #require(object["samples"] as? [String: Any])
        samples["state"] = [0, 1]
        object["samples"] = samples
        let url = folder.appendingPathComponent("ragged.json")
        try JSONSerialization.data(withJSONObject: object).write(to: url)
        let error = #expect(throws: ProfileError.self) { try Profile.load(from: url) }
        #expect(error?.code == .inconsistent)
        #expect(error?.message == "\(url.path) is inconsistent: the columns of samples differ in length.")
    }

    @Test("JSON without a schema field is not a Liftoff profile")
    func noSchema() {
        let url = write("{\"traceEvents\": []}")
        let error = #expect(throws: ProfileError.self) { try Profile.load(from: url) }
        #expect(error?.code == .wrongSchema)
        #expect(error?.message == "\(url.path) is not a Liftoff profile: it has no \"schema\" field.")
    }

    @Test("a missing field is malformed and named")
    func missingField() throws {
        var object = try JSONSerialization.jsonObject(with: sampleProfile().jsonData()) as! [String: Any]
        object.removeValue(forKey: "frames")
        let url = folder.appendingPathComponent("nofields.json")
        try JSONSerialization.data(withJSONObject: object).write(to: url)
        let error = #expect(throws: ProfileError.self) { try Profile.load(from: url) }
        #expect(error?.code == .malformed)
        #expect(error?.message == "\(url.path) is malformed: field \"frames\" is missing.")
    }

    @Test("indices that point nowhere are inconsistent", arguments: [
        ("stack", "stack 2 names frame 9, which does not exist"),
        ("sample", "sample 1 names stack 7, which does not exist"),
        ("thread", "sample 0 names thread 999, which is not in threads"),
        ("parent", "stack 1 has parent 1, which is not an earlier stack"),
    ])
    func inconsistent(kind: String, message: String) {
        var profile = sampleProfile()
        switch kind {
        case "stack": profile.stacks.frame[2] = 9
        case "sample": profile.samples.stack[1] = 7
        case "thread": profile.samples.thread[0] = 999
        default: profile.stacks.parent[1] = 1
        }
        let error = #expect(throws: ProfileError.self) { try Profile.decode(profile.jsonData(), source: "p.json") }
        #expect(error?.code == .inconsistent)
        #expect(error?.message == "p.json is inconsistent: \(message).")
    }

    @Test("frameIndices walks a stack from its root to its leaf")
    func frameIndices() {
        #expect(sampleProfile().frameIndices(ofStack: 2) == [0, 1, 2])
        #expect(sampleProfile().frameIndices(ofStack: 0) == [0])
    }
}

@Suite("Atomic files", .timeLimit(.minutes(5)))
struct AtomicFileTests {
    @Test("a device, folder or link is never replaced by a file")
    func refusesNonRegularTargets() throws {
        #expect(throws: ProfileError.self) { try AtomicFile.write("x", to: URL(fileURLWithPath: "/dev/null")) }
        var status = stat()
        #expect(stat("/dev/null", &status) == 0 && status.st_mode & S_IFMT == S_IFCHR, "/dev/null is still a device")
        let folder = testScratch.appendingPathComponent("liftoff-atomic-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        #expect(throws: ProfileError.self) { try AtomicFile.write("x", to: folder) }
        let file = folder.appendingPathComponent("a.txt")
        try AtomicFile.write("one", to: file)
        try AtomicFile.write("two", to: file, durable: false)
        #expect(try String(contentsOf: file, encoding: .utf8) == "two")
    }

    @Test(
        "Liftoff's own frames are told by their qualified name, not by the types of their parameters",
        arguments: [
            ("Liftoff.View.setNeedsDisplay() -> ()", true),
            ("closure #1 in static Liftoff.ThreadRules.record(rule: Swift.String) -> ()", true),
            ("static LiftoffSampler.Sampler.captureCurrentStack(maxFrames: Swift.Int) -> Swift.Array<Swift.UInt>", true),
            ("lo_capture_current_stack", true),
            ("LiftoffTests.uiWorkFromDetachedTask(Liftoff.View) -> ()", false),
            ("LiftoffDemo.DemoWorkload.hashCatalog(_: Swift.Array<Liftoff.Item>) -> Swift.UInt64", false),
            ("main", false),
            ("LiftoffTracing.LiftoffTracer.startSpan(_: Swift.String) -> ()", true),
            ("closure #1 in LiftoffLogging.LoggingViolationHandler.handle(Liftoff.Violation) -> ()", true),
            ("LiftoffServiceLifecycle.ServiceLaunch.run() async throws -> ()", true),
            ("MyLiftoffApp.Store.load() -> ()", false),
            (
                "closure #1 (sending inout LiftoffSampler.ELFSymbolizer.(State in _5CFD)) -> sending Swift.Array<LiftoffSampler.SymbolizedFrame> in LiftoffSampler.ELFSymbolizer.frames(at: Swift.UInt) -> Swift.Array<LiftoffSampler.SymbolizedFrame>",
                true
            ),
            ("closure #2 (Swift.Int) -> Swift.Int in closure #1 (Liftoff.Item) -> () in App.Store.load() -> ()", false),
            ("implicit closure #1 () -> Swift.String in Liftoff.ThreadRules.report() -> ()", true),
        ])
    func liftoffFrames(name: String, isLiftoff: Bool) {
        #expect(Profile.Frame(name: name, object: "app").isLiftoff == isLiftoff)
    }
}
