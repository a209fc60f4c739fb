import CLiftoffSampler
import LiftoffProfile

#if canImport(Glibc)
import Glibc
#endif

/// The calling thread as the kernel, Dispatch and the Swift runtime see it: its id, name,
/// queue, CPU time and Swift task. Each is a cheap read (a cached id, a thread-local or one
/// clock call), safe to call from any thread at any time, sampling or not.
public enum CurrentThread {
    /// The kernel thread id of the calling thread.
    public static var id: Int { Int(lo_current_tid()) }

    /// The kernel thread id of the main thread.
    public static var mainThreadID: Int { Int(lo_main_tid()) }

    /// Whether the calling thread is the process's main thread (a cached thread-id compare).
    @inline(__always)
    public static var isMain: Bool { lo_is_main_thread() != 0 }

    /// Puts the calling thread in the idle scheduling class (`SCHED_IDLE`): it runs only when no
    /// other thread of the machine wants the CPU. Needs no privilege; nothing happens where the
    /// kernel refuses.
    public static func lowerToIdlePriority() {
        var parameters = sched_param()
        _ = sched_setscheduler(0, 5 /* SCHED_IDLE */, &parameters)
    }

    /// CPU time the calling thread has used, in nanoseconds.
    public static var cpuNs: UInt64 { lo_thread_cpu_ns() }

    /// CPU time thread `threadID` of this process has used, in nanoseconds; nil when it ended.
    public static func cpuNs(ofThread threadID: Int) -> UInt64? {
        var value: UInt64 = 0
        guard let tid = pid_t(exactly: threadID), lo_thread_cpu_ns_of(tid, &value) == 0 else { return nil }
        return value
    }

    /// Times thread `threadID` of this process was switched onto a CPU, as the scheduler counts
    /// them (`/proc/self/task/TID/schedstat`); nil when it ended or the kernel keeps no count.
    /// The sampler reads it to learn whether a waiting thread woke since its last sample.
    public static func switchesIn(ofThread threadID: Int) -> UInt64? {
        var value: UInt64 = 0
        guard let tid = pid_t(exactly: threadID), lo_thread_switches_in(tid, &value) == 0 else { return nil }
        return value
    }

    /// The Swift task running the calling code (its runtime id, which samples also carry),
    /// or 0 outside a task.
    public static var swiftTask: UInt { UInt(lo_current_swift_task()) }

    /// An opaque per-thread pointer for Liftoff's own bookkeeping (the launch task running on
    /// this thread): a thread-local variable, cheaper than a task-local value.
    package static var context: UnsafeRawPointer? {
        get { lo_thread_context() }
        set { lo_set_thread_context(newValue) }
    }

    /// The label of the Dispatch queue running the calling code, or "" when there is none.
    public static var queueLabel: String {
        guard let label = lo_current_queue_label() else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: label, count: strlen(label)), as: UTF8.self)
    }

    /// Whether the calling code runs on Dispatch's main queue, where the main actor runs, on
    /// whatever thread drains it (under `swift test` on Linux that is not the OS main thread).
    public static var isOnMainQueue: Bool { lo_on_main_queue() != 0 }

    /// The calling thread's name: `main` for the main thread, else its pthread name, else
    /// `thread <tid>`.
    public static var name: String { nameValue() }

    private static func nameValue() -> String {
        if lo_is_main_thread() != 0 { return "main" }
        var buffer = [CChar](repeating: 0, count: 64)
        if lo_current_thread_name(&buffer, buffer.count) == 0 {
            let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if !name.isEmpty { return name }
        }
        return "thread \(lo_current_tid())"
    }
}
