import LiftoffAnalysis
import LiftoffProfile

/// Renders a profile as a speedscope file (https://www.speedscope.app/file-format-schema.json):
/// one sampled profile per thread, in time order with each sample weighted by the time until
/// the thread's next sample, and one evented profile per thread of its tasks, spans and hangs.
/// Waiting samples end in a frame named `[waiting]` under the function the thread waited in, so
/// waits read as waits in every speedscope view.
///
/// Times are milliseconds from the process start. Frame names are written as they are (JSON
/// escapes them); the frame's object file is its `file`.
public struct SpeedscopeRenderer: Sendable {
    /// The schema URL speedscope checks.
    public static let schemaURL = "https://www.speedscope.app/file-format-schema.json"
    /// The leaf frame added to samples of a blocked thread.
    public static let waitingFrameName = "[waiting]"
    /// The leaf frame added to samples of a runnable thread (preempted, waiting for a core).
    public static let runnableFrameName = "[runnable]"
    /// The leaf frame added to a sample that waited for the disk (a page fault that reads).
    public static let diskFrameName = "[disk]"

    /// Creates a renderer.
    public init() {}

    /// The speedscope JSON document for `profile`.
    public func render(_ profile: Profile) -> String {
        var json = JSONWriter(capacity: 64 + profile.samples.count * 24)
        let intervals = ReportTimeline.intervals(profile)
        // Shared frames: the profile's frames, then one per distinct interval name and category.
        var intervalFrame: [Profile.SpanCategory: [String: Int]] = [:]
        var extraFrames: [(name: String, file: String)] = []
        for interval in intervals where intervalFrame[interval.category]?[interval.name] == nil {
            intervalFrame[interval.category, default: [:]][interval.name] = profile.frames.count + extraFrames.count
            extraFrames.append((interval.name, interval.category.rawValue))
        }
        var waitingFrames: [Profile.SampleState: Int] = [:]
        for (state, name) in [(Profile.SampleState.blocked, Self.waitingFrameName), (.runnable, Self.runnableFrameName), (.disk, Self.diskFrameName)]
        where profile.samples.state.contains(state) {
            waitingFrames[state] = profile.frames.count + extraFrames.count
            extraFrames.append((name, ""))
        }

        json.raw("{")
        json.key("$schema")
        json.string(SpeedscopeRenderer.schemaURL)
        json.field("name", ReportText.programName(profile) ?? "launch profile")
        json.field("exporter", "liftoff \(profile.metadata.liftoffVersion)")
        json.field("activeProfileIndex", 0)
        json.nextKey("shared")
        json.raw("{")
        json.key("frames")
        json.raw("[")
        var firstFrame = true
        for frame in profile.frames {
            if !firstFrame { json.raw(",") }
            firstFrame = false
            // The source file and line where the debug information gives them, else the object.
            writeFrame(&json, name: frame.displayName, file: frame.file ?? frame.object, line: frame.line)
        }
        for frame in extraFrames {
            if !firstFrame { json.raw(",") }
            firstFrame = false
            writeFrame(&json, name: frame.name, file: frame.file)
        }
        json.raw("]}")
        json.nextKey("profiles")
        json.raw("[")
        var wroteProfile = false
        let labels = Dictionary(
            profile.threads.map { ($0.id, FlameTree.threadLabel($0)) }, uniquingKeysWith: { first, _ in first })
        let interval = 1000.0 / Double(max(profile.metadata.samplingRateHz, 1))
        var stackText = [[UInt8]?](repeating: nil, count: profile.stacks.count)
        for (thread, samples) in ReportTimeline.samplesByThread(profile) where !samples.isEmpty {
            if wroteProfile { json.raw(",") }
            wroteProfile = true
            writeSampled(
                &json, profile: profile, name: labels[thread] ?? "thread \(thread)", samples: samples,
                nominalIntervalMs: interval, waitingFrames: waitingFrames, stackText: &stackText)
        }
        let byThread = Dictionary(grouping: intervals, by: \.threadID)
        let order = profile.threads.map(\.id) + byThread.keys.filter { labels[$0] == nil }.sorted()
        for thread in order {
            guard let list = byThread[thread], !list.isEmpty else { continue }
            if wroteProfile { json.raw(",") }
            wroteProfile = true
            let name = "tasks and spans: " + (labels[thread] ?? "thread \(thread)")
            writeEvented(&json, name: name, intervals: ReportTimeline.nested(list), frames: intervalFrame)
        }
        json.raw("]}\n")
        return json.text
    }

    private func writeFrame(_ json: inout JSONWriter, name: String, file: String, line: Int? = nil) {
        json.raw("{")
        json.key("name")
        json.string(name)
        if !file.isEmpty {
            json.field("file", file)
        }
        if let line, line > 0 {
            json.field("line", line)
        }
        json.raw("}")
    }

    private func writeSampled(
        _ json: inout JSONWriter, profile: Profile, name: String, samples: [Int], nominalIntervalMs: Double,
        waitingFrames: [Profile.SampleState: Int], stackText: inout [[UInt8]?]
    ) {
        let suffixes = waitingFrames.mapValues { Array(",\($0)]".utf8) }
        let times = profile.samples.timeNs
        let start = ReportTimeline.ms(times[samples[0]])
        var weights: [Double] = []
        weights.reserveCapacity(samples.count)
        for position in samples.indices {
            // A row stands for its ticks; a gap much longer than that means the thread was not
            // sampled (it had not started or had exited), and the row is charged its ticks only.
            let extent = Double(profile.samples.weight[samples[position]]) * nominalIntervalMs
            if position + 1 < samples.count {
                let gap = ReportTimeline.ms(times[samples[position + 1]] &- times[samples[position]])
                weights.append(gap > extent + nominalIntervalMs ? extent : gap)
            } else {
                weights.append(extent)
            }
        }
        json.raw("{")
        json.key("type")
        json.string("sampled")
        json.field("name", name)
        json.field("unit", "milliseconds")
        json.field("startValue", start, digits: 6)
        json.field("endValue", start + weights.reduce(0, +), digits: 6)
        json.nextKey("samples")
        json.raw("[")
        for (position, sample) in samples.enumerated() {
            if position > 0 { json.raw(",") }
            let stack = text(ofStack: profile.samples.stack[sample], profile: profile, cache: &stackText)
            if let suffix = suffixes[profile.samples.state[sample]] {
                json.raw(bytes: Array(stack.dropLast()))
                json.raw(bytes: suffix)
            } else {
                json.raw(bytes: stack)
            }
        }
        json.raw("]")
        json.nextKey("weights")
        json.raw("[")
        for (position, weight) in weights.enumerated() {
            if position > 0 { json.raw(",") }
            json.number(weight, digits: 6)
        }
        json.raw("]}")
    }

    /// `[root,…,leaf]` frame indices of a stack, built from its parent's text and cached.
    private func text(ofStack stack: Int, profile: Profile, cache: inout [[UInt8]?]) -> [UInt8] {
        if let known = cache[stack] { return known }
        var chain: [Int] = []
        var current = stack
        while current >= 0, cache[current] == nil {
            chain.append(current)
            current = profile.stacks.parent[current]
        }
        var text: [UInt8] = current >= 0 ? cache[current] ?? [] : []
        for node in chain.reversed() {
            var writer = JSONWriter(capacity: 8)
            writer.int(profile.stacks.frame[node])
            if text.isEmpty {
                text = [UInt8(ascii: "[")] + writer.bytes + [UInt8(ascii: "]")]
            } else {
                text.removeLast()
                text.append(UInt8(ascii: ","))
                text.append(contentsOf: writer.bytes)
                text.append(UInt8(ascii: "]"))
            }
            cache[node] = text
        }
        return text
    }

    private func writeEvented(
        _ json: inout JSONWriter, name: String, intervals: [ReportTimeline.Interval], frames: [Profile.SpanCategory: [String: Int]]
    ) {
        let start = intervals.map(\.startNs).min() ?? 0
        let end = intervals.map(\.endNs).max() ?? start
        json.raw("{")
        json.key("type")
        json.string("evented")
        json.field("name", name)
        json.field("unit", "milliseconds")
        json.field("startValue", ReportTimeline.ms(start), digits: 6)
        json.field("endValue", ReportTimeline.ms(end), digits: 6)
        json.nextKey("events")
        json.raw("[")
        var first = true
        func event(_ type: StaticString, frame: Int, atNs: UInt64) {
            if !first { json.raw(",") }
            first = false
            json.raw("{")
            json.key("type")
            json.raw("\"")
            json.raw(type)
            json.raw("\"")
            json.field("frame", frame)
            json.field("at", ReportTimeline.ms(atNs), digits: 6)
            json.raw("}")
        }
        var open: [(frame: Int, endNs: UInt64)] = []
        for interval in intervals {
            while let top = open.last, top.endNs <= interval.startNs {
                event("C", frame: top.frame, atNs: top.endNs)
                open.removeLast()
            }
            let frame = frames[interval.category]?[interval.name] ?? 0
            event("O", frame: frame, atNs: interval.startNs)
            open.append((frame, interval.endNs))
        }
        while let top = open.popLast() {
            event("C", frame: top.frame, atNs: top.endNs)
        }
        json.raw("]}")
    }
}
