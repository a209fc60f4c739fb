import Dispatch
import Liftoff

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// Blocks handed to Dispatch run on worker threads where no task-local value of the code that
// submitted them is set, so a violation they cause would belong to no test. A process that
// links LiftoffTesting (a test executable) defines Dispatch's submission functions itself: each
// wraps the block so it runs in the submitting code's collection scope and test, then calls
// libdispatch's own function. Blocks submitted outside any test go through unchanged.
//
// The dynamic linker binds libswiftDispatch's calls to these definitions because a test
// executable's symbols come first in the lookup order; `RTLD_NEXT` finds libdispatch's.

/// The rule context of the submitting code (its collection scope, test, configuration and clock),
/// carried into blocks given to Dispatch.
enum DispatchHandOff {
    /// `block`, running in the submitting code's collection scope and test when it has either.
    static func carry(_ block: @escaping @convention(block) () -> Void) -> @convention(block) () -> Void {
        ThreadRuleSnapshot.nameTests()
        var carried = ThreadRules.context
        carried.handingTest = ThreadRules.currentTest
        guard !carried.isEmpty else { return block }
        return { ThreadRules.within(carried) { block() } }
    }

    /// libdispatch's own definition of `name`, typed as `T`.
    static func next<T>(_ name: String, as type: T.Type) -> T {
        // RTLD_NEXT: the next object in the lookup order after this executable.
        let nextObject = UnsafeMutableRawPointer(bitPattern: -1)
        if let symbol = dlsym(nextObject, name) { return unsafeBitCast(symbol, to: type) }
        if let dispatch = dlopen("libdispatch.so", RTLD_NOW | RTLD_NOLOAD), let symbol = dlsym(dispatch, name) {
            return unsafeBitCast(symbol, to: type)
        }
        fatalError("LiftoffTesting found no libdispatch definition of \(name) to call.")
    }

    typealias Block = @convention(block) () -> Void
    typealias QueueSubmit = @convention(c) (OpaquePointer, @escaping Block) -> Void
    typealias TimeSubmit = @convention(c) (UInt64, OpaquePointer, @escaping Block) -> Void
    typealias GroupSubmit = @convention(c) (OpaquePointer, OpaquePointer, @escaping Block) -> Void

    static let async = next("dispatch_async", as: QueueSubmit.self)
    static let barrierAsync = next("dispatch_barrier_async", as: QueueSubmit.self)
    static let after = next("dispatch_after", as: TimeSubmit.self)
    static let groupAsync = next("dispatch_group_async", as: GroupSubmit.self)
    static let groupNotify = next("dispatch_group_notify", as: GroupSubmit.self)
}

@_cdecl("dispatch_async")
func liftoffDispatchAsync(_ queue: OpaquePointer, _ block: @escaping @convention(block) () -> Void) {
    DispatchHandOff.async(queue, DispatchHandOff.carry(block))
}

@_cdecl("dispatch_barrier_async")
func liftoffDispatchBarrierAsync(_ queue: OpaquePointer, _ block: @escaping @convention(block) () -> Void) {
    DispatchHandOff.barrierAsync(queue, DispatchHandOff.carry(block))
}

@_cdecl("dispatch_after")
func liftoffDispatchAfter(_ when: UInt64, _ queue: OpaquePointer, _ block: @escaping @convention(block) () -> Void) {
    DispatchHandOff.after(when, queue, DispatchHandOff.carry(block))
}

@_cdecl("dispatch_group_async")
func liftoffDispatchGroupAsync(
    _ group: OpaquePointer, _ queue: OpaquePointer, _ block: @escaping @convention(block) () -> Void
) {
    DispatchHandOff.groupAsync(group, queue, DispatchHandOff.carry(block))
}

@_cdecl("dispatch_group_notify")
func liftoffDispatchGroupNotify(
    _ group: OpaquePointer, _ queue: OpaquePointer, _ block: @escaping @convention(block) () -> Void
) {
    DispatchHandOff.groupNotify(group, queue, DispatchHandOff.carry(block))
}
