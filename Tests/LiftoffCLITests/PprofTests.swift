import Foundation
import LiftoffPprof
import LiftoffProfile
import LiftoffReports
import LiftoffTestSupport
import Testing

@testable import LiftoffCLI
import LiftoffAnalysis

/// Runs `go tool pprof` with `arguments`; its output.
func goPprof(_ arguments: [String]) throws -> String {
    let go = ["/usr/bin/go", "/usr/local/go/bin/go"].first { FileManager.default.isExecutableFile(atPath: $0) }
    let tool = try #require(go, "Go's pprof is needed: make test-deps installs golang-go")
    let result = try runToEnd(tool, ["tool", "pprof"] + arguments)
    try #require(result.status == 0, "go tool pprof failed: \(result.output)")
    return result.output
}

@Suite("pprof export, read by Go's pprof", .timeLimit(.minutes(3)))
struct PprofTests {
    /// A profile with real-looking work on two threads, spans and tasks, as pprof bytes on disk.
    func written(_ profile: Profile) throws -> URL {
        let url = temporaryFolder().appendingPathComponent("profile.pb.gz")
        try PprofExporter.data(profile).write(to: url)
        return url
    }

    @Test("sample totals and the top functions agree with Liftoff's own summary")
    func totalsAndTopFunctions() throws {
        let profile = Profile.synthetic(samples: 6_000, distinctStacks: 300, tasks: 6, threads: 3, seed: 7)
        let url = try written(profile)
        let raw = try goPprof(["-raw", url.path])
        #expect(raw.contains("cpu_samples/count[dflt] wall_samples/count cpu/nanoseconds"), "\(raw.prefix(400))")
        // Each sample line starts with its three values, then ":" and its locations.
        var running = 0
        var all = 0
        for line in raw.split(separator: "\n") where line.contains(":") {
            let head = line.split(separator: ":")[0].split(separator: " ")
            guard head.count == 3, let cpu = Int(head[0]), let wall = Int(head[1]) else { continue }
            running += cpu
            all += wall
        }
        #expect(running == profile.samples.runningCount)
        #expect(all == profile.samples.count)

        // `-top` lists self ("flat") samples: the same functions and counts as the summary.
        let top = try goPprof(["-top", "-nodecount=5", url.path])
        let summary = ProfileSummary(profile, limit: 5)
        for entry in summary.topSelf.prefix(3) {
            let line = top.split(separator: "\n").first { $0.hasSuffix(" \(entry.name)") }
            let flat = line.flatMap { $0.split(separator: " ").first }.flatMap { Int($0.replacingOccurrences(of: "samples", with: "")) }
            #expect(flat == entry.selfSamples, "\(entry.name): pprof \(String(describing: line)), Liftoff \(entry.selfSamples)")
        }
    }

    @Test("labels carry thread (its name, no id), span and task; phases are comments; the program's mapping comes first")
    func labelsAndComments() throws {
        let profile = try Profile.load(from: try spanFolder(routerMs: [8]).appendingPathComponent("run-000.json"))
        let url = try written(profile)
        let raw = try goPprof(["-raw", url.path])
        #expect(raw.contains("thread:[main]"), "\(raw.prefix(800))")
        #expect(!raw.contains("thread:[main ("), "no thread id in a label")
        #expect(raw.contains("span:[build router]"))
        #expect(raw.contains("Comment: time to first frame: "))
        #expect(raw.contains("Comment: pre-main: "))
        let tags = try goPprof(["-tags", url.path])
        #expect(tags.contains("build router"))
        let routerOnly = try goPprof(["-top", "-tagfocus=span=build router", url.path])
        #expect(routerOnly.contains("makeRoutes") && !routerOnly.contains("connect"), "\(routerOnly)")
    }

    @Test("liftoff report --format pprof writes the file; to a terminal it asks for -o")
    func command() throws {
        let file = temporaryFolder().appendingPathComponent("profile.json")
        try Profile.synthetic(samples: 500, distinctStacks: 40, tasks: 2).write(to: file)
        let out = temporaryFolder().appendingPathComponent("p.pb.gz")
        let result = try BuiltTool.find().run(["report", file.path, "--format", "pprof", "-o", out.path])
        #expect(result.status == 0, "\(result.stderr)")
        let bytes = try Data(contentsOf: out)
        #expect(bytes.starts(with: [0x1F, 0x8B]), "gzip")
        #expect(try goPprof(["-raw", out.path]).contains("cpu_samples/count"))
    }
}
