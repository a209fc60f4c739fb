import Dispatch
import Foundation
import Synchronization

/// Runs `body` on a thread of its own and waits for it at most `seconds`. Returns its result, or
/// nil when it did not finish in time: a deadlock then fails the one test that has it (the stuck
/// thread is left behind) instead of hanging the whole run or aborting the process. Expectations
/// belong on the test's own thread, on the returned value.
public func finishing<Value: Sendable>(
    within seconds: Double, _ body: @escaping @Sendable () throws -> Value
) -> Result<Value, any Error>? {
    let outcome = Mutex<Result<Value, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
        let result = Result { try body() }
        outcome.withLock { $0 = result }
        done.signal()
    }
    thread.stackSize = 1 << 20
    thread.start()
    guard done.wait(timeout: .now() + seconds) == .success else { return nil }
    return outcome.withLock { $0 }
}

/// Sleeps for `milliseconds` of real time. `usleep` alone ends early whenever a signal arrives,
/// and a sampled thread receives one at every sample.
public func sleepThrough(milliseconds: Int) {
    let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(max(milliseconds, 0)) * 1_000_000
    while true {
        let now = DispatchTime.now().uptimeNanoseconds
        guard now < deadline else { return }
        usleep(UInt32(min((deadline - now) / 1_000 + 1, 100_000)))
    }
}
