import Dispatch
import Foundation
import Liftoff

/// A cache a warm-up thread fills while holding its lock.
public final class Cache: @unchecked Sendable {
    // @unchecked Sendable: `entries` is only touched with `lock` held.
    let lock = NSLock()
    var entries: [String: String] = [:]

    public init() {}

    /// Starts a thread that holds the lock for `seconds`, and returns once it holds it.
    public func warmUp(holdingFor seconds: Double) {
        let holding = DispatchSemaphore(value: 0)
        Thread {
            self.lock.lock()
            holding.signal()
            Thread.sleep(forTimeInterval: seconds)
            self.entries["warm"] = "yes"
            self.lock.unlock()
        }.start()
        holding.wait()
    }
}

/// Reads the settings from slow storage: it sleeps as a cold disk would.
@inline(never)
public func readSettings() -> Data {
    Thread.sleep(forTimeInterval: 0.1)
    return Data("{\"mode\":\"fast\"}".utf8)
}

/// Opens the cache: waits for the warm-up thread's lock.
@inline(never)
public func openCache(_ cache: Cache) -> Int {
    cache.lock.lock()
    defer { cache.lock.unlock() }
    return cache.entries.count
}

/// Fetches the remote configuration: waits for a reply that a background queue sends.
@inline(never)
public func fetchRemoteConfig() -> String {
    let reply = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
        Thread.sleep(forTimeInterval: 0.15)
        reply.signal()
    }
    reply.wait()
    return "remote"
}

/// The tool's launch, each step a span: 100 ms of slow storage, then about 240 ms behind the
/// warm-up thread's lock, then 150 ms for the remote reply.
public func startUp(recorder: LaunchRecorder) -> (settings: Int, entries: Int, remote: String) {
    let cache = Cache()
    cache.warmUp(holdingFor: 0.34)
    let settings = recorder.span("read settings") { readSettings() }
    let entries = recorder.span("open cache") { openCache(cache) }
    let remote = recorder.span("fetch remote config") { fetchRemoteConfig() }
    recorder.ready()
    return (settings.count, entries, remote)
}
