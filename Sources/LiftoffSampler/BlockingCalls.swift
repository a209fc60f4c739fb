import CLiftoffSampler

/// The C library's calls that may block, caught where they are made (see `blocking.c`): file,
/// socket, name-lookup, sleep and wait functions. While armed, such a call in the UI context (the main thread, or Dispatch's main queue) goes to the
/// reporter, on the calling thread.
package enum BlockingCalls {
    /// What a caught call did.
    package enum Kind: Int32, Sendable {
        /// Opened or read a regular file.
        case diskRead = 1
        /// Opened a regular file for writing, wrote or synced it.
        case diskWrite = 2
        /// Looked a name up, or used an IPv4 or IPv6 socket.
        case network = 3
        /// Slept, or waited in poll, select or epoll with a finite timeout.
        case sleep = 4
        /// Waited for a mutex another thread held, for the threshold or longer.
        case lockWait = 5
    }

    /// The C form of a reporter: kind, operation text, time waited (sleeps and timed waits) and
    /// the address the call returns to.
    package typealias Reporter = @convention(c) (Int32, UnsafePointer<CChar>?, UInt64, UInt) -> Void

    /// Registers the function caught calls go to.
    package static func setReporter(_ reporter: Reporter?) { lo_blocking_set_reporter(reporter) }

    /// One more reason to check calls (a collection, a launch); balance with ``disarm()``.
    package static func arm() { lo_blocking_arm(1) }

    /// One reason fewer.
    package static func disarm() { lo_blocking_arm(-1) }

    /// Runs `body` with the calling thread's calls unchecked: Liftoff's own writes, whose call
    /// sites would otherwise be symbolized (tens of milliseconds, the first time) only to be exempt.
    package static func exempt<T>(_ body: () throws -> T) rethrows -> T {
        lo_blocking_exempt_begin()
        defer { lo_blocking_exempt_end() }
        return try body()
    }

    /// How long a wait for a contended mutex in the UI context lasts before it is reported, in
    /// nanoseconds (10 ms unless set).
    package static var lockWaitThresholdNs: UInt64 {
        get { lo_blocking_lock_threshold() }
        set { lo_blocking_set_lock_threshold(newValue) }
    }

    /// Whether calls are being checked now.
    package static var isArmed: Bool { lo_blocking_armed() != 0 }

    /// A blocking call's violation in one sentence, the same in a program that links Liftoff and
    /// under the agent: `reading /etc/hosts in UI context, on thread main (42) (3 times).`
    package static func sentence(_ operation: String, place: String, count: Int) -> String {
        "\(operation) in UI context, on \(place)" + (count > 1 ? " (\(count) times)." : ".")
    }

    /// Treats thread `threadID` as the main thread for the checks (0: the process's main thread).
    package static func setUIThread(_ threadID: Int) { lo_blocking_set_ui_thread(Int32(truncatingIfNeeded: threadID)) }
}
