import LiftoffProfile

/// What the time-ordered views share: intervals per thread, nested properly, and samples
/// per thread in time order.
package struct ReportTimeline {
    /// A named interval on one thread (a task, a span, a hang).
    package struct Interval: Equatable {
        package var name: String
        package var category: Profile.SpanCategory
        package var threadID: Int
        package var startNs: UInt64
        package var endNs: UInt64
        /// Index of the task in `profile.tasks`, when this interval is one.
        package var task: Int?
        /// The span's attributes, when this interval is a span that has some.
        package var attributes: [String: String]? = nil
    }

    /// Sample indices per thread id, each list in time order; threads in the profile's order,
    /// then any thread seen only in samples.
    package static func samplesByThread(_ profile: Profile) -> [(thread: Int, samples: [Int])] {
        var byThread: [Int: [Int]] = [:]
        var order: [Int] = profile.threads.map(\.id)
        var known = Set(order)
        for index in 0..<profile.samples.count {
            let thread = profile.samples.thread[index]
            if known.insert(thread).inserted { order.append(thread) }
            byThread[thread, default: []].append(index)
        }
        return order.map { thread in
            var samples = byThread[thread] ?? []
            let times = profile.samples.timeNs
            var sorted = true
            for position in samples.indices.dropFirst() where times[samples[position - 1]] > times[samples[position]] {
                sorted = false
                break
            }
            if !sorted { samples.sort { (times[$0], $0) < (times[$1], $1) } }
            return (thread, samples)
        }
    }

    /// Every span, task and hang of the profile as an interval on its thread.
    package static func intervals(_ profile: Profile) -> [Interval] {
        var result: [Interval] = []
        for span in profile.spans {
            result.append(
                Interval(
                    name: span.name, category: span.category, threadID: span.threadID, startNs: span.startNs,
                    endNs: max(span.endNs, span.startNs), attributes: span.attributes))
        }
        for (index, task) in profile.tasks.enumerated() {
            guard let start = task.startNs, let end = task.endNs, let thread = task.threadID else { continue }
            result.append(
                Interval(
                    name: task.name, category: .launchTask, threadID: thread, startNs: start, endNs: max(end, start),
                    task: index))
        }
        let main = profile.threads.first(where: \.isMain)?.id
        if let main, let loader = profile.phases.preMain?.loader {
            let phases = profile.phases
            result += loaderIntervals(loader, thread: main, programStartNs: phases.programStartNs ?? phases.processStartNs)
        }
        if let main {
            for hang in profile.hangs {
                result.append(
                    Interval(
                        name: "hang: \(hang.running)", category: .hang, threadID: main, startNs: hang.startNs,
                        endNs: hang.endNs))
            }
        }
        return result
    }

    /// The loader's work before `main` on the main thread, as the audit library timed it: the
    /// whole of it, each object's search and mapping, relocation, and each initializer; and before
    /// it, from the program's exec, what no audit library sees (the kernel's exec, the loader
    /// starting and loading the audit library).
    static func loaderIntervals(_ loader: Profile.Loader, thread: Int, programStartNs: UInt64) -> [Interval] {
        func interval(_ name: String, _ start: UInt64, _ end: UInt64) -> Interval {
            Interval(name: name, category: .loader, threadID: thread, startNs: start, endNs: max(start, end))
        }
        let end = max(loader.initializedNs ?? loader.relocatedNs, loader.initializers.map(\.endNs).max() ?? 0)
        var result = [interval("loader", loader.startNs, end)]
        if programStartNs < loader.startNs { result.append(interval(Profile.Loader.execTitle, programStartNs, loader.startNs)) }
        for object in loader.objects {
            guard let search = object.searchNs else { continue }
            result.append(interval("map \(object.fileName)", search, object.mappedNs))
        }
        result.append(interval("relocation", loader.mappedNs, loader.relocatedNs))
        for initializer in loader.initializers where loader.objects.indices.contains(initializer.object) {
            let object = loader.objects[initializer.object].fileName
            result.append(interval("initializer \(initializer.function) (\(object))", initializer.startNs, initializer.endNs))
        }
        return result
    }

    /// The intervals of one thread, sorted and clipped so that each one lies inside the one
    /// enclosing it (an interval that outlives its enclosing one ends with it). Trace viewers
    /// need properly nested slices on a thread.
    package static func nested(_ intervals: [Interval]) -> [Interval] {
        let sorted = intervals.sorted {
            ($0.startNs, $1.endNs, $0.category, $0.name) < ($1.startNs, $0.endNs, $1.category, $1.name)
        }
        var result: [Interval] = []
        var open: [UInt64] = []  // end times of the enclosing intervals
        for var interval in sorted {
            while let end = open.last, end <= interval.startNs {
                open.removeLast()
            }
            if let end = open.last, interval.endNs > end { interval.endNs = end }
            result.append(interval)
            open.append(interval.endNs)
        }
        return result
    }

    /// Nanoseconds as milliseconds.
    package static func ms(_ ns: UInt64) -> Double { Double(ns) / 1e6 }
}

extension Profile.SpanCategory {
    /// A hang of the main thread, drawn as an interval in the time-ordered views.
    package static let hang: Profile.SpanCategory = "hang"
    /// The loader's work before `main` (the audit library's timeline), drawn as intervals.
    package static let loader: Profile.SpanCategory = "loader"
}
