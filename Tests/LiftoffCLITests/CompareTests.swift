import ArgumentParser
import Foundation
import LiftoffProfile
import LiftoffReports
import Testing

@testable import LiftoffCLI
import LiftoffComparison

/// A folder of profiles whose times to first frame are `ttffMs`; each launch spends its time
/// in `work` (and, with `extra`, part of it in `extra`).
func runFolder(_ ttffMs: [Double], extra: Double = 0, violations: Int = 0, occurrences: Int = 1) throws -> URL {
    let folder = temporaryFolder()
    for (index, ttff) in ttffMs.enumerated() {
        let samples = Int(ttff)
        let extraSamples = Int(extra)
        var profile = Profile(
            metadata: testMetadata(["app"]),
            timeOriginNs: 0,
            phases: Profile.Phases(
                processStartNs: 0, preMainNs: 0, mainEntryNs: 2_000_000, endNs: UInt64(ttff * 2e6),
                firstFrameNs: UInt64(ttff * 1e6)),
            threads: [Profile.ThreadInfo(id: 1, name: "main", isMain: true)],
            frames: ["main", "work", "extra", "gone"].map { Profile.Frame(name: $0, object: "app") },
            stacks: Profile.StackTable(parent: [-1, 0, 0, 0], frame: [0, 1, 2, 3]),
            samples: Profile.SampleTable(
                thread: Array(repeating: 1, count: samples + extraSamples + (extra > 0 ? 0 : 3)),
                timeNs: (0..<(samples + extraSamples + (extra > 0 ? 0 : 3))).map { UInt64($0) * 1_000_000 },
                stack: Array(repeating: 1, count: samples) + Array(repeating: 2, count: extraSamples)
                    + (extra > 0 ? [] : [3, 3, 3])))
        profile.violations = (0..<violations).map { _ in
            Profile.Violation(rule: "r", message: "m", threadID: 1, threadName: "main", timeNs: 1, stack: nil, count: occurrences)
        }
        try profile.write(to: folder.appendingPathComponent(String(format: "run-%03d.json", index)))
    }
    return folder
}

/// Metadata for hand-made profiles: a 2-CPU Linux host, sampled at 1 kHz.
func testMetadata(_ command: [String], host: String = "h") -> Profile.Metadata {
    Profile.Metadata(
        liftoffVersion: "0.1.0", commandLine: command,
        host: Profile.Host(name: host, os: "Linux", architecture: "x86_64", cpuCount: 2),
        startTime: "2026-11-21T10:00:00.000Z", buildConfiguration: "debug", samplingRateHz: 1000)
}

/// `count` values around `center` with a spread of about ±`spread` %, the same every time.
func noisy(_ center: Double, count: Int = 20, spread: Double = 5, seed: UInt64 = 1) -> [Double] {
    var state = seed
    return (0..<count).map { _ in
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        let unit = Double(state >> 11) / Double(1 << 53)  // 0 ..< 1
        return center * (1 + spread / 100 * (unit * 2 - 1))
    }
}

/// A folder `record --cache MODE` could have written: six timed runs of about `readyMs`, each
/// reading `bytesRead` from storage; a cold one evicted a 9 MB executable first.
func cacheRunFolder(_ mode: String, readyMs: Double, bytesRead: UInt64) throws -> URL {
    let folder = temporaryFolder()
    let files = mode == "cold" ? [Profile.CachedFile(path: "/srv/app", sizeBytes: 9_000_000, residentBytes: 0)] : []
    let manifest = RecordManifest(
        command: ["app"], measure: .ready,
        runs: (1...6).map {
            RecordManifest.Run(
                index: $0, profile: nil, log: "l", outcome: "exit status 0", succeeded: true, exitMs: readyMs + Double($0),
                readyMs: readyMs + Double($0), counters: RunCounters(storageBytesRead: bytesRead),
                cache: Profile.CacheState(mode: mode, files: files))
        })
    try manifest.jsonData().write(to: folder.appendingPathComponent("record.json"))
    return folder
}

/// Runs a command in-process and returns its exit code (0 when it returned normally).
func exitCode(_ arguments: [String]) throws -> Int32 {
    var command = try LiftoffCommand.parseAsRoot(arguments)
    do {
        try command.run()
        return 0
    } catch let exit as ExitCode {
        return exit.rawValue
    }
}

@Suite("compare and check", .timeLimit(.minutes(5)))
struct CompareCommandTests {
    @Test("identical runs are unchanged (exit 0); 20 % slower regressed (2); 20 % faster improved (0)")
    func verdicts() throws {
        let base = try runFolder(noisy(100, seed: 1))
        let same = try runFolder(noisy(100, seed: 2))
        let slower = try runFolder(noisy(120, seed: 3))
        let faster = try runFolder(noisy(80, seed: 4))
        #expect(try exitCode(["compare", base.path, same.path]) == 0)
        #expect(try exitCode(["compare", base.path, slower.path]) == 2)
        #expect(try exitCode(["compare", base.path, faster.path]) == 0)
        let json = try JSONSerialization.jsonObject(
            with: Data(
                try LaunchComparison(base: RunSet.load(base.path), head: RunSet.load(faster.path)).json().utf8))
        #expect((json as? [String: Any])?["verdict"] as? String == "improved")
    }

    @Test("too few runs to tell a large change from noise is inconclusive: exit 3, or 0 with --inconclusive pass")
    func inconclusive() throws {
        let base = try runFolder([100, 140, 90])
        let head = try runFolder([130, 95, 150])
        #expect(try exitCode(["compare", base.path, head.path]) == 3)
        #expect(try exitCode(["compare", base.path, head.path, "--inconclusive", "pass"]) == 0)
    }

    @Test("missing or incomparable runs are an error with one sentence")
    func errors() throws {
        let base = try runFolder(noisy(100))
        var missing = try LiftoffCommand.parseAsRoot(["compare", base.path, "/nonexistent/runs"])
        #expect(throws: CLIError.self) { try missing.run() }
        let empty = temporaryFolder()
        var noRuns = try LiftoffCommand.parseAsRoot(["compare", base.path, empty.path])
        let error = #expect(throws: CLIError.self) { try noRuns.run() }
        #expect(error?.description.contains("no successful launch to compare") == true)
        #expect(throws: (any Error).self) { try LiftoffCommand.parseAsRoot(["compare", "a", "b", "--threshold", "abc"]) }
        #expect(throws: (any Error).self) { try LiftoffCommand.parseAsRoot(["compare", "a", "b", "--metrics", "bogus"]) }
    }

    @Test("runs measured differently, or too few, are an error; a gated phase brings its metrics along")
    func incomparable() throws {
        let profiles = try runFolder(noisy(100))
        let timed = temporaryFolder()
        let manifest = RecordManifest(
            command: ["app"], measure: .exit,
            runs: (1...5).map {
                RecordManifest.Run(index: $0, profile: nil, log: "l", outcome: "exit status 0", succeeded: true, exitMs: 100, readyMs: nil)
            })
        try manifest.jsonData().write(to: timed.appendingPathComponent("record.json"))
        var mixed = try LiftoffCommand.parseAsRoot(["compare", profiles.path, timed.path])
        let error = #expect(throws: CLIError.self) { try mixed.run() }
        #expect(error?.description.contains("cannot be compared") == true, "\(String(describing: error))")
        let single = try runFolder([100])
        var few = try LiftoffCommand.parseAsRoot(["compare", profiles.path, single.path])
        let fewError = #expect(throws: CLIError.self) { try few.run() }
        #expect(fewError?.description == "Comparing 'time to ready' needs at least 2 runs on each side; base has 20 and head 1.")
        #expect(try exitCode(["compare", profiles.path, try runFolder(noisy(100, seed: 5)).path, "--gate", "pre-main"]) == 0)
    }

    @Test("sides recorded with different --cache modes are refused; --allow-mixed-cache compares them and names the cold penalty")
    func mixedCache() throws {
        let warm = try cacheRunFolder("warm", readyMs: 40, bytesRead: 0)
        let cold = try cacheRunFolder("cold", readyMs: 120, bytesRead: 9_000_000)
        // Each run's page cache survives record.json.
        let set = try RunSet.load(cold.path)
        #expect(set.cacheMode == "cold")
        #expect(set.profiles.first?.cache?.files.first?.residentBytes == 0)

        var refused = try LiftoffCommand.parseAsRoot(["compare", warm.path, cold.path])
        let error = #expect(throws: CLIError.self) { try refused.run() }
        #expect(error?.description.contains("page cache warm and the head runs cold") == true, "\(String(describing: error))")
        #expect(error?.description.contains("--allow-mixed-cache") == true)

        let comparison = try LaunchComparison(base: try RunSet.load(warm.path), head: set, gated: [RunSet.timeToReady], allowMixedCache: true)
        let penalty = try #require(comparison.insights.first, "\(comparison.insights)")
        #expect(penalty.id == "cold-penalty")
        #expect(penalty.baseMedianMs < 50 && penalty.headMedianMs > 110)
        #expect(penalty.finding.hasPrefix("Head ran cold") && penalty.finding.contains("9.0 MB more read from storage"), "\(penalty.finding)")
        #expect(comparison.text().contains("cold-penalty: time to ready"))
        // The same sides as-is on both: no penalty.
        let plain = try LaunchComparison(base: try RunSet.load(try runFolder(noisy(40)).path), head: try RunSet.load(try runFolder(noisy(40, seed: 3)).path))
        #expect(!plain.insights.contains { $0.id == "cold-penalty" })
    }

    @Test("a folder of demo reports compares on its profile and passes over the other JSON files")
    func demoFolder() throws {
        let folder = try runFolder([100, 101, 99])
        try Data(#"{"$schema":"https://www.speedscope.app/file-format-schema.json","profiles":[]}"#.utf8)
            .write(to: folder.appendingPathComponent("profile.speedscope.json"))
        try Data(#"{"traceEvents":[]}"#.utf8).write(to: folder.appendingPathComponent("trace.json"))
        #expect(try RunSet.load(folder.path).profiles.count == 3)
        try Data("{".utf8).write(to: folder.appendingPathComponent("broken.json"))
        #expect(throws: RunSetError.self) { try RunSet.load(folder.path) }
    }

    @Test("Markdown output stays under 65,536 characters and names the verdict; JSON parses")
    func formats() throws {
        let base = try runFolder(noisy(100))
        let head = try runFolder(noisy(120, seed: 9), extra: 20)
        let comparison = try LaunchComparison(
            base: RunSet.load(base.path), head: RunSet.load(head.path), groups: [.phases, .tasks, .cpu])
        let markdown = comparison.markdown(diffFlameGraph: "diff-flame.html")
        #expect(markdown.count < 65_536)
        #expect(markdown.hasPrefix("## 🔴 Liftoff launch comparison: regressed"))
        #expect(markdown.contains("| time to ready (gated) |"))
        #expect(markdown.contains("| extra | CPU | 0.0 ms | 20.0 ms | +20.0 ms |"), "the function that appeared is named: \(markdown)")
        #expect(markdown.contains("**added**") && markdown.contains("[differential flame graph](diff-flame.html)"))
        #expect(comparison.text().contains("time to ready *"))
        let json = try JSONSerialization.jsonObject(with: Data(comparison.json().utf8)) as? [String: Any]
        #expect(json?["verdict"] as? String == "regressed")
        #expect((json?["metrics"] as? [[String: Any]])?.first?["gated"] as? Bool == true)
    }

    @Test("the differential flame graph: grown frames red, vanished ones still drawn in blue, per launch")
    func diffFlameGraph() throws {
        let base = try RunSet.load(try runFolder([10, 10]).path)
        let head = try RunSet.load(try runFolder([10, 10, 10, 10], extra: 5).path)
        let diff = DiffFlameGraph(base: base.profiles, head: head.profiles)
        let extra = try #require(diff.nodes.first { $0.name == "extra" })
        #expect(extra.base == 0 && extra.head == 5, "per launch, not summed over four launches")
        let gone = try #require(diff.nodes.first { $0.name == "gone" })
        #expect(gone.base == 3 && gone.head == 0)
        let svg = diff.svg(title: "t")
        #expect(svg.contains("<title>extra: base 0 ms, head 5 ms per launch (new)</title>"))
        #expect(svg.contains("fill=\"\(FlameColour.change(base: 0, head: 5))\""))
        #expect(svg.contains("<title>gone: base 3 ms, head 0 ms per launch (gone in head)</title>"))
        #expect(FlameColour.change(base: 0, head: 5) == "rgb(255,55,55)")
        #expect(FlameColour.change(base: 3, head: 0) == "rgb(55,55,255)")
        #expect(FlameColour.change(base: 4, head: 4) == "rgb(255,255,255)")
        #expect(diff.html(title: "<t>").contains("<h1>&lt;t&gt;</h1>"))
    }

    @Test("check passes within budgets and exits 2 with a sentence per breach")
    func check() throws {
        let runs = try runFolder([100, 110, 120], violations: 1)
        #expect(try exitCode(["check", runs.path, "--max-ttff", "200ms", "--max-violations", "1"]) == 0)
        let repeated = try runFolder([100], violations: 1, occurrences: 3)
        #expect(try exitCode(["check", repeated.path, "--max-violations", "2"]) == 2, "a call site that broke the rule 3 times")
        #expect(try exitCode(["check", runs.path, "--max-ttff", "0.1s"]) == 2)
        // A launch without the life cycle is measured to ready: --max-ready is the same budget.
        #expect(try exitCode(["check", runs.path, "--max-ready", "0.1s"]) == 2)
        #expect(try exitCode(["check", runs.path, "--max-ready", "200ms", "--max-phase", "main → ready=200ms"]) == 0)
        #expect(try exitCode(["check", runs.path, "--max-violations", "0"]) == 2)
        #expect(try exitCode(["check", runs.path, "--max-phase", "pre-main=1ms"]) == 2)
        #expect(try exitCode(["check", runs.path, "--max-phase", "pre-main=3ms"]) == 0)
        #expect(try exitCode(["check", runs.appendingPathComponent("run-000.json").path, "--max-ttff", "101"]) == 0)
        #expect(throws: (any Error).self) { try LiftoffCommand.parseAsRoot(["check", runs.path]) }
        #expect(throws: (any Error).self) { try LiftoffCommand.parseAsRoot(["check", runs.path, "--max-ttff", "fast"]) }
    }

    @Test("durations, percentages and shell words parse as a user writes them")
    func parsing() throws {
        #expect(try CheckCommand.milliseconds("400ms") == 400)
        #expect(try CheckCommand.milliseconds("1.5s") == 1500)
        #expect(try CheckCommand.milliseconds("800us") == 0.8)
        #expect(try CheckCommand.milliseconds("250") == 250)
        #expect(try CompareCommand.fraction("5%") == 0.05)
        #expect(try CompareCommand.fraction("0.1") == 0.1)
        #expect(try ShellWords.split(#"app --name 'a b' "c \"d\"" e\ f"#) == ["app", "--name", "a b", #"c "d""#, "e f"])
        #expect(try ShellWords.split(#""a\b" 'c\d'"#) == [#"a\b"#, #"c\d"#], "a backslash in quotes before other characters stays")
        #expect(throws: (any Error).self) { try ShellWords.split("app 'unclosed") }
        // Found by the ShellWords fuzzer: a quote followed by a combining mark is one Swift
        // character, and was not seen as a quote.
        #expect(try ShellWords.split("'\u{031E}x' \"\u{0301}y\" z") == ["\u{031E}x", "\u{0301}y", "z"])
    }
}
