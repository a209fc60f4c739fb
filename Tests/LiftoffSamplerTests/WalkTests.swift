import CLiftoffSampler
import Dispatch
import Foundation
import Glibc
import LiftoffTestSupport
import Synchronization
import Testing

@testable import LiftoffSampler

/// The handler walks stacks by each frame's call-frame rules instead of libunwind. These tests run
/// varied code under the sampler with every stack walked both ways and compare them frame by frame.
@Suite("Stack walk", .serialized, .processState(timeLimit: .seconds(180)))
struct WalkTests {
    @Test("the walk finds the frames libunwind finds, frame by frame, across Swift, Foundation, Dispatch and the C library")
    func walkMatchesLibunwind() throws {
        try Sampler.start(SamplerConfiguration(rateHz: 10_000, ringCapacity: 1 << 14, verifiesWalk: true))
        let end = deadline(afterMilliseconds: 1500)
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            var round = 0
            while DispatchTime.now().uptimeNanoseconds < end {
                mixedWork(worker + round)
                round += 1
            }
        }
        let recording = Sampler.stop()
        let walk = recording.walk
        let symbolizer = ELFSymbolizer()
        let described = walk.firstMismatch.map { mismatch in
            "walk:\n" + describe(mismatch.walked, symbolizer) + "\nlibunwind:\n" + describe(mismatch.libunwind, symbolizer)
        } ?? ""
        #expect(walk.checked >= 1000, "only \(walk.checked) stacks were walked both ways")
        #expect(walk.mismatches == 0, "\(walk.mismatches) of \(walk.checked) stacks differ; the first:\n\(described)")
        #expect(walk.callersRecovered <= walk.guessed)
        #expect(walk.fallbacks * 100 <= walk.walked, "\(walk.fallbacks) stacks went to libunwind, \(walk.walked) were walked")
    }

    @Test("a stack deeper than 128 frames is cut and flagged, as libunwind's is")
    func deepStackIsTruncated() throws {
        // Only the deep thread is sampled: the walk's counts are the process's, and the suites that
        // run meanwhile have threads of their own.
        try Sampler.start(SamplerConfiguration(rateHz: 1000, threads: .registered, verifiesWalk: true))
        let tid = Mutex(0)
        onNewThread(name: "deep") {
            tid.withLock { $0 = CurrentThread.id }
            Sampler.withCurrentThreadRegistered(name: "deep") {
                _ = deepRecursion(200, untilCPU: cpuDeadline(afterMilliseconds: 300))
            }
        }
        let recording = Sampler.stop()
        let symbolizer = ELFSymbolizer()
        let described = recording.walk.firstMismatch.map { mismatch in
            "walk:\n" + describe(mismatch.walked, symbolizer) + "\nlibunwind:\n" + describe(mismatch.libunwind, symbolizer)
        } ?? ""
        let deep = recording.samples.filter { sample in
            sample.threadID == tid.withLock { $0 } && sample.state == .running
                && frameNames(sample, symbolizer).prefix(4).contains { $0.contains("busyWork") }
        }
        #expect(deep.count >= 100)
        #expect(deep.allSatisfy { $0.truncated && $0.addresses.count == Int(LO_MAX_FRAMES) })
        #expect(recording.walk.mismatches == 0, "the first that differs:\n\(described)")
        #expect(recording.walk.fallbacks == 0)
    }

    @Test("a stack captured without a signal is walked by rules during a session, with the frames libunwind finds outside one")
    func currentStackMatchesLibunwind() throws {
        var stacks: [[UInt]] = []
        var walked = 0
        for sampling in [false, true] {
            if sampling { try Sampler.start(SamplerConfiguration(rateHz: 1, threads: .registered)) }
            stacks.append(captureFromDepth(12))
            if sampling { walked = Sampler.stop().walk.captures }
        }
        #expect(walked >= 1)
        #expect(stacks[0].count > 12)
        #expect(stacks[0] == stacks[1])
    }

    @Test("the walk crosses a signal frame into the code the signal interrupted")
    func walkCrossesSignalFrames() throws {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in spinInSignalHandler() }
        sigemptyset(&action.sa_mask)
        sigaction(SIGUSR2, &action, nil)
        defer { signal(SIGUSR2, SIG_DFL) }
        try Sampler.start(SamplerConfiguration(rateHz: 1000, verifiesWalk: true))
        let tid = Mutex(0)
        onNewThread(name: "signalled") {
            tid.withLock { $0 = CurrentThread.id }
            interruptedBySignal()
        }
        let recording = Sampler.stop()
        let symbolizer = ELFSymbolizer()
        let stacks = recording.samples.filter { $0.threadID == tid.withLock { $0 } && $0.state == .running }
            .map { frameNames($0, symbolizer) }
        let crossing = stacks.filter { names in
            guard let handler = names.firstIndex(where: { $0.contains("spinInSignalHandler") }) else { return false }
            return names[handler...].contains { $0.contains("interruptedBySignal") }
        }
        #expect(crossing.count >= 20, "\(crossing.count) of \(stacks.count) samples reach from the handler into the interrupted code")
        #expect(recording.walk.mismatches == 0)
    }
}

/// One round of varied work: Foundation's JSON coding, sorting with closures, string formatting,
/// the C library's qsort calling back into Swift, math, and a short sleep.
@inline(never)
func mixedWork(_ seed: Int) {
    struct Record: Codable {
        var name: String
        var values: [Double]
    }
    let records = (0..<40).map { Record(name: "record \($0 + seed)", values: (0..<8).map { sin(Double($0 + seed)) }) }
    if let data = try? JSONEncoder().encode(records), let decoded = try? JSONDecoder().decode([Record].self, from: data) {
        workSink.wrappingAdd(UInt64(decoded.count), ordering: .relaxed)
    }
    var numbers = (0..<2000).map { Double(($0 * 7919 + seed) % 1000) }
    numbers.withUnsafeMutableBufferPointer { buffer in
        qsort(UnsafeMutableRawPointer(buffer.baseAddress!), buffer.count, MemoryLayout<Double>.stride) { left, right in
            let a = left!.load(as: Double.self), b = right!.load(as: Double.self)
            return a < b ? -1 : a > b ? 1 : 0
        }
    }
    let words = numbers.prefix(300).map { String(format: "%.1f", $0) }.sorted { $0.count < $1.count || $0 < $1 }
    workSink.wrappingAdd(UInt64(words.count), ordering: .relaxed)
    if seed % 8 == 0 { usleep(200) }
}

@inline(never)
func spinInSignalHandler() {
    busyWork(untilCPU: cpuDeadline(afterMilliseconds: 100))
}

@inline(never)
func interruptedBySignal() {
    let end = cpuDeadline(afterMilliseconds: 400)
    // Foundation's threads start with signals blocked.
    var unblocked = sigset_t()
    sigemptyset(&unblocked)
    sigaddset(&unblocked, SIGUSR2)
    pthread_sigmask(SIG_UNBLOCK, &unblocked, nil)
    pthread_kill(pthread_self(), SIGUSR2)
    busyWork(untilCPU: end)
}

/// The calling thread's stack captured `depth` frames below the caller, always from the same call site.
@inline(never)
func captureFromDepth(_ depth: Int) -> [UInt] {
    if depth == 0 { return Sampler.captureCurrentStack() }
    var stack = captureFromDepth(depth - 1)
    stack.append(UInt(depth))  // keeps the call from being a tail call
    return stack
}

private func describe(_ addresses: [UInt], _ symbolizer: ELFSymbolizer) -> String {
    addresses.enumerated().map { index, address in
        "  \(String(address, radix: 16)) \(symbolizer.symbolize(index == 0 ? address : address - 1).name)"
    }.joined(separator: "\n")
}
