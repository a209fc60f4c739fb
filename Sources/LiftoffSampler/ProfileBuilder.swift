import LiftoffProfile

/// Turns raw samples into a ``Profile``: symbolizes each address once, deduplicates frames
/// and stacks, and converts times to offsets from the profile's origin.
public struct ProfileBuilder {
    private var frames: [Profile.Frame] = []
    private var frameIndex: [Profile.Frame: Int] = [:]
    private var stacks = Profile.StackTable()
    private var stackIndex: [StackKey: Int] = [:]
    /// The frames each looked-up address resolved to, innermost (an inlined callee) first.
    private var addressFrames: [UInt: [Int]] = [:]
    /// The same for event stacks, whose frames carry the line being executed.
    private var exactAddressFrames: [UInt: [Int]] = [:]
    /// The same for the addresses of async functions in a task's logical stack.
    private var asyncAddressFrames: [UInt: [Int]] = [:]
    /// The mangled symbol of each frame that has one, for short names at build time.
    private var frameSymbol: [Int: String] = [:]
    private var samples = Profile.SampleTable()
    private var threadIDs = Set<Int>()
    /// Each thread's last stack, so waiting samples (which repeat it) cost one comparison.
    private var lastStack: [Int: (addresses: [UInt], truncated: Bool, asyncCallers: Range<Int>?, stack: Int)] = [:]
    /// Each thread's last row, which a wait that goes on with the same stack extends.
    private var lastRow: [Int: Int] = [:]
    private var symbolizer: any Symbolizer
    private let timeOriginNs: UInt64

    private struct StackKey: Hashable {
        var parent: Int
        var frame: Int
    }

    /// Name of the frame placed at the root of a stack cut at 128 frames.
    public static let truncatedFrameName = "[truncated]"

    /// Whether `build` gives Swift frames short names (the runtime's simplified demangling).
    public var simplifiesNames = true

    /// Short names already known, by mangled symbol (``swiftShortNames()`` of an earlier build):
    /// `build` asks the toolchain only for the Swift symbols missing here.
    public var knownShortNames: [String: String] = [:]

    /// Nanoseconds between ticks: a waiting sample that starts where the thread's previous row of
    /// the same stack and state ends extends that row instead of adding one. 0 keeps every sample
    /// a row of its own.
    public var intervalNs: UInt64 = 0

    /// Creates a builder.
    /// - Parameters:
    ///   - symbolizer: resolves addresses to names.
    ///   - timeOriginNs: `CLOCK_MONOTONIC` nanoseconds that sample times are made relative to.
    public init(symbolizer: any Symbolizer, timeOriginNs: UInt64) {
        self.symbolizer = symbolizer
        self.timeOriginNs = timeOriginNs
    }

    /// Symbolizes the samples added from now on with `symbolizer`: those of another program,
    /// whose objects are loaded elsewhere (a process of the same tree, or the program it ran with
    /// `exec`). Frames and stacks found so far are kept and shared.
    public mutating func switchSymbolizer(to symbolizer: any Symbolizer) {
        self.symbolizer = symbolizer
        addressFrames = [:]
        exactAddressFrames = [:]
        asyncAddressFrames = [:]
        lastStack = [:]
        lastRow = [:]
    }

    /// Whether a sample taken in a Swift async function keeps the executor's frames below the
    /// task's first async function (`start_thread`, Dispatch's worker, `swift_job_run`). By default
    /// they are folded away, so an async stack reads like the code: the task's functions, each
    /// called by the one that awaits it.
    public var keepsExecutorFrames = false

    /// Adds one sample. Addresses after the first are return addresses, so they are looked up
    /// one byte earlier, inside the call instruction; an async caller's address is a resume
    /// function's entry and is looked up as it is.
    public mutating func add(_ sample: RawSample) {
        guard !sample.addresses.isEmpty else { return }
        let time = NanosecondDuration.between(timeOriginNs, sample.timeNs).nanoseconds
        if let last = lastStack[sample.threadID], last.truncated == sample.truncated, last.addresses == sample.addresses,
            last.asyncCallers == sample.asyncCallers
        {
            if extendRow(of: sample, stack: last.stack, at: time) { return }
            samples.append(
                thread: sample.threadID, timeNs: time, stack: last.stack, state: sample.state,
                task: UInt64(sample.task), cpuNs: sample.cpuNs, weight: sample.weight)
            lastRow[sample.threadID] = samples.count - 1
            return
        }
        var parent = -1
        if sample.truncated {
            parent = stack(parent: -1, frame: frame(named: ProfileBuilder.truncatedFrameName, object: ""))
        }
        var last = sample.addresses.count - 1
        let callers = sample.asyncCallers
        if let callers, !keepsExecutorFrames { last = callers.upperBound - 1 }
        var previousAsync: Int?
        for position in stride(from: last, through: 0, by: -1) {
            let address = sample.addresses[position]
            let isCaller = callers?.contains(position) ?? false
            let isAsync = isCaller || position == (callers?.lowerBound ?? 0) - 1
            let lookup = position == 0 || isCaller ? address : address &- 1
            for frame in frames(at: lookup, exactLines: false, async: isAsync).reversed() {
                // A resume function that has not yet replaced its callee's context with its own
                // names itself as its caller: one function, one frame.
                if isAsync, !isCaller, frame == previousAsync { continue }
                parent = stack(parent: parent, frame: frame)
                previousAsync = isAsync ? frame : nil
            }
        }
        samples.append(
            thread: sample.threadID, timeNs: time, stack: parent, state: sample.state, task: UInt64(sample.task),
            cpuNs: sample.cpuNs, weight: sample.weight)
        lastRow[sample.threadID] = samples.count - 1
        threadIDs.insert(sample.threadID)
        lastStack[sample.threadID] = (sample.addresses, sample.truncated, callers, parent)
    }

    /// Whether a symbolized function is one of the Swift runtime's resume adapters
    /// (`task_future_wait_resume_adapter`, `task_group_wait_resume_adapter`…): where a task that
    /// awaited another resumes, before the awaiting function does; not the program's code.
    static func isRuntimeAdapter(_ frame: SymbolizedFrame) -> Bool {
        frame.object.hasPrefix("libswift_Concurrency") && frame.name.contains("adapter(swift::AsyncContext")
    }

    /// Whether a symbolized function is the sampler's own `pthread_create` wrapper, which runs
    /// between `start_thread` and each new thread's function (it learns of new threads through
    /// it): not the program's code, so stacks read as perf's, `start_thread` calling the function.
    static func isThreadStartWrapper(_ frame: SymbolizedFrame) -> Bool {
        frame.name == "lo_thread_begins"
    }

    /// Adds a waiting sample's ticks to its thread's last row when that row is the same wait
    /// (stack, state, Swift task) and ends where the sample starts. Records of a wait are stamped
    /// with the sampler's actual tick times, which lag the ideal ones by its wake-up latency (at
    /// most an interval, as it counts the ticks it missed), so an interval and a half apart is
    /// still the same wait.
    private mutating func extendRow(of sample: RawSample, stack: Int, at time: UInt64) -> Bool {
        guard intervalNs > 0, sample.state.isWaiting, let row = lastRow[sample.threadID],
            samples.stack[row] == stack, samples.state[row] == sample.state, samples.task[row] == UInt64(sample.task)
        else { return false }
        let length = UInt64(samples.weight[row]).multipliedReportingOverflow(by: intervalNs)
        let end = samples.timeNs[row].addingReportingOverflow(length.partialValue)
        guard !length.overflow, !end.overflow, time >= samples.timeNs[row] else { return false }
        let gap = time > end.partialValue ? time - end.partialValue : end.partialValue - time
        let (weight, overflow) = samples.weight[row].addingReportingOverflow(sample.weight)
        guard gap <= intervalNs + intervalNs / 2, !overflow else { return false }
        samples.weight[row] = weight
        return true
    }

    /// Adds a captured stack (leaf first) and returns its index, for events that carry a stack.
    /// Its frames carry the line being executed (sampled frames carry their function's).
    /// - Parameter leafIsExact: whether the first address is an exact program counter (a stack
    ///   captured from another thread with ``Sampler/captureStack(ofThread:timeoutMilliseconds:)``)
    ///   rather than a return address (``Sampler/captureCurrentStack(maxFrames:)``).
    public mutating func addStack(_ addresses: [UInt], leafIsExact: Bool = false) -> Int? {
        guard !addresses.isEmpty else { return nil }
        var parent = -1
        for position in stride(from: addresses.count - 1, through: 0, by: -1) {
            let address = addresses[position]
            let lookup = position == 0 && leafIsExact ? address : address &- 1
            for frame in frames(at: lookup, exactLines: true).reversed() { parent = stack(parent: parent, frame: frame) }
        }
        return parent
    }

    /// The profile with everything added so far.
    /// - Parameters:
    ///   - threadNames: names by kernel thread id; unnamed threads are called `thread <id>`. Only
    ///     threads with samples (and the main thread) are listed.
    ///   - mainThreadID: kernel thread id of the main thread.
    public func build(
        metadata: Profile.Metadata, phases: Profile.Phases, threadNames: [Int: String], mainThreadID: Int,
        counts: Profile.SampleCounts
    ) -> Profile {
        // Every sampled thread, and the main thread even when it has no sample.
        let ids = threadIDs.union([mainThreadID]).sorted { lhs, rhs in
            if (lhs == mainThreadID) != (rhs == mainThreadID) { return lhs == mainThreadID }
            return lhs < rhs
        }
        let threads = ids.map { id in
            Profile.ThreadInfo(
                id: id, name: threadNames[id] ?? (id == mainThreadID ? "main" : "thread \(id)"),
                isMain: id == mainThreadID)
        }
        // Short names for C++ frames (the Swift runtime, ICU), and for Swift frames from the
        // runtime's simplified demangling.
        var named = frames
        for (index, mangled) in frameSymbol where CppNameShortener.isCpp(mangled) {
            named[index].short = CppNameShortener.shortName(named[index].name)
        }
        if simplifiesNames {
            let short = swiftShortNames()
            for (index, mangled) in frameSymbol {
                guard let simplified = short[mangled] else { continue }
                let shortName = SwiftNameSimplifier.shortName(simplified, full: named[index].name, object: named[index].object)
                if shortName != named[index].name { named[index].short = shortName }
            }
        }
        return Profile(
            metadata: metadata, timeOriginNs: timeOriginNs, phases: phases, threads: threads, frames: named,
            stacks: stacks, samples: samples, counts: counts)
    }

    /// The simplified name of each Swift symbol of the frames added so far, by mangled symbol:
    /// ``knownShortNames``, and the runtime's simplified demangling for the rest.
    public func swiftShortNames() -> [String: String] {
        let missing = frameSymbol.values.filter { knownShortNames[$0] == nil && SwiftNameSimplifier.isSwift($0) }
        guard !missing.isEmpty else { return knownShortNames }
        return knownShortNames.merging(SwiftNameSimplifier.simplify(Array(missing))) { known, _ in known }
    }

    /// The frames of one address, innermost first. Sampled stacks give each function one frame
    /// (its declaration's file and line); event stacks give the line being executed. The
    /// outermost frame of an async function's address is marked async (the functions inlined
    /// into it ran synchronously inside it); the runtime's resume adapters are left out, once per
    /// address.
    private mutating func frames(at address: UInt, exactLines: Bool, async: Bool = false) -> [Int] {
        if !async, let known = exactLines ? exactAddressFrames[address] : addressFrames[address] { return known }
        if async, let known = asyncAddressFrames[address] { return known }
        var resolved = symbolizer.frames(at: address)
        if async { resolved.removeAll(where: ProfileBuilder.isRuntimeAdapter) }
        resolved.removeAll(where: ProfileBuilder.isThreadStartWrapper)
        let indices = resolved.enumerated().map { position, symbolized in
            let index = frame(
                Profile.Frame(
                    name: symbolized.name, object: symbolized.object,
                    file: exactLines ? symbolized.file : symbolized.declarationFile,
                    line: exactLines ? symbolized.line : symbolized.declarationLine, isInlined: symbolized.isInlined,
                    isAsync: async && position == resolved.count - 1))
            if let mangled = symbolized.symbol { frameSymbol[index] = mangled }
            return index
        }
        if async {
            asyncAddressFrames[address] = indices
        } else if exactLines {
            exactAddressFrames[address] = indices
        } else {
            addressFrames[address] = indices
        }
        return indices
    }

    private mutating func frame(named name: String, object: String) -> Int {
        frame(Profile.Frame(name: name, object: object))
    }

    private mutating func frame(_ frame: Profile.Frame) -> Int {
        if let known = frameIndex[frame] { return known }
        frames.append(frame)
        frameIndex[frame] = frames.count - 1
        return frames.count - 1
    }

    private mutating func stack(parent: Int, frame: Int) -> Int {
        let key = StackKey(parent: parent, frame: frame)
        if let known = stackIndex[key] { return known }
        stacks.parent.append(parent)
        stacks.frame.append(frame)
        stackIndex[key] = stacks.count - 1
        return stacks.count - 1
    }
}
