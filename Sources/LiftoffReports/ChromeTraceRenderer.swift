import LiftoffAnalysis
import LiftoffProfile

/// Renders a profile in the Trace Event Format that Perfetto and `chrome://tracing` open.
///
/// - `M` events name the process and every thread (the main thread sorts first).
/// - `X` (complete) events for every task, span and hang on its thread, nested properly
///   (an interval that outlives the one enclosing it is cut at its end). Task arguments
///   carry the lane, status, wait, CPU time, critical path and could-defer flags.
/// - `i` (instant) events for the process start, main entry, the first frame (`ready` for a
///   program without the app life cycle) (global scope) and the profile's marks and state changes.
/// - Flow events (`s`/`f`) from each task to every task that waited for it.
/// - The jobs of Swift tasks, in a process of their own ("Swift task jobs") with a track per
///   thread: a slice where each job ran and an instant-long one where it was enqueued, joined by a flow whose
///   length is the job's scheduling delay.
///
/// Timestamps and durations are microseconds from the process start.
public struct ChromeTraceRenderer: Sendable {
    /// The process id written in every event.
    public var processID = 1

    /// Creates a renderer.
    public init() {}

    /// The trace JSON document for `profile`.
    public func render(_ profile: Profile) -> String {
        var json = JSONWriter(capacity: 4096 + profile.tasks.count * 400)
        var first = true
        func begin() {
            json.raw(first ? "\n" : ",\n")
            first = false
            json.raw("{")
        }
        func common(_ name: String, phase: StaticString, threadID: Int, us: Double?) {
            json.key("name")
            json.string(name)
            json.nextKey("ph")
            json.raw("\"")
            json.raw(phase)
            json.raw("\"")
            json.field("pid", processID)
            json.field("tid", threadID)
            if let us {
                json.field("ts", us, digits: 3)
            }
        }
        func us(_ ns: UInt64) -> Double { Double(ns) / 1000 }

        json.raw("{")
        json.key("displayTimeUnit")
        json.string("ms")
        json.nextKey("otherData")
        json.raw("{")
        json.key("program")
        json.string(ReportText.programName(profile) ?? "")
        json.field("liftoffVersion", profile.metadata.liftoffVersion)
        json.field("startTime", profile.metadata.startTime)
        json.field("host", profile.metadata.host.name)
        json.raw("}")
        json.nextKey("traceEvents")
        json.raw("[")

        // Metadata: process and thread names.
        let main = profile.threads.first(where: \.isMain)?.id ?? profile.threads.first?.id ?? 0
        begin()
        common("process_name", phase: "M", threadID: 0, us: nil)
        json.nextKey("args")
        json.raw("{")
        json.key("name")
        json.string(ReportText.programName(profile) ?? "launch")
        json.raw("}}")
        var named = Set<Int>()
        var threadNames: [(id: Int, name: String, isMain: Bool)] = profile.threads.map { ($0.id, $0.name, $0.isMain) }
        let intervals = ReportTimeline.intervals(profile)
        for interval in intervals where !threadNames.contains(where: { $0.id == interval.threadID }) {
            threadNames.append((interval.threadID, "thread \(interval.threadID)", false))
        }
        for (position, thread) in threadNames.enumerated() where named.insert(thread.id).inserted {
            begin()
            common("thread_name", phase: "M", threadID: thread.id, us: nil)
            json.nextKey("args")
            json.raw("{")
            json.key("name")
            json.string(thread.name)
            json.raw("}}")
            begin()
            common("thread_sort_index", phase: "M", threadID: thread.id, us: nil)
            json.nextKey("args")
            json.raw("{")
            json.key("sort_index")
            json.int(thread.isMain ? -1 : position)
            json.raw("}}")
        }

        // Complete events, nested per thread.
        let byThread = Dictionary(grouping: intervals, by: \.threadID)
        for thread in threadNames.map(\.id) {
            guard let list = byThread[thread] else { continue }
            for interval in ReportTimeline.nested(list) {
                begin()
                common(interval.name, phase: "X", threadID: thread, us: us(interval.startNs))
                json.field("dur", us(interval.endNs - interval.startNs), digits: 3)
                json.field("cat", interval.category.rawValue)
                if let index = interval.task {
                    writeTaskArguments(&json, profile.tasks[index])
                } else if let attributes = interval.attributes, !attributes.isEmpty {
                    // A span's attributes, as Perfetto shows them under the slice.
                    json.nextKey("args")
                    json.raw("{")
                    for (position, key) in attributes.keys.sorted().enumerated() {
                        if position > 0 { json.raw(",") }
                        json.key(key)
                        json.string(attributes[key] ?? "")
                    }
                    json.raw("}")
                }
                json.raw("}")
            }
        }

        // Instants.
        var instants: [(name: String, ns: UInt64, global: Bool)] = [
            ("process start", profile.phases.processStartNs, false),
            ("main entry", profile.phases.mainEntryNs, false),
        ]
        if let firstFrame = profile.phases.firstFrameNs { instants.append((profile.readyName, firstFrame, true)) }
        for mark in profile.marks where !(mark.name == .firstFrame && profile.phases.firstFrameNs == mark.timeNs) {
            instants.append((mark.name.rawValue, mark.timeNs, false))
        }
        for change in profile.stateChanges {
            instants.append(("state: \(change.from) → \(change.to)", change.timeNs, false))
        }
        if let termination = profile.termination {
            instants.append(("terminated: \(termination.reason)", termination.timeNs, true))
        }
        for instant in instants.sorted(by: { $0.ns < $1.ns }) {
            begin()
            common(instant.name, phase: "i", threadID: main, us: us(instant.ns))
            json.field("s", instant.global ? "g" : "t")
            json.field("cat", "launch")
            json.raw("}")
        }

        // Flows: from the end of each task to the start of each task that depended on it.
        let tasksByName = Dictionary(
            profile.tasks.enumerated().map { ($0.element.name, $0.offset) }, uniquingKeysWith: { first, _ in first })
        var flowID = 0
        for task in profile.tasks {
            guard let start = task.startNs, let thread = task.threadID else { continue }
            for dependency in task.dependencies {
                guard let index = tasksByName[dependency], let source = profile.tasks[index].threadID,
                    let sourceStart = profile.tasks[index].startNs, let sourceEnd = profile.tasks[index].endNs
                else { continue }
                flowID += 1
                // One nanosecond inside each slice, so each end binds to its task's slice.
                let from = sourceEnd > sourceStart ? sourceEnd - 1 : sourceEnd
                let to = (task.endNs ?? start) > start ? start + 1 : start
                begin()
                common("\(dependency) → \(task.name)", phase: "s", threadID: source, us: us(from))
                json.field("cat", "dependency")
                json.field("id", flowID)
                json.raw("}")
                begin()
                common("\(dependency) → \(task.name)", phase: "f", threadID: thread, us: us(to))
                json.field("bp", "e")
                json.field("cat", "dependency")
                json.field("id", flowID)
                json.raw("}")
            }
        }
        writeAsyncTaskRuns(profile, json: &json, firstFlowID: flowID + 1)
        json.raw("\n]}\n")
        return json.text
    }

    /// The jobs of the profile's Swift tasks, in a process of their own (pid + 1) with a track per
    /// thread: each job a slice where it ran, named after its task, and a nanosecond-long slice
    /// where it was enqueued, with a flow from the enqueue to the run: its scheduling delay.
    private func writeAsyncTaskRuns(
        _ profile: Profile, json: inout JSONWriter, firstFlowID: Int
    ) {
        // Events come after the process's own, so each one follows a comma.
        func begin() { json.raw(",\n{") }
        let runs = profile.asyncTasks.flatMap { task in task.runs.map { (task: task, run: $0) } }
        guard !runs.isEmpty else { return }
        func us(_ ns: UInt64) -> Double { Double(ns) / 1000 }
        let threadName = Dictionary(profile.threads.map { ($0.id, $0.name) }, uniquingKeysWith: { first, _ in first })
        let tasksProcess = processID + 1
        begin()
        json.key("name")
        json.string("process_name")
        json.raw(",\"ph\":\"M\"")
        json.field("pid", tasksProcess)
        json.field("tid", 0)
        json.raw(",\"args\":{\"name\":\"Swift task jobs\"}}")
        for thread in Set(runs.flatMap { [$0.run.threadID, $0.run.enqueuerThreadID] }).sorted() {
            begin()
            json.key("name")
            json.string("thread_name")
            json.raw(",\"ph\":\"M\"")
            json.field("pid", tasksProcess)
            json.field("tid", thread)
            json.nextKey("args")
            json.raw("{")
            json.key("name")
            json.string(threadName[thread] ?? "thread \(thread)")
            json.raw("}}")
        }
        func slice(_ name: String, thread: Int, startNs: UInt64, durationUs: Double) {
            begin()
            json.key("name")
            json.string(name)
            json.raw(",\"ph\":\"X\"")
            json.field("pid", tasksProcess)
            json.field("tid", thread)
            json.field("ts", us(startNs), digits: 3)
            json.field("dur", durationUs, digits: 3)
            json.field("cat", "swift task")
        }
        func flow(_ name: String, ends: Bool, thread: Int, atNs: UInt64, id: Int) {
            begin()
            json.key("name")
            json.string(name)
            json.raw(ends ? ",\"ph\":\"f\"" : ",\"ph\":\"s\"")
            json.field("pid", tasksProcess)
            json.field("tid", thread)
            json.field("ts", us(atNs), digits: 3)
            if ends { json.field("bp", "e") }
            json.field("cat", "scheduled")
            json.field("id", id)
            json.raw("}")
        }
        var id = firstFlowID
        for (task, run) in runs.sorted(by: { $0.run.startNs < $1.run.startNs }) {
            let name = "task \(task.id) (\(task.kind.rawValue))"
            slice(name, thread: run.threadID, startNs: run.startNs, durationUs: max(us(run.endNs) - us(run.startNs), 0.001))
            json.nextKey("args")
            json.raw("{")
            json.key("scheduled_ms")
            json.number(ReportTimeline.ms(run.scheduledNs), digits: 3)
            if let span = task.span, profile.spans.indices.contains(span) { json.field("span", profile.spans[span].name) }
            json.raw("}}")
            slice("enqueue " + name, thread: run.enqueuerThreadID, startNs: run.enqueuedNs, durationUs: 0.001)
            json.raw("}")
            flow("scheduled", ends: false, thread: run.enqueuerThreadID, atNs: run.enqueuedNs, id: id)
            flow("scheduled", ends: true, thread: run.threadID, atNs: run.startNs, id: id)
            id += 1
        }
    }

    private func writeTaskArguments(_ json: inout JSONWriter, _ task: Profile.TaskRecord) {
        json.nextKey("args")
        json.raw("{")
        json.key("lane")
        json.string(task.lane.rawValue)
        json.field("status", task.status.rawValue)
        json.field("queue", task.queue ?? "")
        json.field("wait_ms", ReportTimeline.ms(task.waitNs), digits: 3)
        if let cpu = task.cpuNs {
            json.field("cpu_ms", ReportTimeline.ms(cpu), digits: 3)
        }
        json.field("critical_path", task.onCriticalPath)
        json.field("could_defer", task.couldDefer)
        if !task.dependencies.isEmpty {
            json.nextKey("dependencies")
            json.stringArray(task.dependencies)
        }
        if let error = task.error {
            json.field("error", error)
        }
        json.raw("}")
    }
}
