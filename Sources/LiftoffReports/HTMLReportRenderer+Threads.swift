import LiftoffAnalysis
import LiftoffProfile

/// The timeline's threads: each one's flame chart, spans and stretches on the path to ready.
extension HTMLReportRenderer {
    func writeThreads(_ json: inout JSONWriter, _ profile: Profile, path: LaunchPath?, names: inout NameTable) {
        // The threads that made the launch come first: the path to ready's, the launch's own thread
        // first and then by their time on the path; the others keep their order.
        let stretches = path.map { Self.pathStretches($0, joiningWithin: profile.samplingIntervalNs) } ?? [:]
        let rank = Dictionary(
            (path?.threads ?? []).enumerated().map { ($0.element.thread, $0.offset) }, uniquingKeysWith: { first, _ in first })
        let byThread = ReportTimeline.samplesByThread(profile).enumerated()
            .sorted { (rank[$0.element.thread] ?? Int.max, $0.offset) < (rank[$1.element.thread] ?? Int.max, $1.offset) }
            .map(\.element)
        let interval = profile.samplingIntervalNs
        var allBars: [[FlameChart.Bar]] = byThread.map { thread, samples in
            FlameChart.bars(profile, samples: samples, intervalNs: interval)
        }
        let count = allBars.reduce(0) { $0 + $1.count }
        let cap = max(maxBars, 1)
        if count > cap {
            var durations = allBars.flatMap { $0.map { $0.endNs - $0.startNs } }
            durations.sort(by: >)
            let minimum = durations[cap - 1] + 1
            allBars = allBars.map { $0.filter { $0.endNs - $0.startNs >= minimum } }
        }
        let intervals = Dictionary(grouping: ReportTimeline.intervals(profile), by: \.threadID)
        let info = Dictionary(profile.threads.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        // Several processes: each thread names its process, and the page groups threads by it.
        let processes = profile.processes.count > 1
            ? Dictionary(profile.processes.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first }) : [:]
        var order = byThread.map(\.thread)
        for thread in intervals.keys.sorted() where !order.contains(thread) { order.append(thread) }
        json.raw("[")
        for (position, thread) in order.enumerated() {
            if position > 0 { json.raw(",") }
            let bars = position < allBars.count ? allBars[position] : []
            let rows = position < byThread.count ? byThread[position].samples : []
            let samples = rows.reduce(0) { $0 + profile.samples.ticks($1) }
            let running = rows.reduce(0) { $0 + (profile.samples.state[$1] == .running ? profile.samples.ticks($1) : 0) }
            json.raw("{")
            json.key("id")
            json.int(thread)
            json.field("label", info[thread].map(FlameTree.threadLabel) ?? "thread \(thread)")
            json.field("isMain", info[thread]?.isMain ?? false)
            if let process = info[thread]?.processID.flatMap({ processes[$0] }) {
                json.field("process", process.label)
                json.field(
                    "processDetail",
                    "\(process.commandLine.joined(separator: " ")) · "
                        + String(format: "%.1f → %.1f ms", ReportTimeline.ms(process.startNs), ReportTimeline.ms(process.endNs)))
            }
            json.field("samples", samples)
            json.field("running", running)
            if let position = rank[thread], let spans = stretches[thread] {
                json.field("pathRank", position)
                json.nextKey("path")
                Self.msArray(&json, spans.flatMap { [$0.startNs, $0.endNs] })
            }
            json.nextKey("bars")
            json.raw("{")
            json.key("name")
            json.intArray(bars.map { names.index(of: profile.frames[$0.frame].displayName) })
            json.nextKey("depth")
            json.intArray(bars.map(\.depth))
            json.nextKey("waiting")
            json.intArray(bars.map { $0.disk ? 3 : $0.runnable ? 2 : $0.waiting ? 1 : 0 })
            json.nextKey("start")
            Self.msArray(&json, bars.lazy.map(\.startNs))
            json.nextKey("end")
            Self.msArray(&json, bars.lazy.map(\.endNs))
            json.raw("}")
            json.nextKey("spans")
            json.raw("[")
            for (index, interval) in ReportTimeline.nested(intervals[thread] ?? []).enumerated() {
                if index > 0 { json.raw(",") }
                json.raw("{")
                json.key("name")
                json.string(interval.name)
                json.field("category", interval.category.rawValue)
                json.field("startMs", ReportTimeline.ms(interval.startNs), digits: 4)
                json.field("endMs", ReportTimeline.ms(interval.endNs), digits: 4)
                json.field("critical", interval.task.map { profile.tasks[$0].onCriticalPath } ?? false)
                json.raw("}")
            }
            json.raw("]}")
        }
        json.raw("]")
    }

    /// Times in nanoseconds as a JSON array of milliseconds, four decimals each.
    static func msArray(_ json: inout JSONWriter, _ times: some Sequence<UInt64>) {
        json.raw("[")
        var first = true
        for time in times {
            if !first { json.raw(",") }
            first = false
            json.number(ReportTimeline.ms(time), digits: 4)
        }
        json.raw("]")
    }

    /// Each thread's stretches on the path to ready, those less than `gap` apart joined.
    static func pathStretches(_ path: LaunchPath, joiningWithin gap: UInt64) -> [Int: [(startNs: UInt64, endNs: UInt64)]] {
        var result: [Int: [(startNs: UInt64, endNs: UInt64)]] = [:]
        for segment in path.segments where segment.sample >= 0 && segment.endNs > segment.startNs {
            if let last = result[segment.thread]?.last, segment.startNs <= last.endNs &+ gap {
                result[segment.thread]![result[segment.thread]!.count - 1].endNs = max(last.endNs, segment.endNs)
            } else {
                result[segment.thread, default: []].append((segment.startNs, segment.endNs))
            }
        }
        return result
    }
}
