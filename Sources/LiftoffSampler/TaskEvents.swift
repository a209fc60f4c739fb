import CLiftoffSampler
import LiftoffProfile

/// What the session recorded of one Swift task: its creation, or one of its jobs that ran.
public struct TaskEvent: Sendable, Equatable {
    /// What happened.
    public enum Kind: Sendable, Equatable {
        /// The task was created, by `creator` (0 outside any task) on `threadID`, at `timeNs`.
        case created(Profile.AsyncTaskKind, creator: UInt64)
        /// A job of the task, enqueued at `timeNs` by `enqueuerThreadID`, ran on `threadID`.
        case ran(startNs: UInt64, endNs: UInt64, enqueuerThreadID: Int)
    }

    /// The task's runtime id.
    public var task: UInt64
    /// What happened.
    public var kind: Kind
    /// The thread it happened on: the creating thread, or the thread the job ran on.
    public var threadID: Int
    /// `CLOCK_MONOTONIC` nanoseconds of the creation, or of the job's enqueue.
    public var timeNs: UInt64

    /// Creates an event.
    public init(task: UInt64, kind: Kind, threadID: Int, timeNs: UInt64) {
        self.task = task
        self.kind = kind
        self.threadID = threadID
        self.timeNs = timeNs
    }

    /// The task events of the current or last session.
    static func recorded() -> (events: [TaskEvent], lost: Int) {
        let count = lo_task_events(nil, 0)
        var raw = [lo_task_event](repeating: lo_task_event(), count: count)
        let copied = raw.withUnsafeMutableBufferPointer { lo_task_events($0.baseAddress, count) }
        let events = raw.prefix(min(count, copied)).compactMap { event -> TaskEvent? in
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
                return TaskEvent(
                    task: event.task, kind: .created(kind, creator: event.creator), threadID: Int(event.thread),
                    timeNs: event.enqueued_ns)
            case LO_TASK_EVENT_RAN:
                return TaskEvent(
                    task: event.task,
                    kind: .ran(startNs: event.started_ns, endNs: event.ended_ns, enqueuerThreadID: Int(event.enqueuer)),
                    threadID: Int(event.thread), timeNs: event.enqueued_ns)
            default:
                return nil
            }
        }
        return (events, Int(clamping: lo_task_events_lost()))
    }

    /// The Swift tasks `events` describe, in creation order (tasks seen only running, created
    /// before recording began, first), with times relative to `originNs`.
    public static func asyncTasks(from events: [TaskEvent], originNs: UInt64) -> [Profile.AsyncTask] {
        func relative(_ time: UInt64) -> UInt64 { NanosecondDuration.between(originNs, time).nanoseconds }
        var tasks: [Profile.AsyncTask] = []
        var position: [UInt64: Int] = [:]
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
            case .ran(let start, let end, let enqueuer):
                tasks[index].runs.append(
                    Profile.AsyncTaskRun(
                        enqueuedNs: relative(event.timeNs), startNs: relative(start), endNs: relative(max(start, end)),
                        threadID: event.threadID, enqueuerThreadID: enqueuer))
            }
        }
        for index in tasks.indices { tasks[index].runs.sort { $0.startNs < $1.startNs } }
        // Creation order, with tasks created before recording began (never seen created) first.
        return tasks.sorted { ($0.createdNs ?? 0, $0.id) < ($1.createdNs ?? 0, $1.id) }
    }
}
