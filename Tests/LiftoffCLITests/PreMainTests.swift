import Foundation
import LiftoffComparison
import LiftoffProfile
import LiftoffTestSupport
import Testing

/// The time before `main`, split by the kernel's counts that Liftoff's constructor reads.
@Suite("Before main", .serialized, .processState(timeLimit: .seconds(300)))
struct PreMainTests {
    /// A shared library whose static initializer sleeps `milliseconds` and a program linked to it.
    static func programWithSlowInitializer(milliseconds: Int) throws -> String {
        try AgentPrograms.programWithLibrary(
            "slowinit\(milliseconds)", main: "int slow_value(void);\nint main(void) { return slow_value() == 42 ? 0 : 1; }\n",
            library: "libslowinit\(milliseconds).so",
            librarySource: """
                #include <time.h>
                __attribute__((constructor)) static void slow_init(void) {
                    struct timespec pause = {0, \(milliseconds) * 1000000L};
                    nanosleep(&pause, 0);
                }
                int slow_value(void) { return 42; }
                """)
    }

    @Test("a library's 40 ms initializer is pre-main time spent blocked; the parts add up to the time before main")
    func slowInitializer() throws {
        let program = try PreMainTests.programWithSlowInitializer(milliseconds: 40)
        let out = temporaryFolder()
        let result = try BuiltTool.find().run(["profile", "--out", out.path, "--", program])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let profile = try Profile.load(from: out.appendingPathComponent("profile.json"))
        let preMain = try #require(profile.phases.preMain, "the breakdown is in the profile")
        #expect(preMain.onCPUNs + preMain.runnableNs + preMain.blockedNs == preMain.durationNs)
        // The sleep is blocked time: 40 ms, less a tick of the timer's slack at most.
        #expect(preMain.blockedNs >= 39_000_000, "blocked \(preMain.blockedNs) ns")
        #expect(preMain.durationNs >= preMain.blockedNs && preMain.durationNs <= profile.phases.mainEntryNs)
        #expect(preMain.faultsAtLeast == nil, "read before any sampling signal: the fault counts are whole")
        #expect(preMain.minorFaults > 0)
        #expect(result.stdout.contains("loader (exec → sampling start): "), "\(result.stdout)")
        let markdown = try String(contentsOf: out.appendingPathComponent("summary.md"), encoding: .utf8)
        #expect(markdown.contains("Loader (exec → sampling start):"), "the Markdown says it too")
    }

    @Test("a warm launch of a small program reads nothing from storage before main, and its parts add up")
    func warmTrue() throws {
        // Warmed under the agent, as --cache warm does: a launch of /bin/true alone warms no page of
        // the agent's own dependencies, which a cold launch by another test may have evicted.
        let out = temporaryFolder()
        let result = try BuiltTool.find().run(["profile", "--cache", "warm", "--out", out.path, "--", "/bin/true"])
        #expect(result.status == 0)
        let profile = try Profile.load(from: out.appendingPathComponent("profile.json"))
        let preMain = try #require(profile.phases.preMain)
        #expect(preMain.bytesRead == 0, "warm: \(preMain)")
        #expect(preMain.majorFaults == 0, "warm: \(preMain)")
        #expect(preMain.onCPUNs + preMain.runnableNs + preMain.blockedNs == preMain.durationNs)
    }

    @Test("through env and sh -c 'exec …', pre-main and main entry are the final program's; the wrappers are a phase of their own")
    func wrappers() throws {
        let program = try PreMainTests.programWithSlowInitializer(milliseconds: 40)
        var preMains: [String: Profile.PreMain] = [:]
        for (name, command) in [
            ("direct", [program]), ("env", ["/usr/bin/env", "FOO=1", program]), ("sh", ["/bin/sh", "-c", "exec \(program)"]),
        ] {
            let out = temporaryFolder()
            let result = try BuiltTool.find().run(["profile", "--out", out.path, "--"] + command)
            #expect(result.status == 0, "\(name): \(result.stdout)\(result.stderr)")
            let profile = try Profile.load(from: out.appendingPathComponent("profile.json"))
            let preMain = try #require(profile.phases.preMain, "\(name)")
            let start = profile.phases.programStartNs ?? 0
            #expect((profile.phases.programStartNs != nil) == (name != "direct"), "\(name): \(profile.phases)")
            #expect(preMain.blockedNs >= 39_000_000, "\(name): the initializer's sleep is the program's pre-main: \(preMain)")
            #expect(profile.phases.mainEntryNs > start + 40_000_000, "\(name): main entry is the program's, after its exec")
            preMains[name] = preMain
            if name != "direct" {
                #expect(result.stdout.contains("wrappers ("), "\(name): \(result.stdout)")
            }
        }
        // The wrappers' time is not the program's: its pre-main on a CPU and blocked is the same
        // however it is started (within what a busy machine adds to 40 ms of sleep and a few ms of
        // loading). Its time waiting for a core is the machine's: in a whole suite on two cores the
        // direct launch's pre-main once took 38 ms more than the wrapped ones'.
        let direct = try #require(preMains["direct"])
        let own = { (preMain: Profile.PreMain) in preMain.onCPUNs + preMain.blockedNs }
        for name in ["env", "sh"] {
            let wrapped = try #require(preMains[name])
            #expect(
                own(wrapped) < own(direct) + 20_000_000 && own(direct) < own(wrapped) + 20_000_000,
                "\(name) \(wrapped) against direct \(direct)")
        }
    }

    @Test("a shell's failed exec attempts along PATH are not programs of the process")
    func failedExecAttempts() throws {
        let path = (1...8).map { "/nonexistent/\($0)" }.joined(separator: ":") + ":/usr/bin:/bin"
        let out = temporaryFolder()
        let result = try BuiltTool.find().run(["profile", "--out", out.path, "--", "/bin/sh", "-c", "PATH=\(path); exec sleep 0.1"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let profile = try Profile.load(from: out.appendingPathComponent("profile.json"))
        let programs = try #require(profile.processes.first).programs.map(\.fileName)
        #expect(programs == ["sh", "sleep"], "\(programs)")
        #expect(profile.phases.programStartNs != nil, "sleep's pre-main is its own, after sh")
    }

    @Test("each program of the tree keeps its own time before main and loader timeline, not only the launch's")
    func childrenKeepTheirPreMain() throws {
        let program = try PreMainTests.programWithSlowInitializer(milliseconds: 40)
        let out = temporaryFolder()
        // sh runs the program twice as children, then itself ends.
        let result = try BuiltTool.find().run(["profile", "--out", out.path, "--", "/bin/sh", "-c", "\(program); \(program); true"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let profile = try Profile.load(from: out.appendingPathComponent("profile.json"))
        let children = profile.processes.dropFirst().flatMap(\.programs).filter { $0.fileName == "slowinit40" }
        #expect(children.count == 2, "\(profile.processes.map(\.programs))")
        for child in children {
            let preMain = try #require(child.preMain, "\(child)")
            // The initializer's 40 ms sleep is the child's pre-main, off a CPU: blocked, then waiting for a core once woken.
            #expect(preMain.blockedNs + preMain.runnableNs >= 39_000_000, "\(preMain)")
            #expect(preMain.durationNs >= 40_000_000 && preMain.durationNs <= child.endNs - child.startNs, "\(preMain) \(child)")
            let loader = try #require(preMain.loader)
            #expect(loader.initializers.contains { $0.function == "slow_init" && $0.durationNs >= 39_000_000 }, "\(loader.initializers)")
            #expect(child.startNs <= loader.startNs && loader.startNs <= child.endNs, "the timeline is on the profile's clock")
        }
        // The launch's own program (sh) keeps its in the phases, not twice.
        #expect(profile.processes.first?.programs.last?.preMain == nil && profile.phases.preMain != nil)
        #expect(result.stdout.contains("before main: slowinit40 4"), "\(result.stdout)")
    }

    @Test("record carries the program's pre-main, its loader's parts and the wrappers' time as metrics")
    func recordedMetrics() throws {
        let program = try PreMainTests.programWithSlowInitializer(milliseconds: 40)
        let folder = temporaryFolder()
        let result = try BuiltTool.find().run(["record", "--runs", "2", "--quiet", "--out", folder.path, "--", "/usr/bin/env", "FOO=1", program])
        #expect(result.status == 0, "\(result.stderr)")
        let metrics = Dictionary(uniqueKeysWithValues: try RunSet.load(folder.path).metrics([.phases]).map { ($0.name, $0.values) })
        let preMain = try #require(metrics["pre-main"]), blocked = try #require(metrics["pre-main: blocked"])
        #expect(preMain.count == 2 && preMain.allSatisfy { $0 >= 40 }, "the program's pre-main holds its 40 ms initializer: \(preMain)")
        #expect(blocked.allSatisfy { $0 >= 39 }, "\(blocked)")
        #expect(metrics["wrappers"]?.count == 2, "env's time is a metric of its own: \(metrics.keys.sorted())")
        #expect(metrics["pre-main: on CPU"] != nil && metrics["pre-main: waiting for a core"] != nil)
        // The loader's parts, and the object whose initializer slept, each a metric `check` can gate.
        let initializers = try #require(metrics["initializers: libslowinit40.so"], "\(metrics.keys.sorted())")
        #expect(initializers.allSatisfy { $0 >= 39 }, "\(initializers)")
        #expect((metrics["pre-main: initializers"] ?? []).allSatisfy { $0 >= 39 })
        #expect(metrics["pre-main: relocation"]?.count == 2 && metrics["pre-main: mapping"]?.count == 2)
        let check = try BuiltTool.find().run(["check", folder.path, "--max-phase", "initializers: libslowinit40.so=20ms"])
        #expect(check.status == 2 && check.stdout.contains("libslowinit40.so"), "\(check.stdout)\(check.stderr)")
        let gate = try BuiltTool.find().run(["check", folder.path, "--insight", "static-initializers=20ms"])
        #expect(gate.status == 2, "\(gate.stdout)\(gate.stderr)")
    }

    @Test("compare measures a library's initializers on both sides when they stand out on one: a library that slows down is gated, not dropped")
    func comparedInitializers() throws {
        // One library whose initializer sleeps $GROW_MS: under 1 ms in base, 15 ms in head; 7 runs a side,
        // so that the Mann–Whitney test passes the default significance of 0.01 even when base's
        // microsecond values tie (5 a side reach p = 0.008 only without ties).
        let program = try AgentPrograms.programWithLibrary(
            "growinit", main: "int grow_value(void);\nint main(void) { return grow_value() == 7 ? 0 : 1; }\n",
            library: "libgrowinit.so",
            librarySource: """
                #include <stdlib.h>
                #include <time.h>
                __attribute__((constructor)) static void grow_init(void) {
                    const char *text = getenv("GROW_MS");
                    long ms = text ? atol(text) : 0;
                    struct timespec pause = {0, ms * 1000000L};
                    if (ms > 0) nanosleep(&pause, 0);
                }
                int grow_value(void) { return 7; }
                """)
        let base = temporaryFolder(), head = temporaryFolder()
        for (folder, ms) in [(base, "0"), (head, "15")] {
            let result = try BuiltTool.find().run(
                ["record", "--runs", "7", "--quiet", "--out", folder.path, "--", program], environment: ["GROW_MS": ms])
            #expect(result.status == 0, "\(result.stderr)")
        }
        let metric = "initializers: libgrowinit.so"
        // Base alone has no such metric (its initializer never took 1 ms); compared with head, it has one value a run.
        #expect(try RunSet.load(base.path).metrics([.phases]).contains { $0.name == metric } == false)
        let json = try BuiltTool.find().run(["compare", base.path, head.path, "--gate", metric, "--format", "json"])
        #expect(json.status == 2, "a 15 ms slower initializer regresses: \(json.stdout)\(json.stderr)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let rows = try #require(document["metrics"] as? [[String: Any]])
        let row = try #require(rows.first { $0["metric"] as? String == metric }, "\(rows.compactMap { $0["metric"] })")
        #expect(row["verdict"] as? String == "regressed", "\(row)")
        // And the other way round, the library that sped up is listed as improved, not dropped.
        let reverse = try BuiltTool.find().run(["compare", head.path, base.path, "--metrics", "phases", "--format", "json"])
        let reversed = try #require(try JSONSerialization.jsonObject(with: Data(reverse.stdout.utf8)) as? [String: Any])
        let reversedRows = try #require(reversed["metrics"] as? [[String: Any]])
        #expect(reversedRows.contains { $0["metric"] as? String == metric && $0["verdict"] as? String == "improved" }, "\(reverse.stdout)")
    }
}
