import CLiftoffSampler
import LiftoffProfile
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Why the sampler could not do what was asked.
public struct SamplerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure.
    public enum Code: String, Sendable, Equatable {
        /// The rate is outside 1 Hz ... 10 kHz.
        case rate
        /// The ring capacity is not a power of two in 16 ... 1,048,576.
        case capacity
        /// Memory, the signal handler or the sampler thread could not be set up.
        case system
        /// More than 256 threads are registered.
        case tooManyThreads
        /// The thread was not registered.
        case notRegistered
        /// The program was not started the way the request needs.
        case configuration
    }

    /// The kind of failure.
    public var code: Code
    /// One sentence for people.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

/// Settings of a sampling session.
public struct SamplerConfiguration: Sendable, Equatable {
    /// Which threads a session samples.
    public enum Threads: Sendable, Equatable {
        /// Every thread of the process, including threads started later (Dispatch workers, the
        /// Swift concurrency pool, threads of C libraries), except those that opted out with
        /// ``Sampler/excludeCurrentThread()``.
        case all
        /// Only threads that called ``Sampler/registerCurrentThread(name:)``.
        case registered
    }

    /// Samples per second per thread, 1 ... 10,000.
    public var rateHz: Int
    /// Slots in the sample ring (a power of two); the sampler thread empties it every tick.
    public var ringCapacity: Int
    /// Which threads are sampled; every thread by default.
    public var threads: Threads
    /// Whether each stack is also unwound by libunwind and compared with the sampler's own walk
    /// (``SamplerRecording/walk``). For tests: it costs a full libunwind unwind per sample.
    public var verifiesWalk: Bool
    /// Whether the stacks of Swift async functions keep the executor's frames below the task's
    /// first async function (`start_thread`, Dispatch's worker, `swift_job_run`); by default they
    /// are folded away, so that an async stack reads like the code. Setting the environment
    /// variable `LIFTOFF_EXECUTOR_FRAMES=1` turns it on too.
    public var keepsExecutorFrames: Bool
    /// Whether a thread that answers its signal late, or used under half a tick, has its state read
    /// from `/proc` to tell a wait for the disk (a page fault or a read, state `D`) from other waits.
    /// On by default; without it a late answer's ticks are split only by the run-queue wait the
    /// thread's schedstat reports, so a disk wait counts as running. A thread that answers in time
    /// is never checked.
    public var checksDiskWaits: Bool

    /// Creates a configuration.
    public init(
        rateHz: Int = 1000, ringCapacity: Int = 4096, threads: Threads = .all, verifiesWalk: Bool = false,
        keepsExecutorFrames: Bool = false, checksDiskWaits: Bool = true
    ) {
        self.rateHz = rateHz
        self.ringCapacity = ringCapacity
        self.threads = threads
        self.verifiesWalk = verifiesWalk
        self.keepsExecutorFrames = keepsExecutorFrames
        self.checksDiskWaits = checksDiskWaits
    }

    /// The environment variable that keeps executor frames when set to `1`.
    public static let executorFramesVariable = "LIFTOFF_EXECUTOR_FRAMES"
}

/// One sample of one thread: its stack as addresses, leaf first, whether it was running, and how
/// many ticks it stands for.
public struct RawSample: Sendable, Equatable {
    /// Kernel thread id of the sampled thread.
    public var threadID: Int
    /// `CLOCK_MONOTONIC` nanoseconds when the signal was handled (or, for a sample that stands
    /// for several ticks, the first of them).
    public var timeNs: UInt64
    /// Whether the stack was deeper than 128 frames and cut.
    public var truncated: Bool
    /// Code addresses, leaf first: the interrupted program counter, then return addresses.
    /// A waiting sample repeats the stack of the thread's previous running sample.
    public var addresses: [UInt]
    /// Whether the thread ran since its previous sample.
    public var state: Profile.SampleState
    /// The Swift task running when the signal landed (its runtime id), or 0.
    public var task: UInt
    /// CPU time the thread used since its previous sample, in nanoseconds (0 when unknown).
    public var cpuNs: UInt64
    /// Consecutive ticks the sample stands for, one sampling interval apart (a wait of N ticks is
    /// one sample of weight N).
    public var weight: UInt32
    /// Where a Swift async stack's awaiting callers are among ``addresses``, when the sample was
    /// taken in an async function: the address before them is the innermost async function's,
    /// these are resume addresses (function entries, not return addresses), innermost first,
    /// and the addresses after them are the executor's frames that ran the task. Nil when the
    /// stack has no async frame.
    public var asyncCallers: Range<Int>?

    /// Creates a sample.
    public init(
        threadID: Int, timeNs: UInt64, truncated: Bool, addresses: [UInt], state: Profile.SampleState = .running,
        task: UInt = 0, cpuNs: UInt64 = 0, weight: UInt32 = 1, asyncCallers: Range<Int>? = nil
    ) {
        self.asyncCallers = asyncCallers.flatMap { range in
            range.lowerBound >= 1 && range.upperBound <= addresses.count ? range : nil
        }
        self.threadID = threadID
        self.timeNs = timeNs
        self.truncated = truncated
        self.addresses = addresses
        self.state = state
        self.task = task
        self.cpuNs = cpuNs
        self.weight = max(weight, 1)
    }
}

/// What one sampling session produced.
public struct SamplerRecording: Sendable {
    /// The samples in the order they were stored.
    public var samples: [RawSample]
    /// Counters of the session.
    public var counts: Profile.SampleCounts
    /// Names of the threads seen during the session, by kernel thread id: the name a thread
    /// registered with, else its kernel name.
    public var threadNames: [Int: String]
    /// The rate the session ran at.
    public var rateHz: Int
    /// How the session's stacks were walked.
    public var walk: WalkCounts = WalkCounts()
    /// Swift tasks created and jobs run during the session.
    public var taskEvents: [TaskEvent] = []
    /// Task events the session could not keep.
    public var lostTaskEvents = 0
}

/// How a session's stacks were walked: by the handler's own walk, which follows each frame's
/// call-frame rules, or by libunwind where that walk cannot go.
public struct WalkCounts: Sendable, Equatable {
    /// Stacks taken by the handler's own walk.
    public var walked = 0
    /// Stacks left to libunwind: code outside every known object, or a stack of unknown extent.
    public var fallbacks = 0
    /// Stacks with a frame in code without call-frame information, stepped by its frame pointer.
    public var guessed = 0
    /// Stacks captured without a signal (``Sampler/captureCurrentStack(maxFrames:)``) by the walk.
    public var captures = 0
    /// With ``SamplerConfiguration/verifiesWalk``: stacks unwound both ways.
    public var checked = 0
    /// With ``SamplerConfiguration/verifiesWalk``: stacks on which libunwind found other frames.
    public var mismatches = 0
    /// With ``SamplerConfiguration/verifiesWalk``: stacks whose first frame is in code without
    /// call-frame information, where libunwind follows the frame pointer even in a prologue or
    /// epilogue and skips callers that the walk finds (the same stack with frames missing after
    /// the first). Not counted as mismatches.
    public var callersRecovered = 0
    /// The first mismatch, when there was one.
    public var firstMismatch: WalkMismatch?

    /// Creates empty counts.
    public init() {}
}

/// A stack on which the sampler's own walk and libunwind disagreed.
public struct WalkMismatch: Sendable, Equatable {
    /// The walk's addresses, leaf first.
    public var walked: [UInt]
    /// libunwind's addresses, leaf first.
    public var libunwind: [UInt]
}

/// The process-wide stack sampler: wall-clock sampling of every thread, each stack walked in a
/// signal handler by its frames' call-frame rules.
///
/// Each tick, a sampler thread reads the CPU clock of every thread of the process. A thread
/// that ran since its previous sample gets `SIGPROF`, and the signal handler records the
/// interrupted stack without allocating or locking. A thread that did not run keeps its
/// stack: it is recorded as waiting, without a signal, so the cost follows the threads that
/// run. Threads need no registration; ``registerCurrentThread(name:)`` names one (and warms
/// the libunwind fallback on it), ``excludeCurrentThread()`` opts one out.
///
/// ```swift
/// try Sampler.start(SamplerConfiguration(rateHz: 1000))
/// runLaunchWork()
/// let recording = Sampler.stop()
/// ```
///
/// Liftoff installs its own `SIGPROF` handler; a program must not install another.
public enum Sampler {
    private static let names = Mutex<[Int: String]>([:])
    private static let rate = Atomic<Int>(0)
    private static let sampling = Atomic<Bool>(false)
    /// Held across a whole start and a whole stop, so a stop reads and clears the store of its
    /// own session while no other thread starts the next one into it.
    static let lifecycle = Mutex<Void>(())

    /// Starts a session; a no-op when one is running. Returns once the sampler has listed and
    /// checked every thread (its first tick), so what runs after it is sampled.
    /// - Throws: ``SamplerError`` for a rate or capacity out of range, or a system failure.
    public static func start(_ configuration: SamplerConfiguration = SamplerConfiguration()) throws {
        guard (Int(LO_MIN_RATE_HZ)...Int(LO_MAX_RATE_HZ)).contains(configuration.rateHz) else {
            throw SamplerError(.rate, "The sampling rate must be between 1 and 10000 Hz, not \(configuration.rateHz).")
        }
        guard (16...(1 << 20)).contains(configuration.ringCapacity),
            configuration.ringCapacity & (configuration.ringCapacity - 1) == 0
        else {
            throw SamplerError(
                .capacity, "The ring capacity must be a power of two from 16 to 1048576, not \(configuration.ringCapacity).")
        }
        Sampler.askAgentToStandDown()
        var config = lo_config(
            rate_hz: UInt32(configuration.rateHz), ring_capacity: UInt32(configuration.ringCapacity),
            flags: (configuration.threads == .all ? UInt32(LO_SAMPLE_ALL_THREADS) : 0)
                | (configuration.verifiesWalk ? UInt32(LO_VERIFY_WALK) : 0)
                | (configuration.checksDiskWaits ? 0 : UInt32(LO_SKIP_DISK_CHECK)))
        try lifecycle.withLock { _ in
            let alreadyRunning = lo_sampler_is_running() != 0
            let status = lo_sampler_start(&config)
            guard status == LO_OK else {
                throw SamplerError(.system, "The sampler could not start (status \(status.rawValue)).")
            }
            // A second start is a no-op: the running session keeps its rate.
            if !alreadyRunning { rate.store(configuration.rateHz, ordering: .relaxed) }
            sampling.store(true, ordering: .releasing)
        }
        // Sampling covers what runs after start returns: on a busy machine the sampler thread
        // may wait for a core before its first tick (up to a second here, then it goes on).
        _ = lo_sampler_await_first_tick(1_000_000_000)
    }

    /// Whether a session started through this API is running: one atomic load, for hot paths.
    public static var isSampling: Bool { sampling.load(ordering: .acquiring) }

    /// Stops the session, waits for handlers in flight, and returns everything recorded.
    /// Returns an empty recording when no session ran.
    public static func stop() -> SamplerRecording {
        lifecycle.withLock { _ in stopLocked() }
    }

    private static func stopLocked() -> SamplerRecording {
        sampling.store(false, ordering: .releasing)
        lo_sampler_stop()
        let raw = lo_sampler_counts()
        let counts = Profile.SampleCounts(
            signalsSent: Int(clamping: raw.signals_sent), captured: Int(clamping: raw.captured),
            dropped: Int(clamping: raw.dropped), failed: Int(clamping: raw.failed), skipped: Int(clamping: raw.skipped),
            truncated: Int(clamping: raw.truncated), waiting: Int(clamping: raw.waiting),
            unanswered: Int(clamping: raw.unanswered), threadsSeen: Int(clamping: raw.threads_seen))
        let sessionRate = rate.load(ordering: .relaxed)
        var threadNames = ThreadNaming.kernelNames()
        for (tid, name) in names.withLock({ $0 }) { threadNames[tid] = name }
        var recording = SamplerRecording(
            samples: storedSamples(rateHz: sessionRate), counts: counts, threadNames: threadNames,
            rateHz: sessionRate)
        (recording.taskEvents, recording.lostTaskEvents) = TaskEvent.recorded()
        recording.walk.walked = Int(clamping: raw.walked)
        recording.walk.fallbacks = Int(clamping: raw.walk_fallbacks)
        recording.walk.guessed = Int(clamping: raw.walk_guessed)
        recording.walk.checked = Int(clamping: raw.walk_checked)
        recording.walk.mismatches = Int(clamping: raw.walk_mismatches)
        recording.walk.callersRecovered = Int(clamping: raw.walk_callers_recovered)
        recording.walk.captures = Int(clamping: raw.walk_captures)
        var walked = [UInt](repeating: 0, count: Int(LO_MAX_FRAMES))
        var reference = [UInt](repeating: 0, count: Int(LO_MAX_FRAMES))
        var walkedDepth: Int32 = 0
        var referenceDepth: Int32 = 0
        if lo_sampler_walk_mismatch(&walked, &walkedDepth, &reference, &referenceDepth) != 0 {
            recording.walk.firstMismatch = WalkMismatch(
                walked: Array(walked.prefix(Int(walkedDepth))), libunwind: Array(reference.prefix(Int(referenceDepth))))
        }
        // Kept for the agent, which writes it should the program end by a signal before its profile.
        if !keepsStoreForAgent { lo_sampler_clear_store() }
        return recording
    }

    /// Whether a session is running.
    public static var isRunning: Bool { lo_sampler_is_running() != 0 }

    /// Registers the calling thread under `name` (default: its pthread name) and warms libunwind
    /// on it. When every thread is sampled this names the thread and undoes an opt-out; with
    /// ``SamplerConfiguration/Threads/registered`` it is what makes the thread sampled.
    /// - Throws: ``SamplerError`` when 256 threads are registered already.
    public static func registerCurrentThread(name: String? = nil) throws {
        let status = lo_sampler_register_current_thread()
        guard status == LO_OK else {
            if status == LO_ERR_TOO_MANY_THREADS {
                throw SamplerError(.tooManyThreads, "No more than \(LO_MAX_THREADS) threads can be registered.")
            }
            throw SamplerError(.system, "The sampler's signal handler could not be installed.")
        }
        let tid = Int(lo_current_tid())
        let resolved = name ?? CurrentThread.name
        names.withLock { $0[tid] = resolved }
    }

    /// Opts the calling thread out of sampling when every thread is sampled (a helper thread
    /// that should not appear in profiles, say), until it registers or
    /// ``includeCurrentThread()`` undoes it. A thread that opts out must undo it before it
    /// ends, or a later thread given the same kernel id stays unsampled:
    /// ``withCurrentThreadExcluded(_:)`` does both.
    /// - Throws: ``SamplerError`` when 256 threads have opted out already.
    public static func excludeCurrentThread() throws {
        guard lo_sampler_exclude_thread(lo_current_tid()) == LO_OK else {
            throw SamplerError(.tooManyThreads, "No more than \(LO_MAX_THREADS) threads can opt out of sampling.")
        }
    }

    /// Undoes ``excludeCurrentThread()``.
    /// - Throws: ``SamplerError`` with code `notRegistered` when the thread had not opted out.
    public static func includeCurrentThread() throws {
        guard lo_sampler_include_thread(lo_current_tid()) == LO_OK else {
            throw SamplerError(.notRegistered, "The calling thread had not opted out of sampling.")
        }
    }

    /// Runs `body` with the calling thread opted out of sampling, opting it back in afterwards.
    public static func withCurrentThreadExcluded<T>(_ body: () throws -> T) rethrows -> T {
        let excluded = (try? excludeCurrentThread()) != nil
        defer { if excluded { try? includeCurrentThread() } }
        return try body()
    }

    /// Unregisters the calling thread; with registered-only sampling it receives no further samples.
    /// - Throws: ``SamplerError`` with code `notRegistered` when it was not registered.
    public static func unregisterCurrentThread() throws {
        guard lo_sampler_unregister_current_thread() == LO_OK else {
            throw SamplerError(.notRegistered, "The calling thread was not registered for sampling.")
        }
    }

    /// Unregisters the thread `threadID`, which need not be the calling thread (a recording that
    /// started on one thread may finish on another after an `await`).
    /// - Throws: ``SamplerError`` with code `notRegistered` when it was not registered.
    public static func unregisterThread(_ threadID: Int) throws {
        guard lo_sampler_unregister_thread(pid_t(threadID)) == LO_OK else {
            throw SamplerError(.notRegistered, "Thread \(threadID) was not registered for sampling.")
        }
    }

    /// Runs `body` with the calling thread registered, unregistering it afterwards.
    public static func withCurrentThreadRegistered<T>(name: String? = nil, _ body: () throws -> T) rethrows -> T {
        let registered = (try? registerCurrentThread(name: name)) != nil
        defer { if registered { try? unregisterCurrentThread() } }
        return try body()
    }

    /// Number of threads registered now.
    public static var registeredThreadCount: Int { Int(lo_sampler_registered_count()) }

    /// Forgets remembered thread names (for a fresh recording).
    public static func resetThreadNames() {
        names.withLock { $0.removeAll() }
    }

    /// Captures the stack of another registered thread now, by signalling it; leaf first.
    /// Returns nil when the thread does not answer within `timeoutMilliseconds` (it may have
    /// ended, or have signals blocked).
    public static func captureStack(ofThread threadID: Int, timeoutMilliseconds: Int = 200) -> [UInt]? {
        let capacity = Int(LO_MAX_FRAMES)
        let buffer = UnsafeMutablePointer<UInt>.allocate(capacity: capacity)
        defer { buffer.deallocate() }
        let count = Int(lo_capture_thread_stack(pid_t(threadID), buffer, Int32(capacity), Int32(timeoutMilliseconds)))
        guard count >= 0 else { return nil }
        return Array(UnsafeBufferPointer(start: buffer, count: count))
    }

    /// Takes one sample of the calling thread now (it must be registered and a session must
    /// run); the sample is recorded before this returns. Used to measure the cost of a sample.
    public static func sampleCurrentThread() {
        lo_signal_current_thread()
    }

    /// How a stack is walked: by each frame's call-frame rules, as the signal handler does, or by
    /// libunwind, where the handler's walk cannot go.
    public enum WalkMethod: Sendable {
        /// The handler's own walk, by call-frame rules from `.eh_frame`.
        case rules
        /// libunwind's `unw_backtrace`.
        case libunwind
    }

    /// For measurements: walks the calling thread's stack from here as a sample's handler would,
    /// and returns the number of frames (0 for the rules walk when no session runs: it needs the
    /// session's loader snapshot). With `cold`, the rules walk finds every frame's rule afresh, as through code no
    /// sample passed before, and libunwind starts with its global cache flushed.
    @inline(never)
    public static func walkCurrentStack(by method: WalkMethod, cold: Bool) -> Int {
        var buffer = [UInt](repeating: 0, count: Int(LO_MAX_FRAMES))
        return Int(lo_walk_current_stack(method == .rules ? LO_WALK_RULES : LO_WALK_LIBUNWIND, cold ? 1 : 0, &buffer, Int32(buffer.count)))
    }

    /// Captures the calling thread's stack now (not from a signal): addresses, leaf first,
    /// starting with the return address into the caller of this function.
    @inline(never)
    public static func captureCurrentStack(maxFrames: Int = 128) -> [UInt] {
        // No closure here: the frames above this one must be exactly this function's.
        let capacity = max(1, min(maxFrames, Int(LO_MAX_FRAMES) - 1)) + 1
        let buffer = UnsafeMutablePointer<UInt>.allocate(capacity: capacity)
        defer { buffer.deallocate() }
        let count = Int(lo_capture_current_stack(buffer, Int32(capacity)))
        guard count > 1 else { return [] }
        return Array(UnsafeBufferPointer(start: buffer + 1, count: count - 1))
    }

    /// Decodes the store (layout in `lo_sampler.h`). A waiting record stands for `ticks`
    /// consecutive ticks ending at its time, with the stack of the thread's previous sample; it
    /// becomes one sample of that weight, starting at its first tick.
    private static func storedSamples(rateHz: Int) -> [RawSample] {
        var wordCount = 0
        guard let words = lo_sampler_store(&wordCount), wordCount > 0 else { return [] }
        return decodeStore(UnsafeBufferPointer(start: words, count: wordCount), rateHz: rateHz)
    }

    /// The async callers' place among a record's addresses, from word 5 of its header.
    private static func asyncCallers(_ word: UInt64) -> Range<Int>? {
        let placed = Int(word & 0xFFFF)
        let count = Int((word >> 16) & 0xFFFF)
        guard placed > 0 else { return nil }
        return (placed - 1)..<(placed - 1 + count)
    }

    /// Decodes store words (the layout in `lo_sampler.h`), from this process's sampler or an
    /// agent's recording. A record cut off by the end of the words is dropped.
    static func decodeStore(_ words: UnsafeBufferPointer<UInt64>, rateHz: Int) -> [RawSample] {
        let wordCount = words.count
        let periodNs = Profile.samplingIntervalNs(rateHz: rateHz)
        var samples: [RawSample] = []
        var last: [Int: RawSample] = [:]
        var index = 0
        let headerWords = Int(LO_SAMPLE_HEADER_WORDS)
        while index + headerWords <= wordCount {
            let header = words[index]
            let tid = Int(Int32(truncatingIfNeeded: header & 0xFFFF_FFFF))
            let depth = Int((header >> 32) & 0xFFFF)
            let flags = UInt32((header >> 48) & 0xFFFF)
            let start = index + headerWords
            guard start + depth <= wordCount else { break }
            let time = words[index + 1]
            let task = words[index + 2]
            let cpu = words[index + 3]
            let ticks = words[index + 4]
            let async = words[index + 5]
            index = start + depth
            let weight = UInt32(clamping: max(ticks, 1))
            if flags & LO_SAMPLE_WAITING != 0 {
                // Still blocked where the previous sample found it, in the same Swift task: a thread
                // cannot leave a task's job without running.
                guard var previous = last[tid] else { continue }
                previous.state = .blocked
                previous.cpuNs = 0
                previous.weight = weight
                let before = UInt64(weight - 1).multipliedReportingOverflow(by: periodNs)
                previous.timeNs = before.overflow || before.partialValue > time ? 0 : time - before.partialValue
                samples.append(previous)
                continue
            }
            let state = Profile.SampleState(sampleFlags: flags)
            let sample = RawSample(
                threadID: tid, timeNs: time, truncated: flags & LO_SAMPLE_TRUNCATED != 0,
                addresses: (start..<start + depth).map { UInt(words[$0]) }, state: state, task: UInt(task), cpuNs: cpu,
                weight: weight, asyncCallers: asyncCallers(async))
            last[tid] = sample
            samples.append(sample)
        }
        return samples
    }
}
