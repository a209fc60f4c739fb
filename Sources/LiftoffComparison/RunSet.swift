import Foundation
import LiftoffAnalysis
import LiftoffProfile

/// How `liftoff record` measured a run's time to first frame.
public enum RunMeasure: String, Codable, Sendable, CaseIterable {
    /// The program wrote a profile: its first frame (or ready mark).
    case profile
    /// The program printed a line matching `--ready`.
    case ready
    /// The program exited.
    case exit
}

/// A failure to load recorded runs, as one sentence.
public struct RunSetError: Error, CustomStringConvertible, Sendable {
    /// The sentence.
    public var description: String
    init(_ description: String) { self.description = description }
}

/// The recorded launches of one build: the profiles of its successful runs.
public struct RunSet: Sendable {
    /// Where the runs were loaded from.
    public var folder: URL
    /// The profiles of the successful runs, in run order.
    public var profiles: [Profile]
    /// Runs that failed (crashed, timed out, exited non-zero, or wrote no profile).
    public var failedRuns: Int
    /// How time to first frame was measured (`liftoff record`'s `measure`); `profile` for a
    /// folder of profiles.
    public var measure: RunMeasure
    /// Each successful run's counters, in the order of `profiles` (nil where none were read).
    public var counters: [RunCounters?] = []
    /// Each counted run's callgrind output (`record --count instructions`); empty when none
    /// were counted. ``counts()`` reads them.
    public var countedFiles: [URL] = []
    /// Counted runs that failed, each with why.
    public var failedCounts: [String] = []

    /// Whether any run was counted.
    public var isCounted: Bool { !countedFiles.isEmpty }

    /// The page cache the runs started with: `cold`, `cold-system`, `warm` or `as-is` (`record --cache`; a
    /// profile that does not say is `as-is`), or `mixed` when the runs differ.
    public var cacheMode: String {
        let modes = Set(profiles.map { $0.cache?.mode ?? "as-is" })
        return modes.count == 1 ? modes.first ?? "as-is" : modes.isEmpty ? "as-is" : "mixed"
    }

    /// Whether the runs started with their files out of the page cache (`cold` or `cold-system`).
    public var startsCold: Bool { cacheMode == "cold" || cacheMode == "cold-system" }

    /// The counted runs' instructions, each read from its callgrind files.
    /// - Throws: `RunSetError` naming a file that is missing or not callgrind's.
    public func counts() throws -> [CallgrindCounts] {
        do {
            return try countedFiles.map { try CallgrindCounts.read(files: CallgrindCounts.parts(of: $0)) }
        } catch let error as CallgrindCounts.ReadError {
            throw RunSetError(error.description)
        }
    }

    /// Creates a run set from profiles already in memory.
    public init(folder: URL, profiles: [Profile], failedRuns: Int = 0, measure: RunMeasure = .profile) {
        self.folder = folder
        self.profiles = profiles
        self.failedRuns = failedRuns
        self.measure = measure
    }

    /// Loads a folder written by `liftoff record` (its `record.json`, or the journal of an
    /// interrupted recording), or every `*.json`
    /// profile in a folder, or a single profile file.
    /// - Throws: `RunSetError` naming the folder or file that is missing or unreadable.
    public static func load(_ path: String) throws -> RunSet {
        let url = URL(fileURLWithPath: path)
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else {
            throw RunSetError("\(path) does not exist.")
        }
        if !isFolder.boolValue {
            return RunSet(folder: url.deletingLastPathComponent(), profiles: [try loadProfile(url)])
        }
        let manifestURL = url.appendingPathComponent("record.json")
        let journalURL = url.appendingPathComponent(RecordManifest.journalName)
        let manifest: RecordManifest?
        if FileManager.default.fileExists(atPath: manifestURL.path) {
            do {
                manifest = try JSONDecoder().decode(RecordManifest.self, from: Data(contentsOf: manifestURL))
            } catch {
                throw RunSetError("\(manifestURL.path) is not a record.json written by liftoff record.")
            }
            if let schema = manifest?.schema, schema != RecordManifest.currentSchema {
                throw RunSetError(
                    "\(manifestURL.path) has schema \(String(reflecting: schema)); this liftoff reads \(RecordManifest.currentSchema) only.")
            }
        } else if let journal = try? Data(contentsOf: journalURL) {
            // An interrupted recording: its journal has every run that finished.
            manifest = try RecordManifest.readJournal(journal, path: journalURL.path)
        } else {
            manifest = nil
        }
        if let manifest {
            var profiles: [Profile] = []
            var counters: [RunCounters?] = []
            var failed = 0
            let files = manifest.runs.compactMap { run in run.succeeded ? run.profile.map(url.appendingPathComponent) : nil }
            var loaded = loadConcurrently(files).makeIterator()
            for run in manifest.runs {
                guard run.succeeded else {
                    failed += 1
                    continue
                }
                counters.append(run.counters)
                if run.profile != nil, let result = loaded.next() {
                    do {
                        var profile = try result.get()
                        if profile.cache == nil { profile.cache = run.cache }
                        profiles.append(profile)
                    } catch let error as ProfileError {
                        throw RunSetError(error.message)
                    }
                } else {
                    var profile = try timedProfile(run, command: manifest.command, source: url.path)
                    profile.cache = run.cache
                    profiles.append(profile)
                }
            }
            var set = RunSet(folder: url, profiles: profiles, failedRuns: failed, measure: manifest.measure)
            set.counters = counters
            for run in manifest.counted ?? [] {
                guard let file = run.file else {
                    set.failedCounts.append(run.outcome)
                    continue
                }
                set.countedFiles.append(url.appendingPathComponent(file))
            }
            return set
        }
        // A folder of profiles, such as one `liftoff demo` wrote: its other JSON files (speedscope,
        // Chrome trace) are not profiles and are passed over.
        let files = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        var profiles: [Profile] = []
        let urls = files.filter({ $0.hasSuffix(".json") }).sorted().map(url.appendingPathComponent)
        for result in loadConcurrently(urls) {
            do {
                profiles.append(try result.get())
            } catch let error as ProfileError where error.code == .wrongSchema {
                continue
            } catch let error as ProfileError {
                throw RunSetError(error.message)
            }
        }
        return RunSet(folder: url, profiles: profiles)
    }

    /// A program without Liftoff, as a profile: its first frame is its ready line (or its exit).
    static func timedProfile(_ run: RecordManifest.Run, command: [String], source: String) throws -> Profile {
        func nanoseconds(_ ms: Double) throws -> UInt64 {
            guard ms.isFinite, ms >= 0, ms < 1e12 else {
                throw RunSetError("\(source) has run \(run.index) lasting \(ms) ms, which is not a time.")
            }
            return UInt64((ms * 1e6).rounded())
        }
        let exitNs = try nanoseconds(run.exitMs)
        let readyNs = try run.readyMs.map(nanoseconds) ?? exitNs
        return Profile(
            metadata: Profile.Metadata(
                liftoffVersion: LiftoffVersion.current, commandLine: command,
                host: Profile.Host(name: "", os: "", architecture: "", cpuCount: 0), startTime: "",
                buildConfiguration: "unknown", samplingRateHz: 0),
            timeOriginNs: 0,
            phases: Profile.Phases(processStartNs: 0, preMainNs: 0, mainEntryNs: 0, endNs: exitNs, firstFrameNs: readyNs))
    }

    /// The profiles of `urls`, in their order, read on every core: a recording is a dozen files or more.
    private static func loadConcurrently(_ urls: [URL]) -> [Result<Profile, any Error>] {
        urls.concurrentMap { url in Result { try Profile.load(from: url) } }
    }

    private static func loadProfile(_ url: URL) throws -> Profile {
        do {
            return try Profile.load(from: url)
        } catch let error as ProfileError {
            throw RunSetError(error.message)
        }
    }

    /// Each metric's value in every run that has it, in milliseconds.
    ///
    /// - `time to first frame` always (runs without a first frame have no value);
    /// - with `phases`: `pre-main` (the final program's, from its exec), `wrappers` (what the
    ///   process ran before it, when it did), the loader's `pre-main: on CPU`, `pre-main: waiting
    ///   for a core` and `pre-main: blocked` (where its counts were read), `main → first frame`,
    ///   and `callback: NAME` for each life-cycle callback;
    /// - with `tasks`: `task: NAME` for each launch task's duration;
    /// - with `cpu`: `cpu: NAME` for each task's CPU time and `cpu: all tasks`, and
    ///   `span cpu: NAME` for each span's CPU time;
    /// - with `spans`: `span: NAME` for each span's duration (spans of a `LaunchRecorder`, of
    ///   the tracing backend and of services; not callbacks, launch tasks or background tasks,
    ///   which have metrics of their own);
    /// - with `counters`: `counter: NAME` for each of the kernel's counts of a run
    ///   (``RunCounters``), where `liftoff record` read them.
    ///
    /// `initializers: OBJECT` is given for each object whose initializers took 1 ms or more in
    /// any run (the ten slowest of each run), and for each of `initializersOf`, in every run that
    /// has a loader timeline: a run where the object's initializers took less, or where it ran
    /// none, has its value, not a gap, so a library that slows down in some runs compares
    /// against all of them.
    public func metrics(
        _ groups: Set<MetricGroup> = [], initializersOf: Set<String> = []
    ) -> [(name: String, values: [Double])] {
        var initializerNames = initializersOf
        if groups.contains(.phases) {
            for profile in profiles {
                guard let timeline = profile.phases.preMain?.loader else { continue }
                for entry in timeline.slowestInitializers(atLeast: 1_000_000).prefix(10) {
                    initializerNames.insert(timeline.objects[entry.object].fileName)
                }
            }
        }
        var order: [String] = []
        var values: [String: [Double]] = [:]
        // One value per metric and run: a name that repeats within a run (a callback called
        // twice, two tasks of one name) adds up, so every run counts once in the statistics.
        var run: [String: Double] = [:]
        var runOrder: [String] = []
        func add(_ name: String, _ value: Double) {
            if run[name] == nil { runOrder.append(name) }
            run[name, default: 0] += value
        }
        for (position, profile) in profiles.enumerated() {
            defer {
                for name in runOrder {
                    if values[name] == nil { order.append(name) }
                    values[name, default: []].append(run[name] ?? 0)
                }
                run.removeAll(keepingCapacity: true)
                runOrder.removeAll(keepingCapacity: true)
            }
            if let ttff = profile.timeToFirstFrameNs { add(RunSet.readyMetric(of: profile), Double(ttff) / 1e6) }
            if groups.contains(.counters), position < counters.count, let counts = counters[position] {
                for (name, value) in counts.metrics { add(name, value) }
            }
            if groups.contains(.phases) {
                let phases = profile.phases
                // The program's own: from its exec when wrappers ran before it (`env`, `sh -c`), so the
                // same program started through one is not a pre-main "regression".
                let programStart = phases.programStartNs ?? phases.processStartNs
                add("pre-main", NanosecondDuration.between(programStart, phases.mainEntryNs).millisecondsValue)
                if let exec = phases.programStartNs {
                    add("wrappers", NanosecondDuration.between(phases.processStartNs, exec).millisecondsValue)
                }
                if let loader = phases.preMain {
                    add("pre-main: on CPU", Double(loader.onCPUNs) / 1e6)
                    add("pre-main: waiting for a core", Double(loader.runnableNs) / 1e6)
                    add("pre-main: blocked", Double(loader.blockedNs) / 1e6)
                    // The loader's parts, object by object where they stand out.
                    if let timeline = loader.loader {
                        add("pre-main: mapping", Double(timeline.mappingNs) / 1e6)
                        add("pre-main: relocation", Double(timeline.relocationNs) / 1e6)
                        add("pre-main: initializers", Double(timeline.initializersNs) / 1e6)
                        var initializerNs = Dictionary(uniqueKeysWithValues: initializerNames.map { ($0, UInt64(0)) })
                        for entry in timeline.slowestInitializers() {
                            let name = timeline.objects[entry.object].fileName
                            if let sum = initializerNs[name] {
                                let (total, overflow) = sum.addingReportingOverflow(entry.ns)
                                initializerNs[name] = overflow ? .max : total
                            }
                        }
                        for name in initializerNames.sorted() { add("\(Self.initializersPrefix)\(name)", Double(initializerNs[name] ?? 0) / 1e6) }
                    }
                }
                if let firstFrame = phases.firstFrameNs {
                    add("main → \(profile.readyName)", NanosecondDuration.between(phases.mainEntryNs, firstFrame).millisecondsValue)
                }
                for span in profile.spans where span.category == .callback {
                    add("callback: \(span.name)", Double(span.durationNs) / 1e6)
                }
            }
            if groups.contains(.tasks) {
                for task in profile.tasks {
                    if let duration = task.durationNs { add("task: \(task.name)", Double(duration) / 1e6) }
                }
            }
            if groups.contains(.cpu) {
                var total: UInt64 = 0
                for task in profile.tasks {
                    if let cpu = task.cpuNs {
                        add("cpu: \(task.name)", Double(cpu) / 1e6)
                        total = (NanosecondDuration(nanoseconds: total) + NanosecondDuration(nanoseconds: cpu)).nanoseconds
                    }
                }
                if !profile.tasks.isEmpty { add("cpu: all tasks", Double(total) / 1e6) }
                for span in profile.spans where RunSet.isSpanMetric(span) {
                    if let cpu = span.cpuNs { add("span cpu: \(span.name)", Double(cpu) / 1e6) }
                }
            }
            if groups.contains(.spans) {
                for span in profile.spans where RunSet.isSpanMetric(span) {
                    add("span: \(span.name)", Double(span.durationNs) / 1e6)
                }
            }
        }
        return order.map { ($0, values[$0] ?? []) }
    }

    /// The name of the default metric for an app: its launch ends at its first frame.
    /// The prefix of a library's initializers metric: `initializers: libfoo.so`.
    public static let initializersPrefix = "initializers: "

    public static let timeToFirstFrame = "time to first frame"

    /// The name of the default metric for a server or CLI, which has no frames: its launch ends
    /// when it is ready (its LaunchRecorder's ready, its ready line, or its exit).
    public static let timeToReady = "time to ready"

    /// The default metric's name for a profile: time to first frame when it ran the app life
    /// cycle, time to ready otherwise.
    public static func readyMetric(of profile: Profile) -> String {
        profile.hasLifeCycle ? timeToFirstFrame : timeToReady
    }

    /// Names that mean the same metric, one for apps and one for servers and CLIs.
    private static let readyAliases = [
        timeToFirstFrame: timeToReady, timeToReady: timeToFirstFrame,
        "main → first frame": "main → ready", "main → ready": "main → first frame",
    ]

    /// Whether a span is measured as `span: NAME`: every span but callbacks, launch tasks and
    /// background tasks, which are measured as `callback: NAME` and `task: NAME` or budgeted.
    public static func isSpanMetric(_ span: Profile.Span) -> Bool { span.isSpanMetric }

    /// The metric a name given on the command line means, among `names`: the name itself, or
    /// else the span, callback or task of that name (in that order), so `build router` finds
    /// `span: build router`. Nil when none matches.
    public static func metric(named name: String, among names: some Sequence<String>) -> String? {
        let known = Set(names)
        if known.contains(name) { return name }
        if let alias = readyAliases[name], known.contains(alias) { return alias }
        return ["span: ", "callback: ", "task: "].lazy.map { $0 + name }.first { known.contains($0) }
    }

    /// The group a metric's name belongs to, if it is not always present.
    public static func group(ofMetric name: String) -> MetricGroup? {
        if name.hasPrefix("pre-main") || name == "wrappers" || name == "main → first frame" || name == "main → ready"
            || name.hasPrefix("callback: ") || name.hasPrefix(initializersPrefix) {
            return .phases
        }
        if name.hasPrefix("task: ") { return .tasks }
        if name.hasPrefix("cpu: ") || name.hasPrefix("span cpu: ") { return .cpu }
        if name.hasPrefix("span: ") { return .spans }
        if name.hasPrefix("counter: ") { return .counters }
        return nil
    }
}

/// Groups of metrics `liftoff compare` can add to time to first frame.
public enum MetricGroup: String, Sendable, CaseIterable, Hashable {
    /// Pre-main, main to first frame, and each life-cycle callback.
    case phases
    /// Each launch task's duration.
    case tasks
    /// Each launch task's and span's CPU time.
    case cpu
    /// Each span's duration, by name.
    case spans
    /// The kernel's counts of each run: bytes and calls read and written, faults, user and
    /// system CPU, context switches.
    case counters
}
