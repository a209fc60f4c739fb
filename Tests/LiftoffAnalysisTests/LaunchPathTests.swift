import LiftoffProfile
import LiftoffTestSupport
import Testing

@testable import LiftoffAnalysis

@Suite("Path to ready", .timeLimit(.minutes(5)))
struct LaunchPathTests {
    static let lockWait = ["libc.so.6|pthread_mutex_lock", "libc.so.6|__lll_lock_wait"]
    static let semaphoreWait = ["libc.so.6|sem_wait", "libc.so.6|futex_wait"]

    /// An empty launch that is ready (its first frame) at `readyAtMs`.
    static func launch(readyAtMs: UInt64) -> LaunchBuilder {
        var launch = LaunchBuilder()
        launch.endMs = readyAtMs
        launch.firstFrameMs = readyAtMs
        return launch
    }

    /// main waits 60 ms for a lock worker holds; worker waits 40 ms of it for a semaphore that
    /// loader signals after computing; then worker finishes, then main draws.
    static func lockChain() -> LaunchBuilder {
        var launch = Self.launch(readyAtMs: 71)
        launch.threads += [
            Profile.ThreadInfo(id: 2, name: "worker", isMain: false), Profile.ThreadInfo(id: 3, name: "loader", isMain: false),
        ]
        launch.add(thread: 1, .blocked, ["main", "load_settings"] + lockWait, fromMs: 1, toMs: 61)
        launch.add(thread: 2, .blocked, ["start", "warm_cache"] + semaphoreWait, fromMs: 1, toMs: 41)
        launch.add(thread: 3, .running, ["start", "read_catalogue", "decode"], fromMs: 1, toMs: 41)
        launch.add(thread: 2, .running, ["start", "warm_cache", "fill"], fromMs: 41, toMs: 61)
        launch.add(thread: 1, .running, ["main", "draw"], fromMs: 61, toMs: 71)
        // A thread that idles in its event loop the whole time is never on the path.
        launch.threads.append(Profile.ThreadInfo(id: 4, name: "loop", isMain: false))
        launch.add(thread: 4, .blocked, ["start", "libc.so.6|epoll_wait"], fromMs: 1, toMs: 71)
        return launch
    }

    @Test("a lock chain across three threads: the path goes from main to the lock's holder to the thread it waited for")
    func lockChain() throws {
        let launch = LaunchWindow(Self.lockChain().profile())
        let path = launch.path
        #expect(path.hops.map { [$0.waiter, $0.holder] } == [[1, 2], [2, 3]])
        #expect(path.stops.isEmpty, "every wait was followed to the thread that ended it")
        #expect(path.threads.map(\.thread) == [3, 2, 1], "40 ms on loader, 20 ms on worker, 10 ms on main")
        #expect(path.threads.map(\.ns) == [40_000_000, 20_000_000, 10_000_000])
        #expect(path.cpuNs == 70_000_000, "every moment after main ran somewhere on the path")
        #expect(!path.segments.contains { $0.thread == 4 }, "the idle event loop is not on the path")
        // Each moment once: the segments tile the launch from main on.
        for (before, after) in zip(path.segments, path.segments.dropFirst()) { #expect(before.endNs == after.startNs) }
        #expect(path.segments.first?.startNs == 1_000_000 && path.segments.last?.endNs == 71_000_000)

        let insights = Insights.of(launch)
        let cpu = try #require(insights.first { $0.id == "launch-cpu" })
        #expect(cpu.costNs == 70_000_000)
        #expect(cpu.finding.contains("most of it in decode (40 ms)"), "\(cpu.finding)")
        #expect(
            cpu.evidence.notes.prefix(2) == [
                "The path to ready went through loader (3) 40 ms, worker (2) 20 ms, main (1) 10 ms.",
                "decode: 40 ms (57 % of the path's CPU).",
            ])
        // The wait rules watch every thread on the path: main's lock wait, and worker's wait for loader.
        let lock = try #require(insights.first { $0.id == "main-thread-lock-wait" })
        #expect(lock.costNs == 60_000_000 && lock.evidence.thread == "main (1)")
        let task = try #require(insights.first { $0.id == "main-thread-blocked-by-task" })
        #expect(task.costNs == 40_000_000 && task.evidence.thread == "worker (2)")
        #expect(task.finding.hasPrefix("worker (2), on the launch's path, waited for other threads' work for 40 ms in sem_wait"))
        let coverage = LaunchCoverage(launch, insights: insights)
        #expect(coverage.explainedNs == 70_000_000, "all but the 1 ms before main, which no rule reached a threshold for")
        #expect(coverage.unexplained == [LaunchCoverage.Part(what: "before main", ns: 1_000_000)])
    }

    @Test("an async main parked in sigsuspend: the path is the worker that ran the launch, not the parked thread")
    func parkedMain() throws {
        var launch = Self.launch(readyAtMs: 201)
        launch.threads.append(Profile.ThreadInfo(id: 2, name: "pool", isMain: false))
        launch.add(thread: 1, .blocked, ["main", "libc.so.6|sigsuspend"], fromMs: 1, toMs: 201)
        launch.add(thread: 2, .running, ["start", "configure", "buildIndex", "libswiftCore.so|Swift.String.lowercased() -> Swift.String"], fromMs: 1, toMs: 121)
        launch.add(thread: 2, .running, ["start", "configure", "libswiftCore.so|swift_retain"], fromMs: 121, toMs: 201)
        let window = LaunchWindow(launch.profile())
        #expect(window.path.threads.map(\.thread) == [2])
        let insights = Insights.of(window)
        #expect(!insights.contains { $0.id.hasPrefix("main-thread-") }, "a parked main is no wait of its own: \(insights.map(\.id))")
        let cpu = try #require(insights.first { $0.id == "launch-cpu" })
        #expect(cpu.costNs == 200_000_000 && cpu.evidence.thread == "pool (2)")
        #expect(cpu.finding.contains("most of it in configure (200 ms)"))
        #expect(cpu.evidence.notes.contains("buildIndex: 120 ms (60 % of the path's CPU)."))
        let work = try #require(insights.first { $0.id == "library-work" })
        #expect(work.finding == "Library work on the launch's path: Unicode and String processing 120 ms, allocation and reference counting 80 ms; the most from buildIndex.")
        #expect(work.evidence.notes.contains("allocation and reference counting: 80 ms, from configure (80 ms)."))
        let coverage = LaunchCoverage(window, insights: insights)
        #expect(coverage.share > 0.99)
    }

    @Test("what no insight explains is named: the longest unexplained stretches, each once")
    func unexplained() throws {
        var launch = Self.launch(readyAtMs: 201)
        launch.add(thread: 1, .blocked, ["main", "wait_for_peer", "libc.so.6|syscall"], fromMs: 1, toMs: 151)
        launch.add(thread: 1, .running, ["main", "loadPlugins"], fromMs: 151, toMs: 181)
        launch.add(thread: 1, .runnable, ["main", "loadPlugins"], fromMs: 181, toMs: 191)
        let window = LaunchWindow(launch.profile())
        let insights = Insights.of(window)
        #expect(insights.isEmpty, "30 ms of CPU in a 201 ms launch, 10 ms waiting for a core: under every threshold")
        let coverage = LaunchCoverage(window, insights: insights)
        #expect(coverage.explainedNs == 0)
        #expect(coverage.unexplained.map(\.what) == ["waiting in syscall, from wait_for_peer", "running in loadPlugins", "not sampled"])
        #expect(coverage.unexplained.map(\.ns) == [150_000_000, 30_000_000, 10_000_000])
        #expect(coverage.unexplainedNs == 201_000_000)
    }

    @Test("main waiting in read while the thread that wrote the ready line works: the path goes on in that thread")
    func readyThread() throws {
        var launch = Self.launch(readyAtMs: 101)
        launch.threads.append(Profile.ThreadInfo(id: 2, name: "worker", isMain: false))
        launch.add(thread: 1, .blocked, ["main", "libc.so.6|read"], fromMs: 1, toMs: 101)
        launch.add(thread: 2, .running, ["start", "build_catalog"], fromMs: 1, toMs: 101)
        var profile = launch.profile()
        #expect(Insights.of(profile).contains { $0.id == "main-thread-io" }, "without the mark, main's read is its own")
        profile.marks = [Profile.Mark(name: .ready, timeNs: 101_000_000, threadID: 2)]
        let window = LaunchWindow(profile)
        #expect(window.readyThreadID == 2)
        #expect(window.path.hops.map { [$0.waiter, $0.holder] } == [[1, 2]] && window.path.hops.first?.ran == true)
        let ids = Insights.of(window).map(\.id)
        #expect(ids.contains("launch-cpu") && !ids.contains("main-thread-io"), "\(ids)")
        // main's read was a wait for the worker's work, and says what it ran.
        let waited = try #require(Insights.of(window).first { $0.id == "main-thread-blocked-by-task" })
        #expect(waited.evidence.notes.contains("Meanwhile worker (2) ran build_catalog for 100 ms."), "\(waited.evidence.notes)")
        // A mark naming a thread the sampler never saw changes nothing.
        profile.marks = [Profile.Mark(name: .ready, timeNs: 101_000_000, threadID: 77)]
        #expect(LaunchWindow(profile).readyThreadID == nil)
    }

    @Test("a lock wait no sampled thread held: the path stops there and says why; the lock-wait insight names no holder")
    func pathStops() throws {
        // The lock's holder is another process (a file lock), or a thread the sampler never saw.
        var launch = Self.launch(readyAtMs: 71)
        launch.add(thread: 1, .blocked, ["main", "load_settings"] + Self.lockWait, fromMs: 1, toMs: 51)
        launch.add(thread: 1, .running, ["main", "draw"], fromMs: 51, toMs: 71)
        let window = LaunchWindow(launch.profile())
        #expect(window.path.hops.isEmpty)
        #expect(window.path.stops == [LaunchPath.Stop(thread: 1, startNs: 1_000_000, endNs: 51_000_000, reason: .noHolder)])
        let lock = try #require(Insights.of(window).first { $0.id == "main-thread-lock-wait" })
        #expect(!lock.evidence.notes.contains { $0.hasPrefix("Meanwhile") }, "\(lock.evidence.notes)")
    }

    @Test("a lock wait's note names the thread the path followed, not the busiest one")
    func holderIsThePathsThread() throws {
        // main waits 60 ms; worker holds the lock and computes the last 10 ms before releasing it,
        // while spinner runs the whole time but ends nothing.
        var launch = Self.launch(readyAtMs: 71)
        launch.threads += [Profile.ThreadInfo(id: 2, name: "worker", isMain: false), Profile.ThreadInfo(id: 3, name: "spinner", isMain: false)]
        launch.add(thread: 1, .blocked, ["main", "load_settings"] + Self.lockWait, fromMs: 1, toMs: 61)
        launch.add(thread: 2, .blocked, ["start", "warm_cache", "libc.so.6|read"], fromMs: 1, toMs: 51)
        launch.add(thread: 2, .running, ["start", "warm_cache", "fill"], fromMs: 51, toMs: 61)
        launch.add(thread: 3, .running, ["start", "spin"], fromMs: 1, toMs: 58)
        launch.add(thread: 3, .blocked, ["start", "libc.so.6|epoll_wait"], fromMs: 58, toMs: 71)
        launch.add(thread: 1, .running, ["main", "draw"], fromMs: 61, toMs: 71)
        let window = LaunchWindow(launch.profile())
        #expect(window.path.hops.map(\.holder) == [2], "worker ran last before the wait ended: \(window.path.hops)")
        let lock = try #require(Insights.of(window).first { $0.id == "main-thread-lock-wait" })
        #expect(lock.evidence.notes.contains("Meanwhile worker (2) ran fill for 10 ms."), "\(lock.evidence.notes)")
    }

    @Test("an insight explains only the time it counts: a cold pre-main's disk-reads leaves an unknown wait and waits for a core unexplained")
    func coverageByWhatEachRuleCounts() throws {
        var launch = Self.launch(readyAtMs: 201)
        launch.add(thread: 1, .blocked, ["main", "wait_for_peer", "libc.so.6|syscall"], fromMs: 1, toMs: 151)
        launch.add(thread: 1, .runnable, ["main", "loadPlugins"], fromMs: 151, toMs: 161)
        launch.add(thread: 1, .disk, ["main", "loadPlugins", "libc.so.6|memcpy"], fromMs: 161, toMs: 201)
        var profile = launch.profile()
        // 1 ms before main, 0.8 ms of it blocked while the loader read 2 MB.
        profile.phases.preMain = Profile.PreMain(
            durationNs: 1_000_000, onCPUNs: 200_000, runnableNs: 0, blockedNs: 800_000, bytesRead: 2_000_000, majorFaults: 40,
            minorFaults: 100)
        let window = LaunchWindow(profile)
        let insights = Insights.of(window)
        #expect(insights.contains { $0.id == "disk-reads" }, "\(insights.map(\.id))")
        let coverage = LaunchCoverage(window, insights: insights)
        // The disk's 40 ms and 0.8 ms of the time before main; not the 150 ms in syscall nor the 10 ms waiting for a core.
        #expect(coverage.explainedNs == 40_800_000, "\(coverage)")
        #expect(coverage.unexplained.map(\.what).prefix(2) == ["waiting in syscall, from wait_for_peer", "waiting for a core"], "\(coverage.unexplained)")
    }

    @Test("library work is named by the function the program called, without its type arguments")
    func libraryWork() {
        func kind(_ name: String) -> LibraryWork? { LibraryWork.of(Profile.Frame(name: name, object: "lib.so")) }
        #expect(kind("Foundation.JSONDecoder.decode<A>(_: A.Type, from: Foundation.Data) throws -> A") == .codable)
        #expect(kind("Swift.String.lowercased() -> Swift.String") == .strings)
        #expect(kind("Swift.Dictionary<Swift.String, Swift.Int>.subscript.setter : (A) -> B?") == .collections)
        #expect(kind("Swift.Array<Swift.String>.append(__owned A) -> ()") == .collections)
        #expect(kind("cli.Item.init(from: Swift.Decoder) throws -> cli.Item") == .codable)
        #expect(kind("protocol witness for Swift.Collection.subscript.read in conformance Swift.String.UTF8View") == .strings)
        #expect(kind("swift_retain") == .memory && kind("malloc") == .memory)
        #expect(kind("icu_74::Calendar::createInstance") == .formatters)
        #expect(kind("Foo.describe() -> Swift.String") == nil, "a result type says nothing of the work")
        #expect(LibraryWork.baseName("A.b(from: Swift.Decoder) -> Swift.Int") == "A.b(from:)")
    }

    @Test("a toolchain module's code specialized or inlined into the program is library work, the program's own is not")
    func toolchainCode() {
        let library = [
            "generic specialization <Swift.String> of closure #1 (A.Element) -> Swift.Bool in (extension in Swift):Swift.Collection< where A.Element: Swift.Equatable>.split(separator: A.Element, maxSplits: Swift.Int, omittingEmptySubsequences: Swift.Bool) -> Swift.Array<A.SubSequence>",
            "generic not re-abstracted specialization <Swift.String> of Swift.Array.append(A) -> ()",
            "protocol witness for Swift.Hashable._rawHashValue(seed: Swift.Int) -> Swift.Int in conformance Swift.String : Swift.Hashable in Swift",
            "merged generic specialization <Swift.Int> of Swift._ContiguousArrayBuffer._consumeAndCreateNew(bufferIsUnique: Swift.Bool) -> Swift._ContiguousArrayBuffer<A>",
            "outlined copy of Foundation.Data._Representation",
        ]
        let own = [
            "cli.buildIndex(Swift.Array<cli.Item>) -> Swift.Dictionary<Swift.String, Swift.Array<Swift.Int>>",
            "function signature specialization <Arg[1] = Dead> of cli.Item.init(from: Swift.Decoder) throws -> cli.Item",
            "closure #1 () -> () in cli.CLI.main() -> ()", "load_config", "main",
            "protocol witness for Swift.Decodable.init(from: Swift.Decoder) throws -> A in conformance cli.Item : Swift.Decodable in cli",
        ]
        for name in library { #expect(LaunchWindow.isSwiftLibraryCode(name), "\(name)") }
        for name in own { #expect(!LaunchWindow.isSwiftLibraryCode(name), "\(name)") }
    }
}

extension LaunchPathTests {
    @Test("a wait recorded as one long row with a shorter row inside it is followed to its end")
    func overlappingRows() throws {
        var launch = Self.launch(readyAtMs: 101)
        launch.threads.append(Profile.ThreadInfo(id: 2, name: "server", isMain: false))
        let join = ["main", "libc.so.6|__pthread_clockjoin_ex", "libc.so.6|__futex_abstimed_wait_common64"]
        launch.add(thread: 1, .blocked, join, fromMs: 1, toMs: 2)
        // A late answer: one row for 99 ticks, and a row of one tick inside it.
        launch.samples.weight[launch.samples.count - 1] = 99
        launch.add(thread: 1, .blocked, join, fromMs: 10, toMs: 11)
        launch.add(thread: 2, .running, ["start", "prepare_index"], fromMs: 1, toMs: 101)
        let window = LaunchWindow(launch.profile())
        #expect(window.path.cpuNs == 99_000_000, "the whole wait, 1 to 100 ms, ran on server: \(window.path.segments)")
        #expect(window.path.hops.count == 1 && window.path.hops.first?.endNs == 100_000_000)
    }
}

extension LaunchPathTests {
    @Test("on a busy machine the holder is the thread that ran last before the wait ended, not the one that ran most")
    func lastToRun() throws {
        var launch = Self.launch(readyAtMs: 101)
        launch.threads += [
            Profile.ThreadInfo(id: 2, name: "worker", isMain: false), Profile.ThreadInfo(id: 3, name: "loader", isMain: false),
        ]
        // main waits the whole launch for worker's lock; worker waits for loader until 60 ms,
        // then fills its cache until 95 ms, and nothing runs in the last ticks before the end.
        launch.add(thread: 1, .blocked, ["main", "read_settings"] + Self.lockWait, fromMs: 1, toMs: 101)
        launch.add(thread: 2, .blocked, ["start", "worker"] + Self.semaphoreWait, fromMs: 1, toMs: 60)
        launch.add(thread: 3, .running, ["start", "loader", "decode"], fromMs: 1, toMs: 60)
        launch.add(thread: 2, .running, ["start", "worker", "fill_cache"], fromMs: 60, toMs: 95)
        let window = LaunchWindow(launch.profile())
        #expect(window.path.hops.map { [$0.waiter, $0.holder] } == [[1, 2], [2, 3]], "\(window.path.hops)")
        #expect(window.path.cpuNs == 94_000_000, "59 ms of decode and 35 ms of fill_cache")
    }
}

extension LaunchPathTests {
    @Test("a helper two functions share is listed, and the headline names the heavier caller, not the helper")
    func sharedHelper() throws {
        var launch = Self.launch(readyAtMs: 101)
        launch.add(thread: 1, .running, ["main", "parse_config", "work_ns"], fromMs: 1, toMs: 31)
        launch.add(thread: 1, .running, ["main", "hash_rows", "work_ns"], fromMs: 31, toMs: 91)
        launch.add(thread: 1, .running, ["main", "hash_rows"], fromMs: 91, toMs: 101)
        let cpu = try #require(Insights.of(LaunchWindow(launch.profile())).first { $0.id == "launch-cpu" })
        #expect(cpu.finding.hasSuffix("most of it in hash_rows (70 ms)."), "\(cpu.finding)")
        #expect(
            cpu.evidence.notes == [
                "work_ns: 90 ms (90 % of the path's CPU).",
                "hash_rows: 70 ms (70 % of the path's CPU), 10 ms in its own code and the libraries it called.",
                "parse_config: 30 ms (30 % of the path's CPU), 0 ms in its own code and the libraries it called.",
            ], "main only calls them: left out")
    }
}

extension LaunchPathTests {
    @Test("threads that never ran are one idle line in the summary, not rows of where threads waited")
    func idleThreadsFolded() {
        var launch = LaunchBuilder()
        launch.threads += [
            Profile.ThreadInfo(id: 2, name: "loop", isMain: false), Profile.ThreadInfo(id: 3, name: "worker", isMain: false),
        ]
        launch.add(thread: 1, .running, ["main", "configure"], fromMs: 1, toMs: 51)
        launch.add(thread: 2, .blocked, ["start", "libc.so.6|epoll_wait"], fromMs: 1, toMs: 101)
        launch.add(thread: 3, .running, ["start", "prefetch"], fromMs: 1, toMs: 11)
        launch.add(thread: 3, .blocked, ["start", "prefetch", "libc.so.6|read"], fromMs: 11, toMs: 31)
        let summary = ProfileSummary(launch.profile())
        #expect(summary.idleThreads == ["loop (2)"])
        #expect(summary.idleSamples == 100)
        #expect(summary.topWaits.map(\.thread) == ["worker (3)"])
        #expect(summary.idleLine(rateHz: 1000) == "Idle: 1 thread never ran while sampled (100 ms waiting in all): loop (2).")
    }

    @Test("a tick missing from the followed thread's samples stays with it, not with the thread that waited")
    func holderGapStaysWithHolder() {
        var launch = LaunchPathTests.launch(readyAtMs: 51)
        launch.threads.append(Profile.ThreadInfo(id: 2, name: "worker", isMain: false))
        launch.add(thread: 1, .blocked, ["main", "read_settings"] + LaunchPathTests.lockWait, fromMs: 1, toMs: 41)
        // A busy machine answered one of worker's ticks late: no sample from 20 to 21 ms.
        launch.add(thread: 2, .running, ["start", "fill_cache"], fromMs: 1, toMs: 20)
        launch.add(thread: 2, .running, ["start", "fill_cache"], fromMs: 21, toMs: 41)
        launch.add(thread: 1, .running, ["main", "draw"], fromMs: 41, toMs: 51)
        let path = LaunchWindow(launch.profile()).path
        #expect(path.threads.map(\.thread) == [2, 1])
        #expect(path.threads.map(\.ns) == [40_000_000, 10_000_000])
    }

    @Test("a main thread that never ran is idle when parked, but not when it waited for a lock: that wait held the launch")
    func heldMainIsNotIdle() {
        for (wait, idle) in [("libc.so.6|__lll_lock_wait", false), ("libc.so.6|__sigsuspend", true)] {
            var launch = LaunchBuilder()
            launch.threads.append(Profile.ThreadInfo(id: 2, name: "worker", isMain: false))
            launch.add(thread: 1, .blocked, ["main", "read_settings", wait], fromMs: 1, toMs: 101)
            launch.add(thread: 2, .running, ["start", "fill_cache"], fromMs: 1, toMs: 101)
            let summary = ProfileSummary(launch.profile())
            #expect(summary.idleThreads == (idle ? ["main (1)"] : []), "\(wait)")
            #expect(summary.topWaits.map(\.thread) == (idle ? [] : ["main (1)"]), "\(wait)")
        }
    }
}

extension LaunchPathTests {
    @Test("an event loop idle in epoll_wait on the path is no I/O of the launch")
    func idleEventLoop() {
        var launch = Self.launch(readyAtMs: 101)
        launch.threads.append(Profile.ThreadInfo(id: 2, name: "loop", isMain: false))
        launch.add(thread: 1, .blocked, ["main", "start_server"] + Self.semaphoreWait, fromMs: 1, toMs: 101)
        launch.add(thread: 2, .blocked, ["start", "run_loop", "libc.so.6|epoll_wait"], fromMs: 1, toMs: 101)
        let window = LaunchWindow(launch.profile())
        #expect(window.path.hops.map(\.holder) == [2], "the loop is where the evidence goes")
        let ids = Insights.of(window).map(\.id)
        #expect(!ids.contains("main-thread-io"), "\(ids)")
        #expect(ids.contains("main-thread-blocked-by-task"), "\(ids)")
    }

    @Test("a parked async main goes on in the thread that carries its task, even one that only waited for a lock there: the lock wait is on the path")
    func parkedMainFollowsItsTask() {
        var launch = Self.launch(readyAtMs: 101)
        launch.threads.append(Profile.ThreadInfo(id: 2, name: "cache", isMain: false))
        launch.threads.append(Profile.ThreadInfo(id: 3, name: "pool", isMain: false))
        launch.add(thread: 1, .blocked, ["main", "libc.so.6|__sigsuspend"], fromMs: 1, toMs: 101)
        launch.add(thread: 2, .running, ["start", "warm_cache"], fromMs: 1, toMs: 101)
        // The task's continuation never ran while sampled: it found the lock held at once.
        launch.add(thread: 3, .blocked, ["start_thread", "async_MainTQ0_", "read_settings"] + Self.lockWait, fromMs: 6, toMs: 101)
        let window = LaunchWindow(launch.profile())
        #expect(window.path.hops.map(\.holder) == [3, 2], "main → its task's thread → the lock's holder")
        let ids = Insights.of(window).map(\.id)
        #expect(ids.contains("main-thread-lock-wait"), "\(ids)")
    }
}
