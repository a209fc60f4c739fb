#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import Testing

/// Work as it measured itself on its own threads, and what a sampler ticking every `intervalNs`
/// may find of it: the truth a test compares sample counts with, in the same run.
///
/// A tick finds the work running when its thread is on a core at that moment. Over `wallNs` of
/// wall time the work had `wallNs / intervalNs` ticks, and each found it running with probability
/// `cpuNs / wallNs`: the expected running samples are `cpuNs / intervalNs`, exactly when the
/// machine is idle (the work never waits for a core) and on average when it is busy. The count
/// then varies from run to run, and the scheduler preempts in time slices of a few ticks, so
/// neighbouring ticks agree: the variance of the count is that of `ticks / slice` independent
/// slices, each worth `slice` ticks. Each stretch of work can also gain or lose a tick at each end.
public struct SampledWork: Sendable, CustomStringConvertible {
    /// CPU time the work's threads used, from their own CPU clocks.
    public var cpuNs: UInt64
    /// Wall time from the first stretch's start to each stretch's end, summed over stretches.
    public var wallNs: UInt64
    /// Separate stretches of work (a job of a task, a burst between two waits).
    public var stretches: Int

    /// The longest time slice the scheduler gives a thread before another that waits for its core
    /// (Linux's CFS: 3 ms of minimum granularity, up to 24 ms of latency split between the
    /// threads that share the core; with two threads per core, 12 ms).
    public static let sliceNs: UInt64 = 12_000_000

    /// Work that used `cpuNs` of CPU during `wallNs` of wall time, in `stretches` stretches.
    public init(cpuNs: UInt64 = 0, wallNs: UInt64 = 0, stretches: Int = 0) {
        self.cpuNs = cpuNs
        self.wallNs = wallNs
        self.stretches = stretches
    }

    /// Adds another stretch of work.
    public mutating func add(cpuNs: UInt64, wallNs: UInt64) {
        self.cpuNs &+= cpuNs
        self.wallNs &+= max(wallNs, cpuNs)
        stretches += 1
    }

    /// The two together.
    public static func + (left: SampledWork, right: SampledWork) -> SampledWork {
        SampledWork(cpuNs: left.cpuNs &+ right.cpuNs, wallNs: left.wallNs &+ right.wallNs, stretches: left.stretches + right.stretches)
    }

    /// Running samples the work should get: its CPU time in ticks.
    public func expectedRunning(intervalNs: UInt64) -> Double { Double(cpuNs) / Double(max(intervalNs, 1)) }

    /// How far a run's count of running samples may be from ``expectedRunning(intervalNs:)``:
    /// a tick at each end of each stretch, plus four standard deviations of the count of ticks
    /// that find the work running (zero when it never waited for a core).
    public func runningTolerance(intervalNs: UInt64) -> Double {
        let interval = Double(max(intervalNs, 1))
        let ticks = Double(max(wallNs, cpuNs)) / interval
        let running = wallNs == 0 ? 1 : min(1, Double(cpuNs) / Double(wallNs))
        let slice = max(1, Double(Self.sliceNs) / interval)
        let variance = ticks * slice * running * (1 - running)
        return 2 * Double(stretches) + 4 * variance.squareRoot()
    }

    /// Whether `samples` running samples agree with the work, within ``runningTolerance(intervalNs:)``.
    public func agrees(withRunning samples: Double, intervalNs: UInt64) -> Bool {
        abs(samples - expectedRunning(intervalNs: intervalNs)) <= runningTolerance(intervalNs: intervalNs)
    }

    public var description: String {
        "\(Double(cpuNs) / 1e6) ms of CPU in \(Double(wallNs) / 1e6) ms of wall time, \(stretches) stretches"
    }
}

extension SampledWork {
    /// Runs `body` on the calling thread and returns the work it did, measured by the thread's own
    /// CPU clock and the monotonic clock: one stretch.
    public static func measure(_ body: () throws -> Void) rethrows -> SampledWork {
        let wallStart = monotonicNs(CLOCK_MONOTONIC)
        let cpuStart = monotonicNs(CLOCK_THREAD_CPUTIME_ID)
        try body()
        let cpu = monotonicNs(CLOCK_THREAD_CPUTIME_ID) &- cpuStart
        let wall = monotonicNs(CLOCK_MONOTONIC) &- wallStart
        var work = SampledWork()
        work.add(cpuNs: cpu, wallNs: wall)
        return work
    }

    private static func monotonicNs(_ clock: clockid_t) -> UInt64 {
        var time = timespec()
        clock_gettime(clock, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }
}

/// Work measured on several threads or tasks, added up as it is done (``SampledWork``).
public final class MeasuredWork: Sendable {
    private let total = Mutex(SampledWork())

    /// No work yet.
    public init() {}

    /// Runs `body` on the calling thread and adds what it did (``SampledWork/measure(_:)``).
    public func measure(_ body: () throws -> Void) rethrows {
        let work = try SampledWork.measure(body)
        total.withLock { $0 = $0 + work }
    }

    /// The work so far.
    public var work: SampledWork { total.withLock { $0 } }
}

/// Work that a program outside the test process measured on its own threads and printed, one line
/// per stretch: `work <name> cpu_ns=<N> wall_ns=<M>` (``SampledWork/cReporter`` prints them).
public enum ReportedWork {
    /// Each line of `output` that reports work, in order: one stretch each.
    public static func stretches(_ output: String) -> [(name: String, work: SampledWork)] {
        output.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count == 4, fields[0] == "work", fields[2].hasPrefix("cpu_ns="), fields[3].hasPrefix("wall_ns="),
                let cpu = UInt64(fields[2].dropFirst("cpu_ns=".count)), let wall = UInt64(fields[3].dropFirst("wall_ns=".count))
            else { return nil }
            var work = SampledWork()
            work.add(cpuNs: cpu, wallNs: wall)
            return (String(fields[1]), work)
        }
    }

    /// The work each name reported in `output`, its stretches added up, in the order names first
    /// appear.
    public static func read(_ output: String) -> [(name: String, work: SampledWork)] {
        var order: [String] = []
        var works: [String: SampledWork] = [:]
        for (name, work) in stretches(output) {
            if works[name] == nil { order.append(name) }
            works[name] = (works[name] ?? SampledWork()) + work
        }
        return order.map { ($0, works[$0]!) }
    }

    /// The work `name` reported in `output`, or nil when it reported none.
    public static func named(_ name: String, in output: String) -> SampledWork? {
        read(output).first { $0.name == name }?.work
    }

    /// `output` without the lines that report work: what a program prints apart from its clocks.
    public static func withoutReports(_ output: String) -> String {
        output.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !($0.hasPrefix("work ") && $0.contains(" cpu_ns=")) }
            .joined(separator: "\n")
    }
}

extension SampledWork {
    /// C for a test program that reports its work (``ReportedWork``): `work_start()` reads the
    /// calling thread's clocks, and `work_report("name", start)` prints what it used since to
    /// standard error.
    public static let cReporter = """
        #include <stdio.h>
        #include <time.h>
        typedef struct { unsigned long long cpu, wall; } work_clock;
        static unsigned long long work_ns(clockid_t clock) {
            struct timespec t; clock_gettime(clock, &t); return t.tv_sec * 1000000000ull + t.tv_nsec;
        }
        static work_clock work_start(void) { work_clock c = {work_ns(CLOCK_THREAD_CPUTIME_ID), work_ns(CLOCK_MONOTONIC)}; return c; }
        static void work_report(const char *name, work_clock start) {
            fprintf(stderr, "work %s cpu_ns=%llu wall_ns=%llu\\n", name, work_ns(CLOCK_THREAD_CPUTIME_ID) - start.cpu,
                    work_ns(CLOCK_MONOTONIC) - start.wall);
        }

        """
}

extension SampledWork {
    /// Expects `samples` running ticks of `what` to agree with this work
    /// (``agrees(withRunning:intervalNs:)``), and says both when they do not.
    public func expectAgreement(
        withRunning samples: Int, intervalNs: UInt64, of what: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(
            agrees(withRunning: Double(samples), intervalNs: intervalNs),
            "\(samples) running ticks in \(what) for \(self): \(expectedRunning(intervalNs: intervalNs)) ± \(runningTolerance(intervalNs: intervalNs))",
            sourceLocation: sourceLocation)
    }
}
