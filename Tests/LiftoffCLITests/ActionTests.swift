import Foundation
import LiftoffTestSupport
import Testing

/// The GitHub Action at the repository's root, run step by step on this machine
/// (`scripts/action/dry_run.py`) on a fake repository whose head adds one function's work.
@Suite("GitHub Action", .serialized, .processState(timeLimit: .seconds(300)))
struct ActionTests {
    /// A repository with two commits: base launches `work`; head also runs `extra_work`, five times as
    /// much, so that eight runs a side tell the change from the noise of a machine busy with other work.
    func fakeWorkspace() throws -> (folder: URL, base: String) {
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
            int main(void) { work(20000000); puts("ready"); return 0; }
            """
        try source.write(to: folder.appendingPathComponent("app.c"), atomically: true, encoding: .utf8)
        _ = try git("add", "app.c")
        _ = try git("commit", "-q", "-m", "base")
        let base = try git("rev-parse", "HEAD")
        let head = source.replacingOccurrences(
            of: "int main(void) { work(20000000);",
            with: "__attribute__((noinline)) void extra_work(long n) { for (long i = 0; i < n; i++) sink += i * 0.25; }\n"
                + "int main(void) { work(20000000); extra_work(100000000);")
        try head.write(to: folder.appendingPathComponent("app.c"), atomically: true, encoding: .utf8)
        _ = try git("commit", "-q", "-am", "head: more work at launch")
        return (folder, base)
    }

    @Test("a head that adds a function's work fails the step with the function named in the summary and an annotation")
    func regressionFails() throws {
        let (workspace, base) = try fakeWorkspace()
        let temp = temporaryFolder()
        let script = repositoryRoot.appendingPathComponent("scripts/action/dry_run.py")
        let tool = try BuiltTool.find()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", script.path, "--workspace", workspace.path, "--temp", temp.path, "--input", "run=./app",
            "--input", "build=cc -O1 -g -o app app.c", "--input", "base-ref=\(base)", "--input", "runs=8",
        ]
        // The liftoff built for the tests, so the action skips building its own.
        process.environment = ProcessInfo.processInfo.environment.merging(["LIFTOFF": tool.url.path]) { _, given in given }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()

        #expect(process.terminationStatus == 2, "the step fails as compare did (2: regressed)\n\(output)")
        let summary = try String(contentsOf: temp.appendingPathComponent("step-summary.md"), encoding: .utf8)
        #expect(summary.contains("Liftoff launch comparison: regressed"), "\(summary)")
        #expect(summary.contains("| extra\\_work — app.c:"), "the summary names the function and where it is: \(summary)")
        #expect(summary.contains("Most of it: extra\\_work (CPU) +"), "the headline says how much and how sure")
        // The annotation's title is escaped as a workflow command's property, and it points at the function's line.
        #expect(output.contains("::error title=Liftoff%3A extra_work added,file=app.c,line="), "an annotation names it: \(output)")
        #expect(output.contains("::extra_work (CPU) +"), "\(output)")
        #expect(output.contains("== Upload the reports: would use actions/upload-artifact@v4"))
        let reports = temp.appendingPathComponent("liftoff-launch-check/out")
        for file in ["comparison.md", "comparison.json", "diff-flame.html", "diff-flame.svg"] {
            #expect(FileManager.default.fileExists(atPath: reports.appendingPathComponent(file).path), "\(file) is uploaded")
        }
    }
}
