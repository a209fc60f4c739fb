import Foundation
import LiftoffProfile
import LiftoffTestSupport
import Testing

/// Programs whose launches are slow for one known reason, and one that is only busy.
enum InsightPrograms {
    static let sleep = """
        #include <stdio.h>
        #include <unistd.h>
        __attribute__((noinline)) void load_config(void) { usleep(200000); }
        int main(void) { load_config(); puts("ready"); return 0; }
        """

    /// The main thread takes a lock a worker holds while it computes.
    static let lock = """
        #include <pthread.h>
        #include <stdio.h>
        #include <unistd.h>
        static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
        static volatile double sink;
        static int held;
        __attribute__((noinline)) void compute_table(void) { for (long i = 0; i < 60000000; i++) sink += i * 0.5; }
        static void *worker(void *arg) {
            pthread_mutex_lock(&table_lock); __atomic_store_n(&held, 1, __ATOMIC_RELEASE);
            compute_table(); pthread_mutex_unlock(&table_lock); return arg;
        }
        __attribute__((noinline)) void read_table(void) { pthread_mutex_lock(&table_lock); sink += 1; pthread_mutex_unlock(&table_lock); }
        int main(void) {
            pthread_t thread; pthread_create(&thread, 0, worker, 0);
            // Until the worker holds the lock: on a busy machine it may not run for a while.
            while (!__atomic_load_n(&held, __ATOMIC_ACQUIRE)) usleep(1000);
            read_table(); puts("ready"); pthread_join(thread, 0); return 0;
        }
        """

    /// Twice as many busy threads as the machine has cores.
    static let busy = """
        #include <pthread.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <unistd.h>
        static volatile double sink[64];
        __attribute__((noinline)) void crunch(long k) { for (long i = 0; i < 40000000; i++) sink[k] += i * 0.5; }
        static void *worker(void *arg) { crunch((long)arg); return 0; }
        int main(void) {
            long count = 2 * sysconf(_SC_NPROCESSORS_ONLN); if (count > 64) count = 64;
            pthread_t threads[64];
            for (long i = 0; i < count; i++) pthread_create(&threads[i], 0, worker, (void *)i);
            for (long i = 0; i < count; i++) pthread_join(threads[i], 0);
            puts("ready"); return 0;
        }
        """

    /// A lock chain across three threads: main waits for a lock the worker holds, the worker waits
    /// for a semaphore the loader posts after decoding; then the worker fills its cache.
    static let chain = """
        #include <pthread.h>
        #include <semaphore.h>
        #include <stdio.h>
        #include <unistd.h>
        static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
        static sem_t decoded;
        static volatile double sink;
        static int held;
        __attribute__((noinline)) void decode_catalogue(void) { for (long i = 0; i < 80000000; i++) sink += i * 0.5; }
        __attribute__((noinline)) void fill_cache(void) { for (long i = 0; i < 40000000; i++) sink += i * 0.25; }
        static void *loader(void *arg) { decode_catalogue(); sem_post(&decoded); return arg; }
        static void *worker(void *arg) {
            pthread_mutex_lock(&lock); __atomic_store_n(&held, 1, __ATOMIC_RELEASE);
            sem_wait(&decoded); fill_cache(); pthread_mutex_unlock(&lock); return arg;
        }
        __attribute__((noinline)) void read_settings(void) { pthread_mutex_lock(&lock); sink += 1; pthread_mutex_unlock(&lock); }
        int main(void) {
            sem_init(&decoded, 0, 0);
            pthread_t threads[2]; pthread_create(&threads[0], 0, worker, 0);
            while (!__atomic_load_n(&held, __ATOMIC_ACQUIRE)) usleep(1000);
            pthread_create(&threads[1], 0, loader, 0);
            read_settings(); puts("ready"); fflush(stdout);
            pthread_join(threads[0], 0); pthread_join(threads[1], 0); return 0;
        }
        """

    /// The main thread joins a thread that prepares the index and writes the ready line itself.
    static let readyElsewhere = """
        #include <pthread.h>
        #include <stdio.h>
        static volatile double sink;
        __attribute__((noinline)) void prepare_index(void) { for (long i = 0; i < 80000000; i++) sink += i * 0.5; }
        static void *server(void *arg) { prepare_index(); puts("ready"); fflush(stdout); for (long i = 0; i < 400000000; i++) sink += 1; return arg; }
        int main(void) { pthread_t thread; pthread_create(&thread, 0, server, 0); pthread_join(thread, 0); return 0; }
        """

    /// An event-loop-style main that waits in `read` on a pipe while a worker indexes, prints
    /// the ready line, and only then writes to the pipe: nothing but the ready line's writer
    /// tells that main's wait is the worker's work.
    static let readyFromWorker = """
        #include <pthread.h>
        #include <stdio.h>
        #include <unistd.h>
        static volatile double sink;
        static int wake[2];
        __attribute__((noinline)) void build_catalog(void) { for (long i = 0; i < 80000000; i++) sink += i * 0.5; }
        static void *worker(void *arg) {
            build_catalog();
            printf("listening on port %d\\n", 8080);
            fflush(stdout);
            for (long i = 0; i < 400000000; i++) sink += 1;
            char byte = 1;
            write(wake[1], &byte, 1);
            return arg;
        }
        int main(void) {
            pipe(wake);
            pthread_t thread;
            pthread_create(&thread, 0, worker, 0);
            char byte;
            read(wake[0], &byte, 1);
            return 0;
        }
        """

    /// An async launch whose work runs in a synchronous closure the Concurrency runtime calls
    /// (`TaskLocal.withValue`, as a span's or `withSpan`'s closure runs), built without
    /// optimization so that the runtime's generic `withValue` is the one called.
    static let taskLocalClosure = """
        enum Context { @TaskLocal static var name = "" }
        nonisolated(unsafe) var sink = 0.0
        @inline(never) func compute() -> Double {
            for i in 0..<40_000_000 { sink += Double(i) * 0.5 }
            return sink
        }
        @inline(never) func configure() async -> Double {
            await Task.yield()
            return Context.$name.withValue("launch") { compute() }
        }
        @main struct Server {
            static func main() async {
                let result = await configure()
                print("ready \\(result > 0)")
            }
        }
        """

    /// Loads the Swift toolchain's Foundation libraries (its argument: their folder) with dlopen.
    static let plugins = """
        #include <dlfcn.h>
        #include <stdio.h>
        #include <stdlib.h>
        __attribute__((noinline)) void load_plugins(const char *folder) {
            const char *names[] = {"libFoundation.so", "libFoundationNetworking.so", "libFoundationXML.so", "libswift_RegexParser.so",
                "libswiftDistributed.so", "libswiftObservation.so"};
            for (int i = 0; i < 6; i++) {
                char path[4096]; snprintf(path, sizeof path, "%s/%s", folder, names[i]);
                if (!dlopen(path, RTLD_NOW | RTLD_GLOBAL)) { fprintf(stderr, "%s\\n", dlerror()); exit(1); }
            }
        }
        int main(int argc, char **argv) { load_plugins(argv[1]); puts("ready"); return 0; }
        """

    /// Only computes: no wait, no load, one thread.
    static let busyOneThread = """
        #include <stdio.h>
        static volatile double sink;
        __attribute__((noinline)) void parse_all(void) { for (long i = 0; i < 60000000; i++) sink += i * 0.5; }
        int main(void) { parse_all(); puts("ready"); return 0; }
        """

    /// An async Swift CLI: it decodes a catalogue, builds a search index in its own function,
    /// then (after an await, on a pool thread) waits for a lock a worker thread holds while it
    /// computes, and prints its ready line.
    static let asyncCatalog = """
        import Foundation
        struct Item: Codable { var id: Int; var name: String; var tags: [String] }
        @inline(never) func buildIndex(_ items: [Item]) -> [String: [Int]] {
            var index: [String: [Int]] = [:]
            for _ in 0..<6 {
                index.removeAll(keepingCapacity: true)
                for item in items {
                    for word in item.name.lowercased().split(separator: " ") { index[String(word), default: []].append(item.id) }
                    for tag in item.tags { index[tag, default: []].append(item.id) }
                }
            }
            return index
        }
        let lock = NSLock()
        let held = DispatchSemaphore(value: 0)
        let reading = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var settings = 0.0
        @inline(never) func warmCache() {
            lock.lock()
            held.signal()
            // It computes once the reader is about to take the lock, so the reader waits for all
            // of it however a busy machine schedules the two.
            reading.wait()
            var x = 0.0
            for i in 0..<60_000_000 { x += Double(i) * 0.5 }
            settings = x
            lock.unlock()
        }
        @inline(never) func readSettings() -> Double { lock.lock(); defer { lock.unlock() }; return settings }
        // The worker holds the lock before main goes on, however late a busy machine starts it.
        @inline(never) func waitUntilHeld() { held.wait() }
        @main struct Main {
            static func main() async throws {
                let items = (0..<6000).map { Item(id: $0, name: "Item \\($0) \\(String($0 * 7919, radix: 36))", tags: ["t\\($0 % 17)"]) }
                let decoded = try JSONDecoder().decode([Item].self, from: try JSONEncoder().encode(items))
                let index = buildIndex(decoded)
                Thread { warmCache() }.start()
                waitUntilHeld()
                try await Task.sleep(nanoseconds: 5_000_000)
                reading.signal()
                print("ready \\(index.count) \\(readSettings() > 0)")
            }
        }
        """

    /// A Swift program whose launch decodes a catalog with Codable.
    static let codable = """
        import Foundation
        struct Price: Codable { var amount: Double; var currency: String }
        struct Tag: Codable { var name: String; var weight: Int }
        struct Item: Codable { var id: Int; var title: String; var price: Price; var tags: [Tag]; var attributes: [String: String]; var related: [Int]? }
        struct Catalog: Codable { var items: [Item]; var version: Int }
        @inline(never) func loadCatalog() -> Int {
            let items = (0..<4000).map { i in
                Item(id: i, title: "Item \\(i)", price: Price(amount: Double(i) * 1.5, currency: "EUR"),
                     tags: (0..<4).map { Tag(name: "t\\($0)", weight: $0) }, attributes: ["a": "\\(i)"], related: [i])
            }
            let data = try! JSONEncoder().encode(Catalog(items: items, version: 1))
            var total = 0
            for _ in 0..<4 { total += try! JSONDecoder().decode(Catalog.self, from: data).items.count }
            return total
        }
        print("loaded \\(loadCatalog())")
        """

    /// The `swiftc` on the PATH.
    static func swiftc() throws -> String {
        let found = try runToEnd("/bin/sh", ["-c", "command -v swiftc"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        try #require(!found.isEmpty, "no swiftc on the PATH")
        return found
    }

    /// The folder of the toolchain's Swift libraries: `lib/swift/linux` beside `swiftc`'s `bin`.
    static func swiftLibraries() throws -> String {
        let resolved = URL(fileURLWithPath: try swiftc()).resolvingSymlinksInPath()
        return resolved.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("lib/swift/linux").path
    }
}

@Suite("Insights of real programs", .serialized, .processState(timeLimit: .seconds(300)))
struct InsightProgramTests {
    /// `liftoff profile` of `command`, then `liftoff explain --format json` of its profile: the
    /// insights' ids and the JSON.
    func explain(
        _ command: [String], extra: [String] = [], profileOptions: [String] = []
    ) throws -> (ids: [String], insights: [[String: Any]], folder: URL) {
        let out = temporaryFolder()
        let profiled = try BuiltTool.find().run(["profile", "--out", out.path] + profileOptions + ["--"] + command)
        try #require(profiled.status == 0, "liftoff profile failed: \(profiled.stderr)")
        let explained = try BuiltTool.find().run(["explain", out.path, "--format", "json"] + extra)
        try #require(explained.status == 0, "liftoff explain failed: \(explained.stderr)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(explained.stdout.utf8)) as? [String: Any])
        #expect(document["schema"] as? String == "liftoff.insights/1")
        let insights = try #require(document["insights"] as? [[String: Any]])
        return (insights.compactMap { $0["id"] as? String }, insights, out)
    }

    func insight(_ id: String, in insights: [[String: Any]]) throws -> [String: Any] {
        try #require(insights.first { $0["id"] as? String == id }, "no \(id) among \(insights.compactMap { $0["id"] })")
    }

    @Test("a sleep on the main thread: main-thread-sleep, its cost, and the program's function that slept")
    func sleep() throws {
        let program = try AnyPrograms.build("insight-sleep", InsightPrograms.sleep, ["-O1", "-g"])
        let (ids, insights, folder) = try explain([program])
        #expect(ids.first == "main-thread-sleep", "\(ids)")
        let found = try insight("main-thread-sleep", in: insights)
        let cost = try #require(found["costMs"] as? Double)
        #expect(cost >= 150 && cost <= 260, "the 200 ms sleep costs \(cost) ms")
        let stacks = try #require(found["stacks"] as? [[String: Any]])
        #expect((stacks.first?["programFrame"] as? String)?.hasPrefix("load_config") == true)
        #expect((found["finding"] as? String)?.contains("load_config") == true)
        // The HTML report carries it, with a link into the timeline.
        let html = try String(contentsOf: folder.appendingPathComponent("index.html"), encoding: .utf8)
        #expect(html.contains("\"id\":\"main-thread-sleep\""))
        // The terminal summary says it first.
        let summary = try String(contentsOf: folder.appendingPathComponent("summary.md"), encoding: .utf8)
        #expect(summary.contains("main-thread-sleep") && summary.contains("(index.html#t="))
    }

    @Test("a lock a computing worker holds: main-thread-lock-wait names the waiting function and what the holder ran")
    func lockWait() throws {
        let program = try AnyPrograms.build("insight-lock", InsightPrograms.lock, ["-O1", "-g", "-lpthread"])
        let (ids, insights, _) = try explain([program])
        #expect(ids.contains("main-thread-lock-wait"), "\(ids)")
        let found = try insight("main-thread-lock-wait", in: insights)
        #expect((found["finding"] as? String)?.contains("read_table") == true, "\(found["finding"] ?? "")")
        let notes = try #require(found["notes"] as? [String])
        #expect(notes.contains { $0.contains("compute_table") }, "the holder's work is named: \(notes)")
        // The holder's computing is on the path to ready: launch-cpu names it.
        let cpu = try insight("launch-cpu", in: insights)
        #expect((cpu["finding"] as? String)?.contains("most of it in compute_table") == true, "\(cpu["finding"] ?? "")")
    }

    @Test("a lock chain across three threads: the path reaches the thread the lock's holder waited for, and both waits are named")
    func lockChain() throws {
        let program = try AnyPrograms.build("insight-chain", InsightPrograms.chain, ["-O1", "-g", "-lpthread"])
        let (ids, insights, folder) = try explain([program])
        let summary = try BuiltTool.find().run(["report", folder.appendingPathComponent("profile.json").path, "--format", "folded", "--per-thread"]).stdout
        let cpu = try insight("launch-cpu", in: insights)
        let notes = try #require(cpu["notes"] as? [String])
        #expect(notes.contains { $0.hasPrefix("decode_catalogue") }, "\(notes)\n\(summary)")
        #expect(notes.contains { $0.hasPrefix("fill_cache") }, "\(notes)\n\(summary)")
        #expect(
            notes.contains { $0.hasPrefix("The path to ready went through") && $0.filter { $0 == "," }.count >= 2 },
            "three threads on the path: \(notes)")
        #expect(ids.contains("main-thread-lock-wait"), "\(ids)")
        let task = try insight("main-thread-blocked-by-task", in: insights)
        #expect((task["finding"] as? String)?.contains("on the launch's path") == true, "\(task["finding"] ?? "")")
        #expect((task["finding"] as? String)?.contains("sem_wait") == true, "\(task["finding"] ?? "")")
    }

    @Test("work in a synchronous closure the Concurrency runtime calls keeps its awaiting callers: configure and main")
    func closureKeepsCallers() throws {
        let program = try AgentPrograms.build(
            "insight-task-local", source: InsightPrograms.taskLocalClosure, ext: "swift", compiler: try InsightPrograms.swiftc(),
            ["-Onone", "-g", "-parse-as-library"])
        let (_, _, folder) = try explain([program], profileOptions: ["--ready", "^ready"])
        let profile = try Profile.load(from: folder.appendingPathComponent("profile.json"))
        var inCompute = 0
        var withCallers = 0
        for row in 0..<profile.samples.count where profile.samples.state[row] == .running {
            let names = profile.frameIndices(ofStack: profile.samples.stack[row]).map { profile.frames[$0].name }
            guard names.contains(where: { $0.contains("compute()") }) else { continue }
            inCompute += profile.samples.ticks(row)
            if names.contains(where: { $0.contains("configure()") }) && names.contains(where: { $0.contains("Server.main()") }) {
                withCallers += profile.samples.ticks(row)
            }
        }
        #expect(inCompute >= 10, "compute was sampled: \(inCompute) ticks")
        #expect(Double(withCallers) >= 0.9 * Double(inCompute), "\(withCallers) of \(inCompute) samples in compute name configure and main")
    }

    @Test("a ready line written by another thread while main joins it: the path and its CPU are that thread's")
    func readyElsewhere() throws {
        let program = try AnyPrograms.build("insight-ready-elsewhere", InsightPrograms.readyElsewhere, ["-O1", "-g", "-lpthread"])
        let (ids, insights, _) = try explain([program], profileOptions: ["--ready", "^ready"])
        let cpu = try insight("launch-cpu", in: insights)
        #expect((cpu["finding"] as? String)?.contains("most of it in prepare_index") == true, "\(cpu["finding"] ?? "")")
        // main's join is a wait for that work, and says what ran meanwhile.
        let join = try insight("main-thread-blocked-by-task", in: insights)
        #expect((join["notes"] as? [String])?.contains { $0.contains("prepare_index") } == true, "\(ids) \(join)")
    }

    @Test("a ready line printed by a worker while main waits in read: the ready mark names the worker, and the path and its CPU are the worker's, not main's I/O")
    func readyFromWorker() throws {
        let program = try AnyPrograms.build("insight-ready-worker", InsightPrograms.readyFromWorker, ["-O1", "-g", "-lpthread"])
        let (ids, insights, folder) = try explain([program], profileOptions: ["--ready", "^listening on port"])
        let profile = try Profile.load(from: folder.appendingPathComponent("profile.json"))
        let ready = try #require(profile.marks.first { $0.name == .ready })
        let worker = try #require(profile.threads.first { !$0.isMain }, "\(profile.threads)")
        #expect(ready.threadID == worker.id, "the worker printed the line: \(ready) \(profile.threads)")
        let cpu = try insight("launch-cpu", in: insights)
        #expect((cpu["finding"] as? String)?.contains("build_catalog") == true, "\(cpu["finding"] ?? "")")
        #expect(!ids.contains("main-thread-io"), "main's read waited for the worker: \(ids)")
        let waited = try insight("main-thread-blocked-by-task", in: insights)
        #expect((waited["notes"] as? [String])?.contains { $0.contains("build_catalog") } == true, "\(waited)")
        let explained = try BuiltTool.find().run(["explain", folder.path])
        #expect(explained.stdout.contains("Path to ready: main ("), "\(explained.stdout)")
    }

    @Test("twice as many busy threads as cores: oversubscribed")
    func oversubscribed() throws {
        let program = try AnyPrograms.build("insight-busy", InsightPrograms.busy, ["-O1", "-g", "-lpthread"])
        let (ids, insights, _) = try explain([program])
        #expect(ids.contains("oversubscribed"), "\(ids)")
        let found = try insight("oversubscribed", in: insights)
        #expect((found["finding"] as? String)?.contains("wanted a core") == true)
    }

    @Test("a large dlopen in the launch: library-loading, from the program's function that loaded")
    func libraryLoading() throws {
        let program = try AnyPrograms.build("insight-plugins", InsightPrograms.plugins, ["-O1", "-g", "-ldl"])
        let (ids, insights, _) = try explain([program, try InsightPrograms.swiftLibraries()])
        #expect(ids.contains("library-loading"), "\(ids)")
        let found = try insight("library-loading", in: insights)
        #expect((found["finding"] as? String)?.contains("load_plugins") == true, "\(found["finding"] ?? "")")
    }

    @Test("a Swift launch that decodes JSON with Codable: swift-runtime, called from the decoded types")
    func swiftRuntime() throws {
        let program = try AgentPrograms.build(
            "insight-codable", source: InsightPrograms.codable, ext: "swift", compiler: try InsightPrograms.swiftc(), ["-O", "-g"])
        let (ids, insights, _) = try explain([program])
        #expect(ids.contains("swift-runtime"), "\(ids)")
        let found = try insight("swift-runtime", in: insights)
        let notes = try #require(found["notes"] as? [String])
        #expect(notes.contains { $0.hasPrefix("From: ") && $0.contains("init(from:)") }, "\(notes)")
    }

    @Test("an async CLI that indexes, then waits on a pool thread for a worker's lock: launch-cpu names buildIndex, the lock wait names its caller, and the launch is explained")
    func asyncCatalog() throws {
        let program = try AgentPrograms.build(
            "insight-async-catalog", source: InsightPrograms.asyncCatalog, ext: "swift", compiler: try InsightPrograms.swiftc(),
            ["-Onone", "-g", "-parse-as-library"])
        let (ids, insights, folder) = try explain([program], profileOptions: ["--ready", "^ready"])
        let cpu = try insight("launch-cpu", in: insights)
        let finding = cpu["finding"] as? String ?? ""
        #expect(finding.contains("buildIndex") || finding.contains("warmCache"), "\(finding)")
        let notes = (cpu["notes"] as? [String] ?? []).joined(separator: "\n")
        #expect(notes.contains("buildIndex") && notes.contains("warmCache"), "both held the path: \(notes)")
        let lock = try insight("main-thread-lock-wait", in: insights)
        #expect((lock["finding"] as? String)?.contains("readSettings") == true, "\(ids) \(lock)")
        let explained = try BuiltTool.find().run(["explain", folder.path, "--format", "json"]).stdout
        let json = try #require(try JSONSerialization.jsonObject(with: Data(explained.utf8)) as? [String: Any])
        let coverage = try #require(json["coverage"] as? [String: Any])
        #expect((coverage["share"] as? Double ?? 0) >= 0.8, "\(coverage)")
    }

    @Test("explain on a folder liftoff record wrote explains its median run and says so")
    func explainRecording() throws {
        let program = try AnyPrograms.build("insight-cpu", InsightPrograms.busyOneThread, ["-O1", "-g"])
        let out = temporaryFolder()
        let recorded = try BuiltTool.find().run(["record", "--runs", "3", "--warmup", "0", "--quiet", "--out", out.path, "--", program])
        try #require(recorded.status == 0, "\(recorded.stdout)\(recorded.stderr)")
        let explained = try BuiltTool.find().run(["explain", out.path])
        #expect(explained.status == 0, "\(explained.stderr)")
        #expect(explained.stderr.hasPrefix("Explaining the median of 3 runs ("), "\(explained.stderr)")
        #expect(explained.stdout.contains("parse_all"), "\(explained.stdout)")
    }

    @Test("a launch that only computes on one thread: launch-cpu names the function, no wait is blamed, and check passes the wait budgets")
    func cpuBound() throws {
        let program = try AnyPrograms.build("insight-cpu", InsightPrograms.busyOneThread, ["-O1", "-g"])
        let (ids, insights, folder) = try explain([program])
        #expect(!ids.contains { $0.hasPrefix("main-thread-") || $0 == "oversubscribed" }, "a CPU-bound launch waits for nothing: \(ids)")
        let cpu = try insight("launch-cpu", in: insights)
        #expect((cpu["finding"] as? String)?.contains("most of it in parse_all") == true, "\(cpu["finding"] ?? "")")
        // The insights account for the launch: the answer covers at least 80 % of it.
        let explained = try BuiltTool.find().run(["explain", folder.path, "--format", "json"]).stdout
        let json = try #require(try JSONSerialization.jsonObject(with: Data(explained.utf8)) as? [String: Any])
        let coverage = try #require(json["coverage"] as? [String: Any])
        #expect((coverage["share"] as? Double ?? 0) >= 0.8, "\(coverage)")
        let check = try BuiltTool.find().run(
            ["check", folder.path, "--insight", "main-thread-sleep=0ms", "--insight", "oversubscribed=0ms"])
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
    }

    @Test("check --insight fails a launch whose insight costs more than its budget, naming the function")
    func checkGates() throws {
        let program = try AnyPrograms.build("insight-sleep", InsightPrograms.sleep, ["-O1", "-g"])
        let (_, _, folder) = try explain([program])
        let check = try BuiltTool.find().run(["check", folder.path, "--insight", "main-thread-sleep=50ms"])
        let summary = try BuiltTool.find().run(["report", folder.appendingPathComponent("profile.json").path, "--format", "folded", "--per-thread"]).stdout
        #expect(check.status == 2, "\(check.stdout)\nThe profile:\n\(summary)")
        #expect(check.stdout.contains("over its budget of 50 ms"))
        #expect(check.stdout.contains("load_config"))
        let bad = try BuiltTool.find().run(["check", folder.path, "--insight", "main-thread-nap=5ms"])
        #expect(bad.status != 0 && bad.stderr.contains("'main-thread-nap' is not an insight"))
    }
}
