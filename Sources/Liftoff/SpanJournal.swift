import Foundation
import LiftoffSampler

#if canImport(Glibc)
import Glibc
#endif

/// Under `liftoff profile`, a program that records itself also writes each span as it begins
/// and ends to a journal in the agent's folder (`PID.spans`), one line each. Should the program
/// end by a signal before it writes its profile, the agent writes its sampler's samples and
/// `liftoff` reads the spans from here (``AgentRecording/journalSpans(in:processID:endNs:)``), so a
/// crash keeps the launch's spans too. Outside `liftoff profile` there is no journal.
///
/// Lines, tab-separated, times in `CLOCK_MONOTONIC` nanoseconds: `B index parent category
/// thread start name` (parent -1 for none), `E index end`, `N index name` (a rename).
final class SpanJournal: Sendable {
    private let descriptor: Int32

    private init(descriptor: Int32) { self.descriptor = descriptor }

    deinit { close(descriptor) }

    /// The journal of this process when an agent keeps its sampler, else nil.
    static func open(environment: [String: String] = ProcessInfo.processInfo.environment) -> SpanJournal? {
        guard Sampler.keepsStoreForAgent, let folder = environment["LIFTOFF_AGENT_OUT"], !folder.isEmpty else {
            return nil
        }
        let path = "\(folder)/\(getpid()).spans"
        let descriptor = BlockingCalls.exempt { Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0o644) }
        return descriptor >= 0 ? SpanJournal(descriptor: descriptor) : nil
    }

    func begin(index: Int, parent: Int?, category: String, thread: Int, startNs: UInt64, name: String) {
        append("B\t\(index)\t\(parent ?? -1)\t\(SpanJournal.clean(category))\t\(thread)\t\(startNs)\t\(SpanJournal.clean(name))\n")
    }

    func end(index: Int, endNs: UInt64) { append("E\t\(index)\t\(endNs)\n") }

    func rename(index: Int, name: String) { append("N\t\(index)\t\(SpanJournal.clean(name))\n") }

    /// One write per line (O_APPEND): a line is whole or absent when the process ends. A failed
    /// write loses a span of a crash that may never come, and the profile the program writes
    /// itself holds every span anyway: it is not reported.
    private func append(_ line: String) {
        var line = line
        // Liftoff's own write, on whichever thread opened the span: no thread rule is about it.
        BlockingCalls.exempt { line.withUTF8 { bytes in _ = write(descriptor, bytes.baseAddress, bytes.count) } }
    }

    private static func clean(_ text: String) -> String {
        String(text.map { $0 == "\t" || $0 == "\n" || $0 == "\r" ? " " : $0 })
    }
}
