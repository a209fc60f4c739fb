import LiftoffProfile

/// What a waiting sample of a thread on the launch's path was waiting for, read from its innermost
/// frames: each waiting sample counts for one kind only, the first that matches in this order.
/// `parked` is an async `main` (or `dispatch_main`) that gave its thread up while workers run the
/// program: the path follows it, and no rule reports it.
enum MainThreadWait: CaseIterable {
    case sleep, lock, task, io, parked

    /// Per stack of the launch's profile, the kind whose function is innermost on it (the first
    /// kind in order among equals), or nil.
    static func kinds(of launch: LaunchWindow) -> [MainThreadWait?] {
        let found = allCases.map { launch.innermost(launch.frameFlags($0.matches)).distance }
        return (0..<launch.profile.stacks.count).map { stack in
            var best: (kind: MainThreadWait, distance: Int32)?
            for (kind, distances) in zip(allCases, found) where distances[stack] < (best?.distance ?? .max) {
                best = (kind, distances[stack])
            }
            return best?.kind
        }
    }

    /// Whether a frame's function is one this kind of wait goes through.
    func matches(_ frame: Profile.Frame) -> Bool {
        let name = frame.name
        switch self {
        case .sleep:
            return Self.sleeps.matches(name) || name == "sleep" || name == "__sleep"
        case .lock:
            return Self.locks.matches(name)
        case .task:
            return Self.tasks.matches(name)
        case .parked:
            return Self.parks.matches(name) || name == "pause"
        case .io:
            var plain = Substring(name)
            if let at = name.utf8.firstIndex(of: UInt8(ascii: "@")) { plain = name[..<at] }
            for prefix in ["__GI___", "__GI_"] where plain.hasPrefix(prefix) { plain = plain.dropFirst(prefix.count) }
            return Self.ioCalls.contains(String(plain)) || (name.hasPrefix("__libc_") && Self.libcIO.matches(name))
                || Self.resolver.matches(name)
        }
    }

    private static let sleeps = NameMatch(["nanosleep", "usleep", "Thread.sleep("])
    private static let locks = NameMatch([
        "pthread_mutex_lock", "pthread_mutex_timedlock", "__lll_lock_wait", "pthread_rwlock_rdlock", "pthread_rwlock_wrlock",
        "pthread_spin_lock", "NSLock.lock", "NSRecursiveLock.lock", "_MutexHandle", "os_unfair_lock", "flock",
    ])
    private static let tasks = NameMatch([
        "dispatch_semaphore_wait", "_dispatch_sema4_wait", "dispatch_group_wait", "_dispatch_group_wait",
        "DispatchSemaphore.wait", "DispatchGroup.wait", "_dispatch_sync_f_slow", "__DISPATCH_WAIT_FOR_QUEUE__",
        "_dispatch_thread_event_wait", "pthread_join", "pthread_clockjoin", "pthread_timedjoin", "pthread_cond_wait", "pthread_cond_timedwait", "pthread_cond_clockwait",
        "sem_wait", "sem_timedwait", "waitUntilFinished", "NSCondition.wait",
    ])
    private static let ioCalls: Set<String> = [
        "read", "__read", "__libc_read", "pread", "pread64", "__libc_pread64", "readv", "write", "__write", "__libc_write",
        "pwrite64", "open", "open64", "__open", "__open64", "openat", "__openat64", "__libc_open64", "fsync", "fdatasync",
        "stat", "stat64", "fstat", "fstat64", "lstat", "statx", "fstatat64", "__fstatat64", "recv", "recvfrom", "recvmsg",
        "send", "sendto", "sendmsg", "connect", "__connect", "accept", "accept4", "poll", "__poll", "ppoll", "select",
        "epoll_wait", "getaddrinfo", "close", "__close",
    ]
    /// Whether a function is an event loop's wait for events (`epoll_wait`, `kevent`).
    static func isEventLoopWait(_ name: String) -> Bool { eventLoops.matches(name) }

    /// Whether a thread waiting in a function is idle rather than held: parked (an async main in
    /// `sigsuspend`, `dispatch_main`) or waiting for events.
    static func isIdleWait(_ name: String) -> Bool { parks.matches(name) || name == "pause" || eventLoops.matches(name) }

    private static let eventLoops = NameMatch(["epoll_wait", "epoll_pwait", "kevent"])
    private static let parks = NameMatch([
        "sigsuspend", "dispatch_main", "swift_task_asyncMainDrainQueue", "_dispatch_sigsuspend", "sigwait",
    ])
    private static let libcIO = NameMatch(["read", "write", "open"])
    private static let resolver = NameMatch(["getaddrinfo"])
}

/// The waiting samples of the threads on the launch's path (the launch's thread, and the threads
/// it waited for while it waited), by the kind of wait (samples that match none are left out).
struct MainThreadWaits {
    var samples: [MainThreadWait: [Int]] = [:]

    init() {}

    init(_ launch: LaunchWindow) {
        var seen = Set<Int>()
        let idle = launch.frameFlags { MainThreadWait.isEventLoopWait($0.name) }
        let idleOfStack = launch.innermost(idle).frame
        for sample in launch.path.waitingSamples where seen.insert(sample).inserted {
            let stack = launch.profile.samples.stack[sample]
            // A wait the path followed into the thread that made the launch ready waited for its work.
            if launch.path.waitsForReady.contains(sample) {
                samples[.task, default: []].append(sample)
                continue
            }
            guard stack >= 0, stack < launch.waitKindOfStack.count, let kind = launch.waitKindOfStack[stack] else { continue }
            // Another thread's event loop waiting for events is idle, not reading: the path ends there.
            if kind == .io, launch.profile.samples.thread[sample] != launch.mainThreadID, idleOfStack[stack] >= 0 { continue }
            samples[kind, default: []].append(sample)
        }
    }
}

extension LaunchWindow {
    /// The outermost function of `kind` below the program's own code on the heaviest stack of
    /// `samples`: the call the program made (`usleep`, `pthread_mutex_lock`), not the system call
    /// it ended in.
    func waitingFunction(_ samples: [Int], _ kind: MainThreadWait) -> String? {
        var byStack: [Int: UInt64] = [:]
        for sample in samples { byStack[profile.samples.stack[sample], default: 0] &+= ns(of: sample) }
        guard let heaviest = byStack.max(by: { ($0.value, $1.key) < ($1.value, $0.key) })?.key else { return nil }
        var found: Profile.Frame?
        var current = heaviest
        var steps = 0
        while current >= 0, steps < 16 {
            let index = profile.stacks.frame[current]
            if isProgram(frameAt: index) { break }
            let frame = profile.frames[index]
            if kind.matches(frame) { found = frame }
            current = profile.stacks.parent[current]
            steps += 1
        }
        return found.map(LaunchWindow.name)
    }
}

/// A rule about one kind of wait of the main thread during the launch.
struct MainThreadWaitRule: InsightRule {
    let kind: MainThreadWait
    let id: String
    let title: String
    let why: String
    let verb: String
    var defaultThresholdNs: UInt64 = 10_000_000

    func evaluate(_ launch: LaunchWindow, thresholdNs: UInt64) -> Insight? {
        guard let all = launch.mainThreadWaits.samples[kind], !all.isEmpty else { return nil }
        // The launch's own thread first: when its waits of this kind reach the threshold they are
        // the insight, and the same kind of wait on the threads it waited for (a lock's holder
        // that slept) is a note: that time is already the launch thread's wait. Otherwise the
        // insight is the other threads' on the path.
        let own = all.filter { launch.profile.samples.thread[$0] == launch.mainThreadID }
        let others = all.filter { launch.profile.samples.thread[$0] != launch.mainThreadID }
        let ownCost = launch.ns(of: own)
        let ownHeads = ownCost >= thresholdNs && ownCost > 0
        let samples = ownHeads ? own : others
        let cost = launch.ns(of: samples)
        guard cost >= thresholdNs, cost > 0 else { return nil }
        // The launch's thread, or another thread on the path (a lock's holder that slept).
        let threads = Set(samples.map { launch.profile.samples.thread[$0] })
        let thread = threads.count == 1 ? threads.first : nil
        var evidence = launch.evidence(of: samples, thread: thread)
        if ownHeads, !others.isEmpty {
            var byThread: [Int: [Int]] = [:]
            for sample in others { byThread[launch.profile.samples.thread[sample], default: []].append(sample) }
            for (other, rows) in byThread.sorted(by: { ($0.value.count, $1.key) > ($1.value.count, $0.key) }).prefix(2) {
                let label = launch.profile.thread(withID: other).map(FlameTree.threadLabel) ?? "thread \(other)"
                let place = launch.evidence(of: rows, thread: other).stacks.first?.programFrame.map { " from \($0)" } ?? ""
                evidence.notes.append(
                    "On the path, while \(launch.launchThread.prefix(1).lowercased() + launch.launchThread.dropFirst()) waited for it, \(label) \(verb) \(LaunchWindow.ms(launch.ns(of: rows)))\(place).")
            }
        }
        let who: String
        if thread == launch.mainThreadID {
            who = launch.launchThread
        } else if let thread {
            who = (launch.profile.thread(withID: thread).map(FlameTree.threadLabel) ?? "Thread \(thread)") + ", on the launch's path,"
        } else {
            who = "Threads on the launch's path"
        }
        // A wait for the ready line's writer may be in any call (a read of a pipe): named as the call it is.
        let function =
            launch.waitingFunction(samples, kind) ?? [MainThreadWait.io, .lock, .sleep].lazy.compactMap { launch.waitingFunction(samples, $0) }.first
            ?? "a wait"
        let place = evidence.stacks.first?.programFrame.map { ", called from \($0)" } ?? ""
        if kind == .lock || kind == .task,
            let (other, stacks, ran) = launch.busiestOtherThread(
                during: samples, excluding: thread ?? launch.mainThreadID, preferring: launch.pathHolder(of: samples, waiter: thread ?? launch.mainThreadID))
        {
            let label = launch.profile.thread(withID: other).map(FlameTree.threadLabel) ?? "thread \(other)"
            // By the program's function each stack is in, heaviest first.
            var byPlace: [(place: String, leaf: String, ns: UInt64)] = []
            for (stack, ns) in stacks {
                let place = launch.programFrame(ofStack: stack) ?? launch.frames(ofStack: stack).first ?? "?"
                if let at = byPlace.firstIndex(where: { $0.place == place }) {
                    byPlace[at].ns &+= ns
                } else {
                    byPlace.append((place, launch.frames(ofStack: stack).first ?? "?", ns))
                }
            }
            for entry in byPlace.sorted(by: { $0.ns > $1.ns }).prefix(2) {
                let how = ran ? "ran" : "waited in \(entry.leaf) from"
                evidence.notes.append("Meanwhile \(label) \(how) \(entry.place) for \(LaunchWindow.ms(entry.ns)).")
            }
        }
        if kind == .task {
            for task in launch.profile.tasks where task.waitNs > 0 {
                evidence.notes.append("\(launch.launchThread) waited \(LaunchWindow.ms(task.waitNs)) for the launch task \(task.name).")
            }
        }
        let finding = "\(who) \(verb) \(LaunchWindow.ms(cost)) in \(function)\(place)."
        return insight(launch, finding: finding, costNs: cost, thresholdNs: thresholdNs, evidence: evidence)
    }
}

extension LaunchWindow {
    /// The thread the path to ready followed from `waiter`'s wait in `samples`: the hop out of
    /// `waiter` that overlaps the wait most.
    func pathHolder(of samples: [Int], waiter: Int?) -> Int? {
        guard let waiter, let first = samples.map({ profile.samples.timeNs[$0] }).min() else { return nil }
        let last = samples.map { endNs(of: $0) }.max() ?? first
        var best: (thread: Int, ns: UInt64)?
        for hop in path.hops where hop.waiter == waiter {
            let start = max(hop.startNs, first)
            let end = min(hop.endNs, last)
            guard end > start, end - start > best?.ns ?? 0 else { continue }
            best = (hop.holder, end - start)
        }
        return best?.thread
    }
}
