import Dispatch
import Foundation
import LiftoffProfile
import Synchronization
import Testing

@testable import LiftoffSampler

/// Sleeps `milliseconds` with one `usleep`, which returns early (EINTR) when a signal handler cuts
/// it short and nothing resumes it; returns how long it slept, in milliseconds.
@inline(never)
func sleepOnceInUsleep(milliseconds: UInt32) -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    usleep(milliseconds * 1000)
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
}

extension SamplerTests {
    @Test("a sleep the sampling signal interrupts is resumed to its deadline, and stack requests still reach it")
    func interruptedSleepsAreResumed() throws {
        let symbolizer = ELFSymbolizer()
        try Sampler.start(SamplerConfiguration(rateHz: 1000))
        defer { _ = Sampler.stop() }
        let tid = Mutex(0)
        let slept = Mutex(0.0)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            tid.withLock { $0 = CurrentThread.id }
            let length = sleepOnceInUsleep(milliseconds: 500)
            slept.withLock { $0 = length }
            done.signal()
        }
        thread.start()
        while tid.withLock({ $0 }) == 0 { usleep(1000) }
        // The sampler signals the thread once it is seen, and its handler resumes the sleep; stack
        // requests meanwhile are answered with the stack it sleeps in.
        usleep(50_000)
        var stacks: [[UInt]] = []
        for _ in 0..<5 {
            stacks.append(try #require(Sampler.captureStack(ofThread: tid.withLock { $0 }, timeoutMilliseconds: 200)))
            usleep(20_000)
        }
        #expect(done.wait(timeout: .now() + 2) == .success)
        let length = slept.withLock { $0 }
        #expect(length >= 499, "usleep(500 ms) slept \(length) ms under sampling and \(stacks.count) stack requests")
        #expect(length < 600)
        for stack in stacks {
            let names = stack.enumerated().map { index, address in symbolizer.symbolize(index == 0 ? address : address - 1).name }
            #expect(names.contains { $0.contains("sleepOnceInUsleep") }, "\(names.prefix(8))")
            #expect(!names.contains { $0.contains("lo_handler") }, "the answer is the program's stack, not the handler's")
        }
    }

    @Test("a sleep the handler resumed is recorded waiting for all its ticks, in the Swift task that sleeps")
    func resumedSleepIsRecordedWhole() async throws {
        try Sampler.start(SamplerConfiguration(rateHz: 1000))
        let tid = Mutex(0)
        let sleeper = Task.detached {
            tid.withLock { $0 = CurrentThread.id }
            // Running right up to the sleep: a tick finds the thread has run since its last answer
            // while the handler already resumed its sleep, where SIGPROF is blocked.
            busyWork(until: deadline(afterMilliseconds: 30))
            return sleepOnceInUsleep(milliseconds: 300)
        }
        let slept = await sleeper.value
        let recording = Sampler.stop()
        let thread = tid.withLock { $0 }
        let symbolizer = ELFSymbolizer()
        let inSleep = recording.samples.filter { sample in
            sample.threadID == thread && sample.state == .blocked
                && sample.addresses.enumerated().contains { index, address in
                    symbolizer.symbolize(index == 0 ? address : address - 1).name.contains("sleepOnceInUsleep")
                }
        }
        let ticks = inSleep.reduce(0) { $0 + Int($1.weight) }
        #expect(Double(ticks) >= slept - 10, "\(ticks) ticks waiting in a sleep of \(slept) ms")
        #expect(inSleep.allSatisfy { $0.task != 0 }, "every tick of the wait is in the task that sleeps")
    }
}
