import LiftoffProfile

/// A thread's samples as a time-ordered flame chart: one bar per frame for as long as
/// consecutive samples kept it at the same place in the stack. A bar none of whose samples
/// ran is a wait.
package enum FlameChart {
    /// One frame on screen for a stretch of time.
    package struct Bar: Equatable {
        /// Index into `profile.frames`.
        package var frame: Int
        /// Distance from the outermost frame (0).
        package var depth: Int
        package var startNs: UInt64
        package var endNs: UInt64
        /// Every sample under the bar was waiting: the thread did not run there.
        package var waiting = false
        /// Waiting, and for some of that time runnable: ready to run but without a core.
        package var runnable = false
        /// Waiting, and for some of that time waiting for the disk (a page fault that reads).
        package var disk = false
    }

    /// The bars of one thread's samples (indices in time order).
    ///
    /// A sample at time `t` stands for `t` up to the next sample; the last sample, and a
    /// sample followed by a gap of more than an interval beyond its ticks (the thread was not
    /// sampled), stand for their ticks. Bars shorter than `1 / 20,000` of the thread's sampled time are left
    /// out: they would be far below a pixel, and their time stays inside their parent's bar.
    package static func bars(_ profile: Profile, samples: [Int], intervalNs: UInt64) -> [Bar] {
        guard let firstSample = samples.first, let lastSample = samples.last else { return [] }
        let times = profile.samples.timeNs
        func end(of sample: Int) -> UInt64 {
            let length = UInt64(profile.samples.weight[sample]).multipliedReportingOverflow(by: intervalNs)
            return NanosecondDuration(nanoseconds: length.overflow ? .max : length.partialValue).after(times[sample])
        }
        let span = NanosecondDuration.between(times[firstSample], end(of: lastSample)).nanoseconds
        let minimum = span / 20_000
        var result: [Bar] = []
        var open: [(stack: Int, startNs: UInt64, ran: Bool, preempted: Bool, disk: Bool)] = []  // outermost first
        var path: [Int] = []
        var lastEnd = end(of: firstSample)

        func close(downTo depth: Int, at end: UInt64) {
            while open.count > depth {
                let entry = open.removeLast()
                if end > entry.startNs && end - entry.startNs >= minimum {
                    result.append(
                        Bar(
                            frame: profile.stacks.frame[entry.stack], depth: open.count, startNs: entry.startNs, endNs: end,
                            waiting: !entry.ran, runnable: !entry.ran && entry.preempted, disk: !entry.ran && entry.disk))
                }
            }
        }

        for sample in samples {
            let time = times[sample]
            if NanosecondDuration.between(lastEnd, time).nanoseconds > intervalNs {
                close(downTo: 0, at: lastEnd)
            }
            path.removeAll(keepingCapacity: true)
            var stack = profile.samples.stack[sample]
            while stack >= 0 {
                path.append(stack)
                stack = profile.stacks.parent[stack]
            }
            path.reverse()
            var common = 0
            while common < open.count, common < path.count, open[common].stack == path[common] { common += 1 }
            close(downTo: common, at: time)
            let ran = profile.samples.state[sample] == .running
            let preempted = profile.samples.state[sample] == .runnable
            let disk = profile.samples.state[sample] == .disk
            if ran { for depth in 0..<common { open[depth].ran = true } }
            if preempted { for depth in 0..<common { open[depth].preempted = true } }
            if disk { for depth in 0..<common { open[depth].disk = true } }
            for depth in common..<path.count { open.append((path[depth], time, ran, preempted, disk)) }
            lastEnd = end(of: sample)
        }
        close(downTo: 0, at: lastEnd)
        result.sort { ($0.depth, $0.startNs) < ($1.depth, $1.startNs) }
        return result
    }
}
