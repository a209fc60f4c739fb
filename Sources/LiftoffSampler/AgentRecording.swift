import CLiftoffSampler
import Foundation
import LiftoffProfile

/// A recording `libLiftoffAgent.so` wrote in a program that does not link Liftoff (layout in
/// `lo_agent.h`), turned into a ``Profile`` here, in the `liftoff` process: the program's
/// objects are read from disk and symbolized at the addresses it had them loaded.
public struct AgentRecording: Sendable {
    /// Why a recording cannot be read.
    public struct ReadError: Error, Sendable, CustomStringConvertible {
        /// One sentence.
        public var description: String
    }

    /// The recorded program's process id.
    public var processID: Int
    /// Its parent's process id.
    public var parentProcessID: Int = 0
    /// How many programs ran in this process before this one (each replaced by the next with `exec`).
    public var image: Int = 0
    /// `CLOCK_MONOTONIC` ns of the process start (the launcher's spawn time when it gave one).
    public var processStartNs: UInt64
    /// When the agent's library was loaded, before `main`.
    public var preMainNs: UInt64
    /// When the program's `main` started (the agent hands `main` to the C library's start behind a
    /// stamp), so static initializers and the loader's work before it are the pre-main phase; the
    /// agent's own start when `main` was never reached, or for a child forked without exec, its fork.
    public var mainEntryNs: UInt64
    /// When the recording was written.
    public var endNs: UInt64
    /// Samples per second per thread.
    public var rateHz: Int
    /// The sampler's counters.
    public var counts: Profile.SampleCounts
    /// The program and its arguments.
    public var commandLine: [String]
    /// Thread names by kernel thread id.
    public var threadNames: [Int: String]
    /// The samples.
    public var samples: [RawSample]
    /// The Swift tasks' creations and jobs.
    public var taskEvents: [TaskEvent] = []
    /// The signal that ended the program, if one did (the recording was written in its handler).
    public var endingSignal: Int?
    /// Whether the program replaced itself with `exec`: a later image of the same process follows.
    public var endedByExec = false
    /// Whether the program installed its own SIGPROF handler (its own profiler): the agent kept
    /// its handler first and handed the program's own signals on.
    public var installedOwnProfilerSignal = false
    /// How many of the program's own SIGPROF signals were handed to its handler.
    public var programSignals = 0
    /// Whether the program's main thread started with SIGPROF blocked, so the agent's signals
    /// could not reach it.
    public var blocksProfilerSignal = false
    /// Whether the samples are the program's own sampler's: the program links Liftoff, the agent
    /// stood down for it, and wrote what that sampler kept because the program ended by a signal
    /// before writing its own profile.
    public var recordedByProgram = false
    /// The process's counters when the agent started, before `main` (format 4), and when it wrote.
    public var countersBeforeMain: ProcessCounters?
    /// The loader's timeline before `main`, from Liftoff's audit library (handed to the agent,
    /// or `PID-IMAGE.loader` beside the recording), in `CLOCK_MONOTONIC` nanoseconds.
    public var loader: Profile.Loader?
    /// The program this one went on as with `exec`, as the exec named it (format 7), when the
    /// recording ended with one.
    public var execTarget: String?

    /// The latest writes to standard output and error (format 7), the oldest first, with the
    /// thread that made each: what tells which thread wrote a `--ready` line.
    public var outputs: [OutputWrite] = []

    /// One write to standard output or error: when (`CLOCK_MONOTONIC` nanoseconds), by which
    /// thread, to which descriptor (1 or 2), and its first bytes (120 at most).
    public struct OutputWrite: Sendable, Equatable {
        /// When the call was made.
        public var timeNs: UInt64
        /// The writing thread's kernel id.
        public var thread: Int
        /// 1 (standard output) or 2 (standard error).
        public var descriptor: Int
        /// Its first bytes.
        public var text: String

        /// A write.
        public init(timeNs: UInt64, thread: Int, descriptor: Int, text: String) {
            self.timeNs = timeNs
            self.thread = thread
            self.descriptor = descriptor
            self.text = text
        }
    }

    /// The audit library's lines as the agent handed them over (format 5), parsed into ``loader``
    /// when the recordings of a launch are read together.
    var loaderText = ""
    /// See ``countersBeforeMain``.
    public var countersAtEnd: ProcessCounters?
    /// The thread rules' findings on the program's main thread, with `liftoff profile --rules`
    /// (format 6).
    public var violations: [Violation] = []
    /// Call sites the agent found but did not keep (its table was full).
    public var droppedViolations = 0
    /// The spans of a program that recorded itself (``recordedByProgram``), from its journal:
    /// times in `CLOCK_MONOTONIC` nanoseconds, parents as indices into this array.
    public var spans: [Profile.Span] = []
    let objects: [ELFSymbolizer.LoadedObject]
    /// The files the program had mapped as objects (its executable and libraries) when the
    /// recording was written.
    public var objectPaths: [String] { objects.filter { !$0.isVDSO && $0.path.hasPrefix("/") }.map(\.path) }

    /// Reads the recording in `url`.
    /// - Throws: ``ReadError`` naming what is wrong with the file.
    public static func load(from url: URL) throws -> AgentRecording {
        guard let data = try? Data(contentsOf: url) else {
            throw ReadError(description: "The agent wrote no recording to \(url.path).")
        }
        var reader = WordReader(data: data, path: url.path)
        guard try reader.word() == 0x3154_4E45_4741_4F4C else {
            throw ReadError(description: "\(url.path) is not a recording of Liftoff's agent.")
        }
        let format = try reader.word()
        guard (3...7).contains(format) else {
            throw ReadError(description: "\(url.path) is an agent recording of format \(format); this Liftoff reads formats 3 to 7.")
        }
        let pid = Int(clamping: try reader.word())
        let parent = Int(clamping: try reader.word())
        let image = Int(clamping: try reader.word())
        let flags = try reader.word()
        let start = try reader.word()
        let premain = try reader.word()
        let mainEntry = try reader.word()
        let end = try reader.word()
        let rate = Int(clamping: try reader.word())
        var counters: [Int] = []
        for _ in 0..<10 { counters.append(Int(clamping: try reader.word())) }
        let counts = Profile.SampleCounts(
            signalsSent: counters[0], captured: counters[1], dropped: counters[2], failed: counters[3],
            skipped: counters[4], truncated: counters[5], waiting: counters[6], unanswered: counters[7],
            threadsSeen: counters[8])
        let command = try reader.bytes()
        let commandLine = command.split(separator: 0, omittingEmptySubsequences: false).map {
            String(decoding: $0, as: UTF8.self)
        }.filter { !$0.isEmpty }
        var names: [Int: String] = [:]
        let threadCount = try reader.count(limit: 1 << 20)
        for _ in 0..<threadCount {
            let tid = Int(Int32(truncatingIfNeeded: try reader.word()))
            names[tid] = ThreadNaming.readable(String(decoding: try reader.bytes(), as: UTF8.self), isMain: tid == pid)
        }
        var objects: [ELFSymbolizer.LoadedObject] = []
        let objectCount = try reader.count(limit: 1 << 16)
        for _ in 0..<objectCount {
            let base = UInt(try reader.word())
            let segmentCount = try reader.count(limit: 64)
            var segments: [Range<UInt>] = []
            for _ in 0..<segmentCount {
                let low = UInt(try reader.word())
                let high = UInt(try reader.word())
                if low < high { segments.append(low..<high) }
            }
            let path = Self.canonicalPath(String(decoding: try reader.bytes(), as: UTF8.self))
            objects.append(
                ELFSymbolizer.LoadedObject(
                    path: path, displayName: URL(fileURLWithPath: path).lastPathComponent, base: base, segments: segments,
                    isVDSO: path.hasPrefix("linux-vdso") || path.hasPrefix("linux-gate") || path.isEmpty))
        }
        let wordCount = try reader.count(limit: Int.max / 8)
        let words = try reader.words(wordCount)
        let samples = words.withUnsafeBufferPointer { Sampler.decodeStore($0, rateHz: rate) }
        let eventCount = try reader.count(limit: Int.max / 40)
        var taskEvents: [TaskEvent] = []
        for _ in 0..<eventCount {
            let packed = try reader.word()
            var event = lo_task_event()
            event.kind = UInt8(truncatingIfNeeded: packed)
            event.task_kind = UInt8(truncatingIfNeeded: packed >> 8)
            event.thread = UInt32(truncatingIfNeeded: packed >> 32)
            event.task = try reader.word()
            event.creator = try reader.word()
            event.time_ns = try reader.word()
            event.end_ns = try reader.word()
            if let decoded = TaskEvent(recorded: event) { taskEvents.append(decoded) }
        }
        var processCounters: (ProcessCounters?, ProcessCounters?) = (nil, nil)
        if format >= 4 {
            let words = try reader.words(try reader.count(limit: 64))
            processCounters = (ProcessCounters(words: words.prefix(8)), ProcessCounters(words: words.dropFirst(8)))
        }
        let loaderText = format >= 5 ? String(decoding: try reader.bytes(), as: UTF8.self) : ""
        let rulesText = format >= 6 ? String(decoding: try reader.bytes(), as: UTF8.self) : ""
        var outputs: [OutputWrite] = []
        var execTarget = ""
        if format >= 7 {
            for _ in 0..<(try reader.count(limit: 1 << 16)) {
                let time = try reader.word()
                let packed = try reader.word()
                let text = String(decoding: try reader.bytes(), as: UTF8.self)
                outputs.append(
                    OutputWrite(timeNs: time, thread: Int(UInt32(truncatingIfNeeded: packed)), descriptor: Int(UInt16(truncatingIfNeeded: packed >> 32)), text: text))
            }
            execTarget = String(decoding: try reader.bytes(), as: UTF8.self)
        }
        var recording = AgentRecording(
            processID: pid, processStartNs: start, preMainNs: premain, mainEntryNs: mainEntry, endNs: end, rateHz: rate,
            counts: counts, commandLine: commandLine, threadNames: names, samples: samples, objects: objects)
        recording.taskEvents = taskEvents
        recording.parentProcessID = parent
        recording.image = image
        recording.loaderText = loaderText
        recording.outputs = outputs
        recording.execTarget = execTarget.isEmpty ? nil : execTarget
        (recording.violations, recording.droppedViolations) = parseViolations(rulesText)
        if flags & 1 != 0 { recording.endingSignal = Int((flags >> 8) & 0xff) }
        recording.endedByExec = flags & 2 != 0
        recording.installedOwnProfilerSignal = flags & 4 != 0
        recording.blocksProfilerSignal = flags & 8 != 0
        recording.recordedByProgram = flags & 16 != 0
        (recording.countersBeforeMain, recording.countersAtEnd) = processCounters
        recording.programSignals = counters[9]
        return recording
    }

    /// The profile of the recording alone: its samples symbolized against the program's
    /// objects, with its phases (no first frame: `ready` sets one).
    /// - Parameters:
    ///   - readyNs: nanoseconds from the process start to the moment it was ready, if known.
    ///   - keepsExecutorFrames: whether stacks of Swift async functions keep the executor's frames
    ///     below the task's first async function (``ProfileBuilder/keepsExecutorFrames``).
    public func profile(readyNs: UInt64? = nil, keepsExecutorFrames: Bool = false) -> Profile {
        AgentRecording.profile(of: [self], readyNs: readyNs, keepsExecutorFrames: keepsExecutorFrames)
    }
}

/// Little-endian words and word-padded strings from a recording, refusing to read past its end.
private struct WordReader {
    let data: Data
    let path: String
    var offset = 0

    mutating func word() throws -> UInt64 {
        guard offset <= data.count - 8 else {
            throw AgentRecording.ReadError(description: "\(path) is cut short: the agent stopped writing it early.")
        }
        var value: UInt64 = 0
        withUnsafeMutableBytes(of: &value) { target in
            data.copyBytes(to: target.bindMemory(to: UInt8.self), from: (data.startIndex + offset)..<(data.startIndex + offset + 8))
        }
        offset += 8
        return UInt64(littleEndian: value)
    }

    mutating func count(limit: Int) throws -> Int {
        let value = try word()
        guard value <= UInt64(limit), value <= UInt64(data.count) else {
            throw AgentRecording.ReadError(description: "\(path) is damaged: it counts \(value) entries where it cannot have so many.")
        }
        return Int(value)
    }

    mutating func bytes() throws -> [UInt8] {
        let length = try count(limit: 1 << 24)
        let padded = (length + 7) & ~7
        guard offset <= data.count - padded else {
            throw AgentRecording.ReadError(description: "\(path) is cut short: the agent stopped writing it early.")
        }
        let start = data.startIndex + offset
        offset += padded
        return Array(data[start..<(start + length)])
    }

    mutating func words(_ count: Int) throws -> [UInt64] {
        guard count <= (data.count - offset) / 8 else {
            throw AgentRecording.ReadError(description: "\(path) is cut short: the agent stopped writing it early.")
        }
        // One copy of the whole store, not a bounds check and a copy per word.
        var result = [UInt64](repeating: 0, count: count)
        result.withUnsafeMutableBytes { target in
            data.copyBytes(to: target.bindMemory(to: UInt8.self), from: (data.startIndex + offset)..<(data.startIndex + offset + count * 8))
        }
        offset += count * 8
        return result.map { UInt64(littleEndian: $0) }
    }
}

extension AgentRecording {
    /// The path of an object as /proc/PID/maps names it, its links resolved: the agent writes the
    /// loader's names at an exit (`/lib/x86_64-linux-gnu/libc.so.6`), which may go through links.
    static func canonicalPath(_ path: String) -> String {
        guard path.hasPrefix("/"), let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
