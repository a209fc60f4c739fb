import Foundation

/// What one launch of a program spent, by the kernel's counts: read from `/proc/PID/io`,
/// `/proc/PID/stat` and `/proc/PID/status` when it was ready (it keeps running) or when it exited
/// (before it was reaped). They vary far less from run to run than wall time, so a comparison can
/// name a launch that reads more, faults more or switches more.
public struct RunCounters: Codable, Sendable, Equatable {
    /// Bytes read through `read` and its kin (`rchar`), from any file, pipe or socket.
    public var bytesRead: UInt64
    /// Bytes written through `write` and its kin (`wchar`).
    public var bytesWritten: UInt64
    /// Read calls (`syscr`).
    public var readCalls: UInt64
    /// Write calls (`syscw`).
    public var writeCalls: UInt64
    /// Bytes the process made the kernel read from storage (`read_bytes`): a cold launch's cost.
    public var storageBytesRead: UInt64
    /// Page faults served from memory.
    public var minorFaults: UInt64
    /// Page faults that read from storage.
    public var majorFaults: UInt64
    /// CPU time in user mode, in milliseconds.
    public var userCPUMs: Double
    /// CPU time in the kernel, in milliseconds.
    public var systemCPUMs: Double
    /// Times it gave up a CPU to wait (for I/O, a lock, a sleep).
    public var voluntarySwitches: UInt64
    /// Times the scheduler took a CPU from it.
    public var involuntarySwitches: UInt64

    /// Creates counters.
    public init(
        bytesRead: UInt64 = 0, bytesWritten: UInt64 = 0, readCalls: UInt64 = 0, writeCalls: UInt64 = 0,
        storageBytesRead: UInt64 = 0, minorFaults: UInt64 = 0, majorFaults: UInt64 = 0, userCPUMs: Double = 0,
        systemCPUMs: Double = 0, voluntarySwitches: UInt64 = 0, involuntarySwitches: UInt64 = 0
    ) {
        self.bytesRead = bytesRead
        self.bytesWritten = bytesWritten
        self.readCalls = readCalls
        self.writeCalls = writeCalls
        self.storageBytesRead = storageBytesRead
        self.minorFaults = minorFaults
        self.majorFaults = majorFaults
        self.userCPUMs = userCPUMs
        self.systemCPUMs = systemCPUMs
        self.voluntarySwitches = voluntarySwitches
        self.involuntarySwitches = involuntarySwitches
    }

    /// The counters as named metrics (`counter: major faults`), in a fixed order.
    public var metrics: [(name: String, value: Double)] {
        [
            ("counter: bytes read", Double(bytesRead)), ("counter: bytes written", Double(bytesWritten)),
            ("counter: read calls", Double(readCalls)), ("counter: write calls", Double(writeCalls)),
            ("counter: storage bytes read", Double(storageBytesRead)), ("counter: minor faults", Double(minorFaults)),
            ("counter: major faults", Double(majorFaults)), ("counter: user CPU ms", userCPUMs),
            ("counter: system CPU ms", systemCPUMs), ("counter: voluntary switches", Double(voluntarySwitches)),
            ("counter: involuntary switches", Double(involuntarySwitches)),
        ]
    }

    /// The counters of a live or not yet reaped process; nil when its files cannot be read (it
    /// is gone, or another user's).
    public static func read(pid: Int32) -> RunCounters? {
        guard pid > 0, let io = try? String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8),
            let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        else { return nil }
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        return parse(io: io, stat: stat, status: status, ticksPerSecond: Double(max(sysconf(Int32(_SC_CLK_TCK)), 1)))
    }

    /// The counters from the three files' text. Fields that are missing or do not parse are 0.
    static func parse(io: String, stat: String, status: String, ticksPerSecond: Double) -> RunCounters? {
        func fields(_ text: String) -> [Substring: UInt64] {
            var result: [Substring: UInt64] = [:]
            for line in text.split(separator: "\n") {
                guard let colon = line.firstIndex(of: ":") else { continue }
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                if let number = UInt64(value) { result[line[..<colon]] = number }
            }
            return result
        }
        let ioFields = fields(io)
        let statusFields = fields(status)
        // `pid (comm) state ppid …`: the name may hold spaces and parentheses, so fields count
        // from the last `)`; minflt is field 10, majflt 12, utime 14, stime 15 (1-based).
        guard let close = stat.lastIndex(of: ")") else { return nil }
        let after = stat[stat.index(after: close)...].split(separator: " ")
        func statField(_ number: Int) -> UInt64 {
            let index = number - 3  // field 3 (state) is the first after the name
            return index >= 0 && index < after.count ? UInt64(after[index]) ?? 0 : 0
        }
        return RunCounters(
            bytesRead: ioFields["rchar"] ?? 0, bytesWritten: ioFields["wchar"] ?? 0, readCalls: ioFields["syscr"] ?? 0,
            writeCalls: ioFields["syscw"] ?? 0, storageBytesRead: ioFields["read_bytes"] ?? 0, minorFaults: statField(10),
            majorFaults: statField(12), userCPUMs: Double(statField(14)) * 1000 / ticksPerSecond,
            systemCPUMs: Double(statField(15)) * 1000 / ticksPerSecond,
            voluntarySwitches: statusFields["voluntary_ctxt_switches"] ?? 0,
            involuntarySwitches: statusFields["nonvoluntary_ctxt_switches"] ?? 0)
    }
}
