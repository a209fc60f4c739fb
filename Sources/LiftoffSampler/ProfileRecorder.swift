import CLiftoffSampler
import Foundation
import Synchronization
import LiftoffProfile

#if canImport(Glibc)
import Glibc
#endif

/// Records one profile: starts the sampler with the calling thread registered, and on
/// ``finish(symbolizer:events:)`` stops it and builds the ``Profile``: metadata, phases,
/// samples, and the launch's events with their stacks.
///
/// ```swift
/// let recorder = try ProfileRecorder.start()
/// runLaunchWork()
/// let profile = recorder.finish()
/// try profile.write(to: URL(fileURLWithPath: "profile.json"))
/// ```
public final class ProfileRecorder: Sendable {
    /// Environment variable a launcher sets to the `CLOCK_MONOTONIC` nanoseconds of the spawn.
    public static let launchTimeVariable = "LIFTOFF_LAUNCH_NS"

    private let configuration: SamplerConfiguration
    private let commandLine: [String]
    private let startTime: Date
    private let processStartNs: UInt64
    private let mainEntryNs: UInt64
    private let registeredThread: Int
    /// What the sampler recorded, and when it stopped, once stopped.
    private let stopped = Mutex<(recording: SamplerRecording, endNs: UInt64)?>(nil)
    /// What ``prepare(events:)`` learned: a symbolizer that has answered every address of the
    /// recording, and the short names of its Swift symbols.
    private let prepared = Mutex<(symbolizer: ELFSymbolizer, shortNames: [String: String])?>(nil)
    /// Set when a profile is being built, so that a preparation still under way stops.
    private let finishing = Atomic(false)

    private init(configuration: SamplerConfiguration, commandLine: [String], mainEntryNs: UInt64) {
        self.configuration = configuration
        self.commandLine = commandLine
        self.startTime = Date()
        self.mainEntryNs = mainEntryNs
        self.processStartNs = ProfileRecorder.processStart(now: mainEntryNs)
        self.registeredThread = CurrentThread.id
    }

    /// The environment variable `liftoff record --count` sets to `1` while it counts a launch's
    /// instructions under valgrind: the recorder then records spans, marks and the ready point
    /// but starts no sampler, whose timer signals would make the count differ from run to run,
    /// and a `LaunchRecorder` checks no blocking call.
    public static let countedVariable = "LIFTOFF_COUNTED"

    /// Starts sampling and registers the calling thread (as `main` when it is the main thread).
    /// - Throws: ``SamplerError`` when the sampler cannot start.
    public static func start(
        configuration: SamplerConfiguration = SamplerConfiguration(),
        commandLine: [String] = CommandLine.arguments
    ) throws -> ProfileRecorder {
        let now = MonotonicClock.nowNs
        Sampler.resetThreadNames()
        if ProcessInfo.processInfo.environment[countedVariable] != "1" {
            try Sampler.start(configuration)
            try Sampler.registerCurrentThread()
        }
        return ProfileRecorder(configuration: configuration, commandLine: commandLine, mainEntryNs: now)
    }

    /// Stops sampling now and keeps the recording for ``finish(symbolizer:events:)``: the launch is
    /// over, and the program runs on at its own cost. Later calls do nothing.
    public func stopSampling() {
        stopped.withLock { kept in
            guard kept == nil else { return }
            let endNs = MonotonicClock.nowNs
            try? Sampler.unregisterThread(registeredThread)
            kept = (Sampler.stop(), endNs)
        }
    }

    /// Whether ``stopSampling()`` (or a finish) stopped the sampler.
    public var stoppedSampling: Bool { stopped.withLock { $0 != nil } }

    /// Stops sampling and builds the profile, symbolizing with `symbolizer` (by default an
    /// ``ELFSymbolizer`` made after sampling stopped, so its work is not in the profile).
    public func finish(symbolizer: (any Symbolizer)? = nil) -> Profile {
        finish(symbolizer: symbolizer, events: LaunchEvents())
    }

    /// Stops sampling and builds the whole profile: the samples, with `events` (spans, marks,
    /// tasks, violations, hangs, a termination) and their stacks in its tables, and each sample
    /// attributed to the span and task it ran in. This is the one place a profile is assembled
    /// from a recording.
    public func finish(symbolizer: (any Symbolizer)?, events: LaunchEvents) -> Profile {
        stopSampling()
        finishing.store(true, ordering: .releasing)
        let (recording, endNs) = stopped.withLock { $0! }
        let ready = prepared.withLock { $0 }
        var builder = ProfileBuilder(
            symbolizer: symbolizer ?? ready?.symbolizer ?? ELFSymbolizer(), timeOriginNs: processStartNs)
        if symbolizer == nil, let ready { builder.knownShortNames = ready.shortNames }
        let stacks = add(recording, events: events, to: &builder, until: { false })!
        let premain = lo_premain_ns()
        var phases = Profile.Phases(
            processStartNs: 0,
            preMainNs: NanosecondDuration.between(processStartNs, premain).nanoseconds,
            mainEntryNs: NanosecondDuration.between(processStartNs, mainEntryNs).nanoseconds,
            endNs: NanosecondDuration.between(processStartNs, endNs).nanoseconds,
            firstFrameNs: events.firstFrameNs)
        // An agent that sampled before this program's constructor ran may have made the kernel
        // count faults as minor: the counts are then lower bounds.
        // Only from a known spawn (a launcher's LIFTOFF_LAUNCH_NS): otherwise the start is the
        // constructor's own time.
        if processStartNs < premain {
            phases.preMain = ProcessCounters.beforeMain?.preMain(
                since: processStartNs, faultsAtLeast: ProcessInfo.processInfo.environment["LIFTOFF_AGENT_OUT"] != nil)
        }
        var profile = builder.build(
            metadata: ProfileRecorder.metadata(
                commandLine: commandLine, startTime: startTime, rateHz: configuration.rateHz),
            phases: phases, threadNames: recording.threadNames, mainThreadID: CurrentThread.mainThreadID,
            counts: recording.counts)
        profile.spans = events.spans
        profile.marks = events.marks
        profile.stateChanges = events.stateChanges
        profile.displayFrames = events.displayFrames
        profile.tasks = events.tasks
        profile.asyncTasks = TaskEvent.asyncTasks(from: recording.taskEvents, originNs: processStartNs)
        profile.counts.lostTaskEvents = recording.lostTaskEvents
        profile.hangs = zip(events.hangs, stacks.hangs).map { hang, stacks in
            var record = hang.hang
            record.stacks = stacks.compactMap { $0 }
            return record
        }
        profile.violations = zip(events.violations, stacks.violations).map { violation, stack in
            var record = violation.violation
            record.stack = stack
            return record
        }
        if let termination = events.termination {
            profile.termination = termination.termination
            profile.termination?.stack = stacks.termination ?? nil
        }
        profile.attributeSamples()
        return profile
    }

    /// Once sampling has stopped, does now the slow part of building a profile (reading each
    /// object's symbols and debug information, naming every address, asking the toolchain for
    /// short names), on the calling thread, and keeps only the answers: a later
    /// ``finish(symbolizer:events:)`` then takes milliseconds. What was read of the objects is
    /// let go. Stops early, keeping nothing, when a profile is being built meanwhile; does
    /// nothing before sampling stops or after a profile was built.
    public func prepare(events: LaunchEvents) {
        guard !finishing.load(ordering: .acquiring), let (recording, _) = stopped.withLock({ $0 }) else { return }
        let symbolizer = ELFSymbolizer()
        var builder = ProfileBuilder(symbolizer: symbolizer, timeOriginNs: processStartNs)
        let cancelled = { self.finishing.load(ordering: .relaxed) }
        guard add(recording, events: events, to: &builder, until: cancelled) != nil else { return }
        let shortNames = builder.swiftShortNames()
        symbolizer.releaseObjectData()
        lo_return_free_memory()  // the tables' memory goes back to the system, not only to malloc
        guard !cancelled() else { return }
        prepared.withLock { $0 = (symbolizer, shortNames) }
    }

    /// Whether ``prepare(events:)`` finished: a profile built now reads no object.
    public var isPrepared: Bool { prepared.withLock { $0 != nil } }

    /// Adds the recording's samples and the events' stacks to `builder`; the events' stack
    /// indices, or nil when `cancelled` said to stop.
    private func add(
        _ recording: SamplerRecording, events: LaunchEvents, to builder: inout ProfileBuilder, until cancelled: () -> Bool
    ) -> (violations: [Int?], hangs: [[Int?]], termination: Int??)? {
        builder.intervalNs = Profile.samplingIntervalNs(rateHz: configuration.rateHz)
        builder.keepsExecutorFrames =
            configuration.keepsExecutorFrames
            || ProcessInfo.processInfo.environment[SamplerConfiguration.executorFramesVariable] == "1"
        for (index, sample) in recording.samples.enumerated() {
            if index % 1_024 == 0, cancelled() { return nil }
            builder.add(sample)
        }
        // Violation stacks hold return addresses; hang stacks and a watchdog's were taken from
        // another thread by a signal and start with an exact program counter.
        let violationStacks = events.violations.map { builder.addStack($0.stack) }
        let hangStacks = events.hangs.map { hang in hang.stacks.map { builder.addStack($0, leafIsExact: true) } }
        let terminationStack = events.termination.map { builder.addStack($0.stack, leafIsExact: $0.exactLeaf) }
        return (violationStacks, hangStacks, terminationStack)
    }

    /// `CLOCK_MONOTONIC` nanoseconds of the process start: every profile time is relative to it.
    public var timeOriginNs: UInt64 { processStartNs }

    /// The process start: the launcher's `LIFTOFF_LAUNCH_NS` when it is set, plausible and
    /// not after `now`, else the pre-main timestamp.
    static func processStart(now: UInt64) -> UInt64 {
        let premain = lo_premain_ns()
        if let text = ProcessInfo.processInfo.environment[launchTimeVariable], let spawn = UInt64(text),
            spawn <= premain, premain - spawn < 60_000_000_000
        {
            return spawn
        }
        return min(premain, now)
    }

    /// Metadata describing this process and machine.
    public static func metadata(commandLine: [String], startTime: Date, rateHz: Int) -> Profile.Metadata {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return Profile.Metadata(
            liftoffVersion: LiftoffVersion.current, commandLine: commandLine, host: host(),
            startTime: formatter.string(from: startTime), buildConfiguration: buildConfiguration,
            samplingRateHz: rateHz)
    }

    /// `debug` or `release`, as this code was compiled.
    public static var buildConfiguration: String {
        #if DEBUG
        return "debug"
        #else
        return "release"
        #endif
    }

    package static func host() -> Profile.Host {
        var names = utsname()
        uname(&names)
        func text<T>(_ field: T) -> String {
            withUnsafeBytes(of: field) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
        }
        return Profile.Host(
            name: text(names.nodename), os: "\(text(names.sysname)) \(text(names.release))",
            architecture: text(names.machine), cpuCount: ProcessInfo.processInfo.activeProcessorCount)
    }
}

/// What a launch recorded besides samples, in the profile's terms, with the raw stacks its
/// stack table will hold. Times are nanoseconds since the process start.
public struct LaunchEvents: Sendable {
    /// Timed spans.
    public var spans: [Profile.Span] = []
    /// Named instants.
    public var marks: [Profile.Mark] = []
    /// Execution-state changes, in order.
    public var stateChanges: [Profile.StateChange] = []
    /// Committed frames, in order.
    public var displayFrames: [Profile.DisplayFrame] = []
    /// Launch tasks.
    public var tasks: [Profile.TaskRecord] = []
    /// The first frame (or ready moment).
    public var firstFrameNs: UInt64?
    /// Thread-rule violations, each with its captured stack (return addresses, leaf first).
    public var violations: [(violation: Profile.Violation, stack: [UInt])] = []
    /// Hangs, each with the main thread's stacks taken while it hung (exact program counters first).
    public var hangs: [(hang: Profile.HangRecord, stacks: [[UInt]])] = []
    /// Why the app was terminated, with the main thread's stack; `exactLeaf` when it was taken
    /// from another thread.
    public var termination: (termination: Profile.Termination, stack: [UInt], exactLeaf: Bool)?

    /// Creates an empty set of events.
    public init() {}
}
