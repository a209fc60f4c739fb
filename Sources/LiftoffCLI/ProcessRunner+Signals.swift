#if canImport(Glibc)
import Foundation
import Glibc
import Synchronization
#endif

/// The process group of the child being run, 0 when none: read by the interrupt handler.
let runningChildGroup = Atomic<Int32>(0)
/// The first SIGINT or SIGTERM that interrupted a run (`forwardInterrupts`), or 0.
let interruptSignal = Atomic<Int32>(0)

/// Signals: Ctrl-C and SIGTERM while a program runs, and signals' names.
extension ProcessRunner {
    /// Makes a first Ctrl-C (SIGINT) or SIGTERM interrupt the run and not `liftoff`: the signal is
    /// handed on to the running child's process group (which does not get the terminal's signals
    /// itself), and the run waits up to `stopGraceNs` for it to end and write what it
    /// recorded, then ends as `.interrupted`. A second one stops at once: the group is killed and
    /// this process ends with the usual status. Restores SIGCHLD's default, so every child can be
    /// waited for.
    static func forwardInterrupts() {
        let handler: @convention(c) (Int32) -> Void = { signal in
            let group = runningChildGroup.load(ordering: .sequentiallyConsistent)
            let first = interruptSignal.compareExchange(expected: 0, desired: signal, ordering: .sequentiallyConsistent).exchanged
            if first {
                // Between runs (or while the profile is built) the command sees it when it looks.
                if group > 0 { kill(-group, signal) }
                return
            }
            if group > 0 { kill(-group, SIGKILL) }
            _exit(128 + signal)
        }
        _ = runningChildGroup.load(ordering: .sequentiallyConsistent)
        _ = interruptSignal.load(ordering: .sequentiallyConsistent)
        installInterruptHandler(handler)
    }

    private static func installInterruptHandler(_ handler: @convention(c) (Int32) -> Void) {
        Glibc.signal(SIGINT, handler)
        Glibc.signal(SIGTERM, handler)
        // Children must stay to be waited for, even if a parent left SIGCHLD ignored.
        Glibc.signal(SIGCHLD, SIG_DFL)
        // A parent may have started this process with the signals blocked.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
    }

    /// A signal's name (`SIGSEGV`), for the signals a program commonly ends with.
    static func signalName(_ signal: Int32) -> String? {
        let names: [Int32: String] = [
            SIGHUP: "SIGHUP", SIGINT: "SIGINT", SIGQUIT: "SIGQUIT", SIGILL: "SIGILL", SIGTRAP: "SIGTRAP",
            SIGABRT: "SIGABRT", SIGBUS: "SIGBUS", SIGFPE: "SIGFPE", SIGKILL: "SIGKILL", SIGSEGV: "SIGSEGV",
            SIGPIPE: "SIGPIPE", SIGALRM: "SIGALRM", SIGTERM: "SIGTERM",
        ]
        return names[signal]
    }
}
