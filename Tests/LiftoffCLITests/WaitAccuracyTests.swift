import Foundation
import LiftoffProfile
import LiftoffTestSupport
import Testing

/// Programs that wait in sequence, each wait timed by the program itself, for the wait-accuracy tests.
enum WaitPrograms {
    /// A C program whose main thread waits six times in a row with microseconds of CPU between:
    /// a sleep, a mutex a worker holds, a pipe read, `dlopen` behind a worker's `dlopen` (whose
    /// library's constructor sleeps under the loader's lock), `poll`, and a condition variable.
    /// Each wait's own duration goes to standard error as `function ms`.
    static let cWaits = """
        #include <dlfcn.h>
        #include <poll.h>
        #include <pthread.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <time.h>
        #include <unistd.h>
        static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
        static pthread_mutex_t guard = PTHREAD_MUTEX_INITIALIZER;
        static pthread_cond_t condition = PTHREAD_COND_INITIALIZER;
        static int ready, fds[2];
        static const char *slow_library, *other_library;
        static double now_ms(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }
        /* Called by the slow library's constructor, under the loader's lock. */
        void slow_library_started(void) { if (write(fds[1], "x", 1) != 1) abort(); }
        static void *worker(void *unused) {
            (void)unused;
            pthread_mutex_lock(&lock);
            usleep(300000);
            pthread_mutex_unlock(&lock);
            usleep(150000);
            if (!dlopen(slow_library, RTLD_NOW)) abort();
            usleep(200000);
            pthread_mutex_lock(&guard); ready = 1; pthread_cond_signal(&condition); pthread_mutex_unlock(&guard);
            return NULL;
        }
        __attribute__((noinline)) void wait_sleeping(void) { usleep(100000); }
        __attribute__((noinline)) void wait_for_lock(void) { pthread_mutex_lock(&lock); pthread_mutex_unlock(&lock); }
        __attribute__((noinline)) void wait_for_pipe(void) { char c; if (read(fds[0], &c, 1) != 1) abort(); }
        __attribute__((noinline)) void wait_for_loader(void) { if (!dlopen(other_library, RTLD_NOW)) abort(); }
        __attribute__((noinline)) void wait_polling(void) { poll(NULL, 0, 100); }
        __attribute__((noinline)) void wait_for_condition(void) {
            pthread_mutex_lock(&guard); while (!ready) pthread_cond_wait(&condition, &guard); pthread_mutex_unlock(&guard);
        }
        #define TIMED(f) do { double start = now_ms(); f(); fprintf(stderr, #f " %.3f\\n", now_ms() - start); } while (0)
        int main(int argc, char **argv) {
            if (argc < 3 || pipe(fds) != 0) return 2;
            slow_library = argv[1];
            other_library = argv[2];
            pthread_t thread;
            pthread_create(&thread, NULL, worker, NULL);
            usleep(2000);
            TIMED(wait_sleeping);
            TIMED(wait_for_lock);
            TIMED(wait_for_pipe);
            TIMED(wait_for_loader);
            TIMED(wait_polling);
            TIMED(wait_for_condition);
            pthread_join(thread, NULL);
            return 0;
        }
        """

    /// The library whose constructor tells the program it started, then sleeps under the loader's lock.
    static let slowLibrary = """
        #include <unistd.h>
        extern void slow_library_started(void);
        __attribute__((constructor)) static void start(void) { slow_library_started(); usleep(150000); }
        """

    static let otherLibrary = "int other_library_value(void) { return 42; }\n"

    /// A Swift program whose main thread sleeps, waits on a semaphore, for a task's `Task.sleep`, and
    /// behind a block on a serial queue; each wait's own duration goes to standard error.
    static let swiftWaits = """
        import Dispatch
        import Foundation

        func nowMs() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e6 }
        func timed(_ name: String, _ body: () -> Void) {
            let start = nowMs()
            body()
            FileHandle.standardError.write("\\(name) \\(nowMs() - start)\\n".data(using: .utf8)!)
        }
        let semaphore = DispatchSemaphore(value: 0)
        let queue = DispatchQueue(label: "serial")
        @inline(never) func waitSleeping() { Thread.sleep(forTimeInterval: 0.1) }
        @inline(never) func waitOnSemaphore() { semaphore.wait() }
        @inline(never) func waitForTask() {
            let done = DispatchSemaphore(value: 0)
            Task { try? await Task.sleep(nanoseconds: 120_000_000); done.signal() }
            done.wait()
        }
        @inline(never) func waitForQueue() { queue.sync {} }

        let worker = Thread {
            Thread.sleep(forTimeInterval: 0.25)
            semaphore.signal()
        }
        worker.start()
        timed("waitSleeping", waitSleeping)
        timed("waitOnSemaphore", waitOnSemaphore)
        timed("waitForTask", waitForTask)
        queue.async { Thread.sleep(forTimeInterval: 0.15) }
        timed("waitForQueue", waitForQueue)
        """

    /// Twice as many threads as cores spinning at once, each in `spin` for 400 ms of wall time.
    static let oversubscribed = """
        #include <pthread.h>
        #include <stdint.h>
        #include <time.h>
        #include <unistd.h>
        static double now_ms(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }
        static volatile uint64_t sink;
        __attribute__((noinline)) void spin(double ms) {
            double end = now_ms() + ms;
            uint64_t h = 1;
            while (now_ms() < end) for (int i = 0; i < 1000; i++) h = h * 31 + i;
            sink = h;
        }
        static void *worker(void *unused) { (void)unused; spin(400); return NULL; }
        int main(void) {
            long cores = sysconf(_SC_NPROCESSORS_ONLN);
            int count = (int)(cores < 1 ? 2 : cores * 2);
            pthread_t threads[64];
            if (count > 64) count = 64;
            for (int i = 0; i < count; i++) pthread_create(&threads[i], NULL, worker, NULL);
            for (int i = 0; i < count; i++) pthread_join(threads[i], NULL);
            return 0;
        }
        """

    /// 100 threads blocked on one condition for two seconds.
    static let idleThreads = """
        #include <pthread.h>
        #include <unistd.h>
        static pthread_mutex_t guard = PTHREAD_MUTEX_INITIALIZER;
        static pthread_cond_t condition = PTHREAD_COND_INITIALIZER;
        static int done;
        static void *idle(void *unused) {
            (void)unused;
            pthread_mutex_lock(&guard); while (!done) pthread_cond_wait(&condition, &guard); pthread_mutex_unlock(&guard);
            return NULL;
        }
        int main(void) {
            pthread_t threads[100];
            for (int i = 0; i < 100; i++) pthread_create(&threads[i], NULL, idle, NULL);
            sleep(2);
            pthread_mutex_lock(&guard); done = 1; pthread_cond_broadcast(&condition); pthread_mutex_unlock(&guard);
            for (int i = 0; i < 100; i++) pthread_join(threads[i], NULL);
            return 0;
        }
        """
}

@Suite("Waits named where they happen, for as long as they last", .serialized, .timeLimit(.minutes(5)))
struct WaitAccuracyTests {
    /// `liftoff profile` of `command` at 1 kHz: the profile and the program's output.
    func profile(_ command: [String]) throws -> (profile: Profile, log: String) {
        let out = temporaryFolder()
        let result = try BuiltTool.find().run(["profile", "--rate", "1000", "--out", out.path, "--"] + command)
        try #require(result.status == 0, "liftoff profile failed: \(result.stderr)")
        let profile = try Profile.load(from: out.appendingPathComponent("profile.json"))
        let log = (try? String(contentsOf: out.appendingPathComponent("output.log"), encoding: .utf8)) ?? ""
        return (profile, log)
    }

    /// The durations the program measured itself, by function, from its `name ms` lines.
    func measured(_ log: String) -> [String: Double] {
        var result: [String: Double] = [:]
        for line in log.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, let value = Double(parts[1]) { result[String(parts[0])] = value }
        }
        return result
    }

    /// Milliseconds the main thread spent waiting with `function` on its stack, from weighted rows.
    func waitingMs(in profile: Profile, function: String) -> Double {
        guard let main = profile.threads.first(where: \.isMain)?.id else { return 0 }
        var ticks = 0
        for row in 0..<profile.samples.count where profile.samples.thread[row] == main && profile.samples.state[row].isWaiting {
            let names = profile.frameIndices(ofStack: profile.samples.stack[row]).map { profile.frames[$0].name }
            if names.contains(where: { $0.contains(function) }) { ticks += profile.samples.ticks(row) }
        }
        return Double(ticks) * Double(profile.samplingIntervalNs) / 1e6
    }

    /// Checks every timed function's waiting time against the program's own, within 10 % (and 3 ms).
    func expectAccurate(_ profile: Profile, _ truth: [String: Double], functions: [String]) {
        for function in functions {
            guard let expected = truth[function] else {
                Issue.record("the program did not time \(function)")
                continue
            }
            let seen = waitingMs(in: profile, function: function)
            #expect(
                abs(seen - expected) <= max(expected * 0.1, 3),
                "\(function): \(seen) ms waiting in the profile, \(expected) ms measured by the program")
        }
    }

    @Test("a C program's six waits in a row: each function's waiting time within 10 % of its own, three runs")
    func cWaitsInSequence() throws {
        let slow = try AgentPrograms.build(
            "libslowinit.so", source: WaitPrograms.slowLibrary, ext: "c", compiler: "/usr/bin/cc", ["-shared", "-fPIC"])
        let other = try AgentPrograms.build(
            "libother.so", source: WaitPrograms.otherLibrary, ext: "c", compiler: "/usr/bin/cc", ["-shared", "-fPIC"])
        let program = try AgentPrograms.build(
            "waits", source: WaitPrograms.cWaits, ext: "c", compiler: "/usr/bin/cc",
            ["-O1", "-g", "-rdynamic", "-lpthread", "-ldl"])
        let functions = [
            "wait_sleeping", "wait_for_lock", "wait_for_pipe", "wait_for_loader", "wait_polling", "wait_for_condition",
        ]
        for _ in 0..<3 {
            let (profile, log) = try profile([program, slow, other])
            let truth = measured(log)
            // Sampling does not shorten the program's own sleeps (the handler resumes them).
            #expect((truth["wait_sleeping"] ?? 0) >= 99, "usleep(100 ms) took \(truth["wait_sleeping"] ?? 0) ms")
            #expect((truth["wait_polling"] ?? 0) >= 99, "poll(100 ms) took \(truth["wait_polling"] ?? 0) ms")
            expectAccurate(profile, truth, functions: functions)
        }
    }

    @Test("a Swift program's waits: Thread.sleep, DispatchSemaphore.wait, a Task.sleep awaited, a queue")
    func swiftWaitsInSequence() throws {
        let program = try AgentPrograms.build(
            "swift-waits", source: WaitPrograms.swiftWaits, ext: "swift", compiler: "/opt/swift/usr/bin/swiftc", ["-O", "-g"])
        for _ in 0..<3 {
            let (profile, log) = try profile([program])
            expectAccurate(
                profile, measured(log), functions: ["waitSleeping", "waitOnSemaphore", "waitForTask", "waitForQueue"])
        }
    }

    @Test("more busy threads than cores: time waiting for a core is recorded as runnable, where they spun")
    func oversubscribedThreadsAreRunnable() throws {
        let program = try AgentPrograms.build(
            "oversubscribed", source: WaitPrograms.oversubscribed, ext: "c", compiler: "/usr/bin/cc", ["-O1", "-g", "-lpthread"])
        let (profile, _) = try profile([program])
        var spinning = 0
        var runnable = 0
        for row in 0..<profile.samples.count {
            let names = profile.frameIndices(ofStack: profile.samples.stack[row]).map { profile.frames[$0].name }
            guard names.contains("spin") else { continue }
            spinning += profile.samples.ticks(row)
            if profile.samples.state[row] == .runnable { runnable += profile.samples.ticks(row) }
        }
        // Twice as many spinning threads as cores: each waits for a core about half the time.
        #expect(spinning > 0)
        #expect(runnable * 5 >= spinning, "\(runnable) runnable ticks of \(spinning) in spin")
    }

    @Test("100 idle threads: each wait is a few weighted rows, the file at least 20 times smaller than a row per tick")
    func idleThreadsStoreWaitsOnce() throws {
        let program = try AgentPrograms.build(
            "idle-threads", source: WaitPrograms.idleThreads, ext: "c", compiler: "/usr/bin/cc", ["-O1", "-g", "-lpthread"])
        let (profile, _) = try profile([program])
        let ticks = profile.samples.totalTicks
        #expect(profile.threads.count >= 101)
        #expect(ticks >= 100 * 1500, "\(ticks) ticks for 100 threads over 2 s")
        #expect(profile.samples.count * 20 <= ticks, "\(profile.samples.count) rows for \(ticks) ticks")
        // The same profile with a row per tick, as before weights.
        var expanded = profile
        expanded.samples = Profile.SampleTable()
        for row in 0..<profile.samples.count {
            for tick in 0..<profile.samples.ticks(row) {
                expanded.samples.append(
                    thread: profile.samples.thread[row],
                    timeNs: profile.samples.timeNs[row] + UInt64(tick) * profile.samplingIntervalNs,
                    stack: profile.samples.stack[row], state: profile.samples.state[row], task: profile.samples.task[row],
                    cpuNs: tick == 0 ? profile.samples.cpuNs[row] : 0)
            }
        }
        let bytes = try profile.jsonData().count
        let before = try expanded.jsonData().count
        #expect(bytes * 20 <= before, "\(bytes) bytes against \(before) with a row per tick")
    }
}
