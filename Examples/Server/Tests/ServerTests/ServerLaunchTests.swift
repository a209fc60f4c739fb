import Foundation
import ServerCore
import Testing

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

        let base = try Tools.run(Tools.liftoff, ["check", folder.appendingPathComponent("base").path, "--max-phase", "build router=30ms"])
        #expect(base.status == 0, "\(base.output)")
        let head = try Tools.run(Tools.liftoff, ["check", folder.appendingPathComponent("head").path, "--max-phase", "build router=30ms"])
        #expect(head.status == 2)
        #expect(head.output.contains("build router"), "\(head.output)")
    }

    @Test("the router serves what the catalogue holds")
    func router() {
        let catalogue = Startup.loadCatalogue(count: 10)
        #expect(catalogue.count == 10)
        _ = Startup.buildRouter(catalogue: catalogue)
    }
}
