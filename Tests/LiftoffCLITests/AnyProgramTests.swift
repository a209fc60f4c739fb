import Foundation
import LiftoffProfile
import LiftoffTestSupport
import Testing

/// Programs as users run them: through a shim, a shell that starts several, stripped, with a
/// profiler of their own, crashing.
enum AnyPrograms {
    /// Burns `argv[1]` iterations in `burn_hot`, then prints them with the CPU and wall time they
    /// took, from its own clocks (``burnedWork(_:)`` reads them back).
    static let burn = """
        #include <stdio.h>
        #include <stdlib.h>
        #include <time.h>
        static volatile double sink;
        __attribute__((noinline)) static void burn_hot(long n) { for (long i = 0; i < n; i++) sink += i * 0.5; }
        static unsigned long long ns(clockid_t clock) { struct timespec t; clock_gettime(clock, &t); return t.tv_sec * 1000000000ull + t.tv_nsec; }
        int main(int argc, char **argv) {
            unsigned long long wall = ns(CLOCK_MONOTONIC), cpu = ns(CLOCK_THREAD_CPUTIME_ID);
            burn_hot(argc > 1 ? atol(argv[1]) : 50000000);
            cpu = ns(CLOCK_THREAD_CPUTIME_ID) - cpu; wall = ns(CLOCK_MONOTONIC) - wall;
            printf("burned %s\\nwork burn_hot cpu_ns=%llu wall_ns=%llu\\n", argc > 1 ? argv[1] : "50000000", cpu, wall);
            return 0;
        }
        """

    /// The work each `burn` reported, in the order it printed.
    static func burnedWork(_ output: String) -> [SampledWork] {
        ReportedWork.stretches(output).filter { $0.name == "burn_hot" }.map(\.work)
    }

    /// A program with its own profiler: ITIMER_PROF ticks counted by its SIGPROF handler.
    static let ownProfiler = SampledWork.cReporter + """
        #include <signal.h>
        #include <string.h>
        #include <sys/time.h>
        static volatile long ticks;
        static volatile double sink;
        static void on_prof(int sig) { (void)sig; ticks++; }
        __attribute__((noinline)) static void work(long n) { for (long i = 0; i < n; i++) sink += i * 0.5; }
        int main(void) {
            struct sigaction action; memset(&action, 0, sizeof action);
            action.sa_handler = on_prof; sigemptyset(&action.sa_mask); action.sa_flags = SA_RESTART;
            sigaction(SIGPROF, &action, NULL);
            struct itimerval timer = {{0, 1000}, {0, 1000}};
            setitimer(ITIMER_PROF, &timer, NULL);
            struct timespec t0, t1; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
            work_clock start = work_start();
            work(120000000);
            work_report("work", start);
            clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
            struct sigaction now; sigaction(SIGPROF, NULL, &now);
            printf("ticks %ld cpu_us %ld mine %d\\n", ticks,
                   (long)((t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000), now.sa_handler == on_prof);
            return 0;
        }
        """

    /// Spins in `load_config`, then writes through a null pointer.
    static let crash = SampledWork.cReporter + """
        static volatile double sink;
        __attribute__((noinline)) static void load_config(long n) {
            work_clock start = work_start();
            for (long i = 0; i < n; i++) sink += i * 0.5;
            work_report("load_config", start);
        }
        int main(void) { load_config(60000000); printf("about to crash\\n"); fflush(stdout); *(volatile int *)0 = 1; return 0; }
        """

    /// Forks a child that runs `child_work` and ends with `_exit`, without exec.
    static let forker = SampledWork.cReporter + """
        #include <sys/wait.h>
        #include <unistd.h>
        static volatile double sink;
        __attribute__((noinline)) static void child_work(long n) {
            work_clock start = work_start();
            for (long i = 0; i < n; i++) sink += i * 0.5;
            work_report("child_work", start);
        }
        __attribute__((noinline)) static void parent_work(long n) {
            work_clock start = work_start();
            for (long i = 0; i < n; i++) sink += i * 0.25;
            work_report("parent_work", start);
        }
        int main(void) {
            pid_t pid = fork();
            if (pid == 0) { child_work(80000000); _exit(0); }
            parent_work(30000000);
            int status; waitpid(pid, &status, 0);
            printf("done\\n");
            return 0;
        }
        """

    /// Replaces itself with the program in its first argument through `execl`, a list of arguments.
    static let execList = """
        #include <stdio.h>
        #include <unistd.h>
        int main(int argc, char **argv) { if (argc < 2) return 2; execl(argv[1], "burn", "40000000", (char *)NULL); perror("execl"); return 1; }
        """

    /// Starts the program in its first argument with posix_spawn (as Foundation's Process does) and waits.
    static let spawner = """
        #include <spawn.h>
        #include <stdio.h>
        #include <sys/wait.h>
        extern char **environ;
        int main(int argc, char **argv) {
            if (argc < 2) return 2;
            char *args[] = {argv[1], "40000000", NULL};
            pid_t pid;
            if (posix_spawn(&pid, argv[1], NULL, NULL, args, environ) != 0) return 1;
            int status; waitpid(pid, &status, 0);
            printf("spawned\\n");
            return 0;
        }
        """

    /// A static initializer that spins before `main`.
    static let slowConstructor = SampledWork.cReporter + """
        static volatile double sink;
        __attribute__((constructor)) static void load_plugins(void) {
            work_clock start = work_start();
            for (long i = 0; i < 40000000; i++) sink += i * 0.5;
            work_report("load_plugins", start);
        }
        int main(void) { printf("main\\n"); return 0; }
        """

    static func build(_ name: String, _ source: String, _ arguments: [String] = ["-O1"]) throws -> String {
        try AgentPrograms.build(name, source: source, ext: "c", compiler: "/usr/bin/cc", arguments)
    }

    /// A copy of `program` stripped of every symbol (`strip --strip-all`).
    static func stripped(_ program: String, as name: String) throws -> String {
        let copy = AgentPrograms.folder.appendingPathComponent(name).path
        if FileManager.default.isExecutableFile(atPath: copy) { return copy }
        let result = try runToEnd("/usr/bin/strip", ["--strip-all", program, "-o", copy])
        try #require(result.status == 0, "strip failed: \(result.output)")
        return copy
    }

    /// The link-time address of `symbol` in `program`, from `nm`.
    static func address(of symbol: String, in program: String) throws -> UInt64? {
        let listing = try runToEnd("/usr/bin/nm", [program]).output
        for line in listing.split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.count == 3, fields[2] == symbol { return UInt64(fields[0], radix: 16) }
        }
        return nil
    }
}

@Suite("Any program, as users run it", .serialized, .timeLimit(.minutes(5)))
struct AnyProgramTests {
    func profile(
        _ command: [String], extra: [String] = [], environment: [String: String] = [:]
    ) throws -> (status: Int32, stdout: String, profile: Profile?, log: String) {
        let out = temporaryFolder()
        let result = try BuiltTool.find().run(["profile", "--out", out.path] + extra + ["--"] + command, environment: environment)
        // The program's output, standard error too.
        let log = (try? String(contentsOf: out.appendingPathComponent("output.log"), encoding: .utf8)) ?? ""
        return (result.status, result.stdout, try? Profile.load(from: out.appendingPathComponent("profile.json")), log)
    }

    /// Expects `running` ticks in `name` to agree with the work the program reported under that
    /// name (``ReportedWork``) in its output.
    func expectReported(
        _ name: String, running samples: Int, in result: (status: Int32, stdout: String, profile: Profile?, log: String),
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let profile = try #require(result.profile, sourceLocation: sourceLocation)
        let work = try #require(
            ReportedWork.named(name, in: result.log), "\(name) reports its work: \(result.log)", sourceLocation: sourceLocation)
        work.expectAgreement(withRunning: samples, intervalNs: profile.samplingIntervalNs, of: name, sourceLocation: sourceLocation)
    }

    /// Expects `running` samples in `burn_hot` to agree with the one `burn` the output reports.
    func expectBurned(
        _ result: (status: Int32, stdout: String, profile: Profile?, log: String), running samples: Int,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let profile = try #require(result.profile, sourceLocation: sourceLocation)
        let work = try #require(AnyPrograms.burnedWork(result.stdout).first, "burn reports its work: \(result.stdout)", sourceLocation: sourceLocation)
        work.expectAgreement(withRunning: samples, intervalNs: profile.samplingIntervalNs, of: "burn_hot", sourceLocation: sourceLocation)
    }

    func running(in profile: Profile, named name: String) -> [Int: Int] {
        var counts: [Int: Int] = [:]
        for sample in 0..<profile.samples.count where profile.samples.state[sample] == .running {
            let names = profile.frameIndices(ofStack: profile.samples.stack[sample]).map { profile.frames[$0].name }
            if names.contains(name) { counts[profile.samples.thread[sample], default: 0] += Int(profile.samples.weight[sample]) }
        }
        return counts
    }

    @Test("a shim script that execs the interpreter: one process, the shell then python3.11, its work named")
    func shim() throws {
        let shim = AgentPrograms.folder.appendingPathComponent("python-shim").path
        try "#!/bin/sh\nexec /usr/bin/python3.11 \"$@\"\n".write(toFile: shim, atomically: true, encoding: .utf8)
        chmod(shim, 0o755)
        let script = """
            import time
            cpu, wall = time.thread_time_ns(), time.monotonic_ns()
            print(sum(i * i for i in range(3000000)))
            print(f"work sum cpu_ns={time.thread_time_ns() - cpu} wall_ns={time.monotonic_ns() - wall}")
            """
        let result = try profile([shim, "-c", script])
        #expect(result.status == 0)
        #expect(result.stdout.contains("8999995500000500000"), "the program's output passes through")
        let profile = try #require(result.profile)
        let process = try #require(profile.processes.first)
        #expect(profile.processes.count == 1, "\(profile.processes.map(\.commandLine))")
        #expect(process.programs.map { $0.commandLine.first ?? "" } == ["/bin/sh", "/usr/bin/python3.11"])
        #expect(process.commandLine.first == "/usr/bin/python3.11", "the last program names the process")
        let python = (0..<profile.samples.count).filter { sample in
            profile.samples.state[sample] == .running
                && profile.frameIndices(ofStack: profile.samples.stack[sample]).contains { profile.frames[$0].object == "python3.11" }
        }.reduce(0) { $0 + Int(profile.samples.weight[$1]) }
        // python3.11's frames run its start too: at least the sum's work, within the sampling's tolerance.
        let sum = try #require(ReportedWork.named("sum", in: result.log), "the script reports its work: \(result.log)")
        let interval = profile.samplingIntervalNs
        #expect(
            Double(python) >= sum.expectedRunning(intervalNs: interval) - sum.runningTolerance(intervalNs: interval),
            "python3.11's own work was sampled after the exec: \(python) running ticks for \(sum)")
        #expect(!result.stdout.contains("No first frame") && !result.stdout.contains("States:"), "no app life cycle words")
    }

    @Test("sh -c with two children: three processes, each child's hot function on its own main thread; --no-children keeps the shell")
    func shellWithTwoChildren() throws {
        let burn = try AnyPrograms.build("burn", AnyPrograms.burn)
        let command = ["/bin/sh", "-c", "\(burn) 40000000; \(burn) 80000000"]
        let result = try profile(command)
        #expect(result.status == 0)
        #expect(result.stdout.contains("burned 40000000") && result.stdout.contains("burned 80000000"))
        let profile = try #require(result.profile)
        #expect(profile.processes.count == 3, "\(profile.processes.map(\.commandLine))")
        let shell = try #require(profile.processes.first)
        let children = profile.processes.dropFirst()
        #expect(children.allSatisfy { $0.parentID == shell.id && $0.commandLine.first == burn })
        let hot = running(in: profile, named: "burn_hot")
        let burned = AnyPrograms.burnedWork(result.stdout)
        try #require(burned.count == 2, "each child reports its work: \(result.stdout)")
        for (child, work) in zip(children, burned) {
            let thread = try #require(profile.thread(withID: child.id))
            #expect(thread.isMain && thread.processID == child.id && thread.name.hasPrefix("burn · "))
            let samples = Double(hot[child.id, default: 0])
            #expect(work.agrees(withRunning: samples, intervalNs: profile.samplingIntervalNs), "each child's own samples: \(hot), for \(work)")
            #expect(child.startNs >= shell.startNs && child.endNs <= shell.endNs + 5_000_000)
        }
        let children0 = children.map(\.id)
        #expect(hot[children0[0], default: 0] < hot[children0[1], default: 0], "the second child burns twice as long")

        let alone = try #require(try self.profile(command, extra: ["--no-children"]).profile)
        #expect(alone.processes.count == 1 && running(in: alone, named: "burn_hot").isEmpty)
    }

    @Test("execl, with its arguments as a list, is followed like execve: one process, two programs")
    func execList() throws {
        let burn = try AnyPrograms.build("burn", AnyPrograms.burn)
        let launcher = try AnyPrograms.build("exec-list", AnyPrograms.execList)
        let result = try profile([launcher, burn])
        #expect(result.stdout.contains("burned 40000000"))
        let profile = try #require(result.profile)
        #expect(profile.processes.count == 1)
        #expect(profile.processes.first?.programs.map { $0.commandLine.first ?? "" } == [launcher, "burn"])
        try expectBurned(result, running: running(in: profile, named: "burn_hot").values.reduce(0, +))
    }

    @Test("a child started with posix_spawn (Foundation's Process) is a process of the profile")
    func spawnedChild() throws {
        let burn = try AnyPrograms.build("burn", AnyPrograms.burn)
        let spawner = try AnyPrograms.build("spawner", AnyPrograms.spawner)
        let result = try self.profile([spawner, burn])
        let profile = try #require(result.profile)
        #expect(profile.processes.count == 2, "\(profile.processes.map(\.commandLine))")
        let child = try #require(profile.processes.last)
        #expect(child.parentID == profile.processes.first?.id && child.commandLine.first == burn)
        try expectBurned(result, running: running(in: profile, named: "burn_hot")[child.id, default: 0])
    }

    @Test("a child forked without exec is its own process, its work on its own main thread")
    func forkWithoutExec() throws {
        let program = try AnyPrograms.build("forker", AnyPrograms.forker)
        let result = try self.profile([program])
        let profile = try #require(result.profile)
        #expect(profile.processes.count == 2, "\(profile.processes.map(\.id))")
        let parent = try #require(profile.processes.first), child = try #require(profile.processes.last)
        #expect(child.parentID == parent.id)
        let interval = profile.samplingIntervalNs
        for (function, owner, other) in [("child_work", child.id, parent.id), ("parent_work", parent.id, child.id)] {
            let counts = running(in: profile, named: function)
            let work = try #require(ReportedWork.named(function, in: result.log), "\(function) reports its work: \(result.log)")
            #expect(
                work.agrees(withRunning: Double(counts[owner, default: 0]), intervalNs: interval) && counts[other, default: 0] == 0,
                "\(function): \(counts) running ticks by process for \(work), \(work.expectedRunning(intervalNs: interval)) ± \(work.runningTolerance(intervalNs: interval))")
        }
    }

    @Test("Python's multiprocessing pool: each forked worker is recorded whole, though the pool stops it with SIGTERM")
    func pythonPool() throws {
        let python = "/usr/bin/python3.11"
        guard FileManager.default.isExecutableFile(atPath: python) else { return }
        let script = AgentPrograms.folder.appendingPathComponent("pool.py").path
        try """
            import multiprocessing as mp
            def work(n):
                return sum(i * i for i in range(n))
            if __name__ == "__main__":
                with mp.get_context("fork").Pool(2) as pool:
                    print(sum(pool.map(work, [300000] * 8)))
            """.write(toFile: script, atomically: true, encoding: .utf8)
        for _ in 0..<3 {
            let profile = try #require(try self.profile([python, script]).profile)
            #expect(profile.processes.count == 3, "the parent and both workers: \(profile.processes.map(\.id))")
            for worker in profile.processes.dropFirst() {
                let samples = (0..<profile.samples.count).filter { profile.samples.thread[$0] == worker.id }
                #expect(samples.count >= 5, "worker \(worker.id) was sampled: \(samples.count)")
            }
        }
    }

    @Test("a stripped binary's hot static function is named by its object and its start, never after another symbol; a debuginfod cache names it")
    func strippedBinary() throws {
        let burn = try AnyPrograms.build("burn", AnyPrograms.burn)
        let stripped = try AnyPrograms.stripped(burn, as: "burn-stripped")
        let start = try #require(try AnyPrograms.address(of: "burn_hot", in: burn))
        let result = try self.profile([stripped, "60000000"])
        let profile = try #require(result.profile)
        let expected = "burn-stripped+0x" + String(start, radix: 16)
        let atStart = running(in: profile, named: expected).values.reduce(0, +)
        #expect(atStart > 0, "\(profile.frames.map(\.name))")
        try expectBurned(result, running: atStart)
        #expect(!profile.frames.contains { $0.name.contains("[after") })

        // A debuginfod client's cache that holds its debug file (by build-id) gives the real name.
        let notes = try runToEnd("/usr/bin/readelf", ["-n", stripped]).output
        let buildID = try #require(notes.split(separator: "\n").first { $0.contains("Build ID:") }?.split(separator: " ").last)
        let cache = temporaryFolder()
        try FileManager.default.createDirectory(at: cache.appendingPathComponent(String(buildID)), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: burn, toPath: cache.appendingPathComponent("\(buildID)/debuginfo").path)
        let withCache = try self.profile([stripped, "60000000"], environment: ["DEBUGINFOD_CACHE_PATH": cache.path])
        let named = try #require(withCache.profile)
        let hot = running(in: named, named: "burn_hot").values.reduce(0, +)
        #expect(hot > 0, "\(named.frames.map(\.name))")
        try expectBurned(withCache, running: hot)
    }

    @Test("MiniDebugInfo: a stripped binary with a .gnu_debugdata section names its static functions")
    func miniDebugInfo() throws {
        let burn = try AnyPrograms.build("burn", AnyPrograms.burn)
        let folder = AgentPrograms.folder
        let mini = folder.appendingPathComponent("burn.mini").path
        let program = folder.appendingPathComponent("burn-minidebug").path
        // As distributions make it: the local function symbols, xz-compressed, in a stripped copy.
        for (tool, arguments) in [
            ("/usr/bin/objcopy", ["--only-keep-debug", burn, mini + ".full"]),
            ("/usr/bin/objcopy", ["-S", "--keep-symbol=burn_hot", mini + ".full", mini]),
            ("/usr/bin/xz", ["-f", "-k", mini]),
            ("/usr/bin/strip", ["--strip-all", burn, "-o", program]),
            ("/usr/bin/objcopy", ["--add-section", ".gnu_debugdata=\(mini).xz", program]),
        ] {
            let result = try runToEnd(tool, arguments)
            try #require(result.status == 0, "\(tool) failed: \(result.output)")
        }
        let result = try self.profile([program, "60000000"])
        let profile = try #require(result.profile)
        try expectBurned(result, running: running(in: profile, named: "burn_hot").values.reduce(0, +))
    }

    @Test("Debian's python3.11, stripped: its unnamed functions are python3.11+0x…, never another symbol's name")
    func debianPython() throws {
        let python = "/usr/bin/python3.11"
        guard FileManager.default.isExecutableFile(atPath: python) else { return }
        let profile = try #require(
            try self.profile([python, "-c", "import json; json.loads(json.dumps([{'a': i} for i in range(200000)]))"]).profile)
        let own = profile.frames.filter { $0.object == "python3.11" }
        #expect(own.count > 20)
        #expect(!profile.frames.contains { $0.name.contains("[after") })
        let unnamed = own.filter { $0.name.hasPrefix("python3.11+0x") }
        #expect(!unnamed.isEmpty, "a stripped python3.11 has static functions without symbols")
        #expect(unnamed.allSatisfy { UInt64($0.name.dropFirst("python3.11+0x".count), radix: 16) != nil })
    }

    @Test("a program with its own ITIMER_PROF profiler keeps its handler and its tick rate, and is sampled")
    func ownProfiler() throws {
        let program = try AnyPrograms.build("own-profiler", AnyPrograms.ownProfiler)
        func rate(_ output: String) throws -> (ticksPerMs: Double, mine: Bool) {
            let line = try #require(output.split(separator: "\n").first { $0.hasPrefix("ticks ") })
            let fields = line.split(separator: " ")
            let ticks = try #require(Double(fields[1])), cpu = try #require(Double(fields[3]))
            return (ticks / (cpu / 1000), fields[5] == "1")
        }
        let bare = try rate(runToEnd(program, []).output)
        let result = try profile([program])
        let profiled = try rate(result.stdout)
        #expect(profiled.mine, "asking for the handler gives the program its own")
        #expect(profiled.ticksPerMs > 0 && profiled.ticksPerMs <= bare.ticksPerMs * 1.5 + 0.05, "no sampler ticks added: \(profiled) against \(bare)")
        let profile = try #require(result.profile)
        try expectReported("work", running: running(in: profile, named: "work").values.reduce(0, +), in: result)
        #expect(profile.processes.first?.programProfilerSignals ?? 0 > 0)
        #expect(result.stdout.contains("installed its own SIGPROF handler"))
    }

    @Test("main entry is when main starts: a program's static initializers are its pre-main phase")
    func mainEntry() throws {
        let program = try AnyPrograms.build("slow-constructor", AnyPrograms.slowConstructor)
        let result = try self.profile([program])
        let profile = try #require(result.profile)
        let initializers = running(in: profile, named: "load_plugins").values.reduce(0, +)
        try expectReported("load_plugins", running: initializers, in: result)
        let premain = profile.phases.mainEntryNs - profile.phases.preMainNs
        #expect(premain >= UInt64(initializers) * 1_000_000 / 2, "the initializers' \(initializers) ms fall before main: \(premain) ns")
    }

    @Test("a SIGSEGV during launch still yields a profile of what ran before it")
    func crashDuringLaunch() throws {
        let program = try AnyPrograms.build("crash", AnyPrograms.crash)
        let result = try profile([program])
        #expect(result.stdout.contains("signal 11 (SIGSEGV)"))
        #expect(result.status == 128 + SIGSEGV, "liftoff exits as a shell reports the crash")
        let profile = try #require(result.profile)
        try expectReported("load_config", running: running(in: profile, named: "load_config").values.reduce(0, +), in: result)
        #expect(profile.processes.first?.signal == 11)
    }
}
