import Foundation
import LiftoffComparison
import LiftoffProfile
import LiftoffReports
import Testing

/// One way a user can get `record`, `compare` or `check` wrong, and what the binary must answer:
/// its exit status and the one error line it prints on standard error, word for word (progress
/// lines may come before it).
///
/// `{dir}` in the arguments and the sentence stands for a fresh folder that holds the fixtures
/// `ErrorPathTests.fixtures(in:)` writes.
struct ErrorPath: CustomTestStringConvertible, Sendable {
    var arguments: [String]
    var status: Int32
    var sentence: String

    init(_ arguments: [String], _ status: Int32, _ sentence: String) {
        self.arguments = arguments
        self.status = status
        self.sentence = sentence
    }

    var testDescription: String { arguments.prefix(4).joined(separator: " ") }
}

@Suite("error paths of record, compare and check", .timeLimit(.minutes(5)))
struct ErrorPathTests {
    /// Usage errors exit 64 (EX_USAGE, ArgumentParser's code for them); every other refusal exits 1.
    static let record: [ErrorPath] = [
        ErrorPath(["record", "--runs", "-1", "--out", "{dir}/o", "--", "true"], 64, "Error: --runs must be between 1 and 1000, not -1."),
        ErrorPath(["record", "--runs", "1001", "--out", "{dir}/o", "--", "true"], 64, "Error: --runs must be between 1 and 1000, not 1001."),
        ErrorPath(["record", "--warmup", "-2", "--out", "{dir}/o", "--", "true"], 64, "Error: --warmup must be between 0 and 100, not -2."),
        ErrorPath(["record", "--timeout", "0", "--out", "{dir}/o", "--", "true"], 64, "Error: --timeout must be a positive number of seconds, not 0.0."),
        ErrorPath(["record", "--timeout", "nan", "--out", "{dir}/o", "--", "true"], 64, "Error: --timeout must be a positive number of seconds, not nan."),
        ErrorPath(["record", "--ready", "(", "--out", "{dir}/o", "--", "true"], 64, "Error: --ready '(' is not a valid regular expression."),
        ErrorPath(["record", "--out", "{dir}/o"], 64, "Error: Give the command to launch after --, for example: liftoff record --out runs -- ./app"),
        ErrorPath(["record", "--baseline", "'", "--out", "{dir}/o", "--", "true"], 64, "Error: The command ''' has an unclosed quote."),
        ErrorPath(
            ["record", "--out", "{dir}/file/o", "--", "true"], 1,
            "Error: Cannot create the folder {dir}/file/o/runs: {dir}/file is a file, not a folder."),
        ErrorPath(
            ["record", "--runs", "1", "--warmup", "0", "--out", "{dir}/o", "--", "/nonexistent/app"], 1,
            "Error: Cannot start /nonexistent/app: No such file or directory."),
        ErrorPath(
            ["record", "--runs", "2", "--warmup", "0", "--out", "{dir}/o", "--", "false"], 1,
            "Error: Every run of false failed (the last: exit status 1); see the logs in {dir}/o/runs/."),
        ErrorPath(
            ["record", "--runs", "1", "--warmup", "0", "--ready", "never", "--timeout", "1", "--out", "{dir}/o", "--", "sh", "-c", "echo up; sleep 30"],
            1,
            "Error: Every run of sh -c echo up; sleep 30 failed (the last: timed out after 1 s without a line matching --ready on standard output and error); see the logs in {dir}/o/runs/."
        ),
        ErrorPath(
            ["record", "--runs", "1", "--warmup", "0", "--ready", "never", "--out", "{dir}/o", "--", "echo", "up"], 1,
            "Error: Every run of echo up failed (the last: exited (exit status 0) without a line matching --ready on standard output and error); see the logs in {dir}/o/runs/."),
        ErrorPath(
            ["record", "--runs", "1", "--warmup", "0", "--out", "{dir}/o", "--", "sh", "-c", "echo '{' > \"$LIFTOFF_PROFILE_OUT\""], 1,
            "Error: Every run of sh -c echo '{' > \"$LIFTOFF_PROFILE_OUT\" failed (the last: its profile is unusable: "
                + "{dir}/o/runs/run-001.json is truncated: the JSON document ends early.); see the logs in {dir}/o/runs/."),
    ]

    static let compareAndCheck: [ErrorPath] = [
        ErrorPath(["compare", "{dir}/corrupt", "{dir}/exits"], 1, "Error: {dir}/corrupt/record.json is not a record.json written by liftoff record."),
        ErrorPath(
            ["compare", "{dir}/future", "{dir}/exits"], 1,
            "Error: {dir}/future/record.json has schema \"liftoff.record/9\"; this liftoff reads liftoff.record/1 only."),
        ErrorPath(["compare", "{dir}/exits", "/nonexistent/runs"], 1, "Error: /nonexistent/runs does not exist."),
        ErrorPath(["compare", "{dir}/exits", "{dir}/empty"], 1, "Error: The head runs in {dir}/empty have no successful launch to compare."),
        ErrorPath(
            ["compare", "{dir}/exits", "{dir}/profiles"], 1,
            "Error: The base runs were measured by the time to their exit and the head runs by their own profiles, so they cannot be compared."),
        ErrorPath(
            ["compare", "{dir}/exits", "{dir}/exits", "--gate", "nope"], 1,
            "Error: The runs cannot be compared on 'nope': the base runs have no such metric."),
        ErrorPath(["compare", "{dir}/exits", "{dir}/exits", "--threshold", "0"], 64, "Error: --threshold must be between 0% and 100%, not 0."),
        ErrorPath(["compare", "{dir}/exits", "{dir}/exits", "--threshold", "150%"], 64, "Error: --threshold must be between 0% and 100%, not 150%."),
        ErrorPath(["compare", "{dir}/exits", "{dir}/exits", "--threshold", "abc"], 64, "Error: 'abc' is not a percentage such as 5% or 0.05."),
        ErrorPath(["compare", "{dir}/exits", "{dir}/exits", "--alpha", "-0.1"], 64, "Error: --alpha must be between 0 and 1, not -0.1."),
        ErrorPath(
            ["compare", "{dir}/exits", "{dir}/exits", "--metrics", "bogus"], 64,
            "Error: --metrics 'bogus' is not one of: phases, tasks, cpu, spans, counters, all."),
        ErrorPath(
            ["compare", "{dir}/exits", "{dir}/exits", "-o", "{dir}/file/out.md"], 1,
            "Error: Cannot create the folder {dir}/file: {dir}/file is a file, not a folder."),
        ErrorPath(
            ["compare", "{dir}/exits", "{dir}/exits", "--diff-out", "{dir}/file"], 1,
            "Error: Cannot create the folder {dir}/file: {dir}/file is a file, not a folder."),
        ErrorPath(
            ["check", "{dir}/exits"], 64,
            "Error: Give at least one budget: --max-ttff, --max-violations, --max-hangs, --max-phase, --max-instructions or --insight."),
        ErrorPath(["check", "{dir}/exits", "--max-ttff", "fast"], 64, "Error: 'fast' is not a duration such as 400ms or 1.5s."),
        ErrorPath(["check", "{dir}/exits", "--max-ttff", "inf"], 64, "Error: 'inf' is not a duration such as 400ms or 1.5s."),
        ErrorPath(["check", "{dir}/exits", "--max-violations", "-1"], 64, "Error: --max-violations must be 0 or more, not -1."),
        ErrorPath(["check", "{dir}/exits", "--max-hangs", "-3"], 64, "Error: --max-hangs must be 0 or more, not -3."),
        ErrorPath(
            ["check", "{dir}/exits", "--max-phase", "pre-main"], 64,
            "Error: --max-phase 'pre-main' needs the form NAME=DURATION, for example pre-main=20ms."),
        ErrorPath(["check", "{dir}/exits", "--max-phase", "=2ms"], 64, "Error: --max-phase '=2ms' names no phase."),
        ErrorPath(["check", "{dir}/corrupt", "--max-ttff", "1s"], 1, "Error: {dir}/corrupt/record.json is not a record.json written by liftoff record."),
        ErrorPath(["check", "{dir}/empty", "--max-ttff", "1s"], 1, "Error: {dir}/empty has no successful run to check."),
        ErrorPath(["check", "/nonexistent", "--max-ttff", "1s"], 1, "Error: /nonexistent does not exist."),
    ]

    /// Writes the fixtures the cases name: a regular file where a folder is expected, folders of
    /// runs timed to exit and of profiles, a folder without runs, a corrupt `record.json` and one
    /// of a schema this version does not know.
    static func fixtures(in folder: URL) throws {
        try Data("not a folder".utf8).write(to: folder.appendingPathComponent("file"))
        for name in ["corrupt", "future", "exits", "empty"] {
            try FileManager.default.createDirectory(at: folder.appendingPathComponent(name), withIntermediateDirectories: true)
        }
        let timed = RecordManifest(
            command: ["app"], measure: .exit,
            runs: (1...5).map {
                RecordManifest.Run(
                    index: $0, profile: nil, log: "l", outcome: "exit status 0", succeeded: true, exitMs: 100 + Double($0), readyMs: nil)
            })
        try timed.jsonData().write(to: folder.appendingPathComponent("exits/record.json"))
        let current = String(decoding: timed.jsonData(), as: UTF8.self)
        try Data(current.replacingOccurrences(of: RecordManifest.currentSchema, with: "liftoff.record/9").utf8)
            .write(to: folder.appendingPathComponent("future/record.json"))
        try Data(#"{"schema":"liftoff.record/1","runs":["#.utf8).write(to: folder.appendingPathComponent("corrupt/record.json"))
        let profiles = try runFolder(noisy(100, count: 5))
        try FileManager.default.moveItem(at: profiles, to: folder.appendingPathComponent("profiles"))
    }

    func check(_ path: ErrorPath) throws {
        let folder = temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try ErrorPathTests.fixtures(in: folder)
        let arguments = path.arguments.map { $0.replacingOccurrences(of: "{dir}", with: folder.path) }
        let result = try BuiltTool.find().run(arguments)
        let expected = path.sentence.replacingOccurrences(of: "{dir}", with: folder.path)
        #expect(result.status == path.status, "stderr: \(result.stderr)")
        let errors = result.stderr.split(separator: "\n").filter { $0.hasPrefix("Error:") }.map(String.init)
        #expect(errors == [expected], "stderr: \(result.stderr)")
        #expect(!result.stderr.contains("Fatal error"))
    }

    @Test("record refuses bad options and reports runs that all failed, with why", arguments: record)
    func recordErrors(_ path: ErrorPath) throws { try check(path) }

    @Test("compare and check refuse bad options and unreadable runs with one sentence", arguments: compareAndCheck)
    func compareAndCheckErrors(_ path: ErrorPath) throws { try check(path) }

    @Test("a run measured differently from the runs before it fails, and says why; the others are kept")
    func mixedMeasurement() throws {
        let folder = temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let profile = folder.appendingPathComponent("profile.json")
        try Profile.synthetic(samples: 50, distinctStacks: 5, tasks: 3).write(to: profile)
        let counter = folder.appendingPathComponent("count").path
        // The first launch is timed to its exit; from the second on, the program writes a profile.
        let script = """
            n=$(cat '\(counter)' 2>/dev/null || echo 0); echo $((n + 1)) > '\(counter)'
            if [ "$n" -ge 1 ]; then cp '\(profile.path)' "$LIFTOFF_PROFILE_OUT"; fi
            """
        let result = try BuiltTool.find().run(
            ["record", "--runs", "3", "--warmup", "0", "--quiet", "--no-agent", "--out", folder.appendingPathComponent("o").path, "--", "sh", "-c", script])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let manifest = try JSONDecoder().decode(
            RecordManifest.self, from: Data(contentsOf: folder.appendingPathComponent("o/record.json")))
        #expect(manifest.runs.map(\.succeeded) == [true, false, false])
        #expect(manifest.runs.dropFirst().allSatisfy { $0.outcome == "it wrote a profile, unlike the runs before it, which were timed without one" })
        #expect(try RunSet.load(folder.appendingPathComponent("o").path).failedRuns == 2)

        // Sampled by the agent first, then recording itself: the same refusal.
        let sampled = folder.appendingPathComponent("sampled")
        unlink(counter)
        let mixed = try BuiltTool.find().run(
            ["record", "--runs", "3", "--warmup", "0", "--quiet", "--out", sampled.path, "--", "sh", "-c", script])
        #expect(mixed.status == 0, "stderr: \(mixed.stderr)")
        let runs = try JSONDecoder().decode(RecordManifest.self, from: Data(contentsOf: sampled.appendingPathComponent("record.json"))).runs
        #expect(runs.map(\.succeeded) == [true, false, false])
        #expect(runs.first?.recordedBy == "agent")
        #expect(runs.dropFirst().allSatisfy { $0.outcome == "it recorded itself, unlike the runs before it, which the agent sampled" })
    }

    @Test("warm-ups run first and are not kept; with a baseline the sides alternate A B B A")
    func warmupsAndOrder() throws {
        let folder = temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let order = folder.appendingPathComponent("order").path
        let profile = folder.appendingPathComponent("profile.json")
        try Profile.synthetic(samples: 50, distinctStacks: 5, tasks: 3).write(to: profile)
        // Each launch notes its side and writes a profile, as a program linked with Liftoff does.
        func launch(_ side: String) -> String { "echo \(side) >> '\(order)'; cp '\(profile.path)' \"$LIFTOFF_PROFILE_OUT\"" }
        let result = try BuiltTool.find().run([
            "record", "--runs", "4", "--warmup", "2", "--quiet", "--out", folder.appendingPathComponent("o").path,
            "--baseline", "sh -c \"\(launch("A").replacingOccurrences(of: "\"", with: "\\\""))\"", "--", "sh", "-c", launch("B"),
        ])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let launches = try String(contentsOfFile: order, encoding: .utf8).split(separator: "\n").joined()
        #expect(launches == "ABBA" + "ABBAABBA", "two warm-up rounds, then four recorded rounds, each pair reversed in turn")
        for side in ["base", "head"] {
            let manifest = try JSONDecoder().decode(
                RecordManifest.self, from: Data(contentsOf: folder.appendingPathComponent("o/\(side)/record.json")))
            #expect(manifest.runs.map(\.index) == [1, 2, 3, 4], "only the recorded runs are listed")
            #expect(manifest.runs.allSatisfy { $0.succeeded && $0.profile != nil })
            let files = try FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent("o/\(side)/runs").path)
            #expect(!files.contains("warmup.json"), "a warm-up's profile is not kept")
        }
    }
}
