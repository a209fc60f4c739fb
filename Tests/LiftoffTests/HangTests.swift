import Dispatch
import Foundation
import Liftoff
import LiftoffSampler
import Testing

@inline(never)
func blockRunLoop(milliseconds: UInt64) {
    let end = DispatchTime.now().uptimeNanoseconds + milliseconds * 1_000_000
    var value: UInt64 = 1
    while DispatchTime.now().uptimeNanoseconds < end { value = value &* 6_364_136_223_846_793_005 &+ 1 }
    precondition(value != 0)
}

/// A run loop on a real clock, on a thread of its own.
final class LoopOnThread: @unchecked Sendable {
    // @unchecked Sendable: `loop` is used from other threads only through post/stop.
    let loop = MainRunLoop()
    private let ended = DispatchSemaphore(value: 0)

    init() {
        let thread = Thread { [loop, ended] in
            loop.run()
            ended.signal()
        }
        thread.start()
    }

    func runAndWait(_ name: String, _ block: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        loop.post(name) {
            block()
            done.signal()
        }
        done.wait()
    }

    func finish() {
        loop.stop()
        ended.wait()
    }
}

extension RuntimeTests {
    @Suite("Hangs")
    struct HangTests {
        @Test("a real 600 ms block of the loop is a hang whose stacks show the blocking function; 50 ms is not")
        func hangs() throws {
            let host = LoopOnThread()
            let watcher = HangWatcher(runLoop: host.loop)
            watcher.start()
            host.runAndWait("short work") { blockRunLoop(milliseconds: 50) }
            host.runAndWait("long work") { blockRunLoop(milliseconds: 600) }
            watcher.stop()
            host.finish()

            let hangs = watcher.hangs
            #expect(hangs.count == 1, "\(hangs.map(\.running))")
            let hang = try #require(hangs.first)
            #expect(hang.running == "long work")
            #expect(hang.durationNs >= 550_000_000 && hang.durationNs < 5_000_000_000)
            // Sampled at its rate while it lasted: each capture takes at most the sampling interval and
            // the capture's timeout (what this run's watcher could do however busy the machine), and a
            // thread that spins answers its captures.
            let interval: UInt64 = 5_000_000
            let longestCapture = interval + UInt64(HangWatcher.captureTimeoutMs) * 1_000_000
            // Noticed within four of its 25 ms polls after the threshold (250 ms).
            #expect(
                hang.sampledNs + HangWatcher.defaultThresholdNs + 100_000_000 >= hang.durationNs,
                "\(hang.sampledNs) ns sampled of \(hang.durationNs)")
            #expect(
                UInt64(hang.captures) >= hang.sampledNs / longestCapture,
                "\(hang.captures) captures in \(hang.sampledNs) ns, at most \(longestCapture) ns each")
            #expect(
                hang.stacks.count * 10 >= hang.captures * 9, "a spinning thread answers: \(hang.stacks.count) of \(hang.captures) captures")
            let symbolizer = ELFSymbolizer()
            let withBlocker = hang.stacks.filter { stack in
                stack.contains { symbolizer.symbolize($0 &- 1).name.contains("blockRunLoop") }
                    || stack.first.map { symbolizer.symbolize($0).name.contains("blockRunLoop") } == true
            }
            #expect(Double(withBlocker.count) >= 0.8 * Double(hang.stacks.count))
        }
    }
}
