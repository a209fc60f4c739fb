import Foundation
import LiftoffProfile
import LiftoffTestSupport
import Testing

/// `Tests/Scripts/receiver.py` on a loopback port: the handler rules of an OpenTelemetry
/// Collector's OTLP/HTTP profiles endpoint and of Pyroscope's /ingest, decoding with
/// OpenTelemetry's own classes; every request is a JSON line in its log.
final class Receiver {
    let process = Process()
    let port: Int
    let log: URL
    let folder: URL

    init(mode: String = "ok") throws {
        let python = repositoryRoot.appendingPathComponent(".build/test-venv/bin/python").path
        try #require(FileManager.default.isExecutableFile(atPath: python), "make test-deps makes the venv with opentelemetry-proto")
        folder = temporaryFolder()
        log = folder.appendingPathComponent("requests.jsonl")
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [repositoryRoot.appendingPathComponent("Tests/Scripts/receiver.py").path, log.path, folder.path, mode]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        // Its first line is its port.
        var text = ""
        let deadline = Date().addingTimeInterval(20)
        while !text.contains("\n"), Date() < deadline, process.isRunning {
            text += String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        }
        guard let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            process.terminate()
            throw ReceiverError(description: "the receiver did not start: \(text)")
        }
        self.port = port
    }

    struct ReceiverError: Error, CustomStringConvertible { var description: String }

    var address: String { "http://127.0.0.1:\(port)" }

    /// The requests it received, in order.
    func requests() throws -> [[String: Any]] {
        guard let text = try? String(contentsOf: log, encoding: .utf8) else { return [] }
        return try text.split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
    }

    deinit {
        // Ended and reaped here: Foundation's waitUntilExit can wait forever inside a test.
        let pid = process.processIdentifier
        kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
    }
}

@Suite("push to OTLP and Pyroscope receivers", .timeLimit(.minutes(3)))
struct PushTests {
    @Test("a profile reaches an OTLP receiver gzip-compressed with its totals, and Pyroscope as raw pprof Go's pprof reads")
    func sendsToBoth() throws {
        let receiver = try Receiver()
        let profile = Profile.synthetic(samples: 3_000, distinctStacks: 200, tasks: 4, threads: 2, seed: 3)
        let file = temporaryFolder().appendingPathComponent("profile.json")
        try profile.write(to: file)
        let result = try BuiltTool.find().run([
            "push", file.path, "--otlp", receiver.address, "--service", "checkout", "--pyroscope", receiver.address, "--name",
            "checkout.launch", "--label", "env=ci", "--header", "Authorization=Bearer secret",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let requests = try receiver.requests()
        try #require(requests.count == 2, "\(requests)")
        let (otlp, pyroscope) = (requests[0], requests[1])
        #expect(otlp["answer"] as? Int == 200)
        #expect(otlp["contentEncoding"] as? String == "gzip")
        #expect(otlp["service"] as? String == "checkout")
        let totals = try #require(otlp["totals"] as? [String: Int])
        let interval = Int(profile.samplingIntervalNs)
        #expect(totals["cpu"] == profile.samples.ticks(in: .running) * interval)
        #expect(totals["wall"] == profile.samples.totalTicks * interval)
        #expect(otlp["authorization"] as? String == "Bearer secret")

        #expect(pyroscope["answer"] as? Int == 200)
        let query = try #require(pyroscope["query"] as? [String: String])
        #expect(query["name"] == "checkout.launch{env=ci}")
        #expect(query["format"] == "pprof")
        #expect(pyroscope["authorization"] as? String == "Bearer secret")
        let saved = try #require(pyroscope["saved"] as? String)
        let raw = try goPprof(["-raw", saved])
        #expect(raw.contains("cpu_samples/count[dflt]"), "\(raw.prefix(300))")
    }

    @Test("a 429 and a 503 are tried again, after the server's Retry-After, until it takes the profile")
    func retriesWhenAskedTo() throws {
        let receiver = try Receiver(mode: "flaky:2")
        let file = temporaryFolder().appendingPathComponent("profile.json")
        try Profile.synthetic(samples: 300, distinctStacks: 20, tasks: 1).write(to: file)
        let result = try BuiltTool.find().run(["push", file.path, "--otlp", receiver.address])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("after 3 tries"), "\(result.stdout)")
        #expect(try receiver.requests().map { $0["answer"] as? Int } == [429, 503, 200])
    }

    @Test("a refusal is one sentence and is not tried again; a 500 is, and then named")
    func refusals() throws {
        let file = temporaryFolder().appendingPathComponent("profile.json")
        try Profile.synthetic(samples: 300, distinctStacks: 20, tasks: 1).write(to: file)
        let refusing = try Receiver(mode: "status:400")
        var result = try BuiltTool.find().run(["push", file.path, "--otlp", refusing.address])
        #expect(result.status == 1)
        #expect(result.stderr.contains("refused the profile: HTTP 400"), "\(result.stderr)")
        #expect(try refusing.requests().count == 1)

        let failing = try Receiver(mode: "status:500")
        result = try BuiltTool.find().run(["push", file.path, "--pyroscope", failing.address, "--retries", "2"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("after 3 tries: HTTP 500: internal error: the store is down"), "\(result.stderr)")
        #expect(try failing.requests().count == 3)
    }

    @Test("a receiver that never answers does not hang push: each try ends at --timeout")
    func hangingReceiver() throws {
        let receiver = try Receiver(mode: "hang")
        let file = temporaryFolder().appendingPathComponent("profile.json")
        try Profile.synthetic(samples: 300, distinctStacks: 20, tasks: 1).write(to: file)
        let started = Date()
        let result = try BuiltTool.find().run(["push", file.path, "--otlp", receiver.address, "--timeout", "1", "--retries", "1"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("after 2 tries: no answer"), "\(result.stderr)")
        #expect(Date().timeIntervalSince(started) < 60)
        #expect(try receiver.requests().count == 2)
    }

    @Test("a recorded folder sends each run; bad addresses, headers and labels are one sentence")
    func foldersAndBadInput() throws {
        let receiver = try Receiver()
        let folder = try spanFolder(routerMs: [8, 9, 10])
        let tool = try BuiltTool.find()
        let result = try tool.run(["push", folder.path, "--otlp", receiver.address])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try receiver.requests().count == 3)
        for (arguments, words) in [
            (["--otlp", "ftp://example.com"], "is not an http:// or https:// address"),
            (["--otlp", receiver.address, "--header", "novalue"], "has no '='"),
            (["--pyroscope", receiver.address, "--label", "env=a,b"], "is not KEY=VALUE"),
            (["--otlp", receiver.address, "--timeout", "0"], "is not a number of seconds"),
            ([], "--otlp URL or --pyroscope URL"),
        ] {
            let refused = try tool.run(["push", folder.path] + arguments)
            #expect(refused.status != 0)
            #expect(refused.stderr.contains(words), "\(arguments): \(refused.stderr)")
        }
    }

    @Test("record --push-otlp sends each run as it is recorded, and a receiver that refuses does not lose the runs")
    func recordPushesEachRun() throws {
        let receiver = try Receiver()
        let out = temporaryFolder().appendingPathComponent("runs")
        let busy = ["/bin/sh", "-c", "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done"]
        let tool = try BuiltTool.find()
        var result = try tool.run(["record", "--runs", "2", "--quiet", "--out", out.path, "--push-otlp", receiver.address, "--"] + busy)
        #expect(result.status == 0, "\(result.stderr)")
        let requests = try receiver.requests()
        #expect(requests.count == 2 && requests.allSatisfy { $0["answer"] as? Int == 200 }, "\(requests)")
        #expect(requests.first?["service"] as? String == "sh")

        let refusing = try Receiver(mode: "status:400")
        let kept = temporaryFolder().appendingPathComponent("kept")
        result = try tool.run(["record", "--runs", "2", "--quiet", "--out", kept.path, "--push-otlp", refusing.address, "--"] + busy)
        #expect(result.status == 1)
        #expect(result.stderr.contains("2 of the runs could not be sent"), "\(result.stderr)")
        #expect(FileManager.default.fileExists(atPath: kept.appendingPathComponent("record.json").path))
    }
}
