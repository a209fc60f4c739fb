/// One recorded launch: what ran, on which threads, and the sampled stacks.
///
/// A profile is stored as `profile.json` with `"schema": "liftoff.profile/3"`; every report
/// Liftoff renders is a function of this value. Times are nanoseconds of `CLOCK_MONOTONIC`
/// relative to ``timeOriginNs`` (the process start), so they stay exact in JSON readers that
/// hold numbers as doubles.
///
/// Stacks are stored once, as a prefix tree: stack `i` is frame ``StackTable/frame``[i] called
/// from stack ``StackTable/parent``[i] (`-1` at the root). A sample names the stack of its leaf.
///
/// ```swift
/// let profile = try Profile.load(from: URL(fileURLWithPath: "Reports/demo/profile.json"))
/// print(profile.samples.count, "samples on", profile.threads.count, "threads")
/// ```
public struct Profile: Codable, Sendable, Equatable {
    /// The schema identifier this version of Liftoff writes.
    public static let currentSchema = "liftoff.profile/3"
    /// Every schema this version of Liftoff reads: `/1` profiles load with every sample running,
    /// `/1` and `/2` with every sample row standing for one tick.
    public static let readableSchemas = ["liftoff.profile/1", "liftoff.profile/2", currentSchema]

    /// Always ``currentSchema`` for a profile this version wrote.
    public var schema: String
    /// Where and how the profile was recorded.
    public var metadata: Metadata
    /// `CLOCK_MONOTONIC` nanoseconds of the process start; every other time is relative to it.
    public var timeOriginNs: UInt64
    /// Phase timestamps of the launch.
    public var phases: Phases
    /// Threads that were sampled.
    public var threads: [ThreadInfo]
    /// The deduplicated frame table.
    public var frames: [Frame]
    /// The stack prefix tree.
    public var stacks: StackTable
    /// The samples, in columns.
    public var samples: SampleTable
    /// Counters of the sampling session.
    public var counts: SampleCounts
    /// Timed spans: life-cycle callbacks, launch steps, tasks.
    public var spans: [Span] = []
    /// Named instants.
    public var marks: [Mark] = []
    /// Execution-state changes, in order.
    public var stateChanges: [StateChange] = []
    /// Committed frames, in order.
    public var displayFrames: [DisplayFrame] = []
    /// Thread-rule violations.
    public var violations: [Violation] = []
    /// Set when the app was terminated (by a watchdog, say) rather than ending normally.
    public var termination: Termination?
    /// Launch tasks the scheduler ran.
    public var tasks: [TaskRecord] = []
    /// Hangs of the main thread.
    public var hangs: [HangRecord] = []
    /// Swift tasks created or run during the recording, in creation order.
    public var asyncTasks: [AsyncTask] = []
    /// The processes recorded, the first one started first; empty for a profile of one process
    /// that recorded itself.
    public var processes: [ProcessRecord] = []
    /// The page cache the launch started with, when `liftoff profile --cache` set it up.
    public var cache: CacheState?
    /// The page faults that read from storage, file by file, when the kernel recorded them.
    public var diskFaults: DiskFaults?

    /// Creates a profile; `schema` is always ``currentSchema``.
    public init(
        metadata: Metadata,
        timeOriginNs: UInt64,
        phases: Phases,
        threads: [ThreadInfo] = [],
        frames: [Frame] = [],
        stacks: StackTable = StackTable(),
        samples: SampleTable = SampleTable(),
        counts: SampleCounts = SampleCounts()
    ) {
        self.schema = Profile.currentSchema
        self.metadata = metadata
        self.timeOriginNs = timeOriginNs
        self.phases = phases
        self.threads = threads
        self.frames = frames
        self.stacks = stacks
        self.samples = samples
        self.counts = counts
    }
}

extension Profile {
    /// Where and how a profile was recorded.
    public struct Metadata: Codable, Sendable, Equatable {
        /// Version of Liftoff that wrote the profile.
        public var liftoffVersion: String
        /// The recorded program's command line, program first.
        public var commandLine: [String]
        /// The machine it ran on.
        public var host: Host
        /// Wall-clock start of the recording, ISO 8601 in UTC.
        public var startTime: String
        /// `debug` or `release`: how the recorded program was built.
        public var buildConfiguration: String
        /// Samples per second per thread; 0 when nothing was sampled.
        public var samplingRateHz: Int

        /// Creates metadata.
        public init(
            liftoffVersion: String, commandLine: [String], host: Host, startTime: String,
            buildConfiguration: String, samplingRateHz: Int
        ) {
            self.liftoffVersion = liftoffVersion
            self.commandLine = commandLine
            self.host = host
            self.startTime = startTime
            self.buildConfiguration = buildConfiguration
            self.samplingRateHz = samplingRateHz
        }
    }

    /// The machine a profile was recorded on.
    public struct Host: Codable, Sendable, Equatable {
        /// Host name.
        public var name: String
        /// Kernel name and release, e.g. `Linux 6.1.0-18-amd64`.
        public var os: String
        /// CPU architecture, e.g. `x86_64`.
        public var architecture: String
        /// Logical CPUs available.
        public var cpuCount: Int

        /// Creates a host description.
        public init(name: String, os: String, architecture: String, cpuCount: Int) {
            self.name = name
            self.os = os
            self.architecture = architecture
            self.cpuCount = cpuCount
        }
    }

    /// Phase timestamps, in nanoseconds since ``Profile/timeOriginNs``.
    public struct Phases: Codable, Sendable, Equatable {
        /// Process start: the launcher's spawn time (`LIFTOFF_LAUNCH_NS`) or the pre-main timestamp.
        public var processStartNs: UInt64
        /// When Liftoff's load-time constructor ran, before `main`.
        public var preMainNs: UInt64
        /// When the program's `main` started recording.
        public var mainEntryNs: UInt64
        /// When recording ended.
        public var endNs: UInt64
        /// The first frame's render commit (or a program's "ready" moment), if there was one.
        public var firstFrameNs: UInt64?
        /// When the final program started, its exec: set when the process ran other programs
        /// before it (wrappers: `env`, `sh -c "exec …"`, a version manager's shim), whose time is
        /// then the phase from the process start to here. Pre-main and main entry are the final
        /// program's.
        public var programStartNs: UInt64?
        /// What the time before `main` was spent on (the program's last exec to its `main`), when
        /// Liftoff's constructor could read the kernel's counts.
        public var preMain: PreMain?

        /// Creates phase timestamps.
        public init(
            processStartNs: UInt64, preMainNs: UInt64, mainEntryNs: UInt64, endNs: UInt64, firstFrameNs: UInt64? = nil
        ) {
            self.processStartNs = processStartNs
            self.preMainNs = preMainNs
            self.mainEntryNs = mainEntryNs
            self.endNs = endNs
            self.firstFrameNs = firstFrameNs
        }
    }

    /// A sampled thread.
    public struct ThreadInfo: Codable, Sendable, Equatable {
        /// Kernel thread id.
        public var id: Int
        /// Thread name, e.g. `main` or a queue label.
        public var name: String
        /// Whether this is its process's main thread.
        public var isMain: Bool
        /// The process it belongs to, when the profile lists processes (``Profile/processes``).
        public var processID: Int?

        /// Creates a thread description.
        public init(id: Int, name: String, isMain: Bool, processID: Int? = nil) {
            self.id = id
            self.name = name
            self.isMain = isMain
            self.processID = processID
        }

        private enum CodingKeys: String, CodingKey {
            case id, name, isMain
            case processID = "process"
        }
    }

    /// A function in the frame table.
    public struct Frame: Codable, Sendable, Hashable {
        /// The full demangled signature, e.g. `LiftoffDemo.StretchedHash.absorb(Swift.String) -> ()`,
        /// or a placeholder naming the object when no symbol covers the address.
        public var name: String
        /// File name of the loaded object (executable or shared library) holding the code.
        public var object: String
        /// A short name for people, e.g. `StretchedHash.absorb(_:)` (as `swift demangle
        /// --simplified` writes it); absent when it would be the same as ``name``.
        public var short: String?
        /// The source file (as the compiler saw it, usually an absolute path), when the debug
        /// information gives one. In sampled stacks it is the file declaring the function, so one
        /// function is one frame; in an event's stack (a violation, a termination) it is the file
        /// of the line being executed.
        public var file: String?
        /// The line in ``file``: the function's declaration in sampled stacks, the line being
        /// executed (or the call of an inlined function) in an event's stack.
        public var line: Int?
        /// Whether the compiler inlined this function into its caller (the frame below it in the
        /// stack): it ran as part of that function's code, with no call of its own.
        public var isInlined: Bool
        /// Whether this is a Swift async function that was awaiting its callee (or, the innermost
        /// one, running) in the sampled task: a frame of the task's logical call stack, found through
        /// its async contexts rather than on the machine stack.
        public var isAsync: Bool

        /// Creates a frame.
        public init(
            name: String, object: String, short: String? = nil, file: String? = nil, line: Int? = nil,
            isInlined: Bool = false, isAsync: Bool = false
        ) {
            self.name = name
            self.object = object
            self.short = short == name ? nil : short
            self.file = file
            self.line = line
            self.isInlined = isInlined
            self.isAsync = isAsync
        }

        private enum CodingKeys: String, CodingKey {
            case name, object, short, file, line, inlined, async
        }

        /// Decodes a frame; `inlined` and `async` default to false (files of `liftoff.profile/1` have none).
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decode(String.self, forKey: .name)
            object = try container.decode(String.self, forKey: .object)
            short = try container.decodeIfPresent(String.self, forKey: .short)
            file = try container.decodeIfPresent(String.self, forKey: .file)
            line = try container.decodeIfPresent(Int.self, forKey: .line)
            isInlined = try container.decodeIfPresent(Bool.self, forKey: .inlined) ?? false
            isAsync = try container.decodeIfPresent(Bool.self, forKey: .async) ?? false
        }

        /// Encodes a frame, leaving out what it does not have.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(name, forKey: .name)
            try container.encode(object, forKey: .object)
            try container.encodeIfPresent(short, forKey: .short)
            try container.encodeIfPresent(file, forKey: .file)
            try container.encodeIfPresent(line, forKey: .line)
            if isInlined { try container.encode(true, forKey: .inlined) }
            if isAsync { try container.encode(true, forKey: .async) }
        }

        /// `File.swift:42 in StretchedHash.absorb(_:)`, or the function and its object when the
        /// frame has no source line: where a violation's or a hang's code is.
        public var placeDescription: String {
            if let location { return "\(location) in \(displayName)" }
            return "\(displayName) (\(object))"
        }

        /// The name reports show: ``short`` when there is one, else ``name``.
        public var displayName: String { short ?? name }

        /// `File.swift:42` (the file's last path component), when the frame has a file and line.
        public var location: String? { Frame.location(file: file, line: line) }

        /// `File.swift:42` for a source file and line, or nil when either is missing.
        public static func location(file: String?, line: Int?) -> String? {
            guard let file, let line else { return nil }
            let name = file.split(separator: "/").last.map(String.init) ?? file
            return "\(name):\(line)"
        }

        /// Whether this is a frame of Liftoff itself (its Swift modules or its C sampler), which
        /// reports fold away from the top of a violation's or hang's stack. The C library's
        /// functions Liftoff stands in for (`open`, `fopen`: `blocking.c`; `nanosleep`, `pthread_mutex_lock`: `waits.c`)
        /// are told by their file.
        public var isLiftoff: Bool { Frame.isLiftoff(name) || file.map(Frame.isLiftoffSource) == true }

        /// Whether a source file is one of Liftoff's stand-ins for the C library's functions.
        public static func isLiftoffSource(_ file: String) -> Bool {
            file.hasSuffix("CLiftoffSampler/blocking.c") || file.hasSuffix("CLiftoffSampler/waits.c")
        }

        /// Whether a full function name belongs to Liftoff's own code (``FrameClassifier/liftoff``).
        public static func isLiftoff(_ name: String) -> Bool { FrameClassifier.liftoff.owns(name) }
    }
}

extension Profile {
    private enum CodingKeys: String, CodingKey {
        case schema, metadata, timeOriginNs, phases, threads, frames, stacks, samples, counts
        case spans, marks, stateChanges, displayFrames, violations, termination, tasks, hangs, asyncTasks, processes, cache
        case diskFaults
    }

    /// Decodes a profile; the launch sections (spans, marks, state changes, frames, violations,
    /// tasks, hangs, Swift tasks, processes) may be absent and are then empty.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        schema = try container.decode(String.self, forKey: .schema)
        metadata = try container.decode(Metadata.self, forKey: .metadata)
        timeOriginNs = try container.decode(UInt64.self, forKey: .timeOriginNs)
        phases = try container.decode(Phases.self, forKey: .phases)
        threads = try container.decode([ThreadInfo].self, forKey: .threads)
        frames = try container.decode([Frame].self, forKey: .frames)
        stacks = try container.decode(StackTable.self, forKey: .stacks)
        samples = try container.decode(SampleTable.self, forKey: .samples)
        counts = try container.decode(SampleCounts.self, forKey: .counts)
        spans = try container.decodeIfPresent([Span].self, forKey: .spans) ?? []
        marks = try container.decodeIfPresent([Mark].self, forKey: .marks) ?? []
        stateChanges = try container.decodeIfPresent([StateChange].self, forKey: .stateChanges) ?? []
        displayFrames = try container.decodeIfPresent([DisplayFrame].self, forKey: .displayFrames) ?? []
        violations = try container.decodeIfPresent([Violation].self, forKey: .violations) ?? []
        termination = try container.decodeIfPresent(Termination.self, forKey: .termination)
        tasks = try container.decodeIfPresent([TaskRecord].self, forKey: .tasks) ?? []
        hangs = try container.decodeIfPresent([HangRecord].self, forKey: .hangs) ?? []
        asyncTasks = try container.decodeIfPresent([AsyncTask].self, forKey: .asyncTasks) ?? []
        processes = try container.decodeIfPresent([ProcessRecord].self, forKey: .processes) ?? []
        cache = try container.decodeIfPresent(CacheState.self, forKey: .cache)
        diskFaults = try container.decodeIfPresent(DiskFaults.self, forKey: .diskFaults)
    }
}

extension Profile {
    /// Where the user's code is in stack `index`: from the leaf, the first frame outside Liftoff
    /// that has a source line, else the first frame outside Liftoff; nil when every frame is
    /// Liftoff's or the index is out of range.
    public func userFrame(ofStack index: Int) -> Frame? {
        guard index >= 0, index < stacks.count else { return nil }
        let outside = frameIndices(ofStack: index).reversed().map { frames[$0] }.filter { !$0.isLiftoff }
        return outside.first { $0.location != nil } ?? outside.first
    }

    /// The frames of stack `index`, root first.
    public func frameIndices(ofStack index: Int) -> [Int] {
        var result: [Int] = []
        var current = index
        while current >= 0 {
            result.append(stacks.frame[current])
            current = stacks.parent[current]
        }
        return result.reversed()
    }

    /// The thread description for a kernel thread id, if the profile has one.
    public func thread(withID id: Int) -> ThreadInfo? {
        threads.first { $0.id == id }
    }
}
