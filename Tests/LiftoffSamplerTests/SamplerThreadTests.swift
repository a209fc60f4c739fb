import CLiftoffSampler
import Dispatch
import Foundation
import LiftoffProfile
import LiftoffTestSupport
import Synchronization
import Testing

@testable import LiftoffSampler

/// `count` threads that each run `setup`, then wait until released and run `teardown` before
/// they end.
final class ThreadGroup: Sendable {
    private let gate = DispatchSemaphore(value: 0)
    private let ids = Mutex<[Int]>([])
    private let failures = Mutex<[String]>([])
    private let released = Mutex(false)
    let count: Int

    init(count: Int, setup: @escaping @Sendable () throws -> Void = {}, teardown: @escaping @Sendable () -> Void = {}) {
        self.count = count
        let ready = DispatchSemaphore(value: 0)
        for _ in 0..<count {
            let thread = Thread { [self] in
                do {
                    try setup()
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
                ids.withLock { $0.append(CurrentThread.id) }
                ready.signal()
                gate.wait()
                teardown()
            }
            thread.stackSize = 256 << 10
            thread.start()
        }
        for _ in 0..<count { ready.wait() }
    }

    /// The threads' kernel ids.
    var threadIDs: [Int] { ids.withLock { $0 } }
    /// What `setup` threw, one entry per thread that failed.
    var setupFailures: [String] { failures.withLock { $0 } }

    /// Lets every thread end, and returns once the kernel no longer lists any of them (at most
    /// 30 s; an issue is recorded past that). Safe to call more than once.
    func releaseAndWait(sourceLocation: SourceLocation = #_sourceLocation) {
        let unreleased = released.withLock { done in
            defer { done = true }
            return done ? 0 : count
        }
        for _ in 0..<unreleased { gate.signal() }
        let giveUp = DispatchTime.now().uptimeNanoseconds + 30_000_000_000
        while threadIDs.contains(where: { access("/proc/self/task/\($0)", F_OK) == 0 }) {
            guard DispatchTime.now().uptimeNanoseconds < giveUp else {
                Issue.record("threads of the group did not end within 30 s", sourceLocation: sourceLocation)
                return
            }
            usleep(1_000)
        }
    }
}

@Suite("Sampler threads: the registry's limit, threads that end, many threads, racing start and stop",
       .serialized, .processState(timeLimit: .seconds(120)))
struct SamplerThreadTests {
    @Test("the 257th registration is refused; another thread's id can be unregistered; ended threads free their slots")
    func registrationLimit() throws {
        let baseline = Sampler.registeredThreadCount
        let first = ThreadGroup(count: Int(LO_MAX_THREADS) - baseline, setup: { try Sampler.registerCurrentThread() })
        // Whatever fails below, the threads end: a full registry would break every later suite.
        defer {
            first.releaseAndWait()
            Sampler.resetThreadNames()
        }
        #expect(first.setupFailures.isEmpty)
        #expect(Sampler.registeredThreadCount == Int(LO_MAX_THREADS))
        let refused = #expect(throws: SamplerError.self) { try Sampler.registerCurrentThread() }
        #expect(refused?.code == .tooManyThreads)
        #expect(refused?.message == "No more than 256 threads can be registered.")

        // A recording may end on another thread than the one that registered.
        let moved = try #require(first.threadIDs.first)
        try Sampler.unregisterThread(moved)
        let twice = #expect(throws: SamplerError.self) { try Sampler.unregisterThread(moved) }
        #expect(twice?.code == .notRegistered)
        try Sampler.registerCurrentThread()
        try Sampler.unregisterCurrentThread()

        // The first group ends without unregistering; a full registry forgets them, so a second
        // group of the same size registers.
        first.releaseAndWait()
        let second = ThreadGroup(
            count: Int(LO_MAX_THREADS) - baseline, setup: { try Sampler.registerCurrentThread() },
            teardown: { try? Sampler.unregisterCurrentThread() })
        defer { second.releaseAndWait() }
        #expect(second.setupFailures.isEmpty, "threads that ended still held their slots")
        second.releaseAndWait()
        #expect(Sampler.registeredThreadCount <= baseline)
    }

    @Test("300 threads are all sampled when every thread is, and threads that end mid-session are let go")
    func manyThreads() throws {
        let waiting = ThreadGroup(count: 300)
        let leaving = ThreadGroup(count: 40)
        defer {
            waiting.releaseAndWait()
            leaving.releaseAndWait()
        }
        try Sampler.start(SamplerConfiguration(rateHz: 200))
        // Generous windows: 340 threads must each be signalled once, on two shared cores.
        sleepThrough(milliseconds: 1_000)
        leaving.releaseAndWait()
        let gone = MonotonicClock.nowNs
        sleepThrough(milliseconds: 1_000)
        let recording = Sampler.stop()
        let seen = Set(recording.samples.map(\.threadID))
        let missing = waiting.threadIDs.filter { !seen.contains($0) }
        #expect(missing.isEmpty, "\(missing.count) of 300 threads never sampled; counts: \(recording.counts)")
        let leavers = Set(leaving.threadIDs)
        let leftSamples = recording.samples.filter { leavers.contains($0.threadID) }
        #expect(Set(leftSamples.map(\.threadID)) == leavers, "the threads that end are sampled while they live")
        #expect(leftSamples.allSatisfy { $0.timeNs < gone }, "nothing is recorded for a thread after it ended")
        #expect(recording.samples.contains { $0.timeNs > gone }, "the others are still sampled after they left")
        #expect(recording.counts.threadsSeen >= 340)
    }

    @Test("start and stop racing on four threads never crash, deadlock or leave a session running")
    func startStopRace() throws {
        let errors = Mutex<[String]>([])
        let outcome = finishing(within: 60) {
            DispatchQueue.concurrentPerform(iterations: 4) { worker in
                for round in 0..<150 {
                    do {
                        try Sampler.start(SamplerConfiguration(rateHz: 1000 + worker * 100, threads: round % 3 == 0 ? .registered : .all))
                    } catch {
                        errors.withLock { $0.append("\(error)") }
                    }
                    if round % 5 == worker { usleep(500) }
                    // A stop racing another thread's start once read a store that start was refilling.
                    let recording = Sampler.stop()
                    if recording.samples.contains(where: { $0.addresses.isEmpty && $0.state == .running }) {
                        errors.withLock { $0.append("a running sample without a stack") }
                    }
                }
            }
        }
        #expect(outcome != nil, "start and stop deadlocked")
        #expect(errors.withLock { $0 }.isEmpty)
        #expect(!Sampler.isRunning)
        try Sampler.start(SamplerConfiguration(rateHz: 500))
        sleepThrough(milliseconds: 500)
        #expect(Sampler.stop().counts.captured > 0, "a session after the race samples")
    }
}
