import CLiftoffSampler
import LiftoffProfile

/// What the session recorded of one Swift task: its creation, or one of its jobs that ran.
public struct TaskEvent: Sendable, Equatable {
    /// What happened.
    public enum Kind: Sendable, Equatable {
        /// The task was created, by `creator` (0 outside any task), on the event's thread.
        case created(Profile.AsyncTaskKind, creator: UInt64)
        /// One of the task's jobs was enqueued (became ready to run) from the event's thread.
        case enqueued
        /// One of the task's jobs ran on the event's thread, from the event's time to `endNs`.
        case ran(endNs: UInt64)
    }

    /// The task's runtime id.
    public var task: UInt64
    /// What happened.
    public var kind: Kind
    /// The thread it happened on.
    public var threadID: Int
    /// `CLOCK_MONOTONIC` nanoseconds when it happened (a run: when it started).
    public var timeNs: UInt64

    /// Creates an event.
    public init(task: UInt64, kind: Kind, threadID: Int, timeNs: UInt64) {
        self.task = task
        self.kind = kind
        self.threadID = threadID
        self.timeNs = timeNs
    }

    /// An event as the sampler recorded it; nil for a kind this version does not know.
    init?(recorded event: lo_task_event) {
        switch Int32(event.kind) {
        case LO_TASK_EVENT_CREATED:
            let kind: Profile.AsyncTaskKind
            switch Int32(event.task_kind) {
            case LO_TASK_ASYNC_LET: kind = .asyncLet
            case LO_TASK_GROUP_CHILD: kind = .groupChild
            case LO_TASK_UNSTRUCTURED: kind = .unstructured
            case LO_TASK_DETACHED: kind = .detached
            default: kind = .unknown
            }
            self.init(
                task: event.task, kind: .created(kind, creator: event.creator), threadID: Int(event.thread),
                timeNs: event.time_ns)
        case LO_TASK_EVENT_ENQUEUED:
            self.init(task: event.task, kind: .enqueued, threadID: Int(event.thread), timeNs: event.time_ns)
        case LO_TASK_EVENT_RAN:
            self.init(task: event.task, kind: .ran(endNs: event.end_ns), threadID: Int(event.thread), timeNs: event.time_ns)
        default:
            return nil
        }
    }

    /// The task events of the current or last session.
    static func recorded() -> (events: [TaskEvent], lost: Int) {
        let count = lo_task_events(nil, 0)
        var raw = [lo_task_event](repeating: lo_task_event(), count: count)
        let copied = raw.withUnsafeMutableBufferPointer { lo_task_events($0.baseAddress, count) }
        let events = raw.prefix(min(count, copied)).compactMap(TaskEvent.init(recorded:))
        return (events, Int(clamping: lo_task_events_lost()))
    }

    /// The Swift tasks `events` describe, in creation order (tasks seen only running, created
    /// before recording began, first), with times relative to `originNs`. Each run is paired with
    /// the enqueue before it (the creation, for a task's first job): a task has at most one job
    /// waiting or running at a time.
    public static func asyncTasks(from events: [TaskEvent], originNs: UInt64) -> [Profile.AsyncTask] {
        func relative(_ time: UInt64) -> UInt64 { NanosecondDuration.between(originNs, time).nanoseconds }
        var tasks: [Profile.AsyncTask] = []
        var position: [UInt64: Int] = [:]
        // The task's latest enqueue not yet paired with a run.
        var pending: [UInt64: TaskEvent] = [:]
        for event in events.sorted(by: { $0.timeNs < $1.timeNs }) {
            guard event.task != 0 else { continue }
            let index: Int
            if let known = position[event.task] {
                index = known
            } else {
                index = tasks.count
                position[event.task] = index
                tasks.append(Profile.AsyncTask(id: event.task, kind: .unknown))
            }
            switch event.kind {
            case .created(let kind, let creator):
                tasks[index].kind = kind
                tasks[index].creator = creator == 0 ? nil : creator
                tasks[index].creatorThreadID = event.threadID
                tasks[index].createdNs = relative(event.timeNs)
                // A new task's first job is enqueued as it is created.
                pending[event.task] = event
            case .enqueued:
                pending[event.task] = event
            case .ran(let end):
                // A run with no enqueue recorded (it was enqueued before recording began) waited
                // for an unknown time: it counts as not waiting.
                let enqueue = pending.removeValue(forKey: event.task)
                tasks[index].runs.append(
                    Profile.AsyncTaskRun(
                        enqueuedNs: relative(enqueue?.timeNs ?? event.timeNs), startNs: relative(event.timeNs),
                        endNs: relative(max(event.timeNs, end)), threadID: event.threadID,
                        enqueuerThreadID: enqueue?.threadID ?? event.threadID))
            }
        }
        // Creation order, with tasks created before recording began (never seen created) first.
        return tasks.sorted { ($0.createdNs ?? 0, $0.id) < ($1.createdNs ?? 0, $1.id) }
    }
}
