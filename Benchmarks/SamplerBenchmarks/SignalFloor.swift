import Benchmark
import BenchmarkPairs
import Dispatch
import Foundation
import Synchronization

// The floor under any signal-based sampler: the same workload interrupted by an empty handler.

/// A thread that sends SIGUSR2, whose handler does nothing, to one thread `rate` times a second:
/// what a signal alone costs the thread it interrupts, the floor under any signal-based sampler.
final class BareSignaller: @unchecked Sendable {
    // @unchecked Sendable: `running` is atomic and `done` is thread-safe.
    private let running = Atomic<Bool>(true)
    private let done = DispatchSemaphore(value: 0)

    init(target: pthread_t, rate: Int) {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in }
        action.sa_flags = SA_RESTART
        sigemptyset(&action.sa_mask)
        sigaction(SIGUSR2, &action, nil)
        let periodNs = 1_000_000_000 / rate
        let thread = Thread { [self] in
            var next = timespec()
            clock_gettime(CLOCK_MONOTONIC, &next)
            while self.running.load(ordering: .relaxed) {
                pthread_kill(target, SIGUSR2)
                next.tv_nsec += periodNs
                if next.tv_nsec >= 1_000_000_000 {
                    next.tv_nsec -= 1_000_000_000
                    next.tv_sec += 1
                }
                clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nil)
            }
            self.done.signal()
        }
        thread.start()
    }

    func stop() {
        running.store(false, ordering: .relaxed)
        done.wait()
    }
}

/// Pairs of the workload unsampled and interrupted by bare signals at `rate`.
func measureSignalFloor(_ benchmark: Benchmark, rate: Int) {
    for (round, _) in benchmark.scaledIterations.enumerated() {
        let (base, signalled) = inAlternatingOrder(
            round: round, baseline: { timedWorkload() },
            treatment: {
                // Dispatch workers block SIGUSR2 (libdispatch leaves only a few signals open on its
                // threads): open it on this one while it is signalled.
                var open = sigset_t()
                var saved = sigset_t()
                sigemptyset(&open)
                sigaddset(&open, SIGUSR2)
                pthread_sigmask(SIG_UNBLOCK, &open, &saved)
                let signaller = BareSignaller(target: pthread_self(), rate: rate)
                let elapsed = timedWorkload()
                signaller.stop()
                pthread_sigmask(SIG_SETMASK, &saved, nil)
                return elapsed
            })
        benchmark.measurement(ratioMetric, Int(signalled * 1_000_000 / max(base, 1)))
        benchmark.measurement(baseMetric, Int(base))
        benchmark.measurement(sampledMetric, Int(signalled))
    }
}
