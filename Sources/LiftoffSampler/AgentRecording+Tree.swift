import Foundation
import LiftoffProfile

extension AgentRecording {
    /// Reads every recording the agent wrote into `folder` (`PID-IMAGE.rec`): one per program
    /// each process of the profiled tree ran.
    /// - Throws: ``ReadError`` when there is none, or one cannot be read.
    public static func loadAll(in folder: URL) throws -> [AgentRecording] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        let files = names.filter { $0.hasSuffix(".rec") }.sorted()
        guard !files.isEmpty else {
            throw ReadError(description: "The agent wrote no recording to \(folder.path).")
        }
        let initializerNames = InitializerNames()
        return try files.map { file in
            var recording = try load(from: folder.appendingPathComponent(file))
            recording.loader =
                recording.loaderText.isEmpty
                ? loaderTimeline(in: folder, processID: recording.processID, image: recording.image, names: initializerNames)
                : parseLoaderTimeline(recording.loaderText, names: initializerNames)
            if recording.recordedByProgram {
                recording.spans = journalSpans(in: folder, processID: recording.processID, endNs: recording.endNs)
            }
            return recording
        }
    }

    /// The spans a program that records itself journaled in `folder` (`PID.spans`, written by
    /// its `LaunchRecorder` under `liftoff profile`), in `CLOCK_MONOTONIC` nanoseconds. A span
    /// still open when the program ended ends at `endNs`, marked `liftoff.unended`. Lines that
    /// do not parse (a line cut by the end) are skipped.
    public static func journalSpans(in folder: URL, processID: Int, endNs: UInt64) -> [Profile.Span] {
        guard let text = try? String(contentsOf: folder.appendingPathComponent("\(processID).spans"), encoding: .utf8) else {
            return []
        }
        var spans: [Profile.Span] = []
        var position: [Int: Int] = [:]
        var open: Set<Int> = []
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard let kind = fields.first, fields.count >= 3, let index = Int(fields[1]) else { continue }
            switch kind {
            case "B" where fields.count >= 7:
                guard let parent = Int(fields[2]), let thread = Int(fields[4]), let start = UInt64(fields[5]) else { continue }
                position[index] = spans.count
                open.insert(spans.count)
                spans.append(
                    Profile.Span(
                        name: fields[6], category: Profile.SpanCategory(rawValue: fields[3]), threadID: thread,
                        startNs: start, endNs: start, parent: parent >= 0 ? position[parent] : nil))
            case "E":
                guard let at = position[index], let end = UInt64(fields[2]) else { continue }
                spans[at].endNs = max(end, spans[at].startNs)
                open.remove(at)
            case "N":
                guard let at = position[index] else { continue }
                spans[at].name = fields[2]
            default:
                continue
            }
        }
        for at in open {
            spans[at].endNs = max(endNs, spans[at].startNs)
            spans[at].attributes = ["liftoff.unended": "true"]
        }
        return spans
    }

    /// The thread that wrote the first line `matches` accepts, of the writes the agent kept of
    /// the processes' standard output and error (`descriptors`: 1, 2 or both): each thread's
    /// writes to a descriptor joined into lines (Swift's `print` writes a line in pieces), a line
    /// taken as soon as what it has so far matches.
    public static func readyWriter(
        of recordings: [AgentRecording], descriptors: Set<Int>, matches: (String) -> Bool
    ) -> Int? {
        readyWriter(of: recordings.flatMap(\.outputs), descriptors: descriptors, matches: matches)
    }

    /// The thread that wrote the first line `matches` accepts, of `writes` (in any order).
    public static func readyWriter(of writes: [OutputWrite], descriptors: Set<Int>, matches: (String) -> Bool) -> Int? {
        let writes = writes.filter { descriptors.contains($0.descriptor) }.sorted { ($0.timeNs, $0.thread) < ($1.timeNs, $1.thread) }
        var lines: [Int: String] = [:]  // thread << 2 | descriptor: its line so far
        for write in writes {
            let key = write.thread << 2 | write.descriptor
            var line = (lines[key] ?? "") + write.text
            var found = false
            while let newline = line.firstIndex(of: "\n") {
                if matches(String(line[..<newline])) { found = true }
                line = String(line[line.index(after: newline)...])
            }
            if found || !line.isEmpty && matches(line) { return write.thread }
            lines[key] = String(line.suffix(4096))
        }
        return nil
    }

    /// One profile of a tree of processes: every program each ran, symbolized against its own
    /// objects, on one timeline that starts with the first process. A process that replaced
    /// itself with `exec` keeps the earlier programs' samples as its pre-exec phase, and the
    /// last program names it.
    /// - Parameters:
    ///   - recordings: the recordings, in any order.
    ///   - rootProcessID: the process `liftoff` started; by default the one that started first.
    ///   - readyNs: nanoseconds from the first process's start to the moment it was ready, if known.
    ///   - readyThread: the thread that wrote the ready line, when known (``readyWriter(of:descriptors:matches:)``).
    ///   - keepsExecutorFrames: see ``ProfileBuilder/keepsExecutorFrames``.
    public static func profile(
        of recordings: [AgentRecording], rootProcessID: Int? = nil, readyNs: UInt64? = nil, readyThread: Int? = nil,
        keepsExecutorFrames: Bool = false
    ) -> Profile {
        var byProcess: [Int: [AgentRecording]] = [:]
        for recording in recordings { byProcess[recording.processID, default: []].append(recording) }
        let processes = byProcess.values.map { $0.sorted { $0.image < $1.image } }.sorted { lhs, rhs in
            if lhs[0].processID == rootProcessID { return rhs[0].processID != rootProcessID }
            if rhs[0].processID == rootProcessID { return false }
            return (lhs[0].processStartNs, lhs[0].processID) < (rhs[0].processStartNs, rhs[0].processID)
        }
        guard let root = processes.first?.first, let rootLast = processes.first?.last else {
            return Profile(
                metadata: ProfileRecorder.metadata(commandLine: [], startTime: Date(), rateHz: 0), timeOriginNs: 0,
                phases: Profile.Phases(processStartNs: 0, preMainNs: 0, mainEntryNs: 0, endNs: 0))
        }
        let origin = root.processStartNs
        func relative(_ ns: UInt64) -> UInt64 { NanosecondDuration.between(origin, ns).nanoseconds }

        let symbolizer = ELFSymbolizer(recordedObjects: root.objects)
        var builder = ProfileBuilder(symbolizer: symbolizer, timeOriginNs: origin)
        builder.keepsExecutorFrames = keepsExecutorFrames
        builder.intervalNs = Profile.samplingIntervalNs(rateHz: root.rateHz)
        var names: [Int: String] = [:]
        var owner: [Int: Int] = [:]
        var counts = Profile.SampleCounts()
        var taskEvents: [TaskEvent] = []
        var spans: [Profile.Span] = []
        var records: [Profile.ProcessRecord] = []
        var violations: [Profile.Violation] = []
        for images in processes {
            for (position, recording) in images.enumerated() {
                if position > 0 || recording.processID != root.processID {
                    // The objects of the tree's processes are mostly the same files: each is read once.
                    symbolizer.useRecordedObjects(recording.objects)
                    builder.switchSymbolizer(to: symbolizer)
                }
                for sample in recording.samples {
                    builder.add(sample)
                    owner[sample.threadID] = recording.processID
                }
                for (tid, name) in recording.threadNames {
                    owner[tid] = recording.processID
                    names[tid] = ThreadNaming.readable(name, isMain: tid == recording.processID)
                }
                for violation in recording.violations {
                    let thread = names[violation.threadID] ?? "thread \(violation.threadID)"
                    violations.append(
                        Profile.Violation(
                            rule: violation.rule,
                            message: BlockingCalls.sentence(
                                violation.operation, place: "thread \(thread) (\(violation.threadID))", count: violation.count),
                            threadID: violation.threadID, threadName: thread, timeNs: relative(violation.timeNs),
                            stack: builder.addStack(violation.stack), count: violation.count))
                }
                counts.add(recording.counts)
                taskEvents += recording.taskEvents
                let offset = spans.count
                spans += recording.spans.map { span in
                    var span = span
                    span.startNs = relative(span.startNs)
                    span.endNs = relative(span.endNs)
                    span.parent = span.parent.map { $0 + offset }
                    return span
                }
            }
            let first = images[0], last = images[images.count - 1]
            owner[first.processID] = first.processID
            records.append(
                Profile.ProcessRecord(
                    id: first.processID, parentID: first.parentProcessID, commandLine: last.commandLine,
                    startNs: relative(first.processStartNs), endNs: relative(last.endNs),
                    programs: images.enumerated().map { position, image in
                        let earlier = position > 0 ? images[position - 1] : nil
                        // A fork child's first program is its parent's, already past main: no loader ran.
                        // The launch's own program's is the profile's (its phases).
                        let forked = earlier == nil && image.mainEntryNs == image.processStartNs
                        let launchOwn = first.processID == root.processID && position == images.count - 1
                        var preMain =
                            forked || launchOwn
                            ? nil
                            : image.countersBeforeMain?.preMain(
                                since: earlier?.countersAtEnd?.timeNs ?? image.processStartNs, earlier: earlier?.countersAtEnd)
                        preMain?.loader = image.loader?.mapTimes(relative)
                        // From main to its end, by the counts read at main and when its recording was written.
                        let afterMain =
                            forked
                            ? nil
                            : image.countersBeforeMain.flatMap { atMain in
                                image.countersAtEnd?.preMain(since: atMain.timeNs, earlier: atMain, faultsAtLeast: true)
                            }
                        return Profile.Program(
                            commandLine: image.commandLine,
                            startNs: relative(earlier?.endNs ?? image.processStartNs),
                            endNs: relative(image.endNs), preMain: preMain, afterMain: afterMain)
                    },
                    signal: last.endingSignal,
                    programProfilerSignals: images.contains(where: \.installedOwnProfilerSignal)
                        ? images.reduce(0) { $0.addingSaturating($1.programSignals) } : nil,
                    blocksProfilerSignal: images.contains(where: \.blocksProfilerSignal) ? true : nil,
                    recordedItself: images.contains(where: \.recordedByProgram) ? true : nil,
                    unfollowedExec: last.endedByExec ? (last.execTarget ?? "an unnamed program") : nil))
        }
        let endNs = records.map(\.endNs).max() ?? 0
        // Pre-main and main entry are the final program's: what the process ran before its last
        // exec (`env`, `sh -c "… exec ./app"`, a version manager's shim) is a phase of its own.
        var phases = Profile.Phases(
            processStartNs: 0, preMainNs: relative(rootLast.preMainNs), mainEntryNs: relative(rootLast.mainEntryNs),
            endNs: endNs, firstFrameNs: readyNs)
        let rootImages = processes[0]
        let wrapper = rootImages.count > 1 ? rootImages[rootImages.count - 2] : nil
        if let wrapper { phases.programStartNs = relative(wrapper.endNs) }
        // Read before the agent's sampler started: no signal was pending, the fault counts are whole.
        // After a wrapper, from its counters read once its recording was written (the exec follows).
        phases.preMain = rootLast.countersBeforeMain?.preMain(
            since: wrapper?.countersAtEnd?.timeNs ?? rootLast.processStartNs, earlier: wrapper?.countersAtEnd)
        phases.preMain?.loader = rootLast.loader?.mapTimes(relative)
        if rootLast.endedByExec {
            // The launch went on as a program the agent could not enter: what is known is the program before it.
            let target = rootLast.execTarget ?? "a program"
            let before = rootLast.commandLine.first.map { $0.split(separator: "/").last.map(String.init) ?? $0 } ?? "the program before it"
            phases.preMain?.loaderNote =
                "The launch went on as \(target), which left no recording (a statically linked, setuid or capability-raising program cannot load Liftoff's agent): the time before main is \(before)'s, and the profile ends at that exec."
        }
        var metadata = ProfileRecorder.metadata(commandLine: rootLast.commandLine, startTime: Date(), rateHz: root.rateHz)
        metadata.buildConfiguration = "unknown (profiled by the agent)"
        var profile = builder.build(
            metadata: metadata, phases: phases, threadNames: names, mainThreadID: root.processID, counts: counts)
        // Each thread in its process; each process's main thread listed, first in its process.
        var threads = profile.threads
        for record in records where !threads.contains(where: { $0.id == record.id }) {
            threads.append(Profile.ThreadInfo(id: record.id, name: names[record.id] ?? "main", isMain: true))
        }
        let order = Dictionary(uniqueKeysWithValues: records.enumerated().map { ($1.id, $0) })
        for index in threads.indices {
            let process = owner[threads[index].id] ?? root.processID
            threads[index].processID = process
            threads[index].isMain = threads[index].id == process
        }
        profile.threads = threads.sorted { lhs, rhs in
            let left = order[lhs.processID ?? 0] ?? Int.max, right = order[rhs.processID ?? 0] ?? Int.max
            if left != right { return left < right }
            if lhs.isMain != rhs.isMain { return lhs.isMain }
            return lhs.id < rhs.id
        }
        profile.processes = records
        if !violations.isEmpty { profile.violations = violations.sorted { $0.timeNs < $1.timeNs } }
        // Several processes: each thread's name says whose it is (`python3.11 · main`), in every report.
        if records.count > 1 {
            let programs = Dictionary(uniqueKeysWithValues: records.map { ($0.id, $0.programName) })
            for index in profile.threads.indices {
                guard let process = profile.threads[index].processID, let program = programs[process] else { continue }
                profile.threads[index].name = "\(program) · \(profile.threads[index].name)"
            }
        }
        if let readyNs { profile.marks = [Profile.Mark(name: .ready, timeNs: readyNs, threadID: readyThread)] }
        profile.asyncTasks = TaskEvent.asyncTasks(from: taskEvents, originNs: origin)
        if !spans.isEmpty { profile.spans = spans }
        profile.attributeSamples()
        return profile
    }
}

extension Profile.SampleCounts {
    /// Adds another session's counters to these, saturating.
    mutating func add(_ other: Profile.SampleCounts) {
        signalsSent = signalsSent.addingSaturating(other.signalsSent)
        captured = captured.addingSaturating(other.captured)
        dropped = dropped.addingSaturating(other.dropped)
        failed = failed.addingSaturating(other.failed)
        skipped = skipped.addingSaturating(other.skipped)
        truncated = truncated.addingSaturating(other.truncated)
        waiting = waiting.addingSaturating(other.waiting)
        unanswered = unanswered.addingSaturating(other.unanswered)
        threadsSeen = threadsSeen.addingSaturating(other.threadsSeen)
        lostTaskEvents = lostTaskEvents.addingSaturating(other.lostTaskEvents)
    }
}

extension Int {
    fileprivate func addingSaturating(_ other: Int) -> Int {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }
}
