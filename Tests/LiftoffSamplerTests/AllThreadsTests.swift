import CLiftoffSampler
import Dispatch
import Foundation
import Liftoff
import LiftoffProfile
import LiftoffTestSupport
import Synchronization
import Testing

@testable import LiftoffSampler

@inline(never)
func unregisteredPthreadWork(until deadline: UInt64) { busyWork(until: deadline) }

@inline(never)
func unregisteredDispatchWork(until deadline: UInt64) { busyWork(until: deadline) }

@inline(never)
func asyncSpanWork(until deadline: UInt64) { busyWork(until: deadline) }

/// Starts a raw POSIX thread (no Foundation, no registration) running `unregisteredPthreadWork`
/// for `milliseconds`, and returns it with a cell that receives its kernel thread id (0), and the
/// CPU and wall time the work took (2, 3), measured on the thread.
private func startPthread(milliseconds: UInt64) -> (pthread_t, UnsafeMutablePointer<Int>) {
    let cell = UnsafeMutablePointer<Int>.allocate(capacity: 4)
    cell.initialize(repeating: 0, count: 4)
    cell[1] = Int(milliseconds)
    var thread = pthread_t()
    let status = pthread_create(
        &thread, nil,
        { argument in
            let cell = argument!.assumingMemoryBound(to: Int.self)
            cell[0] = Int(lo_current_tid())
            let work = SampledWork.measure { unregisteredPthreadWork(until: deadline(afterMilliseconds: UInt64(cell[1]))) }
            cell[2] = Int(clamping: work.cpuNs)
            cell[3] = Int(clamping: work.wallNs)
            return nil
        }, cell)
    precondition(status == 0, "pthread_create failed")
    return (thread, cell)
}

extension SamplerTests {
    @Test("a pthread_create thread and a DispatchQueue.global block are sampled without registering")
    func unregisteredThreadsAreSampled() throws {
        try Sampler.start(SamplerConfiguration(rateHz: 1000))
        let (thread, cell) = startPthread(milliseconds: 300)
        defer { cell.deallocate() }
        let dispatchTID = Mutex(0)
        let window = Mutex<(UInt64, UInt64)>((0, 0))
        let done = DispatchSemaphore(value: 0)
        let dispatchWork = MeasuredWork()
        DispatchQueue.global().async {
            dispatchTID.withLock { $0 = CurrentThread.id }
            let start = DispatchTime.now().uptimeNanoseconds
            dispatchWork.measure { unregisteredDispatchWork(until: deadline(afterMilliseconds: 300)) }
            window.withLock { $0 = (start, DispatchTime.now().uptimeNanoseconds) }
            done.signal()
        }
        done.wait()
        pthread_join(thread, nil)
        let recording = Sampler.stop()

        let symbolizer = ELFSymbolizer()
        // A Dispatch worker serves other work before and after the block: look at the block's time.
        let (start, end) = window.withLock { $0 }
        var pthreadWork = SampledWork()
        pthreadWork.add(cpuNs: UInt64(cell[2]), wallNs: UInt64(cell[3]))
        for (tid, function, work) in [
            (cell[0], "unregisteredPthreadWork", pthreadWork), (dispatchTID.withLock { $0 }, "unregisteredDispatchWork", dispatchWork.work),
        ] {
            let samples = recording.samples.filter {
                // Running, or runnable when other suites keep both cores busy: sampled either way.
                $0.threadID == tid && $0.state != .blocked
                    && (function == "unregisteredPthreadWork" || ($0.timeNs > start && $0.timeNs < end))
            }
            let running = samples.filter { $0.state == .running }.reduce(0) { $0 + Int($1.weight) }
            #expect(
                work.agrees(withRunning: Double(running), intervalNs: 1_000_000),
                "\(function): \(running) running ticks for \(work), \(work.expectedRunning(intervalNs: 1_000_000)) ± \(work.runningTolerance(intervalNs: 1_000_000))")
            let named = samples.filter { sample in frameNames(sample, symbolizer).contains { $0.contains(function) } }
            #expect(named.count * 10 >= samples.count * 9, "\(function) in \(named.count) of \(samples.count) samples")
            #expect(recording.threadNames[tid] != nil, "the thread has a name")
        }
    }

    @Test("a thread blocked in a futex is recorded waiting, with its stack, without further signals")
    func blockedThreadWaitsWithoutSignals() throws {
        let parked = ParkedThread()
        try Sampler.start(SamplerConfiguration(rateHz: 1000))
        sleepThrough(milliseconds: 500)
        let recording = Sampler.stop()
        parked.release()

        let blocked = parked.threadID
        let samples = recording.samples.filter { $0.threadID == blocked }
        let running = samples.filter { $0.state == .running }
        let waiting = samples.filter { $0.state == .blocked }
        let ticks = waiting.reduce(0) { $0 + Int($1.weight) }
        // One signal finds the thread (and its stack), blocked in the futex wait; after that its
        // CPU clock does not move, so it is never signalled again.
        #expect(running.isEmpty, "a blocked thread is never running: \(running.count) running samples")
        #expect(ticks >= 250, "\(ticks) waiting ticks in 500 ms at 1 kHz")
        #expect(waiting.count < ticks / 5, "a wait is stored in few weighted records: \(waiting.count) for \(ticks) ticks")
        #expect(Set(waiting.map(\.addresses)).count == 1, "every waiting sample repeats the one captured stack")
        #expect(!(waiting.first?.addresses.isEmpty ?? true))
        #expect(recording.counts.waiting >= ticks - Int(recording.counts.signalsSent))
        #expect(
            recording.counts.signalsSent < recording.samples.count,
            "waits cost no signal: \(recording.counts.signalsSent) signals for \(recording.samples.count) samples")
    }

    @Test("a task nested in six generations of child tasks costs its thread a few microseconds a sample, not hundreds")
    func nestedTaskSamplesCheaply() async throws {
        // Each generation is a task group's child that awaits its own group: the innermost task's
        // awaiting callers run through every parent, each read once and then kept for its thread.
        @Sendable func nested(_ levels: Int) async -> SampledWork {
            guard levels > 0 else { return SampledWork.measure { asyncSpanWork(until: deadline(afterMilliseconds: 300)) } }
            return await withTaskGroup(of: SampledWork.self) { group in
                group.addTask { await nested(levels - 1) }
                return await group.next()!
            }
        }
        let recorder = try LaunchRecorder.start(configuration: SamplerConfiguration(rateHz: 1000))
        let work = await nested(6)
        let profile = recorder.finish(violations: [])
        let interval = profile.samplingIntervalNs
        var running = 0
        var cpu: UInt64 = 0
        for row in 0..<profile.samples.count {
            let names = profile.frameIndices(ofStack: profile.samples.stack[row]).map { profile.frames[$0].name }
            guard names.contains(where: { $0.contains("asyncSpanWork") }) else { continue }
            if profile.samples.state[row] == .running { running += Int(profile.samples.weight[row]) }
            cpu += profile.samples.cpuNs[row]
        }
        #expect(work.agrees(withRunning: Double(running), intervalNs: interval), "\(running) running samples for \(work)")
        // Each sample's CPU is what its thread used since the previous one, less its handler's time:
        // the work's own clock, within an interval at each end and the running tolerance, less a
        // tenth of an interval a sample. A handler that read every parent's chain anew each time
        // took 200 µs a sample here, a fifth of the work's CPU.
        let least = (work.expectedRunning(intervalNs: interval) - work.runningTolerance(intervalNs: interval)) * Double(interval)
            - Double(running) * Double(interval) / 10
        #expect(Double(cpu) >= least, "CPU time from the samples: \(cpu) ns, measured \(work.cpuNs) ns")
    }

    @Test("async startup: CPU work after an await is sampled on pool threads and attributed to its span")
    func asyncSpanGetsItsSamples() async throws {
        let recorder = try LaunchRecorder.start(configuration: SamplerConfiguration(rateHz: 1000))
        let work = try await recorder.span("open database") {
            try await Task.sleep(nanoseconds: 5_000_000)
            let first = SampledWork.measure { asyncSpanWork(until: deadline(afterMilliseconds: 200)) }
            try await Task.sleep(nanoseconds: 5_000_000)
            return first + SampledWork.measure { asyncSpanWork(until: deadline(afterMilliseconds: 100)) }
        }
        recorder.ready()
        let profile = recorder.finish(violations: [])

        let span = try #require(profile.spans.first { $0.name == "open database" })
        let task = try #require(span.task, "the span knows the Swift task it ran in")
        let samples = try #require(span.samples)
        let interval = profile.samplingIntervalNs
        #expect(
            work.agrees(withRunning: Double(samples), intervalNs: interval),
            "\(work) gave the span \(samples) running samples at 1 kHz, for \(work.expectedRunning(intervalNs: interval)) ± \(work.runningTolerance(intervalNs: interval))")
        // Each sample carries the CPU its thread used since the previous one, less the time its
        // signal handler took (which the work's own clock counts): at most what the work measured,
        // but for an interval at each end of each stretch, and at least the CPU of the running
        // samples the work is owed, less their tolerance and less each sample's handler time (at
        // most a tenth of an interval: 3 µs in a release build, tens of µs in a debug one).
        let cpu = Double(span.cpuNs ?? 0)
        let most = Double(work.cpuNs + 2 * UInt64(work.stretches) * interval)
        let owed = work.expectedRunning(intervalNs: interval) - work.runningTolerance(intervalNs: interval)
        let least = owed * Double(interval) - Double(samples) * Double(interval) / 10
        #expect(cpu <= most && cpu >= least, "CPU time from the samples: \(cpu) ns, measured \(work.cpuNs) ns")

        let ofTask = (0..<profile.samples.count).filter {
            profile.samples.task[$0] == task && profile.samples.state[$0] == .running
        }
        let named = ofTask.filter { sample in
            profile.frameIndices(ofStack: profile.samples.stack[sample]).contains {
                profile.frames[$0].name.contains("asyncSpanWork")
            }
        }
        #expect(named.count * 10 >= ofTask.count * 8, "asyncSpanWork in \(named.count) of the task's \(ofTask.count) samples")
    }
}

@inline(never)
func readClockInALoop(until deadline: UInt64) {
    var now = timespec()
    var sum = 0
    while DispatchTime.now().uptimeNanoseconds < deadline {
        for _ in 0..<100 {
            clock_gettime(CLOCK_MONOTONIC, &now)
            sum &+= now.tv_nsec
        }
    }
    workSink.wrappingAdd(UInt64(truncatingIfNeeded: sum), ordering: .relaxed)
}

extension SamplerTests {
    @Test("samples that land in the vDSO are named: clock_gettime, not linux-vdso.so.1+0x…")
    func vdsoFramesAreNamed() throws {
        try Sampler.start(SamplerConfiguration(rateHz: 1000))
        let tid = Mutex(0)
        onNewThread(name: "clock-reader") {
            tid.withLock { $0 = CurrentThread.id }
            readClockInALoop(until: deadline(afterMilliseconds: 300))
        }
        let recording = Sampler.stop()
        let reader = tid.withLock { $0 }
        let symbolizer = ELFSymbolizer()
        let leaves = recording.samples.filter { $0.threadID == reader && $0.state == .running }
            .compactMap { $0.addresses.first.map { symbolizer.symbolize($0) } }
        let inVDSO = leaves.filter { $0.object.hasPrefix("linux-vdso") }
        #expect(inVDSO.count >= 10, "\(inVDSO.count) of \(leaves.count) leaves in the vDSO")
        #expect(inVDSO.allSatisfy { $0.isResolved && $0.name.contains("clock_gettime") },
                "vDSO leaves: \(Set(inVDSO.map(\.name)))")
    }
}

/// Whether separate debug files are installed (Debian's libc6-dbg puts libc's under here).
let debugFilesInstalled = FileManager.default.fileExists(atPath: "/usr/lib/debug/.build-id")

extension SamplerTests {
    @Test(
        "libc's internal functions are named from its separate debug file, found by build-id",
        .enabled(if: debugFilesInstalled, "needs libc6-dbg (make test installs it)"))
    func libcInternalsNamedFromDebugFile() throws {
        let parked = ParkedThread()
        usleep(20_000)
        let stack = try #require(Sampler.captureStack(ofThread: parked.threadID))
        parked.release()
        let symbolizer = ELFSymbolizer()
        let frames = stack.enumerated().map { index, address in symbolizer.symbolize(index == 0 ? address : address - 1) }
        let libc = frames.filter { $0.object == "libc.so.6" }
        #expect(!libc.isEmpty, "the wait is in libc: \(frames.map(\.name))")
        #expect(libc.allSatisfy { $0.isResolved }, "libc frames: \(libc.map(\.name))")
        #expect(libc.contains { $0.name.hasPrefix("__futex") || $0.name.contains("futex") }, "\(libc.map(\.name))")
    }
}

extension SamplerTests {
    @Test("a thread that computes and then blocks is recorded waiting where it blocked, not where it last ran")
    func waitsCarryTheBlockedStack() throws {
        try Sampler.start(SamplerConfiguration(rateHz: 1000))
        let tid = Mutex(0)
        let work = MeasuredWork()
        let release = DispatchSemaphore(value: 0)
        // From computing straight into the wait, so the step costs the thread only microseconds.
        let thread = Thread {
            tid.withLock { $0 = CurrentThread.id }
            work.measure { workerSpin2(until: deadline(afterMilliseconds: 150)) }
            release.wait()
        }
        thread.start()
        sleepThrough(milliseconds: 450)
        let recording = Sampler.stop()
        release.signal()

        let symbolizer = ELFSymbolizer()
        let samples = recording.samples.filter { $0.threadID == tid.withLock { $0 } }
        let running = samples.filter { $0.state == .running }
        let waiting = samples.filter { $0.state == .blocked }
        let ticks = waiting.reduce(0) { $0 + Int($1.weight) }
        let computed = work.work
        let runningTicks = Double(running.reduce(0) { $0 + Int($1.weight) })
        #expect(computed.agrees(withRunning: runningTicks, intervalNs: 1_000_000), "it computed \(computed): \(runningTicks) running ticks")
        #expect(ticks >= 150, "it waited for 300 ms: \(ticks) waiting ticks")
        let stale = waiting.filter { sample in
            sample.addresses.enumerated().contains { index, address in
                symbolizer.symbolize(index == 0 ? address : address - 1).name.contains("workerSpin2")
            }
        }
        #expect(stale.isEmpty, "\(stale.count) of \(waiting.count) waits carry the stack of the work before the wait")
    }
}

extension SamplerTests {
    @Test("stack requests to a sampled thread (the hang watcher's) do not swallow the sampler's signals")
    func stackRequestsKeepSamples() throws {
        try Sampler.start(SamplerConfiguration(rateHz: 1000))
        let tid = Mutex(0)
        let done = Atomic<Bool>(false)
        let thread = Thread {
            tid.withLock { $0 = CurrentThread.id }
            workerSpin0(until: deadline(afterMilliseconds: 800))
            done.store(true, ordering: .releasing)
        }
        thread.start()
        while tid.withLock({ $0 }) == 0 { usleep(100) }
        let busy = tid.withLock { $0 }
        // As the hang watcher does during a hang: the busy thread's stack every 2 ms.
        var answered = 0
        while !done.load(ordering: .acquiring) {
            if Sampler.captureStack(ofThread: busy, timeoutMilliseconds: 50) != nil { answered += 1 }
            usleep(2_000)
        }
        let recording = Sampler.stop()
        let times = recording.samples.filter { $0.threadID == busy && $0.state == .running }.map(\.timeNs).sorted()
        #expect(answered > 50, "\(answered) stack requests answered")
        try #require(times.count > 1)
        // A sampler signal merged into a request's signal was lost until a 100 ms timeout: gaps of
        // 100 ms in a thread that computed all along.
        let gaps = zip(times, times.dropFirst()).map { $1 - $0 }
        let longest = gaps.max() ?? 0
        #expect(longest < 60_000_000, "longest gap \(longest / 1_000_000) ms in \(times.count) running samples")
        // A request's signal counts as a sample only when it stood for the sampler's: no extra samples.
        #expect(times.count <= 900, "\(times.count) running samples in 800 ms at 1 kHz")
    }
}
