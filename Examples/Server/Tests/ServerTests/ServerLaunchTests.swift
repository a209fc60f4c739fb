import Foundation
import Hummingbird
import HummingbirdTesting
import Liftoff
import LiftoffTracing
import ServerCore
import Testing
import Tracing

/// The repository's `liftoff` (built by `swift build` at the root) and this package's server.
enum Tools {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let liftoff = root.appendingPathComponent("../../.build/debug/liftoff").standardizedFileURL
    static let server = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        .appendingPathComponent("Server")

    /// Runs `executable` with `arguments`; its exit status and standard output.
    static func run(_ executable: URL, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}

@Suite("Server launch, recorded by liftoff", .serialized)
struct ServerLaunchTests {
    @Test("a slowed tracing span is named regressed by compare and over budget by check, with no Liftoff code in it")
    func slowedSpanIsCaught() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Tools.liftoff.path), "run swift build at the repository root first")
        try #require(FileManager.default.isExecutableFile(atPath: Tools.server.path), "run swift build here first")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("server-launch-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }

        // Base and head interleaved; head builds its router 40 ms slower. Hummingbird logs its
        // listening line to standard error, which --ready watches.
        let record = try Tools.run(Tools.liftoff, [
            "record", "--runs", "8", "--warmup", "1", "--timeout", "30", "--quiet",
            "--ready", "Server started and listening on", "--out", folder.path,
            "--baseline", Tools.server.path,
            "--", "/usr/bin/env", "SERVER_EXTRA_ROUTER_MS=40", Tools.server.path,
        ])
        #expect(record.status == 0, "\(record.output)")

        let comparison = folder.appendingPathComponent("comparison.json")
        let diff = folder.appendingPathComponent("diff")
        let compare = try Tools.run(Tools.liftoff, [
            "compare", folder.appendingPathComponent("base").path, folder.appendingPathComponent("head").path,
            "--metrics", "spans", "--gate", "build router", "--format", "json", "-o", comparison.path,
            "--diff-span", "build router", "--diff-out", diff.path,
        ])
        #expect(compare.status == 2, "build router regressed: \(compare.output)")
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: comparison)) as? [String: Any]
        let metrics = json?["metrics"] as? [[String: Any]] ?? []
        let router = metrics.first { $0["metric"] as? String == "span: build router" }
        #expect(router?["verdict"] as? String == "regressed", "\(metrics)")
        #expect(metrics.contains { $0["metric"] as? String == "span: load catalogue" })
        #expect(metrics.contains { $0["metric"] as? String == "span: http" }, "the service's start")
        let page = try String(contentsOf: diff.appendingPathComponent("diff-flame.html"), encoding: .utf8)
        #expect(page.contains("spin"), "the span's own diff shows the added work")

        try explainsLaunch(folder.appendingPathComponent("head"))

        let base = try Tools.run(Tools.liftoff, ["check", folder.appendingPathComponent("base").path, "--max-phase", "build router=30ms"])
        #expect(base.status == 0, "\(base.output)")
        let head = try Tools.run(Tools.liftoff, ["check", folder.appendingPathComponent("head").path, "--max-phase", "build router=30ms"])
        #expect(head.status == 2)
        #expect(head.output.contains("build router"), "\(head.output)")
    }

    /// `liftoff explain` on the recorded launches names the startup's own functions and accounts
    /// for most of the launch; the samples inside the synchronous `withSpan { }` closures keep
    /// their callers (`loadCatalogue`, top-level code), which the Concurrency runtime's
    /// `TaskLocal.withValue` stands between.
    func explainsLaunch(_ runs: URL) throws {
        let explained = try Tools.run(Tools.liftoff, ["explain", runs.path, "--format", "json"])
        #expect(explained.status == 0, "\(explained.output)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(explained.output.utf8)) as? [String: Any])
        let insights = document["insights"] as? [[String: Any]] ?? []
        let findings = insights.compactMap { $0["finding"] as? String }.joined(separator: "\n")
        #expect(findings.contains("loadCatalogue") || findings.contains("buildRouter"), "\(findings)")
        // The thread rules check blocking calls without reading symbol tables on the launch's thread.
        #expect(!findings.contains("Symbolizer") && !findings.contains("ELFSymbolTable"), "\(findings)")
        // From main to ready the insights account for at least 80 % of the time; before main, a
        // 67 MB debug executable's loading is reported once it passes the pre-main threshold.
        let coverage = try #require(document["coverage"] as? [String: Any], "\(document.keys)")
        let explainedMs = coverage["explainedMs"] as? Double ?? 0
        let unexplained = coverage["unexplained"] as? [[String: Any]] ?? []
        let afterMainMs = unexplained.filter { $0["what"] as? String != "before main" }.reduce(0) { $0 + ($1["ms"] as? Double ?? 0) }
        #expect(explainedMs >= 0.8 * (explainedMs + afterMainMs), "\(coverage)")

        let folder = runs.appendingPathComponent("runs")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix("run-") && $0.hasSuffix(".json") }
        var inSpans = 0
        var withCallers = 0
        for file in files {
            let profile = try Profile.load(from: folder.appendingPathComponent(file))
            let spans = profile.spans.filter { $0.name == "load catalogue" || $0.name == "build router" }
            for row in 0..<profile.samples.count where profile.samples.state[row] == .running {
                let time = profile.samples.timeNs[row]
                guard spans.contains(where: { $0.threadID == profile.samples.thread[row] && $0.startNs <= time && time < $0.startNs + $0.durationNs })
                else { continue }
                inSpans += 1
                let names = profile.frameIndices(ofStack: profile.samples.stack[row]).map { profile.frames[$0].displayName }
                let caller = names.contains { $0.contains("loadCatalogue") || $0.contains("buildRouter") }
                if caller && names.contains(where: { $0 == "main" || $0.hasSuffix("main()") || $0.contains("async_Main") }) { withCallers += 1 }
            }
        }
        #expect(inSpans >= 20, "\(inSpans) running samples inside the startup spans")
        #expect(withCallers * 10 >= inSpans * 9, "\(withCallers) of \(inSpans) samples in the spans name their function and main")
    }

    @Test("a request's span owns the child tasks its handler starts: its samples match the CPU time they used")
    func requestSpanOwnsChildTasks() async throws {
        let recorder = try LaunchRecorder.start()
        InstrumentationSystem.bootstrap(LiftoffTracer(recorder: recorder))
        let app = Application(router: Startup.buildRouter(catalogue: Startup.loadCatalogue(count: 100)))
        let used = try await app.test(.router) { client in
            try await client.execute(uri: "/report", method: .get) { response in
                #expect(response.status == .ok)
                return UInt64(String(buffer: response.body)) ?? 0
            }
        }
        let profile = recorder.finish(violations: [])

        let index = try #require(profile.spans.lastIndex { $0.name.contains("report") }, "\(profile.spans.map(\.name))")
        let span = profile.spans[index]
        #expect(span.childTasks == 3, "an async let and two group children")
        // At 1 kHz a running sample stands for a millisecond of CPU time.
        let samples = Double(try #require(span.samples))
        let milliseconds = Double(used) / 1_000_000
        #expect(milliseconds >= 45)
        #expect(abs(samples - milliseconds) <= 0.1 * milliseconds, "\(samples) samples for \(milliseconds) ms of CPU")
        // The children's stacks name the handler's async function that started them.
        let children = Set(profile.asyncTasks.filter { $0.span == index }.map(\.id))
        var inChildren = 0
        var named = 0
        for row in 0..<profile.samples.count where children.contains(profile.samples.task[row]) && profile.samples.state[row] == .running {
            inChildren += 1
            let frames = profile.frameIndices(ofStack: profile.samples.stack[row]).map { profile.frames[$0] }
            if frames.contains(where: { $0.isAsync && $0.displayName.hasPrefix("static Startup.priceReport(") }) { named += 1 }
        }
        #expect(inChildren > 0 && named * 10 >= inChildren * 9, "\(named) of \(inChildren) child samples name priceReport")
    }

    @Test("the router serves what the catalogue holds")
    func router() {
        let catalogue = Startup.loadCatalogue(count: 10)
        #expect(catalogue.count == 10)
        _ = Startup.buildRouter(catalogue: catalogue)
    }
}
