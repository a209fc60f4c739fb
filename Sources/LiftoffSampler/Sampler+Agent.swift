import CLiftoffSampler
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

extension Sampler {
    /// A program that links Liftoff records itself: when `liftoff` injected its agent into it
    /// anyway, the agent stops sampling (two samplers would share one signal) and writes nothing
    /// of its own. It keeps this sampler instead: should the program end by a signal before it
    /// writes its profile, the agent writes what this sampler kept (see ``keepsStoreForAgent``).
    static func askAgentToStandDown() {
        let everywhere = UnsafeMutableRawPointer(bitPattern: 0)  // RTLD_DEFAULT
        if let symbol = dlsym(everywhere, "lo_agent_stand_down_to") {
            let kept = unsafeBitCast(symbol, to: (@convention(c) (UnsafeRawPointer?) -> Int32).self)(
                UnsafeRawPointer(lo_sampler_this_source()))
            handedToAgent.store(kept != 0, ordering: .relaxed)
        } else if let symbol = dlsym(everywhere, "lo_agent_stand_down") {
            unsafeBitCast(symbol, to: (@convention(c) () -> Void).self)()
        }
    }

    fileprivate static let handedToAgent = Atomic<Bool>(false)

    /// Whether an agent keeps this sampler to write its samples if the program ends by a signal:
    /// a stopped session's store then stays until ``clearStore()`` (after the profile is written).
    public static var keepsStoreForAgent: Bool { handedToAgent.load(ordering: .relaxed) }

    /// Frees the store a stopped session kept for the agent (``keepsStoreForAgent``).
    public static func clearStore() {
        lifecycle.withLock { _ in lo_sampler_clear_store() }
    }
}
