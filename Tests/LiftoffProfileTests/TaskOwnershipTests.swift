import Testing

@testable import LiftoffProfile

/// A profile at 1 kHz whose samples (each 1 ms, running) are given as (thread, time in ms, task).
private func profile(samples: [(thread: Int, ms: UInt64, task: UInt64)]) -> Profile {
    var profile = sampleProfile()
    profile.threads = [
        Profile.ThreadInfo(id: 100, name: "main", isMain: true), Profile.ThreadInfo(id: 101, name: "worker", isMain: false),
    ]
    profile.samples = Profile.SampleTable()
    for sample in samples {
        profile.samples.append(thread: sample.thread, timeNs: sample.ms * 1_000_000, stack: 2, task: sample.task, cpuNs: 1_000_000)
    }
    return profile
}

private func child(_ id: UInt64, _ kind: Profile.AsyncTaskKind, creator: UInt64?, thread: Int, atMs: UInt64) -> Profile.AsyncTask {
    Profile.AsyncTask(id: id, kind: kind, creator: creator, creatorThreadID: thread, createdNs: atMs * 1_000_000)
}

@Suite("Swift task ownership", .timeLimit(.minutes(5)))
struct TaskOwnershipTests {
    @Test("the innermost span open in the creating task owns a child, and every span around it counts the child's samples")
    func innermostSpanOwnsChild() {
        // Task 1 opens "outer" (0–10 ms) and, inside it, "inner" (2–6 ms); it starts task 2 at
        // 3 ms (in inner) and task 3 at 8 ms (in outer only). Task 2 starts task 4 after inner ended.
        var profile = profile(samples: [
            (100, 1, 1), (100, 3, 1),
            (101, 4, 2), (101, 5, 2), (101, 7, 2),
            (101, 9, 3),
            (100, 12, 4), (100, 13, 4),
        ])
        profile.spans = [
            Profile.Span(name: "outer", category: .span, threadID: 100, startNs: 0, endNs: 10_000_000, task: 1),
            Profile.Span(name: "inner", category: .span, threadID: 100, startNs: 2_000_000, endNs: 6_000_000, parent: 0, task: 1),
        ]
        profile.asyncTasks = [
            child(2, .asyncLet, creator: 1, thread: 100, atMs: 3),
            child(3, .groupChild, creator: 1, thread: 100, atMs: 8),
            child(4, .unstructured, creator: 2, thread: 101, atMs: 11),
        ]
        profile.attributeSamples()

        #expect(profile.asyncTasks.map(\.span) == [1, 0, 1], "task 4 inherits the span its creator belongs to")
        #expect(profile.spans[1].samples == 1 + 3 + 2, "inner: its own task's sample, task 2's three, task 4's two")
        #expect(profile.spans[0].samples == 2 + 3 + 1 + 2, "outer: everything")
        #expect(profile.spans[1].childTasks == 2)
        #expect(profile.spans[0].childTasks == 3)
        #expect(profile.asyncTasks.map(\.samples) == [3, 1, 2])
        let owners = profile.sampleOwners()
        #expect(owners.span == [0, 1, 1, 1, 1, 0, 1, 1], "each sample's innermost owner")
        #expect(profile.sampleIndices(inSpansNamed: "inner") == [1, 2, 3, 4, 6, 7])
    }

    @Test("a detached task belongs to no span, and its own children neither")
    func detachedIsKeptOut() {
        var profile = profile(samples: [(100, 1, 1), (101, 2, 2), (101, 3, 5)])
        profile.spans = [Profile.Span(name: "launch", category: .span, threadID: 100, startNs: 0, endNs: 10_000_000, task: 1)]
        profile.asyncTasks = [
            child(2, .detached, creator: 1, thread: 100, atMs: 1),
            child(5, .unstructured, creator: 2, thread: 101, atMs: 2),
        ]
        profile.attributeSamples()
        #expect(profile.asyncTasks.map(\.span) == [nil, nil])
        #expect(profile.spans[0].samples == 1)
        #expect(profile.spans[0].childTasks == nil)
    }

    @Test("a task created on a thread outside any task belongs to the synchronous span open on that thread")
    func synchronousSpanOwnsTask() {
        var profile = profile(samples: [(100, 1, 0), (101, 3, 7), (101, 4, 7)])
        profile.spans = [Profile.Span(name: "start", category: .span, threadID: 100, startNs: 0, endNs: 2_000_000)]
        profile.asyncTasks = [child(7, .unstructured, creator: nil, thread: 100, atMs: 1)]
        profile.attributeSamples()
        #expect(profile.asyncTasks[0].span == 0)
        #expect(profile.spans[0].samples == 3, "its thread's sample, and the task's two after it ended")
    }

    @Test("a launch task owns the tasks its Swift task started while it ran")
    func launchTaskOwnsChildren() {
        var profile = profile(samples: [(100, 1, 9), (101, 2, 10), (101, 3, 10)])
        profile.tasks = [
            Profile.TaskRecord(
                name: "load", lane: .main, status: .completed, threadID: 100, startNs: 0, endNs: 5_000_000, task: 9)
        ]
        profile.asyncTasks = [child(10, .asyncLet, creator: 9, thread: 100, atMs: 1)]
        profile.attributeSamples()
        #expect(profile.tasks[0].samples == 3)
        #expect(profile.sampleOwners().task == [0, 0, 0])
    }

    @Test("a span's scheduling delay adds up its tasks' jobs' waits and its own task's while it was open")
    func schedulingDelay() {
        var profile = profile(samples: [])
        profile.spans = [Profile.Span(name: "launch", category: .span, threadID: 100, startNs: 0, endNs: 10_000_000, task: 1)]
        var own = Profile.AsyncTask(id: 1, kind: .unknown)
        own.runs = [
            Profile.AsyncTaskRun(enqueuedNs: 1_000_000, startNs: 1_500_000, endNs: 2_000_000, threadID: 100, enqueuerThreadID: 101),
            Profile.AsyncTaskRun(enqueuedNs: 11_000_000, startNs: 12_000_000, endNs: 13_000_000, threadID: 100, enqueuerThreadID: 101),
        ]
        var started = child(2, .groupChild, creator: 1, thread: 100, atMs: 3)
        started.runs = [Profile.AsyncTaskRun(enqueuedNs: 3_000_000, startNs: 3_250_000, endNs: 4_000_000, threadID: 101, enqueuerThreadID: 100)]
        profile.asyncTasks = [own, started]
        profile.attributeSamples()
        #expect(profile.spans[0].scheduledNs == 500_000 + 250_000, "the own task's run after the span ended does not count")
        #expect(profile.scheduling(ofSpan: 0).longest == 500_000)
        #expect(started.scheduledNs == 250_000 && started.longestScheduledNs == 250_000)
    }
}
