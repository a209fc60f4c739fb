import CLiftoffSampler
import LiftoffProfile

/// What a process had spent at one moment, by the kernel's counts (`lo_process_counters`): read
/// before `main` by Liftoff's constructor (the agent's, or the sampler's in a program that links
/// Liftoff), and when an agent's recording is written.
public struct ProcessCounters: Sendable, Equatable {
    /// `CLOCK_MONOTONIC` nanoseconds when they were read.
    public var timeNs: UInt64
    /// The main thread's CPU time.
    public var cpuNs: UInt64
    /// The main thread's time runnable, waiting for a core.
    public var runqueueNs: UInt64
    /// Bytes read from storage.
    public var bytesRead: UInt64
    /// Page faults that read from storage, and those served from memory.
    public var majorFaults: UInt64, minorFaults: UInt64
    /// Whether the scheduler's counts were read (a kernel without schedstat has none).
    public var hasScheduler: Bool

    /// The eight words of `lo_process_counters`, as an agent's recording holds them.
    init?(words: ArraySlice<UInt64>) {
        guard words.count >= 8 else { return nil }
        let w = Array(words.prefix(8))
        guard w[0] > 0 else { return nil }
        self.init(
            timeNs: w[0], cpuNs: w[1], runqueueNs: w[2], bytesRead: w[3], majorFaults: w[5], minorFaults: w[6],
            hasScheduler: w[7] & UInt64(LO_COUNTERS_SCHEDULER) != 0)
    }

    init(
        timeNs: UInt64, cpuNs: UInt64, runqueueNs: UInt64, bytesRead: UInt64, majorFaults: UInt64, minorFaults: UInt64,
        hasScheduler: Bool
    ) {
        self.timeNs = timeNs
        self.cpuNs = cpuNs
        self.runqueueNs = runqueueNs
        self.bytesRead = bytesRead
        self.majorFaults = majorFaults
        self.minorFaults = minorFaults
        self.hasScheduler = hasScheduler
    }

    /// The counters this process's Liftoff constructor read before `main`.
    public static var beforeMain: ProcessCounters? {
        let raw = lo_premain_counters()!.pointee
        guard raw.time_ns > 0 else { return nil }
        return ProcessCounters(
            timeNs: raw.time_ns, cpuNs: raw.cpu_ns, runqueueNs: raw.runqueue_ns, bytesRead: raw.read_bytes,
            majorFaults: raw.major_faults, minorFaults: raw.minor_faults,
            hasScheduler: raw.valid & UInt64(LO_COUNTERS_SCHEDULER) != 0)
    }

    /// The time from `startNs` (an exec or a spawn) to these counters, split by what was spent
    /// since `earlier` (the counters at that start; nil: from nothing, for a new process). Nil
    /// without the scheduler's counts, or when the start is not before them.
    public func preMain(since startNs: UInt64, earlier: ProcessCounters? = nil, faultsAtLeast: Bool = false) -> Profile.PreMain? {
        guard hasScheduler, startNs > 0, startNs < timeNs, earlier?.hasScheduler ?? true else { return nil }
        func since(_ now: UInt64, _ then: UInt64?) -> UInt64 { now >= (then ?? 0) ? now - (then ?? 0) : 0 }
        return Profile.PreMain(
            durationNs: timeNs - startNs, cpuNs: since(cpuNs, earlier?.cpuNs),
            runqueueNs: since(runqueueNs, earlier?.runqueueNs), bytesRead: since(bytesRead, earlier?.bytesRead),
            majorFaults: since(majorFaults, earlier?.majorFaults), minorFaults: since(minorFaults, earlier?.minorFaults),
            faultsAtLeast: faultsAtLeast ? true : nil)
    }
}
