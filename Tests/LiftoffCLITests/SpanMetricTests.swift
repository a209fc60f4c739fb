import Foundation
import LiftoffProfile
@testable import LiftoffReports
import Testing

@testable import LiftoffCLI
import LiftoffComparison

/// A folder of server-like launches: `start` (on the main thread, no Swift task) encloses
/// `build router`, which lasts `routerMs[i]` with one running sample per millisecond in
/// `makeRoutes`; `open database` follows. Also a callback and a launch task of their own names.
func spanFolder(routerMs: [Double], addedSpan: String? = nil) throws -> URL {
    let folder = temporaryFolder()
    for (index, router) in routerMs.enumerated() {
        let routerNs = UInt64(router * 1e6)
        let end = 30_000_000 + routerNs
        let routerSamples = Int(router)
        var profile = Profile(
            metadata: testMetadata(["server"]), timeOriginNs: 0,
            phases: Profile.Phases(
                processStartNs: 0, preMainNs: 0, mainEntryNs: 1_000_000, endNs: end + 1_000_000, firstFrameNs: end),
            threads: [Profile.ThreadInfo(id: 1, name: "main", isMain: true)],
            frames: ["main", "makeRoutes", "connect"].map { Profile.Frame(name: $0, object: "server") },
            stacks: Profile.StackTable(parent: [-1, 0, 0], frame: [0, 1, 2]),
            samples: Profile.SampleTable(
                thread: Array(repeating: 1, count: routerSamples + 10),
                timeNs: (0..<routerSamples).map { 10_000_000 + UInt64($0) * 1_000_000 }
                    + (0..<10).map { 20_000_000 + routerNs + UInt64($0) * 1_000_000 },
                stack: Array(repeating: 1, count: routerSamples) + Array(repeating: 2, count: 10)))
        profile.spans = [
            Profile.Span(name: "start", category: .span, threadID: 1, startNs: 5_000_000, endNs: end),
            Profile.Span(name: "build router", category: .span, threadID: 1, startNs: 10_000_000, endNs: 10_000_000 + routerNs, parent: 0),
            Profile.Span(name: "open database", category: .span, threadID: 1, startNs: 20_000_000 + routerNs, endNs: end, parent: 0),
            Profile.Span(name: "didFinishLaunching", category: .callback, threadID: 1, startNs: 2_000_000, endNs: 4_000_000),
        ]
        if let addedSpan {
            profile.spans.append(
                Profile.Span(name: addedSpan, category: .span, threadID: 1, startNs: 6_000_000, endNs: 9_000_000 + UInt64(index) * 10_000, parent: 0))
        }
        profile.tasks = [
            Profile.TaskRecord(
                name: "read settings", lane: "main", status: "completed", threadID: 1, threadName: "main",
                readyNs: 1_000_000, startNs: 1_000_000, endNs: 3_000_000)
        ]
        profile.attributeSamples()
        try profile.write(to: folder.appendingPathComponent(String(format: "run-%03d.json", index)))
    }
    return folder
}

@Suite("Spans as launch metrics", .timeLimit(.minutes(5)))
struct SpanMetricTests {
    @Test("every span is a metric by name; callbacks, tasks and background tasks keep their own names")
    func spanMetrics() throws {
        let runs = try RunSet.load(try spanFolder(routerMs: [8, 9, 10]).path)
        let metrics = Dictionary(uniqueKeysWithValues: runs.metrics([.spans, .cpu]).map { ($0.name, $0.values) })
        #expect(metrics["span: build router"] == [8, 9, 10])
        #expect(metrics["span: start"]?.count == 3)
        #expect(metrics["span: didFinishLaunching"] == nil, "a callback is `callback: NAME`")
        #expect(metrics["span cpu: build router"]?.count == 3, "CPU time of its running samples")
        let names = runs.metrics(Set(MetricGroup.allCases)).map(\.name)
        #expect(RunSet.metric(named: "build router", among: names) == "span: build router")
        #expect(RunSet.metric(named: "didFinishLaunching", among: names) == "callback: didFinishLaunching")
        #expect(RunSet.metric(named: "read settings", among: names) == "task: read settings")
        #expect(RunSet.metric(named: "pre-main", among: names) == "pre-main")
        #expect(RunSet.metric(named: "nothing", among: names) == nil)
    }

    @Test("check --max-phase takes a span's, callback's or task's plain name, and lists what the runs have when none matches")
    func checkBySpanName() throws {
        let runs = try spanFolder(routerMs: [8, 9, 10]).path
        #expect(try exitCode(["check", runs, "--max-phase", "build router=10ms"]) == 0)
        #expect(try exitCode(["check", runs, "--max-phase", "build router=5ms"]) == 2)
        #expect(try exitCode(["check", runs, "--max-phase", "didFinishLaunching=5ms", "--max-phase", "read settings=5ms"]) == 0)
        let result = try BuiltTool.find().run(["check", runs, "--max-phase", "build routes=10ms"])
        #expect(result.status == 2)
        #expect(result.stdout.contains("No run recorded 'build routes'"), "\(result.stdout)")
        #expect(result.stdout.contains("span: build router"), "names what the runs have")
    }

    @Test("compare --metrics spans names the span that slowed down; --gate takes its name; --diff-span draws its samples only")
    func compareSpans() throws {
        let base = try spanFolder(routerMs: noisy(10, count: 12, seed: 3))
        let head = try spanFolder(routerMs: noisy(20, count: 12, seed: 4))
        let report = temporaryFolder().appendingPathComponent("comparison.json")
        let diff = temporaryFolder()
        let status = try exitCode([
            "compare", base.path, head.path, "--metrics", "spans", "--gate", "build router", "--format", "json",
            "-o", report.path, "--diff-span", "build router", "--diff-out", diff.path,
        ])
        #expect(status == 2, "the gated span regressed")
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: report)) as? [String: Any]
        let metrics = try #require(json?["metrics"] as? [[String: Any]])
        let router = try #require(metrics.first { $0["metric"] as? String == "span: build router" })
        #expect(router["verdict"] as? String == "regressed")
        #expect(router["gated"] as? Bool == true)
        let database = try #require(metrics.first { $0["metric"] as? String == "span: open database" })
        #expect(database["verdict"] as? String == "unchanged")

        let baseRuns = try RunSet.load(base.path)
        let headRuns = try RunSet.load(head.path)
        let restricted = DiffFlameGraph(base: baseRuns.profiles, head: headRuns.profiles, span: "build router")
        #expect(restricted.nodes.contains { $0.name == "makeRoutes" })
        #expect(!restricted.nodes.contains { $0.name == "connect" }, "samples outside the span are left out")
        #expect(FileManager.default.fileExists(atPath: diff.appendingPathComponent("diff-flame.svg").path))
        #expect(try exitCode(["compare", base.path, head.path, "--metrics", "all", "--format", "json", "-o", report.path]) == 2,
                "the router is on the way to the first frame, which gates by default")
        let all = try JSONSerialization.jsonObject(with: Data(contentsOf: report)) as? [String: Any]
        let names = Set((all?["metrics"] as? [[String: Any]] ?? []).compactMap { $0["metric"] as? String })
        #expect(names.isSuperset(of: ["span: build router", "span cpu: build router", "callback: didFinishLaunching", "task: read settings"]))
        #expect(throws: (any Error).self) {
            var command = try LiftoffCommand.parseAsRoot(["compare", base.path, head.path, "--diff-span", "nope"])
            try command.run()
        }
    }

    @Test("a span only head has is added: compared against no time in base, and --gate takes it")
    func addedSpan() throws {
        let base = try spanFolder(routerMs: noisy(10, count: 8, seed: 5))
        let head = try spanFolder(routerMs: noisy(10, count: 8, seed: 6), addedSpan: "warm cache")
        let report = temporaryFolder().appendingPathComponent("comparison.json")
        let status = try exitCode(["compare", base.path, head.path, "--gate", "warm cache", "--format", "json", "-o", report.path])
        #expect(status == 2, "the span head added is time the launch did not spend before")
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: report)) as? [String: Any]
        let metrics = try #require(json?["metrics"] as? [[String: Any]])
        let added = try #require(metrics.first { $0["metric"] as? String == "span: warm cache" }, "\(metrics)")
        #expect(added["verdict"] as? String == "regressed" && added["gated"] as? Bool == true)
        #expect(added["baseMedianMs"] as? Double == 0 && (added["headMedianMs"] as? Double ?? 0) >= 3)
        // Removed: the same comparison the other way round improves.
        #expect(try exitCode(["compare", head.path, base.path, "--gate", "warm cache"]) == 0)
    }

    @Test("the Markdown and HTML summaries list spans nested, with duration, CPU time and samples")
    func summaries() throws {
        let folder = try spanFolder(routerMs: [8])
        let profile = try Profile.load(from: folder.appendingPathComponent("run-000.json"))
        let markdown = MarkdownRenderer().render(profile)
        #expect(markdown.contains("### Spans"))
        #expect(markdown.contains("| start | main | 5.0 ms | 33.0 ms |"))
        #expect(markdown.contains("| ↳ build router | main | 10.0 ms | 8.0 ms |"))
        #expect(markdown.contains("8 running, 0 waiting"))
        #expect(!markdown.contains("| didFinishLaunching | main"), "callbacks stay in the phase table")
        let data = HTMLReportRenderer().dataJSON(profile)
        #expect(data.contains(#""spanRows":[{"name":"start","category":"span","depth":0"#))
        #expect(data.contains(#"{"name":"build router","category":"span","depth":1"#))
    }
}
