import CLiftoffSampler
import LiftoffProfile
import LiftoffSampler
import Synchronization

extension ThreadRules {
    /// A file was opened or read in the UI context.
    public static let diskReadOnMain = Profile.RuleName.diskReadOnMain
    /// A file was opened for writing, written or synced in the UI context.
    public static let diskWriteOnMain = Profile.RuleName.diskWriteOnMain
    /// A name was looked up, or an IPv4 or IPv6 socket used, in the UI context.
    public static let networkOnMain = Profile.RuleName.networkOnMain
    /// The UI context slept, or waited in poll, select or epoll with a finite timeout.
    public static let sleepOnMain = Profile.RuleName.sleepOnMain
    /// The UI context waited for a `pthread_mutex_t` (an `NSLock`, a `std::mutex`, C code's) that
    /// another thread held, for ``lockWaitThresholdNs`` or longer.
    public static let lockWaitOnMain = Profile.RuleName.lockWaitOnMain

    /// How long a wait for a contended mutex in the UI context may last before it breaks
    /// ``lockWaitOnMain``, in nanoseconds: 10 ms unless set. A lock that is free costs one try more.
    public static var lockWaitThresholdNs: UInt64 {
        get { BlockingCalls.lockWaitThresholdNs }
        set { BlockingCalls.lockWaitThresholdNs = newValue }
    }

    /// The rules that catch blocking calls by themselves, with no tagging: a call to the C
    /// library's file, socket, name-lookup, sleep and wait functions made in the UI context (the main thread, or Dispatch's main queue, where
    /// the main actor runs) by the program, Foundation, Dispatch or any library it loads.
    ///
    /// They are checked while a `LiftoffTesting` collection runs (the `.threadRules` trait,
    /// `expectNoThreadViolations`, `collectThreadViolations`, `ThreadRulesTestCase`) and while an
    /// ``Application`` or a ``LaunchRecorder`` launches, or inside ``checkingBlockingCalls(_:)``.
    /// What reaches a rule:
    ///
    /// - a regular file (on any file system but `/proc` and `/sys`) opened, read or written;
    ///   pipes, eventfds, terminals, devices and Unix sockets are not reported;
    /// - an IPv4 or IPv6 socket connected, read or written, and every `getaddrinfo`;
    /// - `nanosleep`, `clock_nanosleep`, `usleep` and `sleep`, and a `poll`, `ppoll`, `select`,
    ///   `pselect` or `epoll_wait` with a finite, non-zero timeout (an event loop's idle wait has
    ///   none);
    /// - a `pthread_mutex_lock` that waited ``lockWaitThresholdNs`` or longer for a mutex another
    ///   thread held (Swift's `Mutex` and Dispatch's semaphores wait on the kernel directly, and are
    ///   not seen).
    ///
    /// A call whose caller (the first frame outside the C library, Foundation, Dispatch and the
    /// Swift runtime) is Liftoff's or the test framework's is not reported, nor one under a
    /// ``Configuration/allow(prefix:)`` prefix. Each violation's stack starts at the caller of the
    /// C library's function.
    public static let blockingCallRules: [Profile.RuleName] = [
        diskReadOnMain, diskWriteOnMain, networkOnMain, sleepOnMain, lockWaitOnMain,
    ]

    /// Runs `body` with blocking calls checked (see ``blockingCallRules``), as a collection or a
    /// launch would.
    public static func checkingBlockingCalls<T>(_ body: () throws -> T) rethrows -> T {
        armBlockingCalls()
        defer { BlockingCalls.disarm() }
        return try body()
    }

    /// Runs the async `body` with blocking calls checked.
    public static func checkingBlockingCalls<T>(
        isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T
    ) async rethrows -> T {
        armBlockingCalls()
        defer { BlockingCalls.disarm() }
        return try await body()
    }

    /// One more reason to check blocking calls; balance with `BlockingCalls.disarm()`.
    package static func armBlockingCalls() {
        _ = reporterInstalled
        BlockingCalls.arm()
    }

    private static let reporterInstalled: Void = BlockingCalls.setReporter { kind, operation, waitedNs, caller in
        ThreadRules.blockingCall(
            kind: BlockingCalls.Kind(rawValue: kind), operation: operation.map { String(cString: $0) } ?? "",
            waitedNs: waitedNs, caller: caller)
    }

    /// Call sites (the innermost frames of the caller) whose blocking calls are Liftoff's or the
    /// test framework's own: not symbolized again.
    private static let ownSites = Mutex(Set<[UInt]>())
    /// Return addresses known to be in, or out of, the system libraries a call passes through.
    private static let systemAddresses = Mutex([UInt: Bool]())

    /// A blocking call in the UI context, on its thread: a violation unless it is exempt.
    @inline(never)
    static func blockingCall(kind: BlockingCalls.Kind?, operation: String, waitedNs: UInt64, caller: UInt) {
        guard let kind else { return }
        let rule: Profile.RuleName
        switch kind {
        case .diskRead: rule = diskReadOnMain
        case .diskWrite: rule = diskWriteOnMain
        case .network: rule = networkOnMain
        case .sleep: rule = sleepOnMain
        case .lockWait: rule = lockWaitOnMain
        }
        var stack = Sampler.captureCurrentStack()
        // From the caller of the C library's function on.
        if let start = stack.firstIndex(of: caller) { stack.removeFirst(start) }
        // The call site is the caller's code, below Foundation, Dispatch and the runtime: the
        // open, reads and close of one `String(contentsOfFile:)` are one violation.
        let callerIndex = stack.indices.first { !isSystemAddress(stack[$0]) } ?? 0
        let site = Array(stack[callerIndex...].prefix(6))
        if ownSites.withLock({ $0.contains(site) }) { return }
        if callerIndex < stack.count, isOwnCaller(stack[callerIndex]) {
            ownSites.withLock { _ = $0.insert(site) }
            return
        }
        record(rule: rule, operation: operation, stack: stack, site: site)
    }

    /// Whether a return address is in the C library, Foundation, Dispatch or the Swift runtime:
    /// told by its object alone while those are shared libraries, so the check reads no symbol
    /// table (a large executable's takes tens of milliseconds, on the thread that made the call).
    private static func isSystemAddress(_ address: UInt) -> Bool {
        if let known = systemAddresses.withLock({ $0[address] }) { return known }
        let system: Bool
        if sharedSwiftRuntime, let path = symbolizer.objectPath(containing: address &- 1) {
            system = BlockingCallers.isSystemObject(path)
        } else {
            system = BlockingCallers.isSystem(symbolizer.symbolize(address &- 1))
        }
        systemAddresses.withLock { $0[address] = system }
        return system
    }

    /// Whether the runtime and Foundation are shared libraries here, so objects tell them apart.
    private static let sharedSwiftRuntime = symbolizer.hasSharedSwiftRuntime

    /// Whether the code that made the call is Liftoff's or the test framework's: by its object
    /// while the runtime is a shared library (Liftoff's own writes on the UI thread are exempt
    /// where they are made, so a caller in the executable is the program's), else by its name.
    private static func isOwnCaller(_ address: UInt) -> Bool {
        if sharedSwiftRuntime, let path = symbolizer.objectPath(containing: address &- 1) {
            return BlockingCallers.isTestFrameworkObject(path) || BlockingCallers.fileName(path).hasPrefix("libLiftoff")
        }
        let frame = symbolizer.symbolize(address &- 1)
        return Profile.Frame.isLiftoff(frame.name) || BlockingCallers.isTestFramework(frame)
    }
}

/// Who made a blocking call: the system libraries it passed through, and the test frameworks.
enum BlockingCallers {
    private static let systemObjects = [
        "libc.so", "ld-linux", "libpthread", "libFoundation", "lib_Foundation", "libdispatch", "libBlocksRuntime",
        "libswift", "libstdc++", "libgcc_s",
    ]
    private static let systemNames = [
        "Foundation", "Swift.", "Dispatch.", "_Concurrency.", "Synchronization.", "_dispatch", "dispatch_", "swift_",
    ]
    private static let testObjects = ["libXCTest", "libTesting", "lib_TestingInterop"]
    private static let testNames = ["Testing.", "XCTest.", "closure #1 in Testing.", "closure #1 in XCTest."]

    /// The C library, Foundation, Dispatch and the Swift runtime, by object or (linked
    /// statically) by name.
    static func isSystem(_ frame: SymbolizedFrame) -> Bool {
        isSystemObject(frame.object) || systemNames.contains { frame.name.hasPrefix($0) }
    }

    /// Whether an object (a path or file name) is one of the system libraries.
    static func isSystemObject(_ path: String) -> Bool {
        let object = fileName(path)
        return systemObjects.contains { object.hasPrefix($0) }
    }

    /// Swift Testing and XCTest.
    static func isTestFramework(_ frame: SymbolizedFrame) -> Bool {
        isTestFrameworkObject(frame.object) || testNames.contains { frame.name.hasPrefix($0) }
    }

    /// Whether an object (a path or file name) is a test framework's library.
    static func isTestFrameworkObject(_ path: String) -> Bool {
        let object = fileName(path)
        return testObjects.contains { object.hasPrefix($0) }
    }

    static func fileName(_ path: String) -> Substring {
        path.lastIndex(of: "/").map { path[path.index(after: $0)...] } ?? Substring(path)
    }
}
