import CLiftoffSampler
import Dispatch
import Foundation
import LiftoffProfile
import Synchronization
import LiftoffTestSupport
import Testing

@testable import LiftoffSampler

/// The sampler is one per process, so every test that starts it lives in this serialized suite.
@Suite("Sampler", .serialized, .processState(timeLimit: .seconds(300)))
struct SamplerTests {
    @Test("a → b → c appears in at least 95 % of the samples of the thread running it, at 1 kHz for a second")
    func knownChainDominates() throws {
        try Sampler.start(SamplerConfiguration(rateHz: 1000))
        let tid = Mutex(0)
        let work = MeasuredWork()
        onNewThread(name: "chain") {
            try? Sampler.registerCurrentThread(name: "chain")
            tid.withLock { $0 = CurrentThread.id }
            work.measure { chainA(until: deadline(afterMilliseconds: 1000)) }
            try? Sampler.unregisterCurrentThread()
        }
        let recording = Sampler.stop()
        let chainThread = tid.withLock { $0 }
        let samples = recording.samples.filter { $0.threadID == chainThread }
        let running = samples.filter { $0.state == .running }.reduce(0) { $0 + Int($1.weight) }
        let measured = work.work
        #expect(
            measured.agrees(withRunning: Double(running), intervalNs: 1_000_000),
            "\(running) running ticks for \(measured): \(measured.expectedRunning(intervalNs: 1_000_000)) ± \(measured.runningTolerance(intervalNs: 1_000_000))")

        let symbolizer = ELFSymbolizer()
        let withChain = samples.filter { sample in
            let frames = frameNames(sample, symbolizer)  // leaf first
            guard let c = frames.firstIndex(where: { $0.contains("LiftoffSamplerTests.chainC") }) else { return false }
            return c + 2 < frames.count && frames[c + 1].contains("LiftoffSamplerTests.chainB")
                && frames[c + 2].contains("LiftoffSamplerTests.chainA")
        }
        let share = Double(withChain.count) / Double(max(samples.count, 1))
        #expect(share >= 0.95, "a → b → c in \(withChain.count) of \(samples.count) samples")
        // A handler gives up (skipped) only while another thread unwinds outside a handler for
        // over 1 ms, as tests running in parallel do when they first unwind through new code.
        #expect(recording.counts.failed == 0)
        #expect(recording.counts.skipped * 20 <= samples.count, "skipped: \(recording.counts.skipped)")
        #expect(recording.threadNames[chainThread] == "chain")
    }

    @Test("samples of the main-like thread and four Dispatch workers are attributed to the right threads")
    func samplesAttributedToThreads() throws {
        try Sampler.start(SamplerConfiguration(rateHz: 1000))
        let workerIDs = Mutex([Int](repeating: 0, count: 5))
        let works = (0..<5).map { _ in MeasuredWork() }
        let spins: [@Sendable (UInt64) -> Void] = [
            { workerSpin0(until: $0) }, { workerSpin1(until: $0) }, { workerSpin2(until: $0) },
            { workerSpin3(until: $0) },
        ]
        let group = DispatchGroup()
        let end = deadline(afterMilliseconds: 600)
        for index in 0..<4 {
            // A serial queue of its own runs on its own pool thread.
            DispatchQueue(label: "liftoff.test.worker-\(index)").async(group: group) {
                Sampler.withCurrentThreadRegistered(name: "worker-\(index)") {
                    workerIDs.withLock { $0[index] = CurrentThread.id }
                    works[index].measure { spins[index](end) }
                }
            }
        }
        onNewThread(name: "main-like") {
            Sampler.withCurrentThreadRegistered(name: "main-like") {
                workerIDs.withLock { $0[4] = CurrentThread.id }
                works[4].measure { workerSpinMain(until: end) }
            }
        }
        group.wait()
        let recording = Sampler.stop()
        let ids = workerIDs.withLock { $0 }
        #expect(Set(ids).count == 5, "five distinct threads ran the work: \(ids)")

        let symbolizer = ELFSymbolizer()
        let expected = ["workerSpin0", "workerSpin1", "workerSpin2", "workerSpin3", "workerSpinMain"]
        for (index, tid) in ids.enumerated() {
            let samples = recording.samples.filter { $0.threadID == tid }
            let running = samples.filter { $0.state == .running }.reduce(0) { $0 + Int($1.weight) }
            let measured = works[index].work
            #expect(
                measured.agrees(withRunning: Double(running), intervalNs: 1_000_000),
                "thread \(index): \(running) running ticks for \(measured), \(measured.expectedRunning(intervalNs: 1_000_000)) ± \(measured.runningTolerance(intervalNs: 1_000_000))")
            var own = 0
            for sample in samples {
                let frames = frameNames(sample, symbolizer)
                let spinNames = expected.filter { name in frames.contains { $0.contains("LiftoffSamplerTests.\(name)(") } }
                #expect(spinNames.allSatisfy { $0 == expected[index] }, "thread \(index) sampled in \(spinNames)")
                if spinNames == [expected[index]] { own += 1 }
            }
            #expect(Double(own) >= 0.8 * Double(samples.count), "thread \(index): \(own) of \(samples.count) in its own function")
            #expect(recording.threadNames[tid] == (index == 4 ? "main-like" : "worker-\(index)"))
        }
    }

    @Test("start and stop 1,000 times leave no sampler thread and no memory behind")
    func startStopThousandTimes() throws {
        try Sampler.registerCurrentThread(name: "cycler")
        defer { try? Sampler.unregisterCurrentThread() }
        var captured = 0
        var repeatedStops = 0
        for cycle in 0..<1000 {
            try Sampler.start(SamplerConfiguration(rateHz: 10_000, ringCapacity: 64))
            // Starting a running sampler again changes nothing: no error, still one session.
            try Sampler.start(SamplerConfiguration(rateHz: 10_000, ringCapacity: 64))
            #expect(Sampler.isRunning)
            if cycle % 100 == 0 { busyWork(until: deadline(afterMilliseconds: 5)) }
            captured += Sampler.stop().samples.count
            // Stopping again returns an empty recording.
            let again = Sampler.stop()
            if again.samples.isEmpty && !Sampler.isRunning { repeatedStops += 1 }
        }
        #expect(repeatedStops == 1000, "every second stop returned nothing")
        #expect(!Sampler.isRunning)
        #expect(lo_sampler_resident_bytes() == 0)
        // Joined, the last sampler thread may still be listed while the kernel ends it (it closes
        // its own descriptor table after its joiner was woken): a second at most.
        let listedUntil = DispatchTime.now().uptimeNanoseconds + 1_000_000_000
        while processThreadNames().contains("liftoff-sampler") && DispatchTime.now().uptimeNanoseconds < listedUntil { usleep(1000) }
        #expect(!processThreadNames().contains("liftoff-sampler"))
        #expect(captured > 0, "some cycles captured samples")
    }

    @Test("stacks deeper than 128 frames are cut at 128 and flagged")
    func truncation() throws {
        try Sampler.start(SamplerConfiguration(rateHz: 1000))
        onNewThread(name: "deep") {
            Sampler.withCurrentThreadRegistered {
                _ = deepRecursion(200, untilCPU: cpuDeadline(afterMilliseconds: 200))
            }
        }
        let recording = Sampler.stop()
        // Waiting samples repeat a stack already counted: the counter counts captures.
        let truncated = recording.samples.filter { $0.truncated && $0.state == .running }
        #expect(truncated.count > 50)
        #expect(truncated.allSatisfy { $0.addresses.count == Int(LO_MAX_FRAMES) })
        // A capture cut short counts whatever state it found the thread in (a system call too).
        let capturedTruncated = recording.samples.filter { $0.truncated && !$0.addresses.isEmpty }
        #expect(recording.counts.truncated >= truncated.count)
        #expect(recording.counts.truncated <= capturedTruncated.count)

        var builder = ProfileBuilder(symbolizer: ELFSymbolizer(), timeOriginNs: 0)
        truncated.prefix(3).forEach { builder.add($0) }
        let profile = builder.build(
            metadata: ProfileRecorder.metadata(commandLine: [], startTime: Date(), rateHz: 1000),
            phases: Profile.Phases(processStartNs: 0, preMainNs: 0, mainEntryNs: 0, endNs: 0),
            threadNames: [:], mainThreadID: 0, counts: recording.counts)
        let root = profile.frameIndices(ofStack: profile.samples.stack[0]).first
        #expect(root.map { profile.frames[$0].name } == ProfileBuilder.truncatedFrameName)
    }

    @Test("a full ring drops samples and counts them")
    func fullRingDrops() throws {
        let release = DispatchSemaphore(value: 0)
        let group = DispatchGroup()
        let registered = Atomic<Int>(0)
        for index in 0..<40 {
            let thread = Thread {
                try? Sampler.registerCurrentThread(name: "sleeper-\(index)")
                registered.add(1, ordering: .relaxed)
                release.wait()
                try? Sampler.unregisterCurrentThread()
                group.leave()
            }
            group.enter()
            thread.start()
        }
        while registered.load(ordering: .relaxed) < 40 { usleep(1000) }
        // The ring overflows when more than 16 of the threads answer between two drains, as they
        // all do at the first tick on a quiet machine; on a busy one their handlers may trickle
        // in between drains instead, so the recording is tried again until one overflowed.
        var recordings: [SamplerRecording] = []
        repeat {
            try Sampler.start(SamplerConfiguration(rateHz: 2000, ringCapacity: 16))
            usleep(300_000)
            recordings.append(Sampler.stop())
        } while recordings.count < 5 && recordings.last?.counts.dropped == 0
        let recording = try #require(recordings.last)
        for _ in 0..<40 { release.signal() }
        group.wait()
        #expect(recording.counts.dropped > 0)
        // Every captured stack is in the recording; the rest are waits recorded without a signal
        // (one sample per record, weighted by its ticks; a late answer stands for more than one tick).
        let ticks = recording.samples.reduce(0) { $0 + Int($1.weight) }
        #expect(ticks >= recording.counts.captured + recording.counts.waiting)
        #expect(recording.samples.count <= recording.counts.captured + recording.counts.waiting)
        #expect(
            recording.counts.captured + recording.counts.dropped + recording.counts.failed + recording.counts.skipped
                <= recording.counts.signalsSent)
    }

    @Test("a sampled thread does not fault in the ring's pages: the sampler thread maps them ahead of the handlers")
    func ringPagesMappedAhead() throws {
        // A handler that writes a ring page first copies the kernel's zero page there, and the
        // copy interrupts every CPU running the process; at 10 kHz that came to one fault in four
        // samples until the ring wrapped. The sampled thread counts its own minor faults (it
        // allocates nothing while it spins) against the samples it answered.
        try Sampler.start(SamplerConfiguration(rateHz: 10_000, ringCapacity: 4096))
        let faults = Mutex((tid: 0, before: 0, after: 0))
        onNewThread(name: "spinner") {
            try? Sampler.registerCurrentThread(name: "spinner")
            // RUSAGE_THREAD (1), which Glibc's module does not export.
            let thisThread = __rusage_who_t(1)
            var usage = rusage()
            getrusage(thisThread, &usage)
            let before = usage.ru_minflt
            busyWork(untilCPU: cpuDeadline(afterMilliseconds: 200))
            getrusage(thisThread, &usage)
            faults.withLock { $0 = (CurrentThread.id, before, usage.ru_minflt) }
            try? Sampler.unregisterCurrentThread()
        }
        let recording = Sampler.stop()
        let (tid, before, after) = faults.withLock { $0 }
        let answered = recording.samples.filter { $0.threadID == tid && !$0.addresses.isEmpty }.count
        #expect(answered >= 200, "the spinner answered at 10 kHz: \(answered) samples")
        #expect(after - before <= answered / 50, "\(after - before) page faults in \(answered) samples")
    }

    @Test("the store is bounded: past its limit the first samples stay and the rest are counted as dropped")
    func boundedStore() throws {
        // 4,096 words: a few dozen samples of this thread's stack (the test runner's frames included).
        lo_sampler_set_store_limit(4096)
        defer { lo_sampler_set_store_limit(0) }
        try Sampler.start(SamplerConfiguration(rateHz: 2000, threads: .registered))
        let stop = deadline(afterMilliseconds: 400)
        Sampler.withCurrentThreadRegistered(name: "busy") { busyWork(until: stop) }
        let recording = Sampler.stop()
        let words = recording.samples.reduce(0) { $0 + Int(LO_SAMPLE_HEADER_WORDS) + $1.addresses.count }
        #expect(words <= 4096, "the store holds \(words) words")
        let largest = Int(LO_SAMPLE_HEADER_WORDS) + Int(LO_MAX_FRAMES)
        #expect(words > 4096 - largest, "filled up to the last sample that fits: \(words) words")
        #expect(recording.counts.dropped > 100, "\(recording.counts.dropped) samples counted as dropped")
        let first = try #require(recording.samples.first?.timeNs)
        let last = try #require(recording.samples.last?.timeNs)
        #expect(last - first < 300_000_000, "the samples kept are the first ones, not the last")
    }

    @Test("rates outside 1 Hz ... 10 kHz and bad ring sizes are refused", arguments: [0, 10_001, -5])
    func badRates(rate: Int) {
        #expect(throws: SamplerError.self) { try Sampler.start(SamplerConfiguration(rateHz: rate)) }
        #expect(!Sampler.isRunning)
    }

    @Test("ring capacities that are not a power of two in range are refused", arguments: [0, 8, 1000, 1 << 21])
    func badCapacities(capacity: Int) {
        #expect(throws: SamplerError(.capacity, "The ring capacity must be a power of two from 16 to 1048576, not \(capacity).")) {
            try Sampler.start(SamplerConfiguration(rateHz: 100, ringCapacity: capacity))
        }
    }

    @Test("unregistering a thread that is not registered is an error")
    func unregisterUnknown() {
        #expect(throws: SamplerError.self) {
            try Sampler.unregisterCurrentThread()
        }
    }

    @Test("no deadlock while threads dlopen and dlclose and 200 unregistered threads start and exit, at 1 kHz for 10 s")
    func stressLoaderAndThreads() throws {
        let libraries = ["libz.so.1", "libbz2.so.1.0", "liblzma.so.5", "libexpat.so.1", "libanl.so.1", "libnss_files.so.2"]
            .filter { name in
                guard let handle = dlopen(name, RTLD_NOW) else { return false }
                dlclose(handle)
                return true
            }
        #expect(!libraries.isEmpty, "some system library can be loaded")

        // Every thread is sampled: nothing here registers.
        try Sampler.start(SamplerConfiguration(rateHz: 1000))
        let end = deadline(afterMilliseconds: 10_000)
        let loads = Atomic<Int>(0)
        let threadsRun = Atomic<Int>(0)
        let group = DispatchGroup()
        for _ in 0..<2 {
            group.enter()
            let loader = Thread {
                while DispatchTime.now().uptimeNanoseconds < end {
                    for name in libraries {
                        if let handle = dlopen(name, RTLD_NOW | RTLD_LOCAL) {
                            dlclose(handle)
                            loads.add(1, ordering: .relaxed)
                        }
                    }
                }
                group.leave()
            }
            loader.start()
        }
        group.enter()
        let spawner = Thread {
            // Batches of 200 threads that each run briefly and exit, until the time is up. They
            // pause between batches so the test does not starve suites running beside it.
            while DispatchTime.now().uptimeNanoseconds < end {
                let batch = DispatchGroup()
                for _ in 0..<200 {
                    batch.enter()
                    let child = Thread {
                        busyWork(until: DispatchTime.now().uptimeNanoseconds + 50_000)
                        threadsRun.add(1, ordering: .relaxed)
                        batch.leave()
                    }
                    child.stackSize = 256 << 10
                    child.start()
                }
                batch.wait()
                let pause = DispatchTime.now().uptimeNanoseconds + 50_000_000
                while DispatchTime.now().uptimeNanoseconds < pause { usleep(10_000) }
            }
            group.leave()
        }
        spawner.start()
        // A deadlock fails this test after 90 s (its threads left behind) rather than hanging the run.
        let finished = finishing(within: 90) {
            group.wait()
            let samplerRunning = processThreadNames().contains("liftoff-sampler")
            return (samplerRunning, Sampler.stop())
        }
        let (samplerRunning, recording) = try #require(try finished?.get(), "no progress after 90 s: the sampler deadlocked")
        #expect(samplerRunning, "the sampler thread is still running")
        #expect(loads.load(ordering: .relaxed) > 100)
        #expect(threadsRun.load(ordering: .relaxed) > 1000)
        #expect(recording.counts.threadsSeen > 200, "threads seen: \(recording.counts.threadsSeen)")
        #expect(recording.samples.count > 1000)
    }
}
