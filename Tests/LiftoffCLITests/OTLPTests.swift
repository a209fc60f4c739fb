import Foundation
import LiftoffAnalysis
import LiftoffFormats
import LiftoffPprof
import LiftoffProfile
import LiftoffTestSupport
import Testing

@testable import LiftoffCLI

/// What OpenTelemetry's own Python classes (PyPI `opentelemetry-proto`, in the venv `make test`
/// makes) read in an OTLP file: `Tests/Scripts/otlp_summary.py`'s JSON.
struct OTLPSummary: Decodable {
    struct OneProfile: Decodable {
        var type: String
        var unit: String
        var periodType: String
        var period: Int64
        var total: Int64
        var timesMatchValues: Bool
        var timesInside: Bool
        var profileID: Bool
        var attributes: [String: Value]
        var threads: [String]
        var spans: [String]
        var leaves: [String: Int64]
        var links: [String]
    }

    enum Value: Decodable, Equatable {
        case int(Int64)
        case string(String)
        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let number = try? container.decode(Int64.self) { self = .int(number) } else { self = .string(try container.decode(String.self)) }
        }
    }

    var zeroValues: Bool
    var resource: [String: String]
    var scope: String
    var profiles: [OneProfile]

    static func read(_ file: URL) throws -> OTLPSummary {
        let python = repositoryRoot.appendingPathComponent(".build/test-venv/bin/python").path
        try #require(FileManager.default.isExecutableFile(atPath: python), "make test-deps makes the venv with opentelemetry-proto")
        let script = repositoryRoot.appendingPathComponent("Tests/Scripts/otlp_summary.py").path
        let result = try runToEnd(python, [script, file.path])
        try #require(result.status == 0, "opentelemetry-proto could not read \(file.path): \(result.output)")
        return try JSONDecoder().decode(OTLPSummary.self, from: Data(result.output.utf8))
    }
}

@Suite("OTLP export, read by OpenTelemetry's proto classes", .timeLimit(.minutes(3)))
struct OTLPTests {
    @Test("cpu and wall profiles hold the same totals as pprof's, in nanoseconds, each sample at its time")
    func totalsAgreeWithPprof() throws {
        let profile = Profile.synthetic(samples: 6_000, distinctStacks: 300, tasks: 6, threads: 3, seed: 7)
        let url = temporaryFolder().appendingPathComponent("profile.otlp.pb")
        try OTLPExporter.data(profile).write(to: url)
        let summary = try OTLPSummary.read(url)
        #expect(summary.zeroValues, "every table starts with its zero value")
        #expect(summary.scope == "liftoff")
        let (cpu, wall) = (try #require(summary.profiles.first), try #require(summary.profiles.last))
        #expect(summary.profiles.count == 2)
        #expect((cpu.type, cpu.unit, cpu.periodType) == ("cpu", "nanoseconds", "cpu"))
        #expect((wall.type, wall.unit, wall.periodType) == ("wall", "nanoseconds", "wall"))
        let interval = Int64(profile.samplingIntervalNs)
        #expect(cpu.period == interval && wall.period == interval)

        // pprof's totals, as Go's pprof reads them: running and all samples.
        let pprof = temporaryFolder().appendingPathComponent("profile.pb.gz")
        try PprofExporter.data(profile).write(to: pprof)
        var running: Int64 = 0
        var all: Int64 = 0
        var inSamples = false
        for line in try goPprof(["-raw", pprof.path]).split(separator: "\n") {
            if line.hasPrefix("Samples:") { inSamples = true } else if line.hasPrefix("Locations") { inSamples = false }
            guard inSamples, line.contains(":") else { continue }
            let head = line.split(separator: ":")[0].split(separator: " ")
            guard head.count == 3, let cpuSamples = Int64(head[0]), let wallSamples = Int64(head[1]) else { continue }
            running += cpuSamples
            all += wallSamples
        }
        #expect(running > 0 && running < all)
        #expect(cpu.total == running * interval, "OTLP cpu \(cpu.total) ns, pprof \(running) samples")
        #expect(wall.total == all * interval, "OTLP wall \(wall.total) ns, pprof \(all) samples")
        #expect(cpu.timesMatchValues && wall.timesMatchValues)
        #expect(cpu.timesInside && wall.timesInside)
        #expect(cpu.profileID && wall.profileID)

        // Stacks are leaf first: the busiest leaf is the summary's top self function.
        let top = try #require(ProfileSummary(profile, limit: 1).topSelf.first)
        #expect(cpu.leaves.max { $0.value < $1.value }?.key == top.name)
        #expect(cpu.leaves[top.name] == Int64(top.selfSamples) * interval)
    }

    @Test("thread names carry no ids, samples in spans name them, the launch's phases are attributes, --service names the resource")
    func labelsAndService() throws {
        let file = try spanFolder(routerMs: [8]).appendingPathComponent("run-000.json")
        let defaultOut = temporaryFolder().appendingPathComponent("default.otlp.pb")
        let named = temporaryFolder().appendingPathComponent("named.otlp.pb")
        let tool = try BuiltTool.find()
        var result = try tool.run(["report", file.path, "--format", "otlp", "-o", defaultOut.path])
        #expect(result.status == 0, "\(result.stderr)")
        result = try tool.run(["report", file.path, "--format", "otlp", "--service", "checkout", "-o", named.path])
        #expect(result.status == 0, "\(result.stderr)")

        let summary = try OTLPSummary.read(defaultOut)
        #expect(summary.resource["service.name"] == "server", "the program's name by default")
        #expect(try OTLPSummary.read(named).resource["service.name"] == "checkout")
        let wall = try #require(summary.profiles.last)
        #expect(wall.threads == ["main"], "\(wall.threads)")
        #expect(wall.spans.contains("build router"))
        #expect(wall.attributes["liftoff.main_entry"] == .int(1_000_000))
        #expect(wall.attributes["liftoff.first_frame"] == .int(38_000_000))
        #expect(wall.attributes["liftoff.pre_main"] == .int(1_000_000))
    }

    @Test("a report folder holds the OTLP file beside pprof")
    func inTheRegistry() throws {
        #expect(ReportFormats.named("otlp")?.fileName == "profile.otlp.pb")
        let help = try BuiltTool.find().run(["report", "--help"])
        #expect(help.stdout.contains("otlp"))
    }

    @Test("a traced span's W3C ids link its samples in OTLP and label them in pprof")
    func tracedSpansLink() throws {
        var profile = try Profile.load(from: try spanFolder(routerMs: [8]).appendingPathComponent("run-000.json"))
        let router = try #require(profile.spans.firstIndex { $0.name == "build router" })
        profile.spans[router].attributes = ["trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "00f067aa0ba902b7"]
        let otlp = temporaryFolder().appendingPathComponent("profile.otlp.pb")
        try OTLPExporter.data(profile).write(to: otlp)
        let wall = try #require(try OTLPSummary.read(otlp).profiles.last)
        #expect(wall.links == ["4bf92f3577b34da6a3ce929d0e0e4736/00f067aa0ba902b7"])

        let pprof = temporaryFolder().appendingPathComponent("profile.pb.gz")
        try PprofExporter.data(profile).write(to: pprof)
        let routerOnly = try goPprof(["-top", "-tagfocus=span_id=00f067aa0ba902b7", pprof.path])
        #expect(routerOnly.contains("makeRoutes") && !routerOnly.contains("connect"), "\(routerOnly)")
        #expect(try goPprof(["-tags", pprof.path]).contains("4bf92f3577b34da6a3ce929d0e0e4736"))
    }
}
