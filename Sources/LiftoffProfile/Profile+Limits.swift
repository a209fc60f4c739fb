extension Profile {
    /// The largest time or duration a profile may hold, in nanoseconds: 2^53 ns, about 104
    /// days, far beyond any launch, and exact as a `Double` (reports compute in both).
    public static let maximumNs: UInt64 = 1 << 53
    /// The largest count (of violations, frames drawn, views) a profile may hold.
    public static let maximumCount = 1 << 40
    /// Names longer than this many bytes are shortened at load, ending with ``shortenedMarker``.
    public static let maximumNameBytes = 4096
    /// What ends a name that was shortened at load.
    public static let shortenedMarker = "… [shortened]"

    /// Checks that every time, duration and count is one a launch can have: times and
    /// durations up to ``maximumNs``, sample counts up to the samples there are, other counts
    /// up to ``maximumCount``.
    /// - Throws: ``ProfileError`` with code `inconsistent`, naming the first field out of range.
    public func validateRanges(source: String = "profile") throws {
        func fail(_ field: String, _ value: some BinaryInteger, _ limit: String) -> ProfileError {
            ProfileError(
                .inconsistent, "\(source) is inconsistent: \(field) is \(value), beyond \(limit).", value: field)
        }
        let time = "any launch (\(Profile.maximumNs) ns, about 104 days)"
        func checkTime(_ value: UInt64?, _ field: @autoclosure () -> String) throws {
            if let value, value > Profile.maximumNs { throw fail(field(), value, time) }
        }
        func checkCount(_ value: Int?, _ field: @autoclosure () -> String, limit: Int = Profile.maximumCount) throws {
            if let value, value < 0 || value > limit {
                throw fail(field(), value, value < 0 ? "the counts a profile can hold (it is negative)" : "the \(limit) a profile can hold")
            }
        }
        try checkTime(timeOriginNs, "timeOriginNs")
        try checkTime(phases.processStartNs, "phases.processStartNs")
        try checkTime(phases.preMainNs, "phases.preMainNs")
        try checkTime(phases.mainEntryNs, "phases.mainEntryNs")
        try checkTime(phases.endNs, "phases.endNs")
        try checkTime(phases.firstFrameNs, "phases.firstFrameNs")
        if let loader = phases.preMain?.loader {
            try checkTime(loader.startNs, "phases.preMain.loader.startNs")
            try checkTime(loader.relocatedNs, "phases.preMain.loader.relocatedNs")
            try checkTime(loader.initializedNs, "phases.preMain.loader.initializedNs")
            for (index, object) in loader.objects.enumerated() {
                try checkTime(object.searchNs, "phases.preMain.loader.objects[\(index)].searchNs")
                try checkTime(object.mappedNs, "phases.preMain.loader.objects[\(index)].mappedNs")
            }
            for (index, initializer) in loader.initializers.enumerated() {
                try checkCount(initializer.object, "phases.preMain.loader.initializers[\(index)].object", limit: loader.objects.count - 1)
                try checkTime(initializer.startNs, "phases.preMain.loader.initializers[\(index)].startNs")
                try checkTime(initializer.endNs, "phases.preMain.loader.initializers[\(index)].endNs")
            }
        }
        guard (0...1_000_000).contains(metadata.samplingRateHz) else {
            throw fail("metadata.samplingRateHz", metadata.samplingRateHz, "the rates a sampler can have (0 to 1,000,000 Hz)")
        }
        try checkCount(metadata.host.cpuCount, "metadata.host.cpuCount", limit: 1 << 20)
        let interval = samplingIntervalNs
        var ticks = 0
        for index in 0..<samples.count {
            try checkTime(samples.timeNs[index], "samples.timeNs[\(index)]")
            try checkTime(samples.cpuNs[index], "samples.cpuNs[\(index)]")
            let weight = samples.weight[index]
            guard weight >= 1 else { throw fail("samples.weight[\(index)]", weight, "the ticks a row stands for (at least 1)") }
            let (length, overflow) = UInt64(weight).multipliedReportingOverflow(by: interval)
            try checkTime(overflow ? .max : length, "samples.weight[\(index)] × the sampling interval")
            ticks += Int(weight)
        }
        for (index, span) in spans.enumerated() {
            try checkTime(span.startNs, "spans[\(index)].startNs")
            try checkTime(span.endNs, "spans[\(index)].endNs")
            try checkTime(span.cpuNs, "spans[\(index)].cpuNs")
            try checkTime(span.scheduledNs, "spans[\(index)].scheduledNs")
            try checkCount(span.childTasks, "spans[\(index)].childTasks")
            try checkCount(span.samples, "spans[\(index)].samples", limit: ticks)
            try checkCount(span.waitingSamples, "spans[\(index)].waitingSamples", limit: ticks)
        }
        for (index, mark) in marks.enumerated() { try checkTime(mark.timeNs, "marks[\(index)].timeNs") }
        for (index, change) in stateChanges.enumerated() { try checkTime(change.timeNs, "stateChanges[\(index)].timeNs") }
        for (index, frame) in displayFrames.enumerated() {
            try checkTime(frame.startNs, "displayFrames[\(index)].startNs")
            try checkTime(frame.commitNs, "displayFrames[\(index)].commitNs")
            try checkCount(frame.viewsDrawn, "displayFrames[\(index)].viewsDrawn")
        }
        for (index, violation) in violations.enumerated() {
            try checkTime(violation.timeNs, "violations[\(index)].timeNs")
            try checkCount(violation.count, "violations[\(index)].count")
        }
        for (index, task) in tasks.enumerated() {
            try checkTime(task.readyNs, "tasks[\(index)].readyNs")
            try checkTime(task.startNs, "tasks[\(index)].startNs")
            try checkTime(task.endNs, "tasks[\(index)].endNs")
            try checkTime(task.waitNs, "tasks[\(index)].waitNs")
            try checkTime(task.cpuNs, "tasks[\(index)].cpuNs")
            try checkTime(task.slackNs, "tasks[\(index)].slackNs")
            try checkCount(task.samples, "tasks[\(index)].samples", limit: ticks)
            try checkCount(task.waitingSamples, "tasks[\(index)].waitingSamples", limit: ticks)
        }
        for (index, hang) in hangs.enumerated() {
            try checkTime(hang.startNs, "hangs[\(index)].startNs")
            try checkTime(hang.durationNs, "hangs[\(index)].durationNs")
        }
        for (index, task) in asyncTasks.enumerated() {
            try checkTime(task.createdNs, "asyncTasks[\(index)].createdNs")
            try checkTime(task.cpuNs, "asyncTasks[\(index)].cpuNs")
            try checkCount(task.samples, "asyncTasks[\(index)].samples", limit: ticks)
            try checkCount(task.waitingSamples, "asyncTasks[\(index)].waitingSamples", limit: ticks)
            for (position, run) in task.runs.enumerated() {
                try checkTime(run.enqueuedNs, "asyncTasks[\(index)].runs[\(position)].enqueuedNs")
                try checkTime(run.startNs, "asyncTasks[\(index)].runs[\(position)].startNs")
                try checkTime(run.endNs, "asyncTasks[\(index)].runs[\(position)].endNs")
            }
        }
        try checkTime(termination?.timeNs, "termination.timeNs")
        for (field, value) in [
            ("signalsSent", counts.signalsSent), ("captured", counts.captured), ("dropped", counts.dropped),
            ("failed", counts.failed), ("skipped", counts.skipped), ("truncated", counts.truncated),
            ("waiting", counts.waiting), ("unanswered", counts.unanswered), ("threadsSeen", counts.threadsSeen),
            ("lostTaskEvents", counts.lostTaskEvents),
        ] {
            try checkCount(value, "counts.\(field)")
        }
    }

    /// Shortens every name longer than ``maximumNameBytes`` (frames, threads, spans, tasks,
    /// marks), keeping its start and ending it with ``shortenedMarker``, so that no report
    /// spends memory or time on a name no one can read.
    public mutating func shortenLongNames() {
        func shortened(_ name: String) -> String {
            guard name.utf8.count > Profile.maximumNameBytes else { return name }
            var kept = Substring(name).prefix(Profile.maximumNameBytes / 2)
            while kept.utf8.count > Profile.maximumNameBytes - Profile.shortenedMarker.utf8.count { kept = kept.dropLast() }
            return kept + Profile.shortenedMarker
        }
        func shortened(_ name: String?) -> String? { name.map { shortened($0) } }
        for index in frames.indices {
            frames[index].name = shortened(frames[index].name)
            frames[index].short = shortened(frames[index].short)
            frames[index].object = shortened(frames[index].object)
            frames[index].file = shortened(frames[index].file)
        }
        for index in threads.indices { threads[index].name = shortened(threads[index].name) }
        for index in spans.indices { spans[index].name = shortened(spans[index].name) }
        for index in marks.indices { marks[index].name = MarkName(shortened(marks[index].name.rawValue)) }
        for index in tasks.indices {
            tasks[index].name = shortened(tasks[index].name)
            tasks[index].dependencies = tasks[index].dependencies.map { shortened($0) }
            tasks[index].error = shortened(tasks[index].error)
        }
        for index in violations.indices { violations[index].message = shortened(violations[index].message) }
        for index in hangs.indices { hangs[index].running = shortened(hangs[index].running) }
    }
}
