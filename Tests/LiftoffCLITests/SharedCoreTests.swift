import Foundation
import LiftoffProfile
import LiftoffTestSupport
import Testing

/// Programs that share CPU 0 with a process that spins there.
enum SharedCorePrograms {
    /// Pins every thread of its process (the agent's sampler among them) to CPU 0, then runs
    /// `shared_work` there, beside whatever else runs on that core.
    static let pinned = SampledWork.cReporter + """
        #include <dirent.h>
        #include <sched.h>
        #include <stdlib.h>
        static volatile double sink;
        __attribute__((noinline)) static void shared_work(long n) {
            work_clock start = work_start();
            for (long i = 0; i < n; i++) sink += i * 0.5;
            work_report("shared_work", start);
        }
        int main(void) {
            cpu_set_t one; CPU_ZERO(&one); CPU_SET(0, &one);
            DIR *tasks = opendir("/proc/self/task");
            for (struct dirent *entry; tasks && (entry = readdir(tasks));)
                if (entry->d_name[0] != '.') sched_setaffinity(atoi(entry->d_name), sizeof one, &one);
            if (tasks) closedir(tasks);
            shared_work(60000000);
            return 0;
        }
        """

    /// Spins on CPU 0 until it is stopped.
    static let hog = """
        #define _GNU_SOURCE
        #include <sched.h>
        static volatile double sink;
        int main(void) {
            cpu_set_t one; CPU_ZERO(&one); CPU_SET(0, &one);
            sched_setaffinity(0, sizeof one, &one);
            for (;;) sink += 1;
        }
        """

    /// Sixty Swift tasks that each burn 1.5 ms of CPU four times, yielding in between: the pool's
    /// threads go from one task's job to another's every few ticks.
    static let hopper = """
        import Glibc
        func clock(_ id: clockid_t) -> UInt64 { var t = timespec(); clock_gettime(id, &t); return UInt64(t.tv_sec) * 1_000_000_000 + UInt64(t.tv_nsec) }
        @inline(never) func burn(_ us: UInt64) -> Int {
            let cpu = clock(CLOCK_THREAD_CPUTIME_ID); var x = 0
            while clock(CLOCK_THREAD_CPUTIME_ID) - cpu < us * 1_000 { x &+= 1 }
            return x
        }
        @inline(never) func hop() async -> Int {
            var total = 0
            for _ in 0..<4 { total &+= burn(1500); await Task.yield() }
            return total
        }
        @main struct Main {
            static func main() async {
                let sum = await withTaskGroup(of: Int.self) { group in
                    for _ in 0..<60 { group.addTask { await hop() } }
                    return await group.reduce(0, &+)
                }
                print(sum > 0)
            }
        }
        """
}

@Suite("Sharing a core", .serialized, .timeLimit(.minutes(5)))
struct SharedCoreTests {
    let programs = AnyProgramTests()

    /// Runs `body` while a process spins on CPU 0 (``AnyPrograms/hog``), and stops it after.
    func sharingCPU0<Result>(_ body: () throws -> Result) throws -> Result {
        let hog = Process()
        hog.executableURL = URL(fileURLWithPath: try AnyPrograms.build("hog", SharedCorePrograms.hog))
        try hog.run()
        defer {
            // SIGKILL: the test process's threads may block SIGTERM, and a child inherits that mask.
            kill(hog.processIdentifier, SIGKILL)
            hog.waitUntilExit()
        }
        return try body()
    }

    @Test("sharing a core with a busy process, a program's running ticks follow its CPU time")
    func sharedCore() throws {
        let program = try AnyPrograms.build("pinned", SharedCorePrograms.pinned, ["-O1", "-D_GNU_SOURCE"])
        let result = try sharingCPU0 { try programs.profile([program]) }
        let profile = try #require(result.profile)
        let work = try #require(ReportedWork.named("shared_work", in: result.log), "shared_work reports its work: \(result.log)")
        let interval = profile.samplingIntervalNs
        let running = Double(programs.running(in: profile, named: "shared_work").values.reduce(0, +))
        // The two share the core, so the work waits for it about half the time. Counted by the
        // time the thread's schedstat says it waited for a core, the running ticks are its CPU
        // time, within a tick at each end, the run-queue wait an answer may carry to the next (4
        // ticks), and the waits shorter than a quarter of a tick that are read only at a later
        // answer (5 %). Counted by the instants of the answers alone, a thread that the kernel
        // runs right after each of the sampler's ticks showed 3-17 % more.
        let expected = work.expectedRunning(intervalNs: interval)
        let tolerance = 2 + 4 + 0.05 * expected
        #expect(
            abs(running - expected) <= tolerance,
            "\(running) running ticks for \(work): \(expected) ± \(tolerance)")
        #expect(work.wallNs > work.cpuNs + work.cpuNs / 10, "the work shared its core: \(work)")
    }

    @Test("sharing a core with the sampler, a Swift task's running ticks lie within its jobs on their thread")
    func tasksHopOnSharedCore() throws {
        let program = try AgentPrograms.build(
            "hopper", source: SharedCorePrograms.hopper, ext: "swift", compiler: "/opt/swift/usr/bin/swiftc", ["-O", "-g", "-parse-as-library"])
        // The program's threads, the sampler's among them, and the hog share CPU 0: the sampler
        // falls behind, and a thread's answer may stand for ticks it spent in an earlier job.
        let result = try sharingCPU0 { try programs.profile(["/usr/bin/taskset", "-c", "0", program]) }
        #expect(result.status == 0, "\(result.stdout)")
        let profile = try #require(result.profile)
        let interval = profile.samplingIntervalNs
        // A job's start and end are read from the time-stamp counter, a tick's from the clock: the
        // two agree within microseconds.
        let slack: UInt64 = 50_000
        var runs: [UInt64: [Int: [ClosedRange<UInt64>]]] = [:]
        for task in profile.asyncTasks {
            for run in task.runs {
                let start = run.startNs > slack ? run.startNs - slack : 0
                runs[task.id, default: [:]][run.threadID, default: []].append(start...(max(run.startNs, run.endNs) + slack))
            }
        }
        var ticks = 0
        var outside: [String] = []
        let samples = profile.samples
        for row in 0..<samples.count where samples.state[row] == .running && samples.task[row] != 0 {
            let jobs = runs[samples.task[row]]?[samples.thread[row]] ?? []
            for tick in 0..<UInt64(samples.weight[row]) {
                ticks += 1
                let time = samples.timeNs[row] + tick * interval
                if !jobs.contains(where: { $0.contains(time) }) {
                    outside.append("task \(samples.task[row]) on \(samples.thread[row]) at \(time)")
                }
            }
        }
        #expect(ticks >= 100, "the tasks were sampled: \(ticks) running ticks")
        // `static func main() async` runs the main task's first job on the main thread with
        // swift_job_run, not through Dispatch: that run is recorded too.
        let main = try #require(profile.threads.first(where: \.isMain)?.id)
        #expect(profile.asyncTasks.contains { $0.runs.contains { $0.threadID == main } }, "the main task ran on the main thread")
        #expect(outside.isEmpty, "\(outside.count) of \(ticks) ticks outside the task's jobs on their thread: \(outside.prefix(5))")
    }
}
