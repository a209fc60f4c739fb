import LiftoffProfile

/// A profile's launch as the insight rules read it: the window from the process start to the
/// first frame (or ready line, or the end of the profile), its main thread, its samples by
/// thread, and the helpers that turn samples into evidence.
public struct LaunchWindow: Sendable {
    /// The profile.
    public let profile: Profile
    /// The launch's start: the process start, in nanoseconds.
    public let startNs: UInt64
    /// Its end: the first frame or ready line, else the end of the profile.
    public let endNs: UInt64
    /// One tick of the sampler.
    public let intervalNs: UInt64
    /// The thread that ran the launch: the one its first span began on (a `LaunchRecorder`'s
    /// spans, or an app's life-cycle callbacks), else the program's main thread (the first
    /// process's, when there are several). The `main-thread-*` rules watch it.
    public let mainThreadID: Int?
    /// The thread that made the launch ready, when the profile says and it was sampled: the one
    /// that called `LaunchRecorder.ready()` or wrote the line `--ready` matched. The launch
    /// thread's waits while it worked go on in it.
    public let readyThreadID: Int?
    /// Whether that thread is the program's main thread (an async CLI's launch runs on a pool thread).
    public let launchesOnMainThread: Bool
    /// Sample indices per thread id, in time order, of samples inside the window.
    public let samplesByThread: [Int: [Int]]
    /// The program's own objects: the executables of its processes.
    let programObjects: Set<String>
    /// Per stack, the innermost frame of the program's own code (an index into `profile.frames`), or -1.
    package private(set) var programFrameOfStack: [Int32] = []
    /// Per frame, whether it is the program's own code.
    private(set) var programFlagOfFrame: [Bool] = []
    /// The kind of library work of each stack the path to ready ran on (found for those stacks
    /// only: classifying every frame of a large profile by name costs more than the rules).
    private(set) var libraryWorkByStack: [Int: LibraryWork] = [:]
    /// Per stack, the kind of wait its innermost waiting function makes, if any.
    private(set) var waitKindOfStack: [MainThreadWait?] = []
    /// Per stack, whether it runs (or awaits from) an async `main`: the thread that carries `main`'s
    /// task while the main thread is parked.
    private(set) var asyncMainOfStack: [Bool] = []
    /// Per stack, whether it is an idle wait (an event loop waiting for events, a parked thread):
    /// a thread idle there held no one's wait.
    private(set) var idleWaitOfStack: [Bool] = []
    /// The path that led to ready: the launch's thread and the threads it waited for.
    public private(set) var path = LaunchPath()
    /// The waits of the threads on the path, by kind.
    private(set) var mainThreadWaits = MainThreadWaits()

    /// The window of `profile`.
    public init(_ profile: Profile) {
        self.profile = profile
        startNs = profile.phases.processStartNs
        endNs = max(profile.phases.firstFrameNs ?? profile.phases.endNs, startNs)
        intervalNs = max(profile.samplingIntervalNs, 1)
        let firstProcess = profile.processes.first?.id
        let main = (profile.threads.first { $0.isMain && ($0.processID == nil || $0.processID == firstProcess) }
            ?? profile.threads.first { $0.isMain })?.id
        let firstSpan = profile.spans.filter { $0.parent == nil }.min { ($0.startNs, $0.threadID) < ($1.startNs, $1.threadID) }
        mainThreadID = firstSpan?.threadID ?? main
        launchesOnMainThread = mainThreadID == main
        var byThread: [Int: [Int]] = [:]
        let times = profile.samples.timeNs
        for sample in 0..<profile.samples.count where times[sample] < endNs && Self.end(of: sample, profile, intervalNs) > startNs {
            byThread[profile.samples.thread[sample], default: []].append(sample)
        }
        for key in byThread.keys {
            // Samples are usually in time order per thread already.
            guard let rows = byThread[key], zip(rows, rows.dropFirst()).contains(where: { times[$0] > times[$1] }) else { continue }
            byThread[key]?.sort { times[$0] < times[$1] }
        }
        samplesByThread = byThread
        // The thread that made the launch ready, when it was sampled in the launch.
        readyThreadID = profile.marks.first { $0.name == .ready }?.threadID.flatMap { byThread[$0] == nil ? nil : $0 }
        programObjects = Self.programObjects(of: profile)
        programFlagOfFrame = frameFlags(isProgram)
        programFrameOfStack = innermost(programFlagOfFrame).frame
        waitKindOfStack = MainThreadWait.kinds(of: self)
        asyncMainOfStack = innermost(frameFlags { $0.name.hasSuffix("async_MainTQ0_") }).frame.map { $0 >= 0 }
        idleWaitOfStack = innermost(frameFlags { MainThreadWait.isIdleWait($0.name) }).frame.map { $0 >= 0 }
        path = LaunchPath(self)
        libraryWorkByStack = LibraryWork.ofStacks(path.cpuByStack.keys, in: self)
        mainThreadWaits = MainThreadWaits(self)
    }

    /// The executables of a profile's processes, by file name.
    package static func programObjects(of profile: Profile) -> Set<String> {
        var objects = Set<String>()
        for command in [profile.metadata.commandLine.first] + profile.processes.flatMap({ $0.programs.map(\.commandLine.first) }) {
            if let command, let name = command.split(separator: "/").last { objects.insert(String(name)) }
        }
        return objects
    }

    /// Per stack of `profile`, the innermost frame of the program's own code (an index into its
    /// frames, or -1): what ``programFrameOfStack`` holds, without the rest of a window.
    package static func programFrames(of profile: Profile) -> [Int32] {
        let objects = programObjects(of: profile)
        return innermost(profile.frames.map { isProgram($0, objects: objects) }, in: profile).frame
    }

    /// The launch's length.
    public var lengthNs: UInt64 { endNs - startNs }

    /// `ns` as a share of the launch, 0 ... 1.
    public func share(_ ns: UInt64) -> Double {
        lengthNs == 0 ? 0 : min(1, Double(ns) / Double(lengthNs))
    }

    /// How findings name the launch's thread: `The main thread`, or `The launch's thread (worker 7)`.
    public var launchThread: String {
        if launchesOnMainThread { return "The main thread" }
        return "The launch's thread" + (mainThreadLabel.map { " (\($0))" } ?? "")
    }

    /// The launch thread's label, `main (1234)`.
    public var mainThreadLabel: String? {
        mainThreadID.flatMap { profile.thread(withID: $0) }.map(FlameTree.threadLabel)
    }

    /// The samples of the main thread in the window.
    public var mainSamples: [Int] { mainThreadID.flatMap { samplesByThread[$0] } ?? [] }

    static func end(of sample: Int, _ profile: Profile, _ intervalNs: UInt64) -> UInt64 {
        let length = UInt64(profile.samples.weight[sample]).multipliedReportingOverflow(by: intervalNs)
        return NanosecondDuration(nanoseconds: length.overflow ? .max : length.partialValue).after(profile.samples.timeNs[sample])
    }

    /// When a sample's time ends: each row stands for its ticks from its time on.
    public func endNs(of sample: Int) -> UInt64 { Self.end(of: sample, profile, intervalNs) }

    /// The part of a sample's time inside the window.
    public func ns(of sample: Int) -> UInt64 {
        let from = max(profile.samples.timeNs[sample], startNs)
        let to = min(endNs(of: sample), endNs)
        return to > from ? to - from : 0
    }

    /// The time of `samples` inside the window.
    public func ns(of samples: [Int]) -> UInt64 {
        samples.reduce(0) { $0 &+ ns(of: $1) }
    }

    /// Whether the frame at an index of the profile's frames is the program's own code, as found
    /// once for the window.
    func isProgram(frameAt index: Int) -> Bool {
        index >= 0 && index < programFlagOfFrame.count ? programFlagOfFrame[index] : false
    }

    /// Whether the frame is the program's own code: in one of its executables, or, when the
    /// profile does not say which, outside the system's and Liftoff's libraries.
    public func isProgram(_ frame: Profile.Frame) -> Bool { Self.isProgram(frame, objects: programObjects) }

    static func isProgram(_ frame: Profile.Frame, objects: Set<String>) -> Bool {
        // The C runtime's entry is in every executable, and so are the Swift runtime's helpers
        // the compiler emits (`__swift_instantiateConcreteTypeFromMangledName`): never the code to look at.
        if frame.isLiftoff || frame.name == "_start" || frame.name.hasPrefix("__swift_") || frame.name.hasPrefix("swift_") {
            return false
        }
        if objects.contains(frame.object) { return !isSwiftLibraryCode(frame.name) }
        return objects.isEmpty && !isSystemObject(frame.object)
    }

    /// The Swift modules of the toolchain: their generic code specialized or inlined into a
    /// program (`generic specialization <cli.Item> of Swift.Array.append`, `protocol witness for
    /// Swift.Collection.subscript.read in conformance Swift.String : Swift.Collection in Swift`)
    /// is library work, not the program's own.
    static let swiftLibraryModules: Set<Substring> = [
        "Swift", "Foundation", "FoundationEssentials", "FoundationInternationalization", "_Concurrency", "_StringProcessing",
        "_RegexParser", "Dispatch", "Synchronization", "Observation", "Distributed", "Glibc", "Musl", "__C", "_FoundationCShims",
    ]

    /// Whether a demangled Swift name is a function of a toolchain module, whatever object holds it.
    static func isSwiftLibraryCode(_ name: String) -> Bool {
        var rest = Substring(name)
        if rest.hasPrefix("protocol witness for ") {
            // `… in conformance Swift.String : Swift.Collection in Swift`: the module is last.
            return rest.split(separator: " ").last.map { swiftLibraryModules.contains($0) } ?? false
        }
        // `merged`, `generic specialization <…> of`, `function signature specialization <…> of`,
        // `closure #1 (Swift.Character) -> Swift.Bool in`, `partial apply for`, `outlined copy of`.
        let wrappers = [
            "merged ", "partial apply for ", "outlined copy of ", "outlined destroy of ", "outlined retain of ",
            "outlined release of ", "outlined init with take of ", "outlined init with copy of ", "outlined assign with take of ",
            "outlined assign with copy of ", "type metadata accessor for ", "lazy protocol witness table accessor for type ",
            "value witness for ", "specialized ",
        ]
        while true {
            if let wrapper = wrappers.first(where: { rest.hasPrefix($0) }) {
                rest = rest.dropFirst(wrapper.count)
            } else if rest.hasPrefix("closure #") || rest.hasPrefix("implicit closure #") {
                // The enclosing function follows the first ` in ` outside brackets.
                var depth = 0
                var index = rest.startIndex
                var found: Substring.Index?
                while index < rest.endIndex {
                    let character = rest[index]
                    if character == "(" || character == "<" || character == "[" { depth += 1 }
                    if character == ")" || character == ">" || character == "]" { depth = max(0, depth - 1) }
                    if depth == 0, character == " ", rest[index...].hasPrefix(" in ") {
                        found = index
                        break
                    }
                    index = rest.index(after: index)
                }
                guard let found else { return false }
                rest = rest[found...].dropFirst(4)
            } else if let range = rest.firstRange(of: "specialization <"),
                rest[..<range.lowerBound].allSatisfy({ $0 == " " || $0 == "-" || ("a"..."z").contains($0) })
            {
                // `generic specialization <…> of`, `generic not re-abstracted specialization <…> of`,
                // `function signature specialization <…> of`.
                var depth = 0
                var index = rest.startIndex
                while index < rest.endIndex {
                    if rest[index] == "<" { depth += 1 }
                    if rest[index] == ">" {
                        depth -= 1
                        if depth == 0 { break }
                    }
                    index = rest.index(after: index)
                }
                guard index < rest.endIndex else { return false }
                rest = rest[rest.index(after: index)...]
                guard rest.hasPrefix(" of ") else { return false }
                rest = rest.dropFirst(4)
            } else {
                break
            }
        }
        for prefix in ["static ", "(extension in "] where rest.hasPrefix(prefix) { rest = rest.dropFirst(prefix.count) }
        guard let dot = rest.firstIndex(where: { $0 == "." || $0 == ")" || $0 == " " || $0 == "(" }), rest[dot] == "." || rest[dot] == ")" else {
            return false
        }
        return swiftLibraryModules.contains(rest[..<dot])
    }

    /// Whether an object is the C library, the loader, the Swift runtime or another system library.
    static func isSystemObject(_ object: String) -> Bool {
        let name = object.split(separator: "/").last.map(String.init) ?? object
        let prefixes = [
            "libc.", "libc-", "ld-linux", "libm.", "libpthread", "libdl", "libstdc++", "libgcc", "libswift", "libdispatch",
            "libFoundation", "lib_Foundation", "libBlocksRuntime", "libicu", "linux-vdso", "[",
        ]
        return prefixes.contains { name.hasPrefix($0) }
    }

    /// The innermost frame of the program's own code on a stack, described with its file and
    /// line when known (`load_config — config.c:12`).
    public func programFrame(ofStack stack: Int) -> String? {
        guard stack >= 0, stack < programFrameOfStack.count, programFrameOfStack[stack] >= 0 else { return nil }
        return Self.describe(profile.frames[Int(programFrameOfStack[stack])])
    }

    /// `name — File.swift:42`, or the name alone.
    static func describe(_ frame: Profile.Frame) -> String {
        frame.location.map { "\(name(frame)) — \($0)" } ?? name(frame)
    }

    /// A frame's name as insights show it: a C++ function without its parameter types and
    /// qualifiers (`swift::_getGenericMetadata`), a C function without its symbol version or
    /// glibc's internal prefix.
    static func name(_ frame: Profile.Frame) -> String {
        var name = frame.displayName
        // glibc's internal aliases: `__GI___lll_lock_wait` is `__lll_lock_wait`.
        if name.hasPrefix("__GI_") { name.removeFirst(5) }
        if let at = name.firstIndex(of: "@"), !name[..<at].contains("(") { name = String(name[..<at]) }
        if let open = name.firstIndex(of: "("), name[open...].contains("::") || name[open...].contains(" const") {
            name = String(name[..<open])
        }
        return name
    }

    /// `matches` of every frame of the profile, evaluated once per frame (names are compared as
    /// strings, which is slow; stacks then look the answers up).
    func frameFlags(_ matches: (Profile.Frame) -> Bool) -> [Bool] {
        profile.frames.map(matches)
    }

    /// Per stack, the innermost frame whose flag is set (an index into `profile.frames`, -1 when
    /// none) and how many frames it is from the leaf: one pass, as every stack's parent comes
    /// before it.
    func innermost(_ flags: [Bool]) -> (frame: [Int32], distance: [Int32]) { Self.innermost(flags, in: profile) }

    static func innermost(_ flags: [Bool], in profile: Profile) -> (frame: [Int32], distance: [Int32]) {
        let count = profile.stacks.count
        var frame = [Int32](repeating: -1, count: count)
        var distance = [Int32](repeating: .max, count: count)
        for stack in 0..<count {
            let own = profile.stacks.frame[stack]
            if own >= 0, own < flags.count, flags[own] {
                frame[stack] = Int32(own)
                distance[stack] = 0
            } else {
                let parent = profile.stacks.parent[stack]
                if parent >= 0, parent < stack, distance[parent] != .max {
                    frame[stack] = frame[parent]
                    distance[stack] = distance[parent] + 1
                }
            }
        }
        return (frame, distance)
    }

    /// The evidence of a set of samples on one thread (or several): their time range and their
    /// heaviest stacks, each cut after the program's own frame.
    public func evidence(of samples: [Int], thread: Int?, limit: Int = 3) -> Insight.Evidence {
        let times = profile.samples.timeNs
        let start = samples.map { max(times[$0], startNs) }.min() ?? startNs
        let end = samples.map { min(endNs(of: $0), endNs) }.max() ?? startNs
        var byStack: [Int: UInt64] = [:]
        for sample in samples { byStack[profile.samples.stack[sample], default: 0] &+= ns(of: sample) }
        let heaviest = byStack.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.prefix(limit)
        let stacks = heaviest.map { stack, ns in
            Insight.StackEvidence(frames: frames(ofStack: stack), ns: ns, programFrame: programFrame(ofStack: stack))
        }
        let info = thread.flatMap { profile.thread(withID: $0) }
        return Insight.Evidence(
            thread: info.map(FlameTree.threadLabel) ?? thread.map { "thread \($0)" }, threadID: thread, startNs: start,
            endNs: max(end, start), stacks: stacks)
    }

    /// A stack's frame names, innermost first, up to and including the program's own frame (at
    /// most 12), Liftoff's own frames left out.
    /// The innermost name of ``frames(ofStack:)``, found without the others.
    func leafName(ofStack stack: Int) -> String? {
        var current = stack
        while current >= 0, current < profile.stacks.count {
            let index = profile.stacks.frame[current]
            let frame = profile.frames[index]
            if !frame.isLiftoff { return Self.name(frame) }
            if isProgram(frameAt: index) { return nil }
            current = profile.stacks.parent[current]
        }
        return nil
    }

    func frames(ofStack stack: Int) -> [String] {
        var names: [String] = []
        var current = stack
        while current >= 0, current < profile.stacks.count, names.count < 12 {
            let index = profile.stacks.frame[current]
            let frame = profile.frames[index]
            if !frame.isLiftoff { names.append(Self.name(frame)) }
            if isProgram(frameAt: index) { break }
            current = profile.stacks.parent[current]
        }
        return names
    }

    /// What another thread did while `samples` waited: `preferring` (the thread the path to
    /// ready followed from this wait) when it ran or waited in the program's code meanwhile;
    /// else the thread that ran most meanwhile; when none ran, the thread that spent most of
    /// that time in the program's own code (waiting too: a lock's holder asleep; an idle wait
    /// only when no thread shows anything else). Its stacks
    /// with the time each overlapped the wait, heaviest first, and whether it ran.
    func busiestOtherThread(
        during samples: [Int], excluding thread: Int?, preferring: Int? = nil
    ) -> (thread: Int, stacks: [(stack: Int, ns: UInt64)], ran: Bool)? {
        busiestOtherThread(during: samples, excluding: thread, preferring: preferring, countingIdle: false)
            ?? busiestOtherThread(during: samples, excluding: thread, preferring: preferring, countingIdle: true)
    }

    private func busiestOtherThread(
        during samples: [Int], excluding thread: Int?, preferring: Int?, countingIdle: Bool
    ) -> (thread: Int, stacks: [(stack: Int, ns: UInt64)], ran: Bool)? {
        // The wait as sorted, merged intervals.
        var merged: [(start: UInt64, end: UInt64)] = []
        for (start, end) in samples.map({ (profile.samples.timeNs[$0], endNs(of: $0)) }).sorted(by: { $0.0 < $1.0 }) {
            if let last = merged.last, start <= last.end {
                merged[merged.count - 1].end = max(last.end, end)
            } else {
                merged.append((start, end))
            }
        }
        guard !merged.isEmpty else { return nil }
        func overlap(_ sample: Int) -> UInt64 {
            let (start, end) = (profile.samples.timeNs[sample], endNs(of: sample))
            var low = 0
            var high = merged.count
            while low < high {
                let middle = (low + high) / 2
                if merged[middle].end <= start { low = middle + 1 } else { high = middle }
            }
            var total: UInt64 = 0
            while low < merged.count, merged[low].start < end {
                total &+= min(end, merged[low].end) - max(start, merged[low].start)
                low += 1
            }
            return total
        }
        var best: (thread: Int, stacks: [Int: UInt64], ns: UInt64, ran: Bool)?
        var preferred: (thread: Int, stacks: [Int: UInt64], ns: UInt64, ran: Bool)?
        for (other, rows) in samplesByThread where other != thread {
            var ran: [Int: UInt64] = [:]
            var own: [Int: UInt64] = [:]
            for sample in rows {
                let time = overlap(sample)
                guard time > 0 else { continue }
                let stack = profile.samples.stack[sample]
                if profile.samples.state[sample] == .running { ran[stack, default: 0] &+= time }
                if stack >= 0, stack < programFrameOfStack.count, programFrameOfStack[stack] >= 0,
                    countingIdle || profile.samples.state[sample] == .running || stack >= idleWaitOfStack.count || !idleWaitOfStack[stack]
                {
                    own[stack, default: 0] &+= time
                }
            }
            let ranNs = ran.values.reduce(0, &+)
            let ownNs = own.values.reduce(0, &+)
            if other == preferring {
                if ranNs > 0 { preferred = (other, ran, ranNs, true) } else if ownNs > 0 { preferred = (other, own, ownNs, false) }
            }
            // Running beats waiting; then the most time.
            if ranNs > 0, !(best?.ran ?? false) || ranNs > best?.ns ?? 0 {
                best = (other, ran, ranNs, true)
            } else if ranNs == 0, ownNs > 0, !(best?.ran ?? false), ownNs > best?.ns ?? 0 {
                best = (other, own, ownNs, false)
            }
        }
        guard let best = preferred ?? best else { return nil }
        let stacks = best.stacks.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.map { (stack: $0.key, ns: $0.value) }
        return (best.thread, stacks, best.ran)
    }

    /// `12.3 ms`, `10 ms`, `250 ms`: whole milliseconds from 100 ms on, else one decimal when it has one.
    public static func ms(_ ns: UInt64) -> String {
        fmt(Double(ns) / 1e6, digits: ns >= 99_950_000 ? 0 : 1) + " ms"
    }
}
