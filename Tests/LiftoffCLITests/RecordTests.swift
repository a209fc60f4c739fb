import Foundation
import LiftoffProfile
import LiftoffReports
import LiftoffTestSupport
import Testing

@testable import LiftoffCLI
import LiftoffComparison

@Suite("liftoff record", .processState(timeLimit: .seconds(300)))
struct RecordTests {
    @Test("a plain program is timed to its ready line and then stopped; every run lands in record.json with its log")
    func readyLine() throws {
        let folder = temporaryFolder()
        let result = try BuiltTool.find().run([
            "record", "--runs", "3", "--warmup", "0", "--out", folder.path, "--ready", "^listening",
            "--", "/bin/sh", "-c", "echo starting; sleep 0.05; echo listening on 8080; sleep 30",
        ])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(result.stderr.contains("[3/3] run 3/3:"), "plain progress lines when not on a terminal")
        // Without a warm-up, the shell is known not to link Liftoff from its executable: the agent samples every run.
        #expect(result.stdout.contains("3 sampled by the agent"), "\(result.stdout)")
        let manifest = try JSONDecoder().decode(
            RecordManifest.self, from: Data(contentsOf: folder.appendingPathComponent("record.json")))
        #expect(manifest.runs.count == 3)
        #expect(manifest.measure == .profile)
        for run in manifest.runs {
            #expect(run.succeeded)
            #expect(run.recordedBy == "agent")
            #expect(run.outcome == "stopped when ready")
            let ready = try #require(run.readyMs)
            #expect(ready >= 50 && ready < run.exitMs, "ready after the 50 ms sleep and before the exit")
            #expect(run.exitMs < 10_000, "stopped once ready, long before its 30 s sleep ended")
            let log = try String(contentsOf: folder.appendingPathComponent(run.log), encoding: .utf8)
            #expect(log == "starting\nlistening on 8080\n")
        }
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("runs.jsonl").path),
                "record.json replaced the journal")
        let runs = try RunSet.load(folder.path)
        #expect(runs.profiles.count == 3)
        #expect(runs.profiles.allSatisfy { ($0.timeToFirstFrameNs ?? 0) >= 50_000_000 })
    }

    @Test("every run keeps the kernel's counts; a head that reads 8 MB more and faults more is named by its counters")
    func counters() throws {
        let source = """
            #include <fcntl.h>
            #include <stdio.h>
            #include <stdlib.h>
            #include <string.h>
            #include <unistd.h>
            int main(int argc, char **argv) {
                long megabytes = argc > 1 ? atol(argv[1]) : 0;
                static char buffer[65536];
                int fd = open("/dev/zero", O_RDONLY);
                for (long i = 0; i < megabytes * 16; i++) if (read(fd, buffer, sizeof buffer) < 0) return 1;
                char *memory = malloc(megabytes << 20);
                if (memory) memset(memory, 1, megabytes << 20);
                puts("ready"); return memory && memory[7] == 2;
            }
            """
        let program = try AnyPrograms.build("counters", source)
        let folder = temporaryFolder()
        let result = try BuiltTool.find().run([
            "record", "--runs", "6", "--warmup", "0", "--out", folder.path, "--quiet", "--baseline", program, "--", program, "8",
        ])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let manifest = try JSONDecoder().decode(
            RecordManifest.self, from: Data(contentsOf: folder.appendingPathComponent("head/record.json")))
        for run in manifest.runs {
            let counts = try #require(run.counters, "\(run)")
            #expect(counts.bytesRead >= 8_000_000 && counts.readCalls >= 128, "\(counts)")
            #expect(counts.minorFaults >= 2048, "8 MB touched: at least 2,048 pages: \(counts)")
        }
        let compared = try BuiltTool.find().run(["compare", folder.appendingPathComponent("base").path, folder.appendingPathComponent("head").path])
        #expect(compared.stdout.contains("counter: bytes read"), "\(compared.stdout)")
        #expect(compared.stdout.contains("counter: minor faults"), "\(compared.stdout)")
        #expect(!compared.stdout.contains("counter: storage bytes read"), "a counter that did not move is not listed: \(compared.stdout)")
        let json = try BuiltTool.find().run(
            ["compare", folder.appendingPathComponent("base").path, folder.appendingPathComponent("head").path, "--format", "json"])
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let metrics = document["metrics"] as? [[String: Any]] ?? []
        #expect(metrics.first { $0["metric"] as? String == "counter: read calls" }?["verdict"] as? String == "regressed", "\(metrics)")
    }

    @Test("a crashing run is recorded as failed with its signal and the others go on; a stuck one is killed")
    func failures() throws {
        let folder = temporaryFolder()
        let marker = folder.appendingPathComponent("count")
        // The second launch crashes (SIGSEGV), the fourth hangs until killed; the rest exit 0.
        let script = """
            n=$(cat '\(marker.path)' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '\(marker.path)'
            [ $n -eq 2 ] && kill -SEGV $$
            [ $n -eq 4 ] && sleep 30
            exit 0
            """
        let start = Date()
        let result = try BuiltTool.find().run([
            "record", "--runs", "5", "--warmup", "0", "--timeout", "1", "--out", folder.appendingPathComponent("out").path,
            "--", "/bin/sh", "-c", script,
        ])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Date().timeIntervalSince(start) < 20, "the stuck run was killed at its timeout")
        let manifest = try JSONDecoder().decode(
            RecordManifest.self, from: Data(contentsOf: folder.appendingPathComponent("out/record.json")))
        #expect(manifest.runs.map(\.succeeded) == [true, false, true, false, true])
        #expect(manifest.runs[1].outcome == "signal 11 (SIGSEGV)")
        #expect(manifest.runs[3].outcome == "timed out after 1 s")
        #expect(manifest.runs[1].profile == nil)
        #expect(result.stdout.contains("3 runs of /bin/sh"))
        #expect(result.stdout.contains("2 failed"))
    }

    @Test("a ready line without a final newline still counts")
    func readyWithoutNewline() throws {
        let folder = temporaryFolder()
        let result = try BuiltTool.find().run([
            "record", "--runs", "1", "--warmup", "0", "--quiet", "--out", folder.path, "--ready", "listening",
            "--", "/bin/sh", "-c", "printf 'listening on 8080'",
        ])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let manifest = try JSONDecoder().decode(
            RecordManifest.self, from: Data(contentsOf: folder.appendingPathComponent("record.json")))
        #expect(manifest.runs.first?.readyMs != nil)
    }

    @Test("--ready watches standard error too (a server's log); with --ready-stream stdout the summary says what was missed")
    func readyOnStandardError() throws {
        let server = ["--", "/bin/sh", "-c", "echo 'Server started and listening on 127.0.0.1:8080' >&2; sleep 30"]
        let both = temporaryFolder()
        let found = try BuiltTool.find().run(
            ["record", "--runs", "2", "--warmup", "0", "--out", both.path, "--ready", "listening on"] + server)
        #expect(found.status == 0, "stderr: \(found.stderr)")
        let manifest = try JSONDecoder().decode(
            RecordManifest.self, from: Data(contentsOf: both.appendingPathComponent("record.json")))
        #expect(
            manifest.runs.allSatisfy { $0.succeeded && $0.readyMs != nil },
            "\(manifest.runs.map { "\($0.outcome), ready \($0.readyMs.map { "\($0) ms" } ?? "never")" })\n\(found.stdout)")
        let log = try String(contentsOf: both.appendingPathComponent(manifest.runs[0].log), encoding: .utf8)
        #expect(log == "Server started and listening on 127.0.0.1:8080\n", "still copied to the log")

        let stdoutOnly = temporaryFolder()
        let missed = try BuiltTool.find().run(
            ["record", "--runs", "2", "--warmup", "0", "--timeout", "1", "--out", stdoutOnly.path, "--ready", "listening on",
             "--ready-stream", "stdout"] + server)
        #expect(missed.status == 1)
        #expect(missed.stdout.contains("none succeeded"))
        #expect(
            missed.stdout.contains("2 runs failed: timed out after 1 s without a line matching --ready on standard output"),
            "stdout: \(missed.stdout)")
        #expect(!missed.stdout.contains("as time to first frame"), "no heading without figures under it")
    }

    /// Whether `watchOutput` finds `pattern` in `output`, written through a pipe.
    private func watch(_ output: [UInt8], for pattern: String) throws -> Bool {
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        let (readEnd, writeEnd) = (ends[0], ends[1])
        let log = open("/dev/null", O_WRONLY)
        defer { close(log) }
        let found = ReadyWatch()
        found.expectReader()
        let expression = try NSRegularExpression(pattern: pattern)
        Thread {
            ProcessRunner.watchOutput(readEnd, log: log, echo: nil, pattern: expression, spawnNs: 0, found: found)
            close(readEnd)
        }.start()
        output.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(writeEnd, bytes.baseAddress! + offset, bytes.count - offset)
                if written <= 0 { break }
                offset += written
            }
        }
        close(writeEnd)
        found.waitForReader()
        return found.value != nil
    }

    @Test("a ready line after a 20 MB line is found; a huge line is matched on its first 64 KB")
    func readyAfterAHugeLine() throws {
        // The needle sits past the first 64 KB of a huge line.
        let output = [UInt8](repeating: UInt8(ascii: "x"), count: 20_000_000) + Array("needle\nlistening on 8080\n".utf8)
        #expect(try watch(output, for: "listening on"), "the line after the huge one is matched")
        #expect(try !watch(output, for: "needle"), "only the first 64 KB of a line are looked at")
        #expect(try watch(Array("x\nneedle".utf8), for: "needle"), "a last line without a newline is matched")
        #expect(ProcessRunner.newline(in: Array("ab\ncd\n".utf8), from: 3) == 5)
        #expect(ProcessRunner.newline(in: Array("ab".utf8), from: 0) == nil)
        #expect(ProcessRunner.newline(in: [], from: 0) == nil)
    }

    /// `record` of 100 short runs into `folder`, once a few have finished; its standard error.
    func recordingSomeRuns(into folder: URL) throws -> (Process, Pipe) {
        let process = Process()
        process.executableURL = try BuiltTool.find().url
        process.arguments = ["record", "--runs", "100", "--warmup", "0", "--quiet", "--out", folder.path, "--", "/bin/sleep", "0.05"]
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let journal = folder.appendingPathComponent("runs.jsonl")
        // On a machine busy with other work the first runs may take long: the test is about an
        // interrupt after some finished, so it waits for them (or for record to end).
        let deadline = Date().addingTimeInterval(180)
        var lines = 0
        while Date() < deadline && process.isRunning {
            lines = (try? String(contentsOf: journal, encoding: .utf8))?.split(separator: "\n").count ?? 0
            if lines >= 4 { break }
            usleep(20_000)
        }
        try #require(lines >= 4, "record finished \(lines) runs in 180 s")
        return (process, errors)
    }

    @Test("Ctrl-C to record hands the signal to the running program, keeps every finished run in record.json, exits 130")
    func interrupted() throws {
        let folder = temporaryFolder()
        let (process, errors) = try recordingSomeRuns(into: folder)
        kill(process.processIdentifier, SIGINT)
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 130, "\(stderr)")
        #expect(stderr.contains("Interrupted by SIGINT: the ") && stderr.contains("finished run"), "\(stderr)")
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("record.json").path), "record.json is written")
        let runs = try RunSet.load(folder.path)
        #expect(runs.profiles.count >= 3, "the runs that finished before the interrupt are kept")
        #expect(runs.profiles.allSatisfy { ($0.timeToFirstFrameNs ?? 0) >= 50_000_000 })
    }

    @Test("a recording killed outright keeps every finished run in its journal, and compare reads it")
    func killed() throws {
        let folder = temporaryFolder()
        let (process, _) = try recordingSomeRuns(into: folder)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("record.json").path))
        let runs = try RunSet.load(folder.path)
        #expect(runs.profiles.count >= 3, "the runs that finished before the kill are kept")
    }

    @Test("a program that cannot start, or a missing command, is one clear sentence and a non-zero exit")
    func badCommands() throws {
        let folder = temporaryFolder()
        let missing = try BuiltTool.find().run(["record", "--runs", "1", "--out", folder.path, "--", "/nonexistent/app"])
        #expect(missing.status != 0)
        #expect(missing.stderr.contains("Cannot start /nonexistent/app"), "stderr: \(missing.stderr)")
        let none = try BuiltTool.find().run(["record", "--out", folder.path])
        #expect(none.status != 0)
        #expect(none.stderr.contains("Give the command to launch after --"))
        let failing = try BuiltTool.find().run(["record", "--runs", "2", "--warmup", "0", "--out", folder.path, "--", "/bin/false"])
        #expect(failing.status == 1)
        #expect(failing.stderr.contains("Every run of /bin/false failed"))
    }

    // The tests run in parallel on a shared machine, so launch times here are far noisier than
    // in a CI job of their own (medians of identical builds have differed by 26 % here). So the
    // identical builds must raise no alarm — unchanged, or inconclusive when the noise is too
    // loud — and the slower build is slowed by 200 %. The statistics are checked on simulations.
    @Test("real launches: the demo against itself raises no alarm; slowed down it regressed and the diff shows where")
    func realLaunches() throws {
        let tool = try BuiltTool.find()
        let folder = temporaryFolder()
        let demo = "\(tool.url.path) demo --quiet --linger 0 --rate 500 --out \(folder.path)/scratch"
        // Identical builds, interleaved.
        let same = try tool.run([
            "record", "--runs", "12", "--warmup", "1", "--out", folder.appendingPathComponent("same").path,
            "--baseline", demo, "--",
        ] + (try ShellWords.split(demo)))
        #expect(same.status == 0, "stderr: \(same.stderr)")
        let unchanged = try tool.run([
            "compare", folder.appendingPathComponent("same/base").path, folder.appendingPathComponent("same/head").path,
        ])
        #expect(unchanged.status == 0 || unchanged.status == 3, "\(unchanged.stdout)")
        #expect(
            unchanged.stdout.hasPrefix("Launch time unchanged") || unchanged.stdout.hasPrefix("Inconclusive"),
            "identical builds are never called regressed or improved: \(unchanged.stdout)")

        // A slower build (head) against the normal one (base), interleaved.
        let slow = try tool.run([
            // Twelve a side: a launch or two slowed by the suites running beside this one must not
            // leave the verdict inconclusive.
            "record", "--runs", "12", "--warmup", "1", "--out", folder.appendingPathComponent("slow").path,
            "--baseline", demo, "--",
        ] + (try ShellWords.split(demo)) + ["--slowdown", "200%"])
        #expect(slow.status == 0, "stderr: \(slow.stderr)")
        let diffFolder = folder.appendingPathComponent("diff")
        let regressed = try tool.run([
            "compare", folder.appendingPathComponent("slow/base").path, folder.appendingPathComponent("slow/head").path,
            "--diff-out", diffFolder.path, "--format", "markdown",
        ])
        #expect(regressed.status == 2, "\(regressed.stdout)")
        #expect(regressed.stdout.contains("Liftoff launch comparison: regressed"))
        // Swapped, the normal build is faster.
        let improved = try tool.run([
            "compare", folder.appendingPathComponent("slow/head").path, folder.appendingPathComponent("slow/base").path,
        ])
        #expect(improved.status == 0)
        #expect(improved.stdout.hasPrefix("Launch time improved"), "\(improved.stdout)")
        // The slowed function is drawn red: it exists only in head.
        let svg = try String(contentsOf: diffFolder.appendingPathComponent("diff-flame.svg"), encoding: .utf8)
        let line = try #require(svg.split(separator: "\n").first { $0.contains("<title>static DemoWorkload.extraWork(nanoseconds:)") })
        #expect(line.contains("(new)"))
        #expect(line.contains("fill=\"rgb(255,55,55)\""))
        #expect(FileManager.default.fileExists(atPath: diffFolder.appendingPathComponent("diff-flame.html").path))
    }
}
