extension Profile {
    /// The time from a program's exec to its `main`, by the kernel's counts: the loader mapping,
    /// relocating and initializing objects. Read by Liftoff's constructor before `main` (and
    /// before any sampling signal), so none of it is sampled; the parts add up to ``durationNs``.
    public struct PreMain: Codable, Sendable, Equatable {
        /// From the exec (the spawn, for the first program) to Liftoff's constructor.
        public var durationNs: UInt64
        /// On a CPU.
        public var onCPUNs: UInt64
        /// Runnable, waiting for a core.
        public var runnableNs: UInt64
        /// Neither: blocked (reading from storage, a page fault that reads, a lock).
        public var blockedNs: UInt64
        /// Bytes read from storage (not the page cache) meanwhile.
        public var bytesRead: UInt64
        /// Page faults that read from storage.
        public var majorFaults: UInt64
        /// Page faults served from memory.
        public var minorFaults: UInt64
        /// Whether the fault counts are lower bounds: a pending signal makes the kernel retry a
        /// fault, and may count a major one as minor. Bytes read and blocked time are the measures.
        public var faultsAtLeast: Bool?
        /// The loader's work object by object, when Liftoff's audit library ran in the program.
        public var loader: Loader?
        /// Why there is no ``loader`` timeline, in one sentence, when the audit library was set
        /// but the loader did not run it.
        public var loaderNote: String?

        /// Creates a breakdown.
        public init(
            durationNs: UInt64, onCPUNs: UInt64, runnableNs: UInt64, blockedNs: UInt64, bytesRead: UInt64,
            majorFaults: UInt64, minorFaults: UInt64, faultsAtLeast: Bool? = nil
        ) {
            self.durationNs = durationNs
            self.onCPUNs = onCPUNs
            self.runnableNs = runnableNs
            self.blockedNs = blockedNs
            self.bytesRead = bytesRead
            self.majorFaults = majorFaults
            self.minorFaults = minorFaults
            self.faultsAtLeast = faultsAtLeast
        }

        /// The breakdown of `durationNs` given the CPU and run-queue time spent in it: blocked is
        /// the rest. CPU and waiting are scaled down together should they exceed the duration
        /// (the counters and the clock are read a few microseconds apart).
        public init(
            durationNs: UInt64, cpuNs: UInt64, runqueueNs: UInt64, bytesRead: UInt64, majorFaults: UInt64,
            minorFaults: UInt64, faultsAtLeast: Bool? = nil
        ) {
            let busy = cpuNs.addingReportingOverflow(runqueueNs)
            var onCPU = cpuNs, runnable = runqueueNs
            if busy.overflow || busy.partialValue > durationNs {
                let total = Double(cpuNs) + Double(runqueueNs)
                onCPU = total > 0 ? UInt64(Double(durationNs) * Double(cpuNs) / total) : 0
                runnable = durationNs - min(onCPU, durationNs)
            }
            self.init(
                durationNs: durationNs, onCPUNs: onCPU, runnableNs: runnable,
                blockedNs: durationNs - min(durationNs, onCPU &+ runnable), bytesRead: bytesRead,
                majorFaults: majorFaults, minorFaults: minorFaults, faultsAtLeast: faultsAtLeast)
        }

        /// What the breakdown covers, for its label in reports: the loader's work before sampling.
        public static let label = "loader (exec → sampling start)"
        /// An amount read, as the reports write it: `420 kB`, `12.6 MB`.
        public static func amount(_ bytes: UInt64) -> String {
            bytes < 1_000_000 ? "\(bytes / 1000) kB" : String(format: "%.1f MB", Double(bytes) / 1e6)
        }

        /// ``label`` at the start of a sentence.
        public static let title = "Loader (exec → sampling start)"

        /// `22.0 ms: on CPU 15.1 ms, waiting for a core 0.3 ms, blocked 6.6 ms; read 1.2 MB from
        /// storage, 12 major and 2,345 minor page faults`.
        public var sentence: String {
            func ms(_ ns: UInt64) -> String { String(format: "%.1f ms", Double(ns) / 1e6) }
            let bytes = bytesRead == 0 ? "nothing read from storage" : "read \(Self.amount(bytesRead)) from storage"
            let least = faultsAtLeast == true ? "at least " : ""
            return "\(ms(durationNs)): on CPU \(ms(onCPUNs)), waiting for a core \(ms(runnableNs)), blocked \(ms(blockedNs)); "
                + "\(bytes), \(least)\(majorFaults) major and \(minorFaults) minor page faults"
        }
    }
}
