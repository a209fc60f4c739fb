import Foundation
import LiftoffProfile
import LiftoffSampler

/// How a watchdog thread ends a process whose main thread is stuck: it prints why with the main
/// thread's stack, writes the profile recorded so far, and exits with a status that says which
/// watchdog fired. The main thread cannot do any of this itself: it is the one that is stuck.
enum WatchdogReport {
    /// The reason the launch watchdog gives.
    static func launchReason(limitMs: UInt64, phase: String) -> String {
        "launch watchdog: no first frame \(limitMs) ms after launch began; the launch was in \(phase)"
    }

    /// Prints the reason and the stuck main thread's stack, writes the profile so far, and ends
    /// the process with `status`.
    static func endProcess(reason: String, phase: String, stack: [UInt], recorder: LaunchRecorder?, status: Int32) -> Never {
        var lines = ["liftoff: \(reason). The main thread's stack:"]
        let symbolizer = ELFSymbolizer()
        for (index, address) in stack.enumerated() {
            // Taken from the stuck thread by a signal: the first address is an exact program counter.
            let frame = symbolizer.symbolize(index == 0 ? address : address &- 1)
            lines.append("  \(index): \(frame.name) (\(frame.object))")
        }
        if stack.isEmpty { lines.append("  (the main thread did not answer)") }
        FileHandle.standardError.write(Data((lines.joined(separator: "\n") + "\n").utf8))
        if let recorder {
            recorder.recordTermination(reason: reason, phase: phase, stack: stack, exactLeaf: true)
            do {
                if let url = try recorder.finishAndWrite().url {
                    FileHandle.standardError.write(Data("liftoff: wrote the profile so far to \(url.path)\n".utf8))
                }
            } catch {
                FileHandle.standardError.write(Data("liftoff: could not write the profile so far: \(error)\n".utf8))
            }
        }
        fflush(nil)
        _exit(status)
    }
}
