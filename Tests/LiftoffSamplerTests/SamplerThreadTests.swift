import CLiftoffSampler
import Dispatch
import Foundation
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
                ids.withLock { $0.append(Sampler.currentThreadID) }
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

    /// Lets every thread end, and returns once the kernel no longer lists any of them.
    func releaseAndWait() {
        for _ in 0..<count { gate.signal() }
        let giveUp = DispatchTime.now().uptimeNanoseconds + 5_000_000_000
        while threadIDs.contains(where: { access("/proc/self/task/\($0)", F_OK) == 0 }),
            DispatchTime.now().uptimeNanoseconds < giveUp
        {
            usleep(1_000)
        }
    }
}

@Suite("Sampler threads: the registry's limit, threads that end, many threads, racing start and stop",
       .serialized, .processState, .timeLimit(.minutes(2)))
struct SamplerThreadTests {
    @Test("the 257th registration is refused; another thread's id can be unregistered; ended threads free their slots")
    func registrationLimit() throws {
        let baseline = Sampler.registeredThreadCount
        let first = ThreadGroup(count: Int(LO_MAX_THREADS) - baseline, setup: { try Sampler.registerCurrentThread() })
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
        #expect(second.setupFailures.isEmpty, "threads that ended still held their slots")
        second.releaseAndWait()
        #expect(Sampler.registeredThreadCount <= baseline)
    }

    @Test("300 threads are all sampled when every thread is, and threads that end mid-session are let go")
    func manyThreads() throws {
        let waiting = ThreadGroup(count: 300)
        let leaving = ThreadGroup(count: 40)
        try Sampler.start(SamplerConfiguration(rateHz: 200))
        usleep(300_000)
        leaving.releaseAndWait()
        usleep(200_000)
        let recording = Sampler.stop()
        let seen = Set(recording.samples.map(\.threadID))
        let missing = waiting.threadIDs.filter { !seen.contains($0) }
        #expect(missing.isEmpty, "\(missing.count) of 300 threads never sampled")
        let leftAt = recording.samples.filter { leaving.threadIDs.contains($0.threadID) }.map(\.timeNs).max() ?? 0
        let lastTime = recording.samples.map(\.timeNs).max() ?? 0
        #expect(leftAt < lastTime, "ended threads stop appearing before the session ends")
        #expect(recording.counts.threadsSeen >= 340)
        waiting.releaseAndWait()
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
        usleep(50_000)
        #expect(Sampler.stop().counts.captured > 0, "a session after the race samples")
    }
}
