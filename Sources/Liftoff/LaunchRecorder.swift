import CLiftoffSampler
import Foundation
import LiftoffProfile
import LiftoffSampler
import Synchronization

/// Records a launch: sampled stacks, named spans (sync and async, nested), marks, state
/// changes, frames and thread violations, into one `Profile`.
///
/// `Application.main` uses one when asked to; a server or command-line tool uses one directly:
///
/// ```swift
/// let recorder = try LaunchRecorder.start()          // at main entry: sampler on
/// let config = try recorder.span("load config") { try loadConfig() }
/// await recorder.span("connect") { await database.connect(config) }
/// recorder.ready()                                   // the first frame's equivalent: the launch ends
/// // ... the program runs on, at its bare cost ...
/// try recorder.finishAndWrite()                      // to $LIFTOFF_PROFILE_OUT, or liftoff-profiles/
/// ```
///
/// The launch ends at `ready()` or the first frame (``LaunchEnd``): sampling and task events stop
/// there, and spans, marks and frames begun later are not recorded, so a server that links Liftoff
/// runs on at its bare cost, and ``finishAndWrite(to:environment:)`` at shutdown builds a profile
/// of its launch alone. At most ``spanLimit`` spans are kept; ``droppedSpans`` counts the rest.
public final class LaunchRecorder: Sendable {
    /// When a launch ends: sampling and task events stop, and later spans are not recorded.
    public enum LaunchEnd: Sendable, Equatable {
        /// At ``LaunchRecorder/ready()`` or the first frame.
        case ready
        /// This long after ``LaunchRecorder/ready()`` or the first frame: for work that follows
        /// the launch at once (a cache warmed in the background, an app's deferred launch tasks).
        case afterReady(Duration)
        /// At ``LaunchRecorder/endLaunch()`` or when the profile is finished.
        case manual
    }

    /// The most spans a recorder keeps; later ones are counted in ``droppedSpans``.
    public static let spanLimit = 100_000

    /// Environment variable naming the file the profile is written to.
    public static let outputVariable = "LIFTOFF_PROFILE_OUT"

    private struct State {
        var spans: [Profile.Span] = []
        var marks: [Profile.Mark] = []
        var stateChanges: [Profile.StateChange] = []
        var frames: [Profile.DisplayFrame] = []
        var firstFrameNs: UInt64?
        var termination: (reason: String, phase: String, timeNs: UInt64, stack: [UInt], exactLeaf: Bool)?
        var tasks: [Profile.TaskRecord] = []
        var hangs: [Hang] = []
        var finished: Profile?
        /// Spans begun with `beginSpan` and not ended yet.
        var unended: Set<Int> = []
        /// When the launch ended (ns since the process start), once it has.
        var launchEndedNs: UInt64?
        /// Spans not recorded: begun after the launch ended, or past ``LaunchRecorder/spanLimit``.
        var droppedSpans = 0

        /// Whether a new span is recorded: the launch goes on and the limit is not reached; else
        /// it is counted as dropped.
        mutating func keepsSpan() -> Bool {
            guard launchEndedNs == nil, spans.count < LaunchRecorder.spanLimit else {
                droppedSpans &+= 1
                return false
            }
            return true
        }
    }

    @TaskLocal static var currentSpan: Int?

    private let recorder: ProfileRecorder
    private let state = Mutex(State())
    /// Whether the launch has ended, read without the lock by each span a server starts later.
    private let ended = Atomic(false)
    /// Whether this launch checks blocking calls: not while `liftoff record --count` counts its
    /// instructions, where a check that fires (a stack captured and symbolized) would be counted
    /// as the program's work, as often as the threads' timing makes it fire.
    private let checksBlockingCalls = ProcessInfo.processInfo.environment[ProfileRecorder.countedVariable] != "1"
    /// Spans not recorded because the launch had ended, counted without the lock.
    private let droppedAfterLaunch = Atomic(0)
    /// Held while a profile is built, so two threads finishing at once (the main thread and a
    /// watchdog) build it once.
    private let finishing = Mutex(())
    /// Under `liftoff profile`: each span as it begins and ends, for a run that ends by a signal.
    private let journal: SpanJournal?

    /// When this recorder's launch ends.
    public let launchEnd: LaunchEnd

    private init(recorder: ProfileRecorder, launchEnd: LaunchEnd) {
        self.recorder = recorder
        self.launchEnd = launchEnd
        self.journal = SpanJournal.open()
        // Blocking calls in the UI context are checked until the launch ends.
        if checksBlockingCalls { ThreadRules.armBlockingCalls() }
    }

    deinit {
        if checksBlockingCalls, !ended.load(ordering: .acquiring) { BlockingCalls.disarm() }
    }

    /// Starts recording: the sampler runs and the calling thread (normally the main thread) is
    /// registered. Call it as early in `main` as you can.
    /// - Parameters:
    ///   - configuration: how the sampler runs (its rate, which threads, and more).
    ///   - commandLine: the command line written into the profile (this process's by default).
    ///   - launchEnd: when the launch ends and recording stops (at `ready()` or the first
    ///     frame by default).
    /// - Throws: `SamplerError` when the sampler cannot start.
    public static func start(
        configuration: SamplerConfiguration = SamplerConfiguration(), commandLine: [String] = CommandLine.arguments,
        launchEnd: LaunchEnd = .ready
    ) throws -> LaunchRecorder {
        LaunchRecorder(
            recorder: try ProfileRecorder.start(configuration: configuration, commandLine: commandLine), launchEnd: launchEnd)
    }

    /// Ends the launch now: sampling and task events stop, and spans, marks and frames begun
    /// later are not recorded. ``LaunchEnd`` says when it is called for you; later calls do nothing.
    public func endLaunch() {
        let time = nowNs
        let first = state.withLock { state -> Bool in
            guard state.launchEndedNs == nil else { return false }
            state.launchEndedNs = time
            return true
        }
        guard first else { return }
        ended.store(true, ordering: .releasing)
        if checksBlockingCalls { BlockingCalls.disarm() }
        recorder.stopSampling()
        prepareProfile()
    }

    /// Starts naming the launch's addresses on a thread of idle priority (it runs only when no
    /// other thread wants the CPU), so that the profile written at shutdown takes milliseconds;
    /// what was read to name them is let go when it is done (``ProfileRecorder/prepare(events:)``).
    private func prepareProfile() {
        let thread = Thread { [self] in
            CurrentThread.lowerToIdlePriority()
            recorder.prepare(events: events(of: state.withLock { $0 }, violations: ThreadRules.violations))
        }
        thread.name = "liftoff-prepare"
        thread.start()
    }

    /// Whether the launch has ended (``endLaunch()``). Cheap: no lock is taken.
    public var launchEnded: Bool { ended.load(ordering: .acquiring) }

    /// Counts a span not recorded because the launch has ended, without taking the lock: what a
    /// tracer calls for each span a server starts after its launch.
    public func noteSpanAfterLaunch() {
        droppedAfterLaunch.wrappingAdd(1, ordering: .relaxed)
    }

    /// Spans not recorded: begun after the launch ended, or past ``spanLimit``.
    public var droppedSpans: Int {
        state.withLock { $0.droppedSpans } &+ droppedAfterLaunch.load(ordering: .relaxed)
    }

    /// Called at ready or the first frame: ends the launch as ``launchEnd`` says.
    private func launchBecameReady() {
        // Where `liftoff record --count instructions` stops counting.
        lo_launch_ready()
        switch launchEnd {
        case .ready:
            endLaunch()
        case .afterReady(let delay):
            // Whole seconds past a year's worth wait a year: no overflow, and the launch still ends.
            let (seconds, attoseconds) = delay.components
            let nanoseconds = min(max(seconds, 0), 31_536_000) * 1_000_000_000 + max(attoseconds, 0) / 1_000_000_000
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) { [self] in
                endLaunch()
            }
        case .manual:
            break
        }
    }

    /// `CLOCK_MONOTONIC` nanoseconds of the process start.
    public var timeOriginNs: UInt64 { recorder.timeOriginNs }

    /// Now, in nanoseconds since the process start.
    public var nowNs: UInt64 { NanosecondDuration.between(timeOriginNs, MonotonicClock.nowNs).nanoseconds }

    /// Runs `body` as a span named `name`; spans opened inside it are its children.
    public func span<T>(_ name: String, category: Profile.SpanCategory = .span, _ body: () throws -> T) rethrows -> T {
        let index = open(name, category: category)
        defer { if let index { close(index) } }
        return try LaunchRecorder.$currentSpan.withValue(index ?? LaunchRecorder.currentSpan) { try body() }
    }

    /// Runs async `body` as a span named `name`, in the caller's isolation (so `body` may touch
    /// the caller's state); spans opened inside it are its children. The samples of the Swift
    /// task running it belong to the span, on whatever threads the task runs.
    public func span<T>(
        _ name: String, category: Profile.SpanCategory = .span, isolation: isolated (any Actor)? = #isolation,
        _ body: () async throws -> T
    ) async rethrows -> T {
        let index = open(name, category: category)
        defer { if let index { close(index) } }
        return try await LaunchRecorder.$currentSpan.withValue(
            index ?? LaunchRecorder.currentSpan, operation: body, isolation: isolation)
    }

    /// Records a span that has already ended; `startNs` and `endNs` are `CLOCK_MONOTONIC` times.
    public func recordSpan(name: String, category: Profile.SpanCategory, startNs: UInt64, endNs: UInt64, cpuNs: UInt64? = nil) {
        let origin = timeOriginNs
        let thread = CurrentThread.id
        state.withLock {
            guard $0.keepsSpan() else { return }
            $0.spans.append(
                Profile.Span(
                    name: name, category: category, threadID: thread,
                    startNs: NanosecondDuration.between(origin, startNs).nanoseconds,
                    endNs: NanosecondDuration.between(origin, endNs).nanoseconds, cpuNs: cpuNs))
            journal?.begin(
                index: $0.spans.count - 1, parent: nil, category: category.rawValue, thread: thread, startNs: startNs, name: name)
            journal?.end(index: $0.spans.count - 1, endNs: endNs)
        }
    }

    /// Records a named instant.
    public func mark(_ name: Profile.MarkName) {
        let time = nowNs
        state.withLock { state in
            guard state.launchEndedNs == nil, state.marks.count < LaunchRecorder.spanLimit else { return }
            state.marks.append(Profile.Mark(name: name, timeNs: time))
        }
    }

    /// Records a named instant.
    public func mark(_ name: String) {
        mark(Profile.MarkName(name))
    }

    /// Marks the moment the program is ready (the first frame's equivalent for a server or
    /// tool); only the first call counts. The calling thread is where the path to ready ends.
    public func ready() {
        let time = nowNs
        let thread = CurrentThread.id
        let first = state.withLock { state -> Bool in
            guard state.firstFrameNs == nil, state.launchEndedNs == nil else { return false }
            state.firstFrameNs = time
            state.marks.append(Profile.Mark(name: .ready, timeNs: time, threadID: thread))
            return true
        }
        if first { launchBecameReady() }
    }

    /// Records a change of execution state.
    public func recordStateChange(from: ApplicationState, to: ApplicationState) {
        let time = nowNs
        state.withLock {
            $0.stateChanges.append(Profile.StateChange(timeNs: time, from: from.rawValue, to: to.rawValue))
        }
    }

    /// Records a committed frame; the first one is the first frame.
    func recordFrame(index: Int, iterationStartNs: UInt64, viewsDrawn: Int) {
        let commit = nowNs
        let start = NanosecondDuration.between(timeOriginNs, iterationStartNs).nanoseconds
        let first = state.withLock { state -> Bool in
            guard state.launchEndedNs == nil, state.frames.count < LaunchRecorder.spanLimit else { return false }
            state.frames.append(Profile.DisplayFrame(index: index, startNs: start, commitNs: commit, viewsDrawn: viewsDrawn))
            guard state.firstFrameNs == nil else { return false }
            state.firstFrameNs = commit
            state.marks.append(Profile.Mark(name: .firstFrame, timeNs: commit))
            return true
        }
        if first { launchBecameReady() }
    }

    /// Records the hangs a watcher found.
    public func recordHangs(_ hangs: [Hang]) {
        state.withLock { $0.hangs += hangs }
    }

    /// Records the launch tasks of a scheduler (replacing earlier records).
    public func recordTasks(_ records: [Profile.TaskRecord]) {
        state.withLock { $0.tasks = records }
    }

    /// Records why the app was terminated, with the main thread's stack.
    func recordTermination(reason: String, phase: String, stack: [UInt], exactLeaf: Bool = false) {
        let time = nowNs
        state.withLock { $0.termination = (reason, phase, time, stack, exactLeaf) }
    }

    /// Stops sampling and returns the profile (the same profile on later calls).
    public func finish(violations: [ThreadViolation] = ThreadRules.violations) -> Profile {
        finishing.withLock { _ in build(violations: violations) }
    }

    private func build(violations: [ThreadViolation]) -> Profile {
        if let done = state.withLock({ $0.finished }) { return done }
        // A span still open (a service that never reported running) ends here, marked as such.
        let end = nowNs
        let snapshot = state.withLock { state in
            for index in state.unended where state.spans.indices.contains(index) {
                state.spans[index].endNs = max(end, state.spans[index].startNs)
                state.spans[index].attributes = (state.spans[index].attributes ?? [:]).merging(
                    ["liftoff.unended": "true"]) { $1 }
            }
            state.unended = []
            return state
        }
        let profile = recorder.finish(symbolizer: nil, events: events(of: snapshot, violations: violations))
        state.withLock { $0.finished = profile }
        return profile
    }

    /// The launch's events as `snapshot` holds them, with `violations`.
    private func events(of snapshot: State, violations: [ThreadViolation]) -> LaunchEvents {
        let origin = timeOriginNs
        var events = LaunchEvents()
        events.spans = snapshot.spans
        events.marks = snapshot.marks
        events.stateChanges = snapshot.stateChanges
        events.displayFrames = snapshot.frames
        events.tasks = snapshot.tasks
        events.firstFrameNs = snapshot.firstFrameNs
        events.violations = violations.map { violation in
            let record = Profile.Violation(
                rule: violation.rule, message: violation.message, threadID: violation.threadID,
                threadName: violation.threadName, timeNs: NanosecondDuration.between(origin, violation.timeNs).nanoseconds,
                stack: nil, count: violation.count)
            return (record, violation.stack)
        }
        events.hangs = snapshot.hangs.map { hang in
            let record = Profile.HangRecord(
                startNs: NanosecondDuration.between(origin, hang.startNs).nanoseconds, durationNs: hang.durationNs,
                running: hang.running, stacks: [])
            return (record, hang.stacks)
        }
        if let termination = snapshot.termination {
            let record = Profile.Termination(
                reason: termination.reason, phase: termination.phase, timeNs: termination.timeNs, stack: nil)
            events.termination = (record, termination.stack, termination.exactLeaf)
        }
        return events
    }

    /// Finishes and writes the profile: to `url` when given, else to `$LIFTOFF_PROFILE_OUT`, else
    /// to ``defaultProfileURL(executable:currentDirectory:)`` (`liftoff-profiles/NAME.json` in the
    /// current directory), saying where on standard error. An empty `LIFTOFF_PROFILE_OUT`
    /// writes nothing.
    /// - Parameters:
    ///   - url: the file to write (by default `$LIFTOFF_PROFILE_OUT`, else the default file).
    ///   - environment: where `LIFTOFF_PROFILE_OUT` is looked up (the process's own by default).
    /// - Returns: the profile and where it was written (nil when `LIFTOFF_PROFILE_OUT` is empty).
    /// - Throws: `ProfileError` when the file cannot be written.
    @discardableResult
    public func finishAndWrite(
        to url: URL? = nil, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> (profile: Profile, url: URL?) {
        let profile = finish()
        let written = try LaunchRecorder.write(profile, to: url, environment: environment)
        // Under `liftoff profile` the agent kept the sampler's store to write it should the
        // program end by a signal first: the profile is written, so there is nothing left to keep.
        if Sampler.keepsStoreForAgent { Sampler.clearStore() }
        return (profile, written)
    }

    private static func write(_ profile: Profile, to url: URL?, environment: [String: String]) throws -> URL? {
        if let url {
            try profile.write(to: url)
            return url
        }
        if let named = environment[LaunchRecorder.outputVariable] {
            guard !named.isEmpty else { return nil }
            let target = URL(fileURLWithPath: named)
            try profile.write(to: target)
            return target
        }
        let target = LaunchRecorder.defaultProfileURL()
        try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        try profile.write(to: target)
        let note = "liftoff: wrote the launch profile to \(target.path) (set \(LaunchRecorder.outputVariable) to choose the file, or to an empty value to write none)\n"
        FileHandle.standardError.write(Data(note.utf8))
        return target
    }

    /// Where ``finishAndWrite(to:environment:)`` writes when `LIFTOFF_PROFILE_OUT` is unset:
    /// `liftoff-profiles/EXECUTABLE.json` in `currentDirectory`, or in the temporary directory
    /// when `currentDirectory` cannot be written. Each run replaces the last one's file.
    public static func defaultProfileURL(
        executable: String = ProcessInfo.processInfo.processName,
        currentDirectory: String = FileManager.default.currentDirectoryPath
    ) -> URL {
        let name = executable.isEmpty ? "profile" : executable.replacingOccurrences(of: "/", with: "-")
        let writable = FileManager.default.isWritableFile(atPath: currentDirectory)
        let base = writable ? URL(fileURLWithPath: currentDirectory) : FileManager.default.temporaryDirectory
        return base.appendingPathComponent("liftoff-profiles").appendingPathComponent("\(name).json")
    }

    /// Opens a span in the calling thread and Swift task, under `parent` (the current span by
    /// default); nil when it is not recorded (the launch has ended, or the limit is reached).
    func open(
        _ name: String, category: Profile.SpanCategory, parent: Int?? = nil, startNs: UInt64? = nil,
        attributes: [String: String]? = nil, unended: Bool = false
    ) -> Int? {
        let start = startNs ?? nowNs
        let thread = CurrentThread.id
        let task = CurrentThread.swiftTask
        let parent = parent ?? LaunchRecorder.currentSpan
        return state.withLock { state -> Int? in
            guard state.keepsSpan() else { return nil }
            state.spans.append(
                Profile.Span(
                    name: name, category: category, threadID: thread, startNs: start, endNs: start, parent: parent,
                    task: task == 0 ? nil : UInt64(task), attributes: attributes))
            if unended { state.unended.insert(state.spans.count - 1) }
            journal?.begin(
                index: state.spans.count - 1, parent: parent, category: category.rawValue, thread: thread,
                startNs: timeOriginNs &+ start, name: name)
            return state.spans.count - 1
        }
    }

    /// Renames a span and adds to its attributes.
    func amend(_ index: Int, name: String?, attributes: [String: String]) {
        state.withLock { state in
            guard state.spans.indices.contains(index) else { return }
            if let name {
                state.spans[index].name = name
                journal?.rename(index: index, name: name)
            }
            guard !attributes.isEmpty else { return }
            state.spans[index].attributes = (state.spans[index].attributes ?? [:]).merging(attributes) { $1 }
        }
    }

    func close(_ index: Int, endNs: UInt64? = nil) {
        let end = endNs ?? nowNs
        state.withLock { state in
            guard state.spans.indices.contains(index) else { return }
            state.spans[index].endNs = max(end, state.spans[index].startNs)
            state.unended.remove(index)
            journal?.end(index: index, endNs: timeOriginNs &+ state.spans[index].endNs)
        }
    }
}
