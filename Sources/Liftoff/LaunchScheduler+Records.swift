import Foundation
import LiftoffProfile
import LiftoffSampler

/// What a scheduler's run becomes in the profile: one record per task, with the critical path to
/// the first frame, each task's slack and the main-lane work no UI needs.
extension LaunchScheduler {
    /// One record per task, in plan order, with the critical path, slack and deferral analysis.
    public var records: [Profile.TaskRecord] {
        let snapshot = state.withLock { $0 }
        let entries = snapshot.entries
        let tasks = plan.tasks
        // The work the first frame needs: UI tasks and everything they depend on.
        var neededByUI = Set<Int>()
        var stack = tasks.indices.filter { tasks[$0].tags.contains(.ui) }
        while let index = stack.popLast() {
            guard neededByUI.insert(index).inserted else { continue }
            stack += tasks[index].dependencies.compactMap { indexByName[$0] }
        }
        // The critical path: from the main-lane task that ended last before the first frame,
        // walk back through whatever it waited for last, a dependency or the previous main task.
        var critical = Set<Int>()
        let mainSequence = snapshot.mainSequence
        var current = mainSequence.max { (entries[$0].endNs ?? 0) < (entries[$1].endNs ?? 0) }
        while let index = current, critical.insert(index).inserted {
            var candidates = tasks[index].dependencies.compactMap { indexByName[$0] }
            if let position = mainSequence.firstIndex(of: index), position > 0 { candidates.append(mainSequence[position - 1]) }
            let start = entries[index].startNs ?? 0
            current = candidates.filter { (entries[$0].endNs ?? .max) <= start }
                .max { (entries[$0].endNs ?? 0) < (entries[$1].endNs ?? 0) }
        }
        var threadNames: [Int: String] = [:]
        for id in Set(entries.compactMap(\.threadID)) { threadNames[id] = LaunchScheduler.threadName(id) }
        return tasks.indices.map { index in
            let entry = entries[index]
            let task = tasks[index]
            // Slack: until the first dependent started, or the first frame for a task no one waits on.
            // On the critical path there is no slack by definition. Work nothing waited for and
            // that ended after the first frame did not gate anything: no slack to speak of.
            var slack: UInt64?
            if critical.contains(index) {
                slack = 0
            } else if let end = entry.endNs {
                let dependentStarts = entry.dependents.compactMap { entries[$0].startNs }
                var limit = dependentStarts.min()
                if limit == nil, task.lane != .mainAfterFirstFrame, let frame = snapshot.firstFrameNs, end <= frame {
                    limit = frame
                }
                slack = limit.map { NanosecondDuration.between(end, $0).nanoseconds }
            }
            return Profile.TaskRecord(
                name: task.name, lane: task.lane.name, status: entry.status, error: entry.error,
                dependencies: task.dependencies, tags: task.tags.map(\.name).sorted(), threadID: entry.threadID,
                threadName: entry.threadID.flatMap { threadNames[$0] }, queue: entry.queue, readyNs: entry.readyNs, startNs: entry.startNs,
                endNs: entry.endNs, waitNs: entry.waitNs, cpuNs: entry.cpuNs, onCriticalPath: critical.contains(index),
                slackNs: slack,
                couldDefer: task.lane == .main && !task.tags.contains(.ui) && !neededByUI.contains(index),
                task: entry.swiftTask)
        }
    }

    /// A thread's name from /proc (`main` for the main thread); nil once the thread is gone.
    static func threadName(_ id: Int) -> String? {
        if id == CurrentThread.mainThreadID { return "main" }
        guard let name = try? String(contentsOfFile: "/proc/self/task/\(id)/comm", encoding: .utf8) else { return nil }
        return name.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
