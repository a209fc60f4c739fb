#if canImport(Glibc)
import Glibc
#endif

extension ProcessRunner {
    /// How a run ended.
    enum Outcome: Equatable {
        case exited(Int32)
        case signalled(Int32)
        case timedOut
        /// It printed its ready line and was then stopped (SIGTERM): a server's launch is over.
        case stoppedWhenReady
        /// Its exit status could not be collected (another part of the process reaped it).
        case unknown
        /// `liftoff` was interrupted (Ctrl-C, SIGTERM) with this signal, and handed it on.
        case interrupted(Int32)
        /// It ran for the `--duration` asked for and was then stopped (SIGTERM).
        case stoppedAfterDuration

        var succeeded: Bool { self == .exited(0) || self == .stoppedWhenReady || self == .stoppedAfterDuration }

        /// Whether `liftoff` was interrupted and handed the signal on.
        var isInterruption: Bool {
            if case .interrupted = self { return true }
            return false
        }

        /// `exit status 3`, `signal 11 (SIGSEGV)`, `timed out`.
        var description: String {
            switch self {
            case .exited(let status): return "exit status \(status)"
            case .signalled(let signal): return "signal \(signal)" + (ProcessRunner.signalName(signal).map { " (\($0))" } ?? "")
            case .timedOut: return "timed out"
            case .stoppedWhenReady: return "stopped when ready"
            case .stoppedAfterDuration: return "stopped after --duration"
            case .unknown: return "exit status unknown"
            case .interrupted(let signal):
                return "interrupted by " + (ProcessRunner.signalName(signal) ?? "signal \(signal)")
            }
        }
    }
}
