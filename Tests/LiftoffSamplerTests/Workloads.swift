import Dispatch
import Foundation
import Synchronization

@testable import LiftoffSampler

// Functions with names the tests look for in symbolized stacks. They must not be inlined,
// so each keeps its own frame.

/// Keeps the optimizer from removing a loop's work.
let workSink = Atomic<UInt64>(0)

@inline(never)
func busyWork(until deadline: UInt64) {
    var value: UInt64 = 0x9E37_79B9
    while DispatchTime.now().uptimeNanoseconds < deadline {
        for _ in 0..<2000 { value = value &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407 }
    }
    workSink.wrappingAdd(value, ordering: .relaxed)
}

/// Spins until the calling thread's own CPU clock reaches `target`: on a busy machine it gets as
/// many running samples as on an idle one, where a wall-clock deadline may pass before it ran.
@inline(never)
func busyWork(untilCPU target: UInt64) {
    var value: UInt64 = 0x9E37_79B9
    while CurrentThread.cpuNs < target {
        for _ in 0..<2000 { value = value &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407 }
    }
    workSink.wrappingAdd(value, ordering: .relaxed)
}

/// The calling thread's CPU clock `milliseconds` from now (``busyWork(untilCPU:)``).
func cpuDeadline(afterMilliseconds milliseconds: UInt64) -> UInt64 {
    CurrentThread.cpuNs + milliseconds * 1_000_000
}

@inline(never)
func chainA(until deadline: UInt64) { chainB(until: deadline) }

@inline(never)
func chainB(until deadline: UInt64) { chainC(until: deadline) }

@inline(never)
func chainC(until deadline: UInt64) { busyWork(until: deadline) }

@inline(never)
func workerSpin0(until deadline: UInt64) { busyWork(until: deadline) }

@inline(never)
func workerSpin1(until deadline: UInt64) { busyWork(until: deadline) }

@inline(never)
func workerSpin2(until deadline: UInt64) { busyWork(until: deadline) }

@inline(never)
func workerSpin3(until deadline: UInt64) { busyWork(until: deadline) }

@inline(never)
func workerSpinMain(until deadline: UInt64) { busyWork(until: deadline) }

/// Recurses `remaining` frames deep, then spins until the thread's CPU clock reaches `cpuDeadline`.
@inline(never)
func deepRecursion(_ remaining: Int, untilCPU cpuDeadline: UInt64) -> Int {
    if remaining == 0 {
        busyWork(untilCPU: cpuDeadline)
        return 0
    }
    return deepRecursion(remaining - 1, untilCPU: cpuDeadline) + 1
}

/// The function names of a sample's frames, leaf first (return addresses looked up one byte early).
func frameNames(_ sample: RawSample, _ symbolizer: ELFSymbolizer) -> [String] {
    sample.addresses.enumerated().map { index, address in
        symbolizer.symbolize(index == 0 ? address : address - 1).name
    }
}

func deadline(afterMilliseconds milliseconds: UInt64) -> UInt64 {
    DispatchTime.now().uptimeNanoseconds + milliseconds * 1_000_000
}

/// Runs `body` on a new thread and waits for it.
func onNewThread(name: String, _ body: @escaping @Sendable () -> Void) {
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
        body()
        done.signal()
    }
    thread.name = name
    thread.stackSize = 4 << 20
    thread.start()
    done.wait()
}

/// Names of this process's threads, from /proc.
func processThreadNames() -> [String] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.compactMap { tid in
        (try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// A thread parked in a futex wait (inside libc) until released.
final class ParkedThread: Sendable {
    private let id = Mutex(0)
    private let gate = DispatchSemaphore(value: 0)

    /// Starts the thread and returns once it waits (the kernel shows it sleeping), so a sampler
    /// started next never catches it on its way into the wait.
    init() {
        let started = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            id.withLock { $0 = CurrentThread.id }
            started.signal()
            gate.wait()
        }
        thread.start()
        started.wait()
        let stat = "/proc/self/task/\(threadID)/stat"
        let giveUp = deadline(afterMilliseconds: 2_000)
        while DispatchTime.now().uptimeNanoseconds < giveUp {
            // The state follows the parenthesized name: `S` is an interruptible sleep (the futex wait).
            if let text = try? String(contentsOfFile: stat, encoding: .utf8), let close = text.lastIndex(of: ")"),
                text[text.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("S")
            {
                return
            }
            usleep(200)
        }
    }

    /// Its kernel thread id.
    var threadID: Int { id.withLock { $0 } }

    /// Lets it end.
    func release() { gate.signal() }
}
