import Foundation
import LiftoffProfile

/// What `liftoff record` writes next to its runs: `record.json`, written atomically when
/// recording ends. While it runs, each finished run is appended to a journal (`runs.jsonl`),
/// so nothing recorded is lost if recording stops early.
public struct RecordManifest: Codable, Sendable, Equatable {
    /// `liftoff.record/1`.
    public static let currentSchema = "liftoff.record/1"

    /// One launch of the program.
    public struct Run: Codable, Sendable, Equatable {
        /// 1-based run number among the recorded (not warm-up) runs.
        public var index: Int
        /// The profile, relative to the folder; nil for a failed run, and for a program without
        /// Liftoff, whose times are `exitMs` and `readyMs`.
        public var profile: String?
        /// The child's output, relative to the folder.
        public var log: String
        /// `exit status 0`, `signal 11 (SIGSEGV)`, `timed out`, or why no profile was written.
        public var outcome: String
        /// Whether the run counts: it exited with status 0 and left a profile.
        public var succeeded: Bool
        /// Spawn to exit, in milliseconds.
        public var exitMs: Double
        /// Spawn to the first output line matching `--ready`, in milliseconds.
        public var readyMs: Double?
        /// Who wrote the run's profile: `program` (it links Liftoff and recorded itself) or
        /// `agent` (liftoff's injected agent sampled it); absent for a run that was only timed.
        public var recordedBy: String?
        /// What the run spent by the kernel's counts (to its ready line, or to its exit); absent
        /// when they could not be read, and in folders recorded before they were kept.
        public var counters: RunCounters?
        /// The page cache the run started with (`record --cache`): the mode and, for `cold`,
        /// each file evicted and how much of it stayed; absent for `as-is`.
        public var cache: Profile.CacheState?

        /// Creates a run entry.
        public init(
            index: Int, profile: String?, log: String, outcome: String, succeeded: Bool, exitMs: Double, readyMs: Double?,
            recordedBy: String? = nil, counters: RunCounters? = nil, cache: Profile.CacheState? = nil
        ) {
            self.cache = cache
            self.recordedBy = recordedBy
            self.counters = counters
            self.index = index
            self.profile = profile
            self.log = log
            self.outcome = outcome
            self.succeeded = succeeded
            self.exitMs = exitMs
            self.readyMs = readyMs
        }
    }

    /// One launch counted under valgrind's callgrind (`liftoff record --count instructions`).
    public struct CountedRun: Codable, Sendable, Equatable {
        /// 1-based among the counted runs.
        public var index: Int
        /// Callgrind's output, relative to the folder (its numbered dumps beside it); nil when
        /// the run failed.
        public var file: String?
        /// Instructions to the ready point (or the exit).
        public var instructions: UInt64?
        /// How the run ended, or why it has no count.
        public var outcome: String
        /// Whether a copy of the executable without debug sections was counted (valgrind cannot
        /// read DWARF 5).
        public var strippedCopy: Bool
        /// What ended the count: `dump ready`, a function leaving `lo_launch_ready`, or
        /// `Program termination`.
        public var trigger: String?

        /// Creates a counted run.
        public init(index: Int, file: String?, instructions: UInt64?, outcome: String, strippedCopy: Bool, trigger: String?) {
            self.index = index
            self.file = file
            self.instructions = instructions
            self.outcome = outcome
            self.strippedCopy = strippedCopy
            self.trigger = trigger
        }
    }

    /// `liftoff.record/1`.
    public var schema = RecordManifest.currentSchema
    /// The recorded command.
    public var command: [String]
    /// How time to first frame was measured.
    public var measure: RunMeasure
    /// The runs so far.
    public var runs: [Run]
    /// The counted runs, with `--count instructions`.
    public var counted: [CountedRun]?

    /// Creates a manifest.
    public init(command: [String], measure: RunMeasure, runs: [Run] = []) {
        self.command = command
        self.measure = measure
        self.runs = runs
    }

    /// The journal `liftoff record` appends to while it runs: a header line with the schema and
    /// command, then one line per finished run. `record.json` replaces it when recording ends;
    /// a folder whose recording was interrupted still has every finished run in it.
    public static let journalName = "runs.jsonl"

    /// The journal's first line.
    public func journalHeader() -> Data {
        var json = JSONWriter(capacity: 256)
        writeHeader(to: &json)
        json.raw("}\n")
        return Data(json.bytes)
    }

    /// `{"schema":…,"command":[…],"measure":…` (the object is left open).
    private func writeHeader(to json: inout JSONWriter) {
        json.raw("{")
        json.key("schema")
        json.string(schema)
        json.nextKey("command")
        json.stringArray(command)
        json.field("measure", measure.rawValue)
    }

    /// One run as a journal line.
    public static func journalLine(_ run: Run) -> Data {
        var json = JSONWriter(capacity: 200)
        writeRun(run, to: &json)
        json.raw("\n")
        return Data(json.bytes)
    }

    /// Reads a journal: the header, then every complete run line (a torn last line is skipped).
    /// - Throws: `RunSetError` when the header is not one.
    public static func readJournal(_ data: Data, path: String) throws -> RecordManifest {
        let lines = data.split(separator: UInt8(ascii: "\n"))
        let decoder = JSONDecoder()
        struct Header: Decodable {
            var schema: String
            var command: [String]
            var measure: RunMeasure
        }
        guard let first = lines.first, let header = try? decoder.decode(Header.self, from: Data(first)),
            header.schema == currentSchema
        else {
            throw RunSetError("\(path) is not a run journal written by liftoff record.")
        }
        let runs = lines.dropFirst().compactMap { try? decoder.decode(Run.self, from: Data($0)) }
        return RecordManifest(command: header.command, measure: header.measure, runs: runs)
    }

    private static func writeRun(_ run: Run, to json: inout JSONWriter) {
        json.raw("{")
        json.key("index")
        json.int(run.index)
        if let profile = run.profile { json.field("profile", profile) }
        json.field("log", run.log)
        json.field("outcome", run.outcome)
        json.field("succeeded", run.succeeded)
        json.field("exitMs", run.exitMs, digits: 6)
        if let ready = run.readyMs { json.field("readyMs", ready, digits: 6) }
        if let recordedBy = run.recordedBy { json.field("recordedBy", recordedBy) }
        if let counters = run.counters {
            json.nextKey("counters")
            json.raw("{")
            json.key("bytesRead")
            json.int(Int(clamping: counters.bytesRead))
            json.field("bytesWritten", Int(clamping: counters.bytesWritten))
            json.field("readCalls", Int(clamping: counters.readCalls))
            json.field("writeCalls", Int(clamping: counters.writeCalls))
            json.field("storageBytesRead", Int(clamping: counters.storageBytesRead))
            json.field("minorFaults", Int(clamping: counters.minorFaults))
            json.field("majorFaults", Int(clamping: counters.majorFaults))
            json.field("userCPUMs", counters.userCPUMs, digits: 3)
            json.field("systemCPUMs", counters.systemCPUMs, digits: 3)
            json.field("voluntarySwitches", Int(clamping: counters.voluntarySwitches))
            json.field("involuntarySwitches", Int(clamping: counters.involuntarySwitches))
            json.raw("}")
        }
        if let cache = run.cache {
            json.nextKey("cache")
            json.raw("{")
            json.key("mode")
            json.string(cache.mode)
            json.nextKey("files")
            json.raw("[")
            for (position, file) in cache.files.enumerated() {
                json.raw(position == 0 ? "{" : ",{")
                json.key("path")
                json.string(file.path)
                json.field("sizeBytes", Int(clamping: file.sizeBytes))
                if let resident = file.residentBytes { json.field("residentBytes", Int(clamping: resident)) }
                if let keptBy = file.keptBy { json.field("keptBy", keptBy) }
                if let read = file.readBytes { json.field("readBytes", Int(clamping: read)) }
                json.raw("}")
            }
            json.raw("]}")
        }
        json.raw("}")
    }

    /// The manifest as JSON, one run per line.
    public func jsonData() -> Data {
        var json = JSONWriter(capacity: 256 + runs.count * 160)
        writeHeader(to: &json)
        json.nextKey("runs")
        json.raw("[")
        for (position, run) in runs.enumerated() {
            json.raw(position == 0 ? "\n  " : ",\n  ")
            RecordManifest.writeRun(run, to: &json)
        }
        json.raw("\n]")
        if let counted {
            json.nextKey("counted")
            json.raw("[")
            for (position, run) in counted.enumerated() {
                json.raw(position == 0 ? "\n  {" : ",\n  {")
                json.key("index")
                json.int(run.index)
                if let file = run.file { json.field("file", file) }
                if let instructions = run.instructions { json.field("instructions", Int(clamping: instructions)) }
                json.field("outcome", run.outcome)
                json.field("strippedCopy", run.strippedCopy)
                if let trigger = run.trigger { json.field("trigger", trigger) }
                json.raw("}")
            }
            json.raw("\n]")
        }
        json.raw("}\n")
        return Data(json.bytes)
    }
}
