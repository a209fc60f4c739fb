import Foundation
import LiftoffTestSupport
import Testing

/// The GitHub Action at the repository's root, run step by step on this machine
/// (`scripts/action/dry_run.py`) on a fake repository whose head adds one function's work.
@Suite("GitHub Action", .serialized, .processState(timeLimit: .seconds(300)))
struct ActionTests {
    /// A repository with two commits: base launches `work` (`work` iterations); head also runs
    /// `extra_work` (`extra` iterations). By default five times as much, so that eight runs a side
    /// tell the change from the noise of a machine busy with other work.
    func fakeWorkspace(work: Int = 20_000_000, extra: Int = 100_000_000) throws -> (folder: URL, base: String) {
        let folder = temporaryFolder()
        func git(_ arguments: String...) throws -> String {
            let result = try runToEnd("/usr/bin/git", ["-C", folder.path, "-c", "user.name=Test", "-c", "user.email=t@example.com"] + arguments)
            try #require(result.status == 0, "git \(arguments.joined(separator: " ")): \(result.output)")
            return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        _ = try git("init", "-q")
        let source = """
            #include <stdio.h>
            static volatile double sink;
            __attribute__((noinline)) void work(long n) { for (long i = 0; i < n; i++) sink += i * 0.5; }
            int main(void) { work(\(work)); puts("ready"); return 0; }
            """
        try source.write(to: folder.appendingPathComponent("app.c"), atomically: true, encoding: .utf8)
        _ = try git("add", "app.c")
        _ = try git("commit", "-q", "-m", "base")
        let base = try git("rev-parse", "HEAD")
        let head = source.replacingOccurrences(
            of: "int main(void) { work(\(work));",
            with: "__attribute__((noinline)) void extra_work(long n) { for (long i = 0; i < n; i++) sink += i * 0.25; }\n"
                + "int main(void) { work(\(work)); extra_work(\(extra));")
        try head.write(to: folder.appendingPathComponent("app.c"), atomically: true, encoding: .utf8)
        _ = try git("commit", "-q", "-am", "head: more work at launch")
        return (folder, base)
    }

    /// Runs the action's steps on `workspace` with `inputs`; its exit status and output.
    func dryRun(_ workspace: URL, temp: URL, _ inputs: [String]) throws -> (status: Int32, output: String) {
        let script = repositoryRoot.appendingPathComponent("scripts/action/dry_run.py")
        let tool = try BuiltTool.find()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script.path, "--workspace", workspace.path, "--temp", temp.path] + inputs.flatMap { ["--input", $0] }
        // The liftoff built for the tests, so the action skips building its own.
        process.environment = ProcessInfo.processInfo.environment.merging(["LIFTOFF": tool.url.path]) { _, given in given }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, output)
    }

    @Test("history: record pushes each commit's launch to a branch of origin; check puts head's launch in the job summary")
    func history() throws {
        let (workspace, base) = try fakeWorkspace()
        let origin = temporaryFolder()
        func git(_ folder: URL, _ arguments: String...) throws -> String {
            let result = try runToEnd("/usr/bin/git", ["-C", folder.path, "-c", "user.name=Test", "-c", "user.email=t@example.com"] + arguments)
            try #require(result.status == 0, "git \(arguments.joined(separator: " ")): \(result.output)")
            return result.output
        }
        _ = try git(origin, "init", "-q", "--bare")
        _ = try git(workspace, "remote", "add", "origin", origin.path)
        let inputs = ["run=./app", "build=cc -O1 -g -o app app.c", "base-ref=\(base)", "runs=2", "threshold=1000%"]
        for _ in 0..<2 {
            let run = try dryRun(workspace, temp: temporaryFolder(), inputs + ["history=record"])
            #expect(run.output.contains("Added ") && run.output.contains("to the history on liftoff-history."), "\(run.output)")
            _ = try git(workspace, "commit", "-q", "--allow-empty", "-m", "another commit")
        }
        let files = try git(origin, "ls-tree", "-r", "--name-only", "liftoff-history")
        #expect(files.split(separator: "\n").filter { $0.hasPrefix("entries/") && $0.hasSuffix(".json") }.count == 2, "\(files)")

        let temp = temporaryFolder()
        let check = try dryRun(workspace, temp: temp, inputs + ["history=check"])
        let summary = try String(contentsOf: temp.appendingPathComponent("step-summary.md"), encoding: .utf8)
        #expect(summary.contains("## Launch history") && summary.contains("3 commits on "), "\(summary)\n\(check.output)")
        #expect(summary.contains("The check decides on every metric, wall times included"), "\(summary)")
        #expect(try git(origin, "ls-tree", "-r", "--name-only", "liftoff-history") == files, "check pushes nothing")
    }

    @Test("a head that adds a function's work fails the step with the function named in the summary and an annotation")
    func regressionFails() throws {
        let (workspace, base) = try fakeWorkspace()
        let temp = temporaryFolder()
        let (status, output) = try dryRun(
            workspace, temp: temp, ["run=./app", "build=cc -O1 -g -o app app.c", "base-ref=\(base)", "runs=8"])

        #expect(status == 2, "the step fails as compare did (2: regressed)\n\(output)")
        let summary = try String(contentsOf: temp.appendingPathComponent("step-summary.md"), encoding: .utf8)
        #expect(summary.contains("Liftoff launch comparison: regressed"), "\(summary)")
        #expect(summary.contains("| extra\\_work — app.c:"), "the summary names the function and where it is: \(summary)")
        #expect(summary.contains("Most of it: extra\\_work (CPU) +"), "the headline says how much and how sure")
        // Its row ends with its time with what it called, base → head.
        let row = try #require(summary.split(separator: "\n").first { $0.hasPrefix("| extra\\_work") }, "\(summary)")
        #expect(row.range(of: #"\| [0-9.]+ → [0-9.]+ ms \|$"#, options: .regularExpression) != nil, "\(row)")
        // The annotation's title is escaped as a workflow command's property, and it points at the function's line.
        #expect(output.contains("::error title=Liftoff%3A extra_work added,file=app.c,line="), "an annotation names it: \(output)")
        #expect(output.contains("::extra_work (CPU) +"), "\(output)")
        #expect(output.contains("== Upload the reports: would use actions/upload-artifact@v4"))
        let reports = temp.appendingPathComponent("liftoff-launch-check/out")
        for file in ["comparison.md", "comparison.json", "diff-flame.html", "diff-flame.svg"] {
            #expect(FileManager.default.fileExists(atPath: reports.appendingPathComponent(file).path), "\(file) is uploaded")
        }
    }

    @Test("with count, a head whose launch runs 1.2 % more instructions fails the step after three counted runs a side (threshold 1 %), naming the function")
    func countedRegressionFails() throws {
        // extra_work adds 1.25 % of work's iterations: invisible to two timed runs, plain to counts.
        let (workspace, base) = try fakeWorkspace(work: 2_000_000, extra: 25_000)
        let temp = temporaryFolder()
        let (status, output) = try dryRun(
            workspace, temp: temp,
            ["run=./app", "build=cc -O1 -g -o app app.c", "base-ref=\(base)", "runs=2", "count=instructions", "count-runs=3"])
        #expect(status == 2, "the counts decide: regressed\n\(output)")
        let summary = try String(contentsOf: temp.appendingPathComponent("step-summary.md"), encoding: .utf8)
        #expect(summary.contains("Liftoff launch comparison: regressed"), "\(summary)")
        #expect(summary.contains("Instructions to ready +"), "the headline is the counts': \(summary)")
        #expect(summary.contains("extra\\_work"), "and names the function that grew: \(summary)")
        #expect(output.contains("::error title=Liftoff%3A extra_work grew (instructions),file=app.c::extra_work: +"), "\(output)")
    }

    @Test("annotations escape a C++ name's :: and , in their titles, keep it whole in the message, and point counted functions that grew at their file")
    func annotationsOfCppNames() throws {
        let comparison = temporaryFolder().appendingPathComponent("comparison.json")
        try Data(#"""
            {"verdict": "regressed", "headline": "Launch 5% slower\nsecond line", "functions": [
             {"name": "std::map<int, int>::find(int const&)", "kind": "cpu", "verdict": "regressed", "changeMs": 2.5,
              "lowerMs": 2.0, "upperMs": 3.0, "qValue": 0.001, "file": "src/map.cc", "line": 12}],
             "instructions": {"verdict": "regressed", "functions": [
              {"name": "ns::Parser::parse(char const*, int)", "object": "the program", "file": "src/parse.cc",
               "base": 1000, "head": 250000, "change": 249000, "inclusiveChange": 300000},
              {"name": "shrunk", "object": "the program", "base": 1000, "head": 10, "change": -990, "inclusiveChange": -990}]}}
            """#.utf8).write(to: comparison)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", repositoryRoot.appendingPathComponent("scripts/action/annotate.py").path, comparison.path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text)")
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.first == "::error title=Liftoff%3A launch regressed::Launch 5%25 slower%0Asecond line", "\(lines)")
        #expect(
            lines.contains(
                "::error title=Liftoff%3A std%3A%3Amap<int%2C int>%3A%3Afind(int const&) regressed,file=src/map.cc,line=12"
                    + "::std::map<int, int>::find(int const&) (CPU) +2.5 ms per run (2.0 to 3.0), q = 0.001"), "\(lines)")
        #expect(
            lines.contains {
                $0.hasPrefix("::error title=Liftoff%3A ns%3A%3AParser%3A%3Aparse(char const*%2C int) grew (instructions),file=src/parse.cc::")
                    && $0.contains("+249000 instructions per launch of its own")
            }, "\(lines)")
        #expect(!text.contains("shrunk"), "a function whose count fell is not annotated")
        #expect(lines.count == 3)
    }
}
