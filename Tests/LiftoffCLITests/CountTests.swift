import Foundation
import LiftoffComparison
import LiftoffProfile
import LiftoffTestSupport
import Testing

/// `liftoff record --count instructions` and `compare` on the counts, with real valgrind.
@Suite("Counted launches", .serialized, .timeLimit(.minutes(10)))
struct CountTests {
    static let program = """
        #include <stdio.h>
        #include <stdlib.h>
        #include <time.h>
        static volatile long sink;
        __attribute__((noinline)) void work(long n) { for (long i = 0; i < n; i++) sink += i; }
        __attribute__((noinline)) void extra_work(long n) { for (long i = 0; i < n; i++) sink += i * 3; }
        __attribute__((noinline)) void poll_clock(void) {
            struct timespec start, now;
            clock_gettime(CLOCK_MONOTONIC, &start);
            do { clock_gettime(CLOCK_MONOTONIC, &now); sink++; }
            while ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) < 30000000L);
            // Work seeded by the clock, as a cache sized by the time of day would be.
            extra_work((now.tv_nsec / 1000 % 1000) * 1000);
        }
        int main(int argc, char **argv) {
            work(3000000);
            if (argc > 1 && argv[1][0] == 'p') poll_clock(); else if (argc > 1) extra_work(atol(argv[1]));
            puts("ready"); return 0;
        }
        """

    func record(_ folder: URL, base: [String], head: [String], extra: [String] = []) throws -> (status: Int32, stderr: String) {
        let result = try BuiltTool.find().run(
            ["record", "--runs", "2", "--warmup", "0", "--no-agent", "--quiet", "--count", "instructions", "--out", folder.path]
                + extra + ["--baseline", base.joined(separator: " "), "--"] + head)
        return (result.status, result.stdout + result.stderr)
    }

    func compare(_ folder: URL, _ extra: [String] = []) throws -> (status: Int32, json: [String: Any], text: String) {
        let tool = try BuiltTool.find()
        let sides = [folder.appendingPathComponent("base").path, folder.appendingPathComponent("head").path]
        let json = try tool.run(["compare"] + sides + ["--format", "json"] + extra)
        let text = try tool.run(["compare"] + sides + extra)
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json.stderr)")
        #expect(json.status == text.status)
        return (json.status, document, text.stdout)
    }

    @Test("a C launch counts the same every time, within 5·10⁻⁶; a 1 % injected change fails the gate within 0.1 point, naming the function; base against itself is unchanged")
    func injectedChange() throws {
        let program = try AnyPrograms.build("counted", Self.program, ["-O1", "-g"])
        // About 1 % more instructions in extra_work: 1.05 %, just over the default threshold of 1 %.
        let folder = temporaryFolder()
        let recorded = try record(folder, base: [program], head: [program, "31500"])
        try #require(recorded.status == 0, "\(recorded.stderr)")
        let head = try RunSet.load(folder.appendingPathComponent("head").path)
        let base = try RunSet.load(folder.appendingPathComponent("base").path)
        #expect(try head.counts().count == 3 && base.counts().count == 3, "three counted runs a side by default")
        for side in [base, head] {
            let counts = try side.counts().map(\.instructions)
            // Deterministic to a few instructions in millions (on a busy machine, 18,804,571 and
            // 18,804,585 were seen); a fifth of the 1 % threshold would still decide.
            let low = try #require(counts.min()), high = try #require(counts.max())
            #expect(Double(high - low) <= 5e-6 * Double(low), "a C launch is deterministic under callgrind: \(counts)")
        }
        let (status, json, text) = try compare(folder)
        #expect(status == 2, "regressed: \(text)")
        let instructions = try #require(json["instructions"] as? [String: Any])
        #expect(instructions["verdict"] as? String == "regressed")
        let functions = instructions["functions"] as? [[String: Any]] ?? []
        #expect(functions.first?["name"] as? String == "extra_work", "\(functions.prefix(3))")
        let added = functions.first?["change"] as? Double ?? 0
        let change = instructions["change"] as? Double ?? 0
        let baseMedian = instructions["baseMedian"] as? Double ?? 1
        #expect(abs(change - added / baseMedian) < 0.001, "the change, \(change), is what extra_work added, \(added / baseMedian)")
        #expect(change > 0.01 && change < 0.011, "just over 1 %: \(change)")
        // extra_work calls nothing: what it added inclusive is what it added itself.
        #expect(functions.first?["inclusiveChange"] as? Double == added, "\(functions.prefix(1))")
        #expect(text.hasPrefix("Launch instructions regressed: Instructions to ready +"), "\(text)")
        #expect(text.contains("most of it: extra_work — counted.c +"), "\(text)")

        // check's budget on the counts: the head's median, in millions.
        let headFolder = folder.appendingPathComponent("head").path
        let headMedian = instructions["headMedian"] as? Double ?? 0
        let tool = try BuiltTool.find()
        let within = try tool.run(["check", headFolder, "--max-instructions", "\(Int(headMedian) + 1)"])
        #expect(within.status == 0 && within.stdout.contains("within the budget"), "\(within.stdout)\(within.stderr)")
        let over = try tool.run(["check", headFolder, "--max-instructions", "\(fmt(headMedian / 2e6, digits: 3))M"])
        #expect(over.status == 2 && over.stdout.contains("over the budget"), "\(over.stdout)")
        let bad = try tool.run(["check", headFolder, "--max-instructions", "lots"])
        #expect(bad.status == 64 && bad.stderr.contains("'lots' is not a count of instructions"), "\(bad.stderr)")

        let same = temporaryFolder()
        try #require(try record(same, base: [program], head: [program]).status == 0)
        let (sameStatus, sameJSON, sameText) = try compare(same)
        #expect(sameStatus == 0, "\(sameText)")
        // The same program on both sides: unchanged, within the few instructions in millions that
        // separate two counts of one launch.
        let sameInstructions = sameJSON["instructions"] as? [String: Any]
        #expect(sameInstructions?["verdict"] as? String == "unchanged", "\(sameText)")
        #expect(abs(sameInstructions?["change"] as? Double ?? 1) <= 5e-6, "\(String(describing: sameInstructions?["change"]))")
    }

    @Test("a launch that polls a clock is not deterministic: inconclusive, with its spread")
    func pollingIsInconclusive() throws {
        let program = try AnyPrograms.build("counted", Self.program, ["-O1", "-g"])
        let folder = temporaryFolder()
        try #require(try record(folder, base: [program, "p"], head: [program, "p"]).status == 0)
        let (status, json, text) = try compare(folder)
        #expect(status == 3, "\(text)")
        #expect((json["instructions"] as? [String: Any])?["verdict"] as? String == "inconclusive")
        #expect(text.contains("Counts vary by"), "\(text)")
    }

    @Test("valgrind cannot read DWARF 5: a copy without debug sections is counted, said, and removed after")
    func dwarf5() throws {
        let program = try AgentPrograms.build(
            "counted-dwarf5", source: "print(\"ready\")\n", ext: "swift", compiler: try InsightPrograms.swiftc(), ["-g", "-dwarf-version=5"])
        let folder = temporaryFolder()
        let recorded = try record(folder, base: [program], head: [program], extra: ["--count-runs", "1"])
        try #require(recorded.status == 0, "\(recorded.stderr)")
        #expect(
            recorded.stderr.contains("valgrind cannot read the debug information of \(program) (DWARF 5), so a copy without it was counted"),
            "said even with --quiet: \(recorded.stderr)")
        let manifest = try JSONDecoder().decode(
            RecordManifest.self, from: Data(contentsOf: folder.appendingPathComponent("head/record.json")))
        let counted = try #require(manifest.counted?.first)
        #expect(counted.strippedCopy && counted.instructions != nil, "\(counted)")
        #expect(!FileManager.default.fileExists(atPath: program + ".liftoff-nodebug"))
    }

    /// A Swift launch with Foundation, Codable and Dispatch: JSON encoded and decoded, a
    /// dictionary built, and four global-queue blocks joined under a lock.
    static let swiftLaunch = """
        import Dispatch
        import Foundation
        struct Item: Codable { var id: Int; var name: String; var tags: [String: Int] }
        let items = (0..<2000).map { Item(id: $0, name: "item \\($0)", tags: ["a\\($0 % 7)": $0, "b": 2]) }
        let decoded = try! JSONDecoder().decode([Item].self, from: try! JSONEncoder().encode(items))
        var index: [String: Int] = [:]
        for item in decoded { for (key, value) in item.tags { index[key, default: 0] += value } }
        let group = DispatchGroup()
        let lock = NSLock()
        var total = 0
        for part in 0..<4 {
            DispatchQueue.global().async(group: group) {
                var sum = 0
                for item in decoded where item.id % 4 == part { sum += item.name.count }
                lock.lock(); total += sum; lock.unlock()
            }
        }
        group.wait()
        print("ready", index.count, total)
        """

    @Test("a Swift launch with Foundation, Codable and Dispatch counts within 0.05 % from run to run: against itself, unchanged in all 20 ways its six runs split three a side")
    func swiftDeterminism() throws {
        let program = try AgentPrograms.build("counted-swift", source: Self.swiftLaunch, ext: "swift", compiler: try InsightPrograms.swiftc(), ["-O"])
        let folder = temporaryFolder()
        try #require(try record(folder, base: [program], head: [program]).status == 0)
        for side in ["base", "head"] {
            let counts = try RunSet.load(folder.appendingPathComponent(side).path).counts().map(\.instructions)
            let low = try #require(counts.min()), high = try #require(counts.max())
            #expect(counts.count == 3 && low > 10_000_000, "\(counts)")
            // The comparison needs a spread under a fifth of its 1 % threshold; hashing is
            // deterministic and valgrind's scheduling fair, so it is far under.
            #expect(Double(high - low) / Double(low) < 0.0005, "\(side): \(counts)")
        }
        let (status, _, text) = try compare(folder)
        #expect(status == 0 && text.hasPrefix("Launch instructions unchanged"), "\(text)")
        // The same program against itself, every way its six counted launches split into three a
        // side (20 ways): unchanged each time.
        let all = try ["base", "head"].flatMap { try RunSet.load(folder.appendingPathComponent($0).path).counts() }
        try #require(all.count == 6)
        var verdicts: [Verdict] = []
        for a in 0..<6 {
            for b in (a + 1)..<6 {
                for c in (b + 1)..<6 {
                    let base = [a, b, c].map { all[$0] }
                    let head = (0..<6).filter { ![a, b, c].contains($0) }.map { all[$0] }
                    verdicts.append(InstructionComparison(base: base, head: head).verdict)
                }
            }
        }
        #expect(verdicts.count == 20 && verdicts.allSatisfy { $0 == .unchanged }, "\(verdicts)")
    }

    @Test("a Swift program with an async main is counted: valgrind 3.19 died in its dispatch_main, whose signal mask is read-only")
    func asyncMain() throws {
        let source = """
            import Foundation
            @main struct App {
                static func work(_ n: Int) async -> Int { (0..<n).reduce(0, &+) }
                static func main() async {
                    async let a = work(100_000)
                    async let b = work(200_000)
                    let total = await a + b
                    print("ready", try! JSONEncoder().encode(["total": total]).count)
                }
            }
            """
        let program = try AgentPrograms.build(
            "counted-async", source: source, ext: "swift", compiler: try InsightPrograms.swiftc(), ["-O", "-parse-as-library"])
        let folder = temporaryFolder()
        try #require(try record(folder, base: [program], head: [program], extra: ["--count-runs", "2"]).status == 0)
        let manifest = try JSONDecoder().decode(RecordManifest.self, from: Data(contentsOf: folder.appendingPathComponent("head/record.json")))
        let counted = try #require(manifest.counted)
        #expect(counted.count == 2 && counted.allSatisfy { ($0.instructions ?? 0) > 1_000_000 }, "\(counted.map(\.outcome))")
    }

    @Test("compare gates on instructions only where both sides were counted; asked for without counts, it says so")
    func gateWithoutCounts() throws {
        let folder = temporaryFolder()
        let tool = try BuiltTool.find()
        for side in ["base", "head"] {
            let result = try tool.run([
                "record", "--runs", "2", "--warmup", "0", "--no-agent", "--quiet", "--out", folder.appendingPathComponent(side).path,
                "--", "/bin/true",
            ])
            try #require(result.status == 0, "\(result.stderr)")
        }
        let sides = [folder.appendingPathComponent("base").path, folder.appendingPathComponent("head").path]
        let gated = try tool.run(["compare"] + sides + ["--gate", "instructions"])
        #expect(gated.status == 1)
        #expect(gated.stderr.contains("the base runs were not counted (record them with --count instructions)"), "\(gated.stderr)")
    }
}
