import Foundation
import Liftoff
import LiftoffProfile
import Synchronization
import LiftoffTestSupport
import Testing

@testable import CLiftoffSampler
@testable import LiftoffSampler

/// The work of each kind, as the work measured it on its own thread: CPU time, wall time, stretches.
private final class Burnt: Sendable {
    private let totals = Mutex([String: SampledWork]())

    /// Burns `milliseconds` of the calling thread's CPU time and books it under `name`.
    @inline(never)
    func burn(_ name: String, milliseconds: UInt64) {
        let work = SampledWork.measure { busyWork(untilCPU: CurrentThread.cpuNs + milliseconds * 1_000_000) }
        totals.withLock { $0[name] = ($0[name] ?? SampledWork()) + work }
    }

    /// The work booked under `name`.
    func work(_ name: String) -> SampledWork { totals.withLock { $0[name] ?? SampledWork() } }
}

private actor Registry {
    var count = 0
    func register(_ burnt: Burnt) -> Int {
        burnt.burn("actor", milliseconds: 15)
        count += 1
        return count
    }
}

@inline(never)
private func loadDatabase(_ burnt: Burnt) async -> Int {
    burnt.burn("async let", milliseconds: 30)
    // A task created by a child task belongs to the span too.
    await Task { burnt.burn("grandchild", milliseconds: 10) }.value
    return 1
}

@inline(never)
private func bootstrap(_ burnt: Burnt, registry: Registry) async -> Int {
    async let database = loadDatabase(burnt)
    let warmed = await withTaskGroup(of: Int.self) { group in
        for _ in 0..<3 { group.addTask { burnt.burn("group", milliseconds: 10); return 1 } }
        return await group.reduce(0, +)
    }
    let unstructured = Task { burnt.burn("Task {}", milliseconds: 20) }
    let registered = await registry.register(burnt)
    burnt.burn("own", milliseconds: 10)
    await unstructured.value
    return await database + warmed + registered
}


/// The runtime ids of the tasks that ran, as each task saw itself.
private final class RanTasks: Sendable {
    private let ids = Mutex(Set<UInt64>())

    /// Books the calling task as having run.
    func noteCurrent() {
        let id = UInt64(lo_current_swift_task())
        ids.withLock { _ = $0.insert(id) }
    }

    var all: Set<UInt64> { ids.withLock { $0 } }
}

private actor Counter {
    var value = 0
    func add(_ ran: RanTasks) -> Int {
        value += 1
        // A task created on an actor runs on it: its first job goes through the actor's executor.
        Task { ran.noteCurrent() }
        return value
    }
}

/// Threads that keep both cores busy until stopped, as `stress --cpu 2` does beside a test.
private final class CoreLoad: Sendable {
    private let running = Atomic<Bool>(true)
    private let stopped = DispatchSemaphore(value: 0)
    private let count: Int

    init(threads: Int) {
        count = threads
        for _ in 0..<threads {
            let thread = Thread { [self] in
                var value: UInt64 = 1
                while running.load(ordering: .relaxed) {
                    for _ in 0..<10_000 { value = value &* 6_364_136_223_846_793_005 &+ 1 }
                }
                workSink.wrappingAdd(value, ordering: .relaxed)
                stopped.signal()
            }
            thread.start()
        }
    }

    func stop() {
        running.store(false, ordering: .relaxed)
        for _ in 0..<count { stopped.wait() }
    }
}

@Suite("Async tasks", .serialized, .processState(timeLimit: .seconds(120)))
struct AsyncTaskTests {
    @Test("a span owns the samples and CPU of the async let, task group, Task {} and actor work it started, not a detached task's")
    func spanOwnsChildTasks() async throws {
        let burnt = Burnt()
        let registry = Registry()
        let recorder = try LaunchRecorder.start(configuration: SamplerConfiguration(rateHz: 1000))
        let detached = Task.detached { burnt.burn("detached", milliseconds: 40) }
        _ = await recorder.span("bootstrap") { await bootstrap(burnt, registry: registry) }
        await detached.value
        let profile = recorder.finish()

        let span = try #require(profile.spans.firstIndex { $0.name == "bootstrap" })
        let started = ["own", "async let", "grandchild", "group", "Task {}", "actor"].reduce(SampledWork()) { $0 + burnt.work($1) }
        // At 1 kHz a running sample stands for a millisecond of CPU time; the tolerance is the
        // sampling's own, from the CPU and wall time the work measured (SampledWork).
        let samples = Double(try #require(profile.spans[span].samples))
        let interval = profile.samplingIntervalNs
        #expect(
            started.agrees(withRunning: samples, intervalNs: interval),
            "\(samples) samples for \(started): \(started.expectedRunning(intervalNs: interval)) ± \(started.runningTolerance(intervalNs: interval))")
        #expect(profile.spans[span].cpuNs != nil)

        // Other tests may create tasks meanwhile: this test's are those its own task started.
        let testTask = try #require(profile.spans[span].task)
        let byID = Dictionary(profile.asyncTasks.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        func descends(_ task: Profile.AsyncTask) -> Bool {
            var creator = task.creator
            for _ in 0..<16 {
                guard let id = creator else { return false }
                if id == testTask { return true }
                creator = byID[id]?.creator
            }
            return false
        }
        let ours = profile.asyncTasks.filter(descends)
        let kinds = Dictionary(grouping: ours, by: \.kind)
        #expect(kinds[.asyncLet]?.count == 1)
        #expect(kinds[.groupChild]?.count == 3)
        #expect(kinds[.unstructured]?.count == 2, "the Task {} and the grandchild")
        #expect(kinds[.detached]?.count == 1)
        for task in ours {
            #expect(task.span == (task.kind == .detached ? nil : span), "\(task.kind) task \(task.id)")
            #expect(task.createdNs != nil && task.creatorThreadID != nil)
            #expect(!task.runs.isEmpty, "\(task.kind) task \(task.id) ran")
            for run in task.runs { #expect(run.enqueuedNs <= run.startNs && run.startNs <= run.endNs) }
        }
        let grandchild = try #require(kinds[.unstructured]?.first { task in
            profile.asyncTasks.first { $0.id == task.creator }?.kind == .asyncLet
        })
        #expect(grandchild.span == span)
        let detachedTask = try #require(kinds[.detached]?.first)
        // Sampled as a task of its own, beside the span's tasks on two cores.
        let detachedWork = burnt.work("detached")
        #expect(
            detachedWork.agrees(withRunning: Double(detachedTask.samples ?? 0), intervalNs: interval),
            "the detached task's own samples: \(detachedTask.samples ?? 0) for \(detachedWork)")
        let scheduled = profile.scheduling(ofSpan: span)
        #expect(scheduled.jobs >= 6, "the jobs of the 6 tasks it started, and of its own task")
        #expect(profile.spans[span].scheduledNs == scheduled.total)
        #expect(profile.spans[span].childTasks == 6)
    }

    @Test("with both cores busy, every one of hundreds of tasks that ran has its runs, however its last job ended")
    func everyTaskThatRanHasRuns() async throws {
        let load = CoreLoad(threads: 2)
        defer { load.stop() }
        let ran = RanTasks()
        let counter = Counter()
        let recorder = try LaunchRecorder.start(configuration: SamplerConfiguration(rateHz: 1000))
        for _ in 0..<40 {
            async let first: Void = ran.noteCurrent()
            let hops = await withTaskGroup(of: Int.self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        ran.noteCurrent()
                        return await counter.add(ran)
                    }
                }
                return await group.reduce(0, +)
            }
            let unstructured = Task { ran.noteCurrent() }
            let detached = Task.detached { ran.noteCurrent() }
            _ = hops
            await first
            await unstructured.value
            await detached.value
        }
        // The tasks created on the actor end on their own: wait until each has run.
        let expected = 40 * (1 + 4 + 4 + 1 + 1)
        for _ in 0..<2_000 where ran.all.count < expected { try await Task.sleep(for: .milliseconds(5)) }
        let profile = recorder.finish()

        let ranIDs = ran.all
        #expect(ranIDs.count == expected, "every task noted itself")
        let byID = Dictionary(profile.asyncTasks.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let withoutRuns = ranIDs.filter { (byID[$0]?.runs ?? []).isEmpty }
        let lost = lo_task_events_lost()
        #expect(lost == 0, "no task event was lost")
        #expect(profile.counts.lostTaskEvents == Int(lost), "profile.json counts them")
        #expect(withoutRuns.isEmpty, "\(withoutRuns.count) of \(ranIDs.count) tasks that ran have no run: \(withoutRuns.sorted().prefix(10))")
        for id in ranIDs {
            for run in byID[id]?.runs ?? [] { #expect(run.enqueuedNs <= run.startNs && run.startNs <= run.endNs) }
        }
    }

    @Test("a job still running when recording stops keeps its run, ended at the stop")
    func runningJobKeepsItsRun() async throws {
        let ran = RanTasks()
        let recorder = try LaunchRecorder.start(configuration: SamplerConfiguration(rateHz: 1000))
        // The task lets the test go on, then its job runs on for 50 ms: the test stops recording
        // meanwhile, as a launch whose last task resumed it would.
        let task = Mutex<Task<Void, Never>?>(nil)
        await withCheckedContinuation { (resumed: CheckedContinuation<Void, Never>) in
            task.withLock {
                $0 = Task.detached {
                    ran.noteCurrent()
                    resumed.resume()
                    usleep(50_000)
                }
            }
        }
        let profile = recorder.finish()
        await task.withLock { $0 }?.value

        let id = try #require(ran.all.first)
        let recorded = try #require(profile.asyncTasks.first { $0.id == id })
        let run = try #require(recorded.runs.first, "the run that was under way when recording stopped")
        #expect(run.enqueuedNs <= run.startNs && run.startNs <= run.endNs)
    }

    @Test("samples in async functions name their awaiting callers, across into the parent task, without executor frames")
    func asyncCallStacks() async throws {
        let burnt = Burnt()
        let registry = Registry()
        let recorder = try LaunchRecorder.start(configuration: SamplerConfiguration(rateHz: 1000))
        _ = await recorder.span("bootstrap") { await bootstrap(burnt, registry: registry) }
        let profile = recorder.finish()

        // For each function the work ran in: its running samples, and those whose stack also
        // names `bootstrap`, the async function that started (or, for the actor, called) it.
        func stacks(containing function: String) -> (all: Int, named: Int, executor: Int) {
            var result = (all: 0, named: 0, executor: 0)
            for row in 0..<profile.samples.count where profile.samples.state[row] == .running {
                let frames = profile.frameIndices(ofStack: profile.samples.stack[row]).map { profile.frames[$0] }
                guard let at = frames.lastIndex(where: { $0.displayName.hasPrefix(function) }) else { continue }
                let weight = Int(profile.samples.weight[row])
                result.all += weight
                if frames[..<at].contains(where: { $0.isAsync && $0.displayName.hasPrefix("bootstrap(") }) { result.named += weight }
                if frames.contains(where: { $0.name.contains("swift_job_run") }) { result.executor += weight }
            }
            return result
        }
        #expect(!profile.frames.contains { $0.name.contains("resume_adapter") }, "the runtime's resume adapters are left out")
        for function in ["loadDatabase(", "Registry.register(", "closure #1 in closure #1 in bootstrap("] {
            let found = stacks(containing: function)
            #expect(found.all >= 5, "\(function): \(found.all) samples")
            // Most samples: on a loaded 2-core machine 84-88 % of about 30 were seen, 95 % and more when idle.
            #expect(Double(found.named) >= 0.8 * Double(found.all), "\(function): \(found.named) of \(found.all) name bootstrap")
            #expect(found.executor == 0, "\(function): executor frames are folded away")
        }
    }

    @Test("a Task {} created in a synchronous span on a thread outside any task belongs to that span")
    func syncSpanOwnsTask() async throws {
        let burnt = Burnt()
        let recorder = try LaunchRecorder.start(configuration: SamplerConfiguration(rateHz: 1000))
        let created = Mutex<Task<Void, Never>?>(nil)
        onNewThread(name: "sync-launch") {
            recorder.span("start services") {
                created.withLock { $0 = Task { burnt.burn("task", milliseconds: 30) } }
            }
        }
        await created.withLock { $0 }?.value
        let profile = recorder.finish()

        let span = try #require(profile.spans.firstIndex { $0.name == "start services" })
        #expect(profile.spans[span].task == nil)
        // The task created on the span's thread (other tests may create tasks meanwhile).
        let task = try #require(profile.asyncTasks.first { $0.creatorThreadID == profile.spans[span].threadID })
        #expect(task.kind == .unstructured)
        #expect(task.creator == nil)
        #expect(task.span == span)
        let samples = Double(profile.spans[span].samples ?? 0)
        let work = burnt.work("task")
        #expect(work.agrees(withRunning: samples, intervalNs: profile.samplingIntervalNs), "the span's samples are the task's: \(samples) for \(work)")
    }
}
