import CLiftoffProcess
import LiftoffProfile

#if canImport(Glibc)
import Glibc
#endif

/// The kernel's records of a launch's page faults that read from storage (`lo_faults_open`: a
/// major-fault event per CPU with the mapping, exec and fork records), read from its rings and
/// placed in the files they read.
enum DiskFaultRecords {
    /// What one record says.
    enum Event: Equatable, Sendable {
        /// A file or anonymous mapping of process `pid`.
        case mapping(pid: Int, start: UInt64, length: UInt64, offset: UInt64, path: String)
        /// Process `pid` replaced its program.
        case exec(pid: Int)
        /// Process `pid` was forked from `parent` (threads, whose pid is their parent's, are not).
        case fork(pid: Int, parent: Int)
        /// A major fault of process `pid` at `address`.
        case fault(pid: Int, address: UInt64)
        /// The kernel dropped records when a ring was full.
        case lost(UInt64)
    }

    /// An event and when it happened (`CLOCK_MONOTONIC` nanoseconds).
    struct Timed: Equatable, Sendable {
        var ns: UInt64
        var event: Event
    }

    // perf_event_header types and flags (linux/perf_event.h).
    static let recordMmap2: UInt32 = 10, recordComm: UInt32 = 3, recordFork: UInt32 = 7
    static let recordLost: UInt32 = 2, recordSample: UInt32 = 9
    static let miscCommExec: UInt16 = 1 << 13
    /// Clears the offset within a page.
    static let pageMask = ~(UInt64(max(sysconf(Int32(_SC_PAGESIZE)), 4096)) - 1)

    /// Every record in `bytes` (whole records, as `lo_faults_read` gives them) that places a
    /// fault, in time order; a record cut short or of a size that makes no sense ends the reading.
    static func parse(_ bytes: UnsafeRawBufferPointer) -> [Timed] {
        var events: [Timed] = []
        var at = 0
        func u64(_ offset: Int) -> UInt64? {
            guard offset >= 0, offset + 8 <= bytes.count else { return nil }
            return bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
        }
        func u32(_ offset: Int) -> UInt32? {
            guard offset >= 0, offset + 4 <= bytes.count else { return nil }
            return bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
        }
        while at + 8 <= bytes.count {
            let type = bytes.loadUnaligned(fromByteOffset: at, as: UInt32.self)
            let misc = bytes.loadUnaligned(fromByteOffset: at + 4, as: UInt16.self)
            let size = Int(bytes.loadUnaligned(fromByteOffset: at + 6, as: UInt16.self))
            guard size >= 8, at + size <= bytes.count else { break }
            let end = at + size
            // Records other than samples end with the sample id: pid, tid, time.
            let trailerTime = size >= 24 ? u64(end - 8) : nil
            switch type {
            case recordSample where size >= 40:
                if let pid = u32(at + 16), let time = u64(at + 24), let address = u64(at + 32) {
                    events.append(Timed(ns: time, event: .fault(pid: Int(pid), address: address)))
                }
            case recordMmap2 where size >= 72 + 16:
                if let pid = u32(at + 8), let start = u64(at + 16), let length = u64(at + 24), let offset = u64(at + 32),
                    let time = trailerTime
                {
                    let name = UnsafeRawBufferPointer(rebasing: bytes[(at + 72)..<(end - 16)])
                    let path = String(decoding: name.prefix { $0 != 0 }, as: UTF8.self)
                    events.append(Timed(ns: time, event: .mapping(pid: Int(pid), start: start, length: length, offset: offset, path: path)))
                }
            case recordComm where misc & miscCommExec != 0:
                if let pid = u32(at + 8), let time = trailerTime { events.append(Timed(ns: time, event: .exec(pid: Int(pid)))) }
            case recordFork where size >= 32:
                if let pid = u32(at + 8), let parent = u32(at + 12), let time = u64(at + 24), pid != parent {
                    events.append(Timed(ns: time, event: .fork(pid: Int(pid), parent: Int(parent))))
                }
            case recordLost where size >= 24:
                if let count = u64(at + 16) { events.append(Timed(ns: trailerTime ?? 0, event: .lost(count))) }
            default:
                break
            }
            at = end
        }
        // Each CPU's ring is in order; together, by time (a stable sort keeps a ring's order on ties).
        return events.enumerated().sorted { ($0.element.ns, $0.offset) < ($1.element.ns, $1.offset) }.map(\.element)
    }

    /// Why the kernel would not record a run's faults.
    struct Refusal: Error, Equatable, Sendable {
        /// The `errno` of `perf_event_open` or of mapping its ring.
        var code: Int32

        /// One sentence for the profile and the summary.
        var sentence: String {
            let reason = String(cString: strerror(code))
            return "The files the launch faulted on were not recorded: the kernel refused a page-fault event (perf_event_open: \(reason)"
                + (code == EACCES || code == EPERM ? "; /proc/sys/kernel/perf_event_paranoid above 2, or a seccomp policy" : "")
                + ")."
        }
    }

    /// Moves what the rings of `faults` hold onto the end of `bytes`, until they are empty, through
    /// `chunk` (kept by the caller: the rings are drained every few milliseconds, mostly empty).
    static func read(_ faults: OpaquePointer, into bytes: inout [UInt8], through chunk: inout [UInt8]) {
        if chunk.isEmpty { chunk = [UInt8](repeating: 0, count: 1 << 16) }
        while true {
            let copied = chunk.withUnsafeMutableBytes { lo_faults_read(faults, $0.baseAddress, $0.count) }
            guard copied > 0 else { break }
            bytes.append(contentsOf: chunk[..<copied])
        }
    }

    /// Places each fault of a process that ran a program (its pre-exec faults are the launcher's
    /// own) in the file mapping that covered its address, and counts per file; `mainEntryNs`
    /// says when the program that faulted reached `main` (relative to `originNs`), if known.
    /// Faults after `readyNs` (relative to `originNs`; the launch was ready, and what a program
    /// does then is not its launch) are only counted.
    static func place(
        _ events: [Timed], originNs: UInt64, readyNs: UInt64? = nil, mainEntryNs: (_ pid: Int, _ ns: UInt64) -> UInt64?
    ) -> Profile.DiskFaults {
        struct Mapping {
            var start: UInt64, end: UInt64, offset: UInt64, path: String
        }
        var mappings: [Int: [Mapping]] = [:]
        var ran = Set<Int>()
        var files: [String: Profile.FaultedFile] = [:]
        var order: [String] = []
        var result = Profile.DiskFaults()
        for timed in events {
            switch timed.event {
            case .mapping(let pid, let start, let length, let offset, let path):
                let (end, overflow) = start.addingReportingOverflow(length)
                mappings[pid, default: []].append(Mapping(start: start, end: overflow ? .max : end, offset: offset, path: path))
            case .exec(let pid):
                mappings[pid] = []
                ran.insert(pid)
            case .fork(let pid, let parent):
                mappings[pid] = mappings[parent] ?? []
                if ran.contains(parent) { ran.insert(pid) }
            case .lost(let count):
                result.lost = result.lost.addingReportingOverflow(count).overflow ? .max : result.lost + count
            case .fault(let pid, let address):
                guard ran.contains(pid) else { continue }
                let ns = timed.ns >= originNs ? timed.ns - originNs : 0
                if let readyNs, ns > readyNs {
                    result.afterReady = (result.afterReady ?? 0) &+ 1
                    continue
                }
                // The newest mapping that covers it: a later one replaced what was there.
                guard let mapping = mappings[pid]?.last(where: { $0.start <= address && address < $0.end }),
                    mapping.path.hasPrefix("/"), !mapping.path.hasPrefix("//")  // perf names anonymous memory //anon
                else {
                    result.anonymous &+= 1
                    continue
                }
                let page = (mapping.offset &+ (address - mapping.start)) & pageMask
                let before = mainEntryNs(pid, ns).map { ns < $0 } ?? false
                if files[mapping.path] == nil {
                    order.append(mapping.path)
                    files[mapping.path] = Profile.FaultedFile(path: mapping.path, faults: 0, beforeMain: 0, offsets: [], processIDs: [], firstNs: ns)
                }
                files[mapping.path]?.faults &+= 1
                if before { files[mapping.path]?.beforeMain &+= 1 }
                if let file = files[mapping.path] {
                    if file.offsets.count < Profile.FaultedFile.offsetLimit { files[mapping.path]?.offsets.append(page) }
                    if !file.processIDs.contains(pid) { files[mapping.path]?.processIDs.append(pid) }
                }
            }
        }
        result.files = order.compactMap { files[$0] }.enumerated()
            .sorted { ($0.element.faults, $1.offset) > ($1.element.faults, $0.offset) }.map(\.element)
        return result
    }

    /// When the program process `pid` ran at `ns` reached `main`, from `profile`'s processes:
    /// the launch's own program's main entry, or another program's start plus its pre-main.
    static func mainEntryNs(of pid: Int, at ns: UInt64, in profile: Profile, rootPID: Int) -> UInt64? {
        guard let process = profile.processes.first(where: { $0.id == pid }) else {
            return pid == rootPID ? profile.phases.mainEntryNs : nil
        }
        guard let index = process.programs.lastIndex(where: { $0.startNs <= ns }) else { return nil }
        if pid == rootPID, index == process.programs.count - 1 { return profile.phases.mainEntryNs }
        let program = process.programs[index]
        return program.preMain.map { NanosecondDuration(nanoseconds: $0.durationNs).after(program.startNs) }
    }

    /// What `profile` keeps of a run's recorded faults (`ProcessRunner.Result.diskFaults`), placed
    /// in their files up to its ready moment, or the kernel's refusal; nil when none were recorded.
    static func of(_ result: ProcessRunner.Result, in profile: Profile) -> Profile.DiskFaults? {
        switch result.diskFaults {
        case nil:
            return nil
        case .success(let events):
            return place(events, originNs: profile.timeOriginNs, readyNs: profile.phases.firstFrameNs) { pid, ns in
                mainEntryNs(of: pid, at: ns, in: profile, rootPID: Int(result.pid))
            }
        case .failure(let refusal):
            return Profile.DiskFaults(refused: refusal.sentence)
        }
    }

    /// One sentence on the files the launch faulted on, the most first; nil when it faulted on
    /// none. A refusal is said only when the launch read from storage, where it matters.
    static func sentence(_ profile: Profile) -> String? {
        guard let faults = profile.diskFaults else { return nil }
        if let refused = faults.refused {
            return (profile.phases.preMain?.bytesRead ?? 0) > 0 ? refused : nil
        }
        guard faults.total > 0 else { return nil }
        let before = faults.files.reduce(0) { $0 &+ $1.beforeMain }
        var line = "Page faults that read from storage: at least \(faults.total)"
        if before > 0 { line += " (\(before) before main)" }
        let named = faults.files.prefix(4).map { file in
            let name = file.path.split(separator: "/").last.map(String.init) ?? file.path
            return "\(name) \(file.faults)" + (file.beforeMain > 0 && file.beforeMain < file.faults ? " (\(file.beforeMain) before main)" : "")
        }
        if !named.isEmpty { line += ", in " + named.joined(separator: ", ") + (faults.files.count > 4 ? ", …" : "") }
        if faults.anonymous > 0 { line += "; \(faults.anonymous) in memory no file backs" }
        if faults.lost > 0 { line += "; the kernel dropped \(faults.lost) records, so there were more" }
        return line + "."
    }
}
