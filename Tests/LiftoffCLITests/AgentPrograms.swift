import Foundation
import LiftoffTestSupport
import Testing

/// Programs without Liftoff, built for the agent's tests in a temporary folder.
enum AgentPrograms {
    static let folder = temporaryFolder()

    /// A C program with a worker thread: `hash_rows` on the worker, `parse_config` on main.
    static let twoThreads = SampledWork.cReporter + """
        #include <pthread.h>
        #include <stdint.h>
        // Each spins for `ms` of its own thread's CPU time, then reports the work.
        __attribute__((noinline)) uint64_t hash_rows(uint64_t ms) {
            work_clock start = work_start();
            uint64_t h = 1469598103934665603ull;
            while (work_ns(CLOCK_THREAD_CPUTIME_ID) - start.cpu < ms * 1000000)
                for (int i = 0; i < 1000; i++) h = (h ^ i) * 1099511628211ull;
            work_report("hash_rows", start);
            return h;
        }
        __attribute__((noinline)) uint64_t parse_config(uint64_t ms) {
            work_clock start = work_start();
            uint64_t h = 7;
            while (work_ns(CLOCK_THREAD_CPUTIME_ID) - start.cpu < ms * 1000000) for (int i = 0; i < 1000; i++) h = h * 31 + i;
            work_report("parse_config", start);
            return h;
        }
        static uint64_t rows;
        static void *worker(void *arg) { (void)arg; rows = hash_rows(120); return NULL; }
        int main(void) {
            pthread_t t;
            pthread_create(&t, NULL, worker, NULL);
            uint64_t config = parse_config(80);
            pthread_join(t, NULL);
            printf("config %llu rows %llu\\n", (unsigned long long)(config & 1), (unsigned long long)(rows & 1));
            fprintf(stderr, "done\\n");
            return 0;
        }
        """

    static let swiftProgram = """
        @inline(never) func collatzSteps(upTo limit: Int) -> Int {
            var total = 0
            for start in 1...limit {
                var value = start
                while value != 1 { value = value % 2 == 0 ? value / 2 : 3 * value + 1; total += 1 }
            }
            return total
        }
        print("steps", collatzSteps(upTo: 300_000))
        """

    /// An async program without Liftoff: an `async let` and two group children, whose partial
    /// functions after an await only call synchronous code (they set up no async frame).
    static let asyncProgram = """
        import Foundation
        func clock(_ id: clockid_t) -> UInt64 { var t = timespec(); clock_gettime(id, &t); return UInt64(t.tv_sec) * 1_000_000_000 + UInt64(t.tv_nsec) }
        // Spins for `ms` of the thread's CPU time and reports the work on standard error.
        @inline(never) func burn(_ ms: Int) -> Int {
            let cpu = clock(CLOCK_THREAD_CPUTIME_ID), wall = clock(CLOCK_MONOTONIC); var x = 0
            while clock(CLOCK_THREAD_CPUTIME_ID) - cpu < UInt64(ms) * 1_000_000 { x &+= 1 }
            let line = "work leaf cpu_ns=\\(clock(CLOCK_THREAD_CPUTIME_ID) - cpu) wall_ns=\\(clock(CLOCK_MONOTONIC) - wall)\\n"
            FileHandle.standardError.write(Data(line.utf8))
            return x
        }
        @inline(never) func leaf(_ ms: Int) async -> Int { await Task.yield(); return burn(ms) }
        @inline(never) func middle() async -> Int {
            async let a = leaf(40)
            let b = await withTaskGroup(of: Int.self) { group in
                for _ in 0..<2 { group.addTask { await leaf(20) } }
                return await group.reduce(0, &+)
            }
            return await a &+ b
        }
        @main struct Main { static func main() async { print(await middle() > 0) } }
        """

    /// Compresses until SIGTERM, which its own handler notes; then it cleans up, restores the
    /// default action and raises the signal again, as xz and many tools do.
    static let cleansUpOnTerm = SampledWork.cReporter + """
        #include <signal.h>
        #include <stdint.h>
        #include <unistd.h>
        static volatile sig_atomic_t stop_requested;
        static void on_term(int sig) { (void)sig; stop_requested = 1; }
        __attribute__((noinline)) uint64_t compress_block(void) {
            work_clock start = work_start();
            uint64_t h = 1;
            while (!stop_requested) for (int i = 0; i < 1000; i++) h = h * 31 + i;
            work_report("compress_block", start);
            return h;
        }
        int main(void) {
            struct sigaction action = {0};
            action.sa_handler = on_term;
            sigaction(SIGTERM, &action, NULL);
            printf("compressing\\n");
            fflush(stdout);
            // Opening its files: the agent's sampler thread gets its first tick in, even on a busy
            // machine (what a launch does before it is covered elsewhere).
            usleep(50000);
            uint64_t h = compress_block();
            fprintf(stderr, "removing the partial output %llu\\n", (unsigned long long)(h & 1));
            signal(SIGTERM, SIG_DFL);
            raise(SIGTERM);
            return 1;
        }
        """

    /// Dispatch workers count words, then `main` stops on a `fatalError` (SIGILL), with Swift's
    /// backtracer on as it is by default (built -Onone, its backtrace reaches `main`).
    static let crashingSwiftProgram = """
        import Dispatch
        @inline(never) func countWords(_ seed: Int) -> Int {
            var words: [String: Int] = [:]
            for j in 0..<150_000 { words["w\\(j % 5000)-\\(seed)", default: 0] += j }
            return words.count
        }
        let group = DispatchGroup()
        for seed in 0..<4 { DispatchQueue.global().async(group: group) { if countWords(seed) == 42 { print("42") } } }
        group.wait()
        @inline(never) func loadConfig() -> Never { fatalError("missing config file /etc/app/config.json") }
        loadConfig()
        """

    /// Compiles `source` with `compiler` and `arguments`; the executable's path.
    static func build(_ name: String, source: String, ext: String, compiler: String, _ arguments: [String]) throws -> String {
        let file = folder.appendingPathComponent("\(name).\(ext)")
        let output = folder.appendingPathComponent(name).path
        if FileManager.default.isExecutableFile(atPath: output) { return output }
        try source.write(to: file, atomically: true, encoding: .utf8)
        let result = try runToEnd(compiler, [file.path, "-o", output] + arguments)
        try #require(result.status == 0, "\(compiler) failed: \(result.output)")
        return output
    }

    /// A C program `name` (`main`) linked with the shared library `library` (`librarySource`),
    /// found by its run path; the program's path.
    static func programWithLibrary(_ name: String, main: String, library: String, librarySource: String) throws -> String {
        let built = try build(library, source: librarySource, ext: "c", compiler: "/usr/bin/cc", ["-shared", "-fPIC", "-O1"])
        let folder = URL(fileURLWithPath: built).deletingLastPathComponent().path
        return try build(name, source: main, ext: "c", compiler: "/usr/bin/cc", ["-O1", built, "-Wl,-rpath,\(folder)"])
    }
}
