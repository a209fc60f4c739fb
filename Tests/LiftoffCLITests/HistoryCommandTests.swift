import Foundation
import LiftoffHistory
import LiftoffTestSupport
import Testing

@Suite("liftoff history")
struct HistoryCommandTests {
    @Test("history add keeps a recorded folder's medians and top functions as one entry; adding it again changes nothing")
    func addRecordedFolder() throws {
        let program = try AnyPrograms.build("insight-cpu", InsightPrograms.busyOneThread, ["-O1", "-g"])
        let runs = temporaryFolder()
        let recorded = try BuiltTool.find().run(["record", "--runs", "2", "--warmup", "0", "--quiet", "--out", runs.path, "--", program])
        try #require(recorded.status == 0, "\(recorded.stdout)\(recorded.stderr)")
        let store = temporaryFolder().appendingPathComponent("history")
        let add = ["history", "add", runs.path, "--commit", "abc123", "--branch", "main", "--time", "2026-11-01T10:00:00Z", "--store", store.path]
        let first = try BuiltTool.find().run(add)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.hasPrefix("Added abc123 (2 runs, "), "\(first.stdout)")
        let names = try FileManager.default.contentsOfDirectory(atPath: store.path)
        let name = try #require(names.first)
        let bytes = try Data(contentsOf: store.appendingPathComponent(name))
        #expect(try BuiltTool.find().run(add).status == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.path) == names, "one file per commit and environment")
        #expect(try Data(contentsOf: store.appendingPathComponent(name)) == bytes, "the same entry, byte for byte")

        let schema = repositoryRoot.appendingPathComponent("Schemas/history-entry-1.schema.json").path
        let valid = try JSONSchemaCheck.validate(file: store.appendingPathComponent(name).path, schema: schema)
        #expect(valid.status == 0, "\(valid.output)")
        let entry = try HistoryEntry.decode(bytes, source: name)
        #expect(entry.commit == "abc123" && entry.branch == "main" && entry.runs == 2)
        #expect((entry.metrics["time to ready"] ?? 0) > 0 && entry.metrics["pre-main"] != nil, "\(entry.metrics.keys.sorted())")
        #expect(entry.functions.first?.name == "parse_all", "\(entry.functions.prefix(3))")
        #expect(entry.environment.cores > 0 && !entry.environment.cpu.isEmpty)
        #expect(entry.environment.swift == "unknown", "a C program names no Swift compiler")
    }

    @Test("history add of a record --baseline folder adds its head runs; added again without --time, the entry keeps its time and bytes")
    func addBaselineFolderTwice() throws {
        let program = try AnyPrograms.build("insight-cpu", InsightPrograms.busyOneThread, ["-O1", "-g"])
        let runs = temporaryFolder()
        let recorded = try BuiltTool.find().run(
            ["record", "--runs", "2", "--warmup", "0", "--quiet", "--baseline", "/bin/true", "--out", runs.path, "--", program])
        try #require(recorded.status == 0, "\(recorded.stdout)\(recorded.stderr)")
        let store = temporaryFolder().appendingPathComponent("history")
        let add = ["history", "add", runs.path, "--commit", "abc123", "--store", store.path]
        let first = try BuiltTool.find().run(add)
        #expect(first.status == 0, "\(first.stdout)\(first.stderr)")
        let name = try #require(try FileManager.default.contentsOfDirectory(atPath: store.path).first)
        let bytes = try Data(contentsOf: store.appendingPathComponent(name))
        let entry = try HistoryEntry.decode(bytes, source: name)
        // The head's functions, not /bin/true's.
        #expect(entry.functions.first?.name == "parse_all", "\(entry.functions.prefix(3))")
        Thread.sleep(forTimeInterval: 1.1)
        #expect(try BuiltTool.find().run(add).status == 0)
        #expect(try Data(contentsOf: store.appendingPathComponent(name)) == bytes, "the same entry, byte for byte, a second later")
    }

    @Test("history add labels an entry with the page cache its runs were recorded with, and refuses a --cache that contradicts them")
    func cacheLabel() throws {
        let cold = try cacheRunFolder("cold", readyMs: 120, bytesRead: 9_000_000)
        let store = temporaryFolder().appendingPathComponent("history")
        let tool = try BuiltTool.find()
        let added = try tool.run(["history", "add", cold.path, "--commit", "c1", "--store", store.path])
        #expect(added.status == 0, "\(added.stderr)")
        let name = try #require(try FileManager.default.contentsOfDirectory(atPath: store.path).first)
        let entry = try HistoryEntry.decode(try Data(contentsOf: store.appendingPathComponent(name)), source: name)
        #expect(entry.environment.cache == "cold")
        let contradicted = try tool.run(["history", "add", cold.path, "--commit", "c2", "--cache", "warm", "--store", store.path])
        #expect(contradicted.status == 1 && contradicted.stderr.contains("recorded with --cache cold"), "\(contradicted.stderr)")
        let unlabelled = try tool.run(["history", "add", try runFolder([50, 51]).path, "--commit", "c3", "--cache", "cold", "--store", store.path])
        #expect(unlabelled.status == 0, "runs that do not say take the label given: \(unlabelled.stderr)")
    }

    @Test("history analyze names the commit and function of a step, gates with --fail-on-change, and reads JSON and Markdown")
    func analyze() throws {
        let store = temporaryFolder()
        for entry in Self.entries(count: 90, stepAt: 61) { try FolderHistoryStore(folder: store).add(entry) }
        let tool = try BuiltTool.find()
        let text = try tool.run(["history", "analyze", "--store", store.path])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("time to ready: 1 change point") && text.stdout.contains("at c0061"), "\(text.stdout)")
        #expect(text.stdout.contains("parse_config [the program]"), "\(text.stdout)")

        let json = try tool.run(["history", "analyze", "--store", store.path, "--format", "json"])
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(document["schema"] as? String == "liftoff.history-analysis/1")
        let environments = try #require(document["environments"] as? [[String: Any]])
        let metrics = try #require(environments.first?["metrics"] as? [[String: Any]])
        let ready = try #require(metrics.first { $0["name"] as? String == "time to ready" })
        let changes = try #require(ready["changes"] as? [[String: Any]])
        #expect(changes.first?["commit"] as? String == "c0061" && changes.first?["regression"] as? Bool == true)

        let markdown = try tool.run(["history", "analyze", "--store", store.path, "--format", "markdown"])
        #expect(markdown.stdout.contains("| time to ready | ") && markdown.stdout.contains("`c0061`"), "\(markdown.stdout)")

        #expect(try tool.run(["history", "analyze", "--store", store.path, "--fail-on-change"]).status == 2)
        #expect(try tool.run(["history", "analyze", "--store", store.path, "--fail-on-change", "--recent", "5"]).status == 0)

        let flat = temporaryFolder()
        for entry in Self.entries(count: 90, stepAt: .max) { try FolderHistoryStore(folder: flat).add(entry) }
        let quiet = try tool.run(["history", "analyze", "--store", flat.path, "--fail-on-change"])
        #expect(quiet.status == 0 && quiet.stdout.contains("No change point in 2 metrics."), "\(quiet.stdout)")
    }

    @Test("history report draws a chart per metric with its change point; in a browser, two points clicked compare their commits")
    func report() throws {
        let store = temporaryFolder()
        var entries = Self.entries(count: 90, stepAt: 61)
        // Names from spans and functions are the program's: what they hold is shown, never run.
        entries[3].metrics["span: <b>load</b>"] = 4
        entries[3].functions.append(HistoryEntry.Function(name: "</script><script>alert(1)</script>", object: "the program", ms: 1))
        for entry in entries { try FolderHistoryStore(folder: store).add(entry) }
        let page = temporaryFolder().appendingPathComponent("history.html")
        let written = try BuiltTool.find().run(["history", "report", "--store", store.path, "-o", page.path])
        #expect(written.status == 0 && written.stdout.contains("1 change points"), "\(written.stdout)\(written.stderr)")
        let html = try String(contentsOf: page, encoding: .utf8)
        #expect(!html.contains("<b>load") && html.contains("span: &lt;b&gt;load&lt;/b&gt;"))
        #expect(!html.contains("</script><script>alert"), "a name cannot end the page's script")
        let probe = try runToEnd(BrowserTests.seleniumPython, ["-c", "import selenium"])
        try #require(probe.status == 0, "python3-selenium is missing; `make test-deps` installs it")
        let script = repositoryRoot.appendingPathComponent("Tests/Browser/history_interactions.py").path
        let run = try runToEnd(BrowserTests.seleniumPython, [script, page.path, "c0010", "c0080", "parse_config"])
        #expect(run.status == 0, "\(run.output)")
    }

    @Test("history import and export move entries between a folder and a real PostgreSQL server, with the same analysis")
    func importExport() throws {
        let server = try PostgresServer()
        defer { server.stop() }
        let folder = temporaryFolder()
        for entry in Self.entries(count: 70, stepAt: 40) { try FolderHistoryStore(folder: folder).add(entry) }
        let tool = try BuiltTool.find()
        let imported = try tool.run(["history", "import", folder.path, "--store", server.url])
        #expect(imported.status == 0 && imported.stdout.hasPrefix("Copied 70 entries from "), "\(imported.stdout)\(imported.stderr)")
        let back = temporaryFolder().appendingPathComponent("back")
        let exported = try tool.run(["history", "export", back.path, "--store", server.url])
        #expect(exported.status == 0, "\(exported.stderr)")
        let fromServer = try tool.run(["history", "analyze", "--store", server.url]).stdout
        #expect(fromServer.contains("at c0040"), "\(fromServer)")
        #expect(fromServer == (try tool.run(["history", "analyze", "--store", folder.path]).stdout))
        #expect(fromServer == (try tool.run(["history", "analyze", "--store", back.path]).stdout))
        let refused = try tool.run(["history", "analyze", "--store", "postgresql:///none?host=/nonexistent&user=x"])
        #expect(refused.status == 1 && refused.stderr.contains("Could not connect to the PostgreSQL store"), "\(refused.stderr)")
    }

    @Test("bad options and missing or hostile stores get one sentence and a non-zero exit")
    func badInput() throws {
        let tool = try BuiltTool.find()
        let missing = try tool.run(["history", "analyze", "--store", "/nonexistent/history"])
        #expect(missing.status == 1 && missing.stderr.contains("does not exist"), "\(missing.stderr)")
        let window = try tool.run(["history", "analyze", "--window", "1"])
        #expect(window.status != 0 && window.stderr.contains("--window must be 2 to 100000"), "\(window.stderr)")
        let time = try tool.run(["history", "add", "x", "--commit", "a", "--time", "soon"])
        #expect(time.status != 0 && time.stderr.contains("is not ISO 8601"), "\(time.stderr)")
        let store = temporaryFolder()
        for entry in Self.entries(count: 5, stepAt: .max) { try FolderHistoryStore(folder: store).add(entry) }
        try Data("{\"schema\": 1}".utf8).write(to: store.appendingPathComponent("broken.json"))
        let skipped = try tool.run(["history", "analyze", "--store", store.path])
        #expect(skipped.status == 0 && skipped.stderr.contains("broken.json"), "\(skipped.stderr)")
    }

    /// `count` commits with a launch of about 100 ms (0.3 % noise), and `parse_config` 6 ms slower from `stepAt` on.
    static func entries(count: Int, stepAt: Int) -> [HistoryEntry] {
        var state: UInt64 = 12345
        func noise() -> Double {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return (Double(state >> 11) / Double(1 << 53) - 0.5) * 0.01
        }
        let environment = HistoryEntry.Environment(cpu: "Test CPU", cores: 2, os: "Linux", liftoff: "0.1.0", cache: "warm")
        return (0..<count).map { index in
            let extra = index >= stepAt ? 6.0 : 0
            return HistoryEntry(
                commit: String(format: "c%04d", index), branch: "main", time: HistoryTime.format(1_790_000_000 + Double(index) * 60),
                environment: environment, runs: 5, metrics: ["time to ready": 100 * (1 + noise()) + extra, "pre-main": 20 * (1 + noise())],
                functions: [HistoryEntry.Function(name: "parse_config", object: "the program", ms: 25 * (1 + noise()) + extra)])
        }
    }
}
