import Foundation
import LiftoffProfile
import LiftoffSampler
import Synchronization

/// Records a launch: sampled stacks, named spans (sync and async, nested), marks, state
/// changes, frames and thread violations, into one ``Profile``.
///
/// `Application.main` uses one when asked to; a server or command-line tool uses one directly:
///
/// ```swift
/// let recorder = try LaunchRecorder.start()          // at main entry: sampler on
/// let config = try recorder.span("load config") { try loadConfig() }
/// await recorder.span("connect") { await database.connect(config) }
/// recorder.ready()                                   // the first frame's equivalent
/// try recorder.finishAndWrite()                      // to $LIFTOFF_PROFILE_OUT, or liftoff-profiles/
/// ```
public final class LaunchRecorder: Sendable {
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
    }

    @TaskLocal static var currentSpan: Int?

    private let recorder: ProfileRecorder
    private let state = Mutex(State())
    /// Held while a profile is built, so two threads finishing at once (the main thread and a
    /// watchdog) build it once.
    private let finishing = Mutex(())

    private init(recorder: ProfileRecorder) {
        self.recorder = recorder
    }

    /// Starts recording: the sampler runs and the calling thread (normally the main thread) is
    /// registered. Call it as early in `main` as you can.
    /// - Throws: ``SamplerError`` when the sampler cannot start.
    public static func start(
        configuration: SamplerConfiguration = SamplerConfiguration(), commandLine: [String] = CommandLine.arguments
    ) throws -> LaunchRecorder {
        LaunchRecorder(recorder: try ProfileRecorder.start(configuration: configuration, commandLine: commandLine))
    }

    /// `CLOCK_MONOTONIC` nanoseconds of the process start.
    public var timeOriginNs: UInt64 { recorder.timeOriginNs }

    /// Now, in nanoseconds since the process start.
    public var nowNs: UInt64 { NanosecondDuration.between(timeOriginNs, MonotonicClock.nowNs).nanoseconds }

    /// Runs `body` as a span named `name`; spans opened inside it are its children.
    public func span<T>(_ name: String, category: Profile.SpanCategory = .span, _ body: () throws -> T) rethrows -> T {
        let index = open(name, category: category)
        defer { close(index) }
        return try LaunchRecorder.$currentSpan.withValue(index) { try body() }
    }

    /// Runs async `body` as a span named `name`, in the caller's isolation (so `body` may touch
    /// the caller's state); spans opened inside it are its children. The samples of the Swift
    /// task running it belong to the span, on whatever threads the task runs.
    public func span<T>(
        _ name: String, category: Profile.SpanCategory = .span, isolation: isolated (any Actor)? = #isolation,
        _ body: () async throws -> T
    ) async rethrows -> T {
        let index = open(name, category: category)
        defer { close(index) }
        return try await LaunchRecorder.$currentSpan.withValue(index, operation: body, isolation: isolation)
    }

    /// Records a span that has already ended; `startNs` and `endNs` are `CLOCK_MONOTONIC` times.
    public func recordSpan(name: String, category: Profile.SpanCategory, startNs: UInt64, endNs: UInt64, cpuNs: UInt64? = nil) {
        let origin = timeOriginNs
        let thread = CurrentThread.id
        state.withLock {
            $0.spans.append(
                Profile.Span(
                    name: name, category: category, threadID: thread,
                    startNs: NanosecondDuration.between(origin, startNs).nanoseconds,
                    endNs: NanosecondDuration.between(origin, endNs).nanoseconds, cpuNs: cpuNs))
        }
    }

    /// Records a named instant.
    public func mark(_ name: Profile.MarkName) {
        let time = nowNs
        state.withLock { $0.marks.append(Profile.Mark(name: name, timeNs: time)) }
    }

    /// Records a named instant.
    public func mark(_ name: String) {
        mark(Profile.MarkName(name))
    }

    /// Marks the moment the program is ready (the first frame's equivalent for a server or
    /// tool); only the first call counts.
    public func ready() {
        let time = nowNs
        state.withLock { state in
            guard state.firstFrameNs == nil else { return }
            state.firstFrameNs = time
            state.marks.append(Profile.Mark(name: .ready, timeNs: time))
        }
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
        state.withLock { state in
            state.frames.append(Profile.DisplayFrame(index: index, startNs: start, commitNs: commit, viewsDrawn: viewsDrawn))
            if state.firstFrameNs == nil {
                state.firstFrameNs = commit
                state.marks.append(Profile.Mark(name: .firstFrame, timeNs: commit))
            }
        }
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
        let profile = recorder.finish(symbolizer: nil, events: events)
        state.withLock { $0.finished = profile }
        return profile
    }

    /// Finishes and writes the profile: to `url` when given, else to `$LIFTOFF_PROFILE_OUT`, else
    /// to ``defaultProfileURL(executable:currentDirectory:)`` (`liftoff-profiles/NAME.json` in the
    /// current directory), saying where on standard error. An empty `LIFTOFF_PROFILE_OUT`
    /// writes nothing.
    /// - Parameter environment: where `LIFTOFF_PROFILE_OUT` is looked up (the process's own by default).
    /// - Returns: the profile and where it was written (nil when `LIFTOFF_PROFILE_OUT` is empty).
    /// - Throws: ``ProfileError`` when the file cannot be written.
    @discardableResult
    public func finishAndWrite(
        to url: URL? = nil, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> (profile: Profile, url: URL?) {
        let profile = finish()
        if let url {
            try profile.write(to: url)
            return (profile, url)
        }
        if let named = environment[LaunchRecorder.outputVariable] {
            guard !named.isEmpty else { return (profile, nil) }
            let target = URL(fileURLWithPath: named)
            try profile.write(to: target)
            return (profile, target)
        }
        let target = LaunchRecorder.defaultProfileURL()
        try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        try profile.write(to: target)
        let note = "liftoff: wrote the launch profile to \(target.path) (set \(LaunchRecorder.outputVariable) to choose the file, or to an empty value to write none)\n"
        FileHandle.standardError.write(Data(note.utf8))
        return (profile, target)
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

    /// Opens a span in the calling thread and Swift task, under `parent` (the current span by default).
    func open(
        _ name: String, category: Profile.SpanCategory, parent: Int?? = nil, startNs: UInt64? = nil,
        attributes: [String: String]? = nil, unended: Bool = false
    ) -> Int {
        let start = startNs ?? nowNs
        let thread = CurrentThread.id
        let task = CurrentThread.swiftTask
        let parent = parent ?? LaunchRecorder.currentSpan
        return state.withLock { state in
            state.spans.append(
                Profile.Span(
                    name: name, category: category, threadID: thread, startNs: start, endNs: start, parent: parent,
                    task: task == 0 ? nil : UInt64(task), attributes: attributes))
            if unended { state.unended.insert(state.spans.count - 1) }
            return state.spans.count - 1
        }
    }

    /// Renames a span and adds to its attributes.
    func amend(_ index: Int, name: String?, attributes: [String: String]) {
        state.withLock { state in
            guard state.spans.indices.contains(index) else { return }
            if let name { state.spans[index].name = name }
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
        }
    }
}
