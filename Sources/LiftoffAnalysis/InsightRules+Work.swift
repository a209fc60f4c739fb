import LiftoffProfile

// The work on the launch's path: the program's own functions that held it on a CPU, and the
// library and runtime work they asked for, said in words.

/// A kind of library or runtime work a program asks for, told from the function the program
/// called (the outermost frame below the program's own code that names one).
enum LibraryWork: CaseIterable, Sendable {
    case codable, regex, formatters, strings, collections, memory

    /// How findings say it.
    var words: String {
        switch self {
        case .codable: return "JSON and Codable"
        case .regex: return "regular expressions"
        case .formatters: return "Foundation's formatters (ICU)"
        case .strings: return "Unicode and String processing"
        case .collections: return "hashing and collections"
        case .memory: return "allocation and reference counting"
        }
    }

    private static func names(_ kind: LibraryWork) -> NameMatch {
        switch kind {
        case .codable:
            return NameMatch([
                "JSONDecoder", "JSONEncoder", "JSONSerialization", "JSONMap", "JSONScanner", "JSONWriter", "Decodable",
                "Encodable", "DecodingContainer", "EncodingContainer", "init(from:", "encode(to:", "PropertyListDecoder",
                "PropertyListEncoder",
            ])
        case .regex:
            return NameMatch(["Regex", "NSRegularExpression", "_StringProcessing", "_RegexParser", "uregex_", "regexec", "regcomp"])
        case .formatters:
            return NameMatch([
                "DateFormatter", "NumberFormatter", "ISO8601", "Formatter.", "FormatStyle", "icu::", "icu_", "udat_", "unum_",
                "ucal_", "ucol_", "doLoadFromCommonData", "openCommonData", "udata_",
            ])
        case .strings:
            return NameMatch([
                "String.", "Substring.", "Character.", "Unicode.", "_StringGuts", "_StringObject", "_swift_stdlib_",
                "UTF8View", "UTF16View", "UnicodeScalar", "StringProtocol", "_NativeString", "_SmallString",
                "_stringCompare", "NFC", "u_str", "ucase_", "unorm",
            ])
        case .collections:
            return NameMatch([
                "Dictionary", "Set.", "Set<", "Array.", "Array<", "ContiguousArray", "_NativeDictionary", "_NativeSet",
                "Hasher", "_hashValue", "hashValue", "hash(into:", "_SipHash", "sorted(", "sort(", "_merge(", "_insertionSort",
                "Sequence.", "Collection.", "qsort", "bsearch",
            ])
        case .memory:
            return NameMatch([
                "swift_retain", "swift_release", "swift_allocObject", "swift_deallocObject", "swift_deallocClassInstance",
                "swift_bridgeObjectRetain", "swift_bridgeObjectRelease", "swift_slowAlloc", "swift_slowDealloc",
                "swift_unknownObjectRetain", "swift_unknownObjectRelease", "swift_isUniquelyReferenced", "swift_allocBox",
                "malloc", "calloc", "realloc", "cfree", "_int_free", "_int_malloc", "operator new", "operator delete",
                "_swift_release_dealloc", "swift_arrayInitWithCopy", "swift_arrayDestroy",
            ])
        }
    }

    /// Each kind with its words, built once.
    private static let matchers: [(kind: LibraryWork, names: NameMatch)] = allCases.map { ($0, names($0)) }

    /// The kind of library work of each stack: the outermost frame between the program's own code
    /// and the leaf that names one (what the program called, not what that called in turn). Each
    /// frame's name is classified once.
    static func ofStacks(_ stacks: some Sequence<Int>, in launch: LaunchWindow) -> [Int: LibraryWork] {
        let profile = launch.profile
        // Per frame: 0 not looked at yet, 1 no kind, 2... a kind's index plus 2; names shared by
        // several frames (one function at several addresses) are classified once.
        var byFrame = [UInt8](repeating: 0, count: profile.frames.count)
        var byName: [String: UInt8] = [:]
        func kind(ofFrame frame: Int) -> UInt8 {
            if byFrame[frame] == 0 {
                let name = profile.frames[frame].displayName
                if let known = byName[name] {
                    byFrame[frame] = known
                } else {
                    let found = of(profile.frames[frame]).flatMap { allCases.firstIndex(of: $0) }.map { UInt8($0 + 2) } ?? 1
                    byName[name] = found
                    byFrame[frame] = found
                }
            }
            return byFrame[frame]
        }
        // Per stack, found once and shared by the stacks below it: the outermost kind since the
        // last frame of the program's own code (0 when none yet, 255 when not found yet).
        var byStack = [UInt8](repeating: 255, count: profile.stacks.count)
        var chain: [Int] = []
        func kind(ofStack stack: Int) -> UInt8 {
            // The stacks up to the first whose answer is known, outermost last.
            chain.removeAll(keepingCapacity: true)
            var current = stack
            while current >= 0, current < byStack.count, byStack[current] == 255, chain.count < 512 {
                chain.append(current)
                current = profile.stacks.parent[current]
            }
            var above: UInt8 = current >= 0 && current < byStack.count && byStack[current] != 255 ? byStack[current] : 0
            for link in chain.reversed() {
                let frame = profile.stacks.frame[link]
                if frame < 0 || frame >= byFrame.count || launch.programFlagOfFrame[frame] {
                    above = 0
                } else if above < 2 {
                    let own = kind(ofFrame: frame)
                    above = own >= 2 ? own : 0
                }
                byStack[link] = above
            }
            return above
        }
        var result: [Int: LibraryWork] = [:]
        for stack in stacks where stack >= 0 && stack < byStack.count {
            let found = kind(ofStack: stack)
            if found >= 2 { result[stack] = allCases[Int(found) - 2] }
        }
        return result
    }

    /// The kind of a function, by its name without generic arguments and parameters: the first
    /// kind in declaration order that matches.
    static func of(_ frame: Profile.Frame) -> LibraryWork? {
        let base = baseName(frame.displayName)
        return matchers.first { $0.names.matches(base) }?.kind
    }

    /// `Swift.Dictionary<Swift.String, Swift.Int>.subscript.setter(Swift.Int) -> ()` as
    /// `Swift.Dictionary.subscript.setter() -> ()`: the type arguments and parameter types say
    /// what a function works on, not what it does. A parameter list keeps its first label
    /// (`init(from:)`, `hash(into:)`), which does.
    static func baseName(_ name: String) -> String {
        // A C name has nothing to take away.
        if !name.utf8.contains(where: { $0 == UInt8(ascii: "<") || $0 == UInt8(ascii: "(") || $0 == UInt8(ascii: " ") }) {
            return name
        }
        var result: [UInt8] = []
        result.reserveCapacity(name.utf8.count)
        var angles = 0
        var parentheses = 0
        var label: [UInt8] = []
        var labelDone = false
        for byte in name.utf8 {
            if byte == UInt8(ascii: "<") {
                angles += 1
            } else if byte == UInt8(ascii: ">"), angles > 0 {
                angles -= 1
            } else if angles > 0 {
                continue
            } else if byte == UInt8(ascii: "(") {
                if parentheses == 0 {
                    result.append(byte)
                    label.removeAll(keepingCapacity: true)
                    labelDone = false
                }
                parentheses += 1
            } else if byte == UInt8(ascii: ")"), parentheses > 0 {
                parentheses -= 1
                if parentheses == 0 { result.append(byte) }
            } else if parentheses == 1, !labelDone {
                if byte == UInt8(ascii: ":") {
                    result += label
                    result.append(byte)
                    labelDone = true
                } else if byte == UInt8(ascii: "_") || (byte | 0x20 >= UInt8(ascii: "a") && byte | 0x20 <= UInt8(ascii: "z")) {
                    label.append(byte)
                } else {
                    labelDone = true
                }
            } else if parentheses == 0 {
                result.append(byte)
            }
        }
        // The result type names what the function returns, not what it does.
        for marker in [Array(" -> ".utf8), Array(" : ".utf8)] where result.count >= marker.count {
            if let start = (0...(result.count - marker.count)).first(where: { result[$0..<$0 + marker.count].elementsEqual(marker) }) {
                result.removeSubrange(start...)
            }
        }
        return String(decoding: result, as: UTF8.self)
    }
}

extension LaunchWindow {
    /// A program function's time on some stacks, as `launch-cpu` ranks them.
    struct ProgramFunction {
        var name: String
        /// A frame of it (the first met), for its file and line.
        var frame: Int
        /// Everything below it, libraries included, each stack counted once.
        var inclusiveNs: UInt64
        /// The stacks whose innermost program function it is.
        var ownNs: UInt64
        /// Whether it is a helper several program functions call, each for a good part of its time.
        var isShared = false
        /// Its time in the shared helpers it calls.
        var inSharedNs: UInt64 = 0
    }

    /// The program's own functions on a set of stacks, each counted once per stack, the most
    /// inclusive time first.
    func programFunctions(of byStack: [Int: UInt64]) -> [ProgramFunction] {
        var functions: [String: ProgramFunction] = [:]
        // Time from each program function into the next program function it called, by name.
        var calls: [String: [String: UInt64]] = [:]
        var names = [String?](repeating: nil, count: profile.frames.count)
        func name(_ frame: Int) -> String {
            if let known = names[frame] { return known }
            let text = Self.name(profile.frames[frame])
            names[frame] = text
            return text
        }
        var chain: [(name: String, frame: Int)] = []
        for (stack, ns) in byStack {
            // The stack's program functions, innermost first.
            chain.removeAll(keepingCapacity: true)
            var current = stack
            var steps = 0
            while current >= 0, current < profile.stacks.count, steps < 512 {
                let frame = profile.stacks.frame[current]
                if frame >= 0, frame < programFlagOfFrame.count, programFlagOfFrame[frame] {
                    let key = name(frame)
                    if chain.last?.name != key { chain.append((key, frame)) }
                }
                current = profile.stacks.parent[current]
                steps += 1
            }
            var seen = Set<String>()
            for (position, entry) in chain.enumerated() where seen.insert(entry.name).inserted {
                var function = functions[entry.name] ?? ProgramFunction(name: entry.name, frame: entry.frame, inclusiveNs: 0, ownNs: 0)
                function.inclusiveNs &+= ns
                if position == 0 { function.ownNs &+= ns }
                functions[entry.name] = function
                if position > 0 { calls[entry.name, default: [:]][chain[position - 1].name, default: 0] &+= ns }
            }
        }
        // A helper is called from two program functions or more, each for a fifth of its time.
        var callers: [String: [UInt64]] = [:]
        for (caller, callees) in calls {
            for (callee, ns) in callees where callee != caller { callers[callee, default: []].append(ns) }
        }
        for (callee, shares) in callers where shares.filter({ $0 &* 5 >= (functions[callee]?.inclusiveNs ?? 0) }).count >= 2 {
            functions[callee]?.isShared = true
        }
        let shared = Set(functions.values.filter(\.isShared).map(\.name))
        for (caller, callees) in calls {
            functions[caller]?.inSharedNs = callees.reduce(0) { $0 &+ (shared.contains($1.key) ? $1.value : 0) }
        }
        return functions.values.sorted { ($0.inclusiveNs, $1.name) > ($1.inclusiveNs, $0.name) }
    }

    /// The functions that did the work, not the ones that only called it: a function is kept
    /// when its own code (and the libraries it called directly) took a fifth of its inclusive
    /// time or a twentieth of `totalNs`, or when half its time went to helpers other functions
    /// share (`hash_rows` and `parse_config` both spinning in `work_ns`). `main` and the callers
    /// on the way to the work drop out.
    func workingFunctions(of byStack: [Int: UInt64], totalNs: UInt64) -> [ProgramFunction] {
        programFunctions(of: byStack).filter {
            $0.ownNs &* 5 >= $0.inclusiveNs && $0.ownNs > 0 || $0.ownNs &* 20 >= totalNs && $0.ownNs > 0
                || $0.inSharedNs &* 2 >= $0.inclusiveNs && $0.inSharedNs > 0
        }
    }
}

/// The program's own work held the launch on a CPU: the path to ready ran for most of the launch.
struct LaunchCPURule: InsightRule {
    let id = "launch-cpu"
    let title = "The program's own work held the launch"
    let why =
        "The thread that made the program ready (and the threads it waited for) computed for this long: the launch "
        + "is as fast as that work. Do less of it before ready (build indexes lazily, decode what the first screen "
        + "or request needs), make the hottest function cheaper, or run independent parts on other cores."
    let defaultThresholdNs: UInt64 = 50_000_000
    /// Under the default threshold, a shorter launch's CPU fires from this share of it on.
    static let defaultShare = 0.3
    /// ... and at least this much: a launch of a few milliseconds needs no answer.
    static let minimumNs: UInt64 = 5_000_000

    func evaluate(_ launch: LaunchWindow, thresholdNs: UInt64) -> Insight? {
        let byStack = launch.path.cpuByStack
        let cost = byStack.values.reduce(0, &+)
        let fires =
            cost >= thresholdNs
            || (thresholdNs == defaultThresholdNs && cost >= Self.minimumNs && launch.share(cost) >= Self.defaultShare)
        guard fires, cost > 0 else { return nil }
        let functions = launch.workingFunctions(of: byStack, totalNs: cost)
        let ms = LaunchWindow.ms
        let ran = Set(launch.path.running.map(\.thread))
        let threads = launch.path.threads.filter { ran.contains($0.thread) }
        let names = threads.prefix(3).map { launch.profile.thread(withID: $0.thread).map(FlameTree.threadLabel) ?? "thread \($0.thread)" }
        var finding = "The launch's path ran \(ms(cost)) on a CPU (\(InsightMath.percent(launch.share(cost))) of the launch)"
        if names.count > 1 { finding += " on \(names.joined(separator: ", "))" }
        // The headline names the heaviest function that is not a helper others share.
        if let top = functions.first(where: { !$0.isShared }) ?? functions.first {
            finding += "; most of it in \(LaunchWindow.describe(launch.profile.frames[top.frame])) (\(ms(top.inclusiveNs)))."
        } else {
            finding += ", none of it in the program's own code that has symbols."
        }
        // The stacks of the heaviest functions, and the rest as notes.
        // Each of the three heaviest functions' own heaviest stack, in one pass over the stacks.
        let wanted = functions.prefix(3).map(\.name)
        var nameOfFrame: [Int32: String] = [:]
        var best: [String: (stack: Int, ns: UInt64)] = [:]
        for (stack, ns) in byStack {
            let frame = launch.programFrameOfStack[stack]
            guard frame >= 0 else { continue }
            let name = nameOfFrame[frame] ?? LaunchWindow.name(launch.profile.frames[Int(frame)])
            nameOfFrame[frame] = name
            guard wanted.contains(name), (ns, -stack) > (best[name]?.ns ?? 0, -(best[name]?.stack ?? Int.max)) else { continue }
            best[name] = (stack, ns)
        }
        let heaviest = wanted.compactMap { best[$0]?.stack }
        let samples = launch.path.running.map(\.sample)
        var evidence = launch.evidence(of: samples, thread: threads.count == 1 ? threads.first?.thread : nil, limit: 0)
        evidence.stacks = heaviest.map {
            Insight.StackEvidence(frames: launch.frames(ofStack: $0), ns: byStack[$0] ?? 0, programFrame: launch.programFrame(ofStack: $0))
        }
        if launch.path.threads.count > 1 {
            let parts = launch.path.threads.prefix(4).map { entry in
                "\(launch.profile.thread(withID: entry.thread).map(FlameTree.threadLabel) ?? "thread \(entry.thread)") \(ms(entry.ns))"
            }
            evidence.notes.append("The path to ready went through \(parts.joined(separator: ", ")).")
        }
        for function in functions.prefix(5) {
            let own = function.ownNs < function.inclusiveNs ? ", \(ms(function.ownNs)) in its own code and the libraries it called" : ""
            evidence.notes.append(
                "\(LaunchWindow.describe(launch.profile.frames[function.frame])): \(ms(function.inclusiveNs)) "
                    + "(\(InsightMath.percent(Double(function.inclusiveNs) / Double(cost))) of the path's CPU)\(own).")
        }
        return insight(launch, finding: finding, costNs: cost, thresholdNs: thresholdNs, evidence: evidence)
    }
}

/// Library and runtime work on the launch's path, said in words, with the program's callers.
struct LibraryWorkRule: InsightRule {
    let id = "library-work"
    let title = "Library work on the launch's path"
    let why =
        "Work the program asks of its libraries costs launch time like its own: decoding with Codable, String and "
        + "Unicode processing, hashing into dictionaries and sets, allocating and counting references, formatting "
        + "with ICU, regular expressions. Decode less (or with concrete types), hash fewer keys, reserve capacity, "
        + "reuse formatters, and move what the first frame does not need after it."
    let defaultThresholdNs: UInt64 = 15_000_000

    func evaluate(_ launch: LaunchWindow, thresholdNs: UInt64) -> Insight? {
        let byStack = launch.path.cpuByStack
        var byKind: [LibraryWork: [Int: UInt64]] = [:]
        for (stack, ns) in byStack {
            if let kind = launch.libraryWorkOfStack(stack) { byKind[kind, default: [:]][stack, default: 0] &+= ns }
        }
        let totals = byKind.map { (kind: $0.key, stacks: $0.value, ns: $0.value.values.reduce(0, &+)) }
            .sorted { ($0.ns, $0.kind.words) > ($1.ns, $1.kind.words) }
        guard let top = totals.first, top.ns >= thresholdNs, top.ns > 0 else { return nil }
        let ms = LaunchWindow.ms
        let cost = totals.filter { $0.ns >= thresholdNs }.reduce(0) { $0 &+ $1.ns }
        let parts = totals.filter { $0.ns >= thresholdNs }.map { "\($0.kind.words) \(ms($0.ns))" }
        var finding = "Library work on the launch's path: \(parts.joined(separator: ", "))"
        var evidence = launch.evidence(of: [], thread: nil, limit: 0)
        let samples = launch.path.running.filter { launch.libraryWorkOfStack(launch.profile.samples.stack[$0.sample]) != nil }
        evidence.startNs = samples.map(\.startNs).min() ?? launch.startNs
        evidence.endNs = max(samples.map(\.endNs).max() ?? launch.startNs, evidence.startNs)
        for total in totals.prefix(4) {
            // The program's callers of this kind of work, heaviest first.
            var callers: [String: UInt64] = [:]
            for (stack, ns) in total.stacks {
                let caller = launch.programFrame(ofStack: stack) ?? "code without symbols"
                callers[caller, default: 0] &+= ns
            }
            let ranked = callers.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.prefix(2)
            evidence.notes.append(
                "\(total.kind.words): \(ms(total.ns)), from "
                    + ranked.map { "\($0.key) (\(ms($0.value)))" }.joined(separator: " and ") + ".")
            if evidence.stacks.count < 3, let stack = total.stacks.max(by: { ($0.value, $1.key) < ($1.value, $0.key) }) {
                evidence.stacks.append(
                    Insight.StackEvidence(
                        frames: launch.frames(ofStack: stack.key), ns: stack.value, programFrame: launch.programFrame(ofStack: stack.key)))
            }
        }
        if let first = totals.first, let caller = launch.topCaller(of: first.stacks) { finding += "; the most from \(caller)" }
        finding += "."
        return insight(launch, finding: finding, costNs: cost, thresholdNs: thresholdNs, evidence: evidence)
    }
}

extension LaunchWindow {
    /// The kind of library work a stack of the path is in (see ``LibraryWork/ofStacks(_:in:)``).
    func libraryWorkOfStack(_ stack: Int) -> LibraryWork? { libraryWorkByStack[stack] }

    /// The program's function most of some stacks' time came from.
    func topCaller(of stacks: [Int: UInt64]) -> String? {
        var callers: [String: UInt64] = [:]
        for (stack, ns) in stacks {
            if let caller = programFrame(ofStack: stack) { callers[caller, default: 0] &+= ns }
        }
        return callers.max { ($0.value, $1.key) < ($1.value, $0.key) }?.key
    }
}

/// Shares as findings say them.
enum InsightMath {
    /// `30 %`.
    static func percent(_ share: Double) -> String { "\(Int((min(max(share, 0), 1) * 100).rounded())) %" }
}

/// The path to ready waited for a core: it could have run, and the machine gave its cores to
/// other threads (the program's own or other programs').
struct PathWaitedForCoreRule: InsightRule {
    let id = "path-waited-for-core"
    let title = "The launch's path waited for a core"
    let why =
        "A thread that is ready to run waits while every core runs something else: other threads of the program, "
        + "or other programs (a busy CI runner, a build beside the launch, a noisy neighbour). Measure launches on "
        + "a quiet machine, pin them with `taskset`, or give launch work fewer competing threads."
    let defaultThresholdNs: UInt64 = 20_000_000

    func evaluate(_ launch: LaunchWindow, thresholdNs: UInt64) -> Insight? {
        let waiting = launch.path.segments.filter { $0.sample >= 0 && launch.profile.samples.state[$0.sample] == .runnable }
        let cost = waiting.reduce(0) { $0 &+ $1.ns }
        guard cost >= thresholdNs, cost > 0 else { return nil }
        var byStack: [Int: UInt64] = [:]
        for segment in waiting { byStack[launch.profile.samples.stack[segment.sample], default: 0] &+= segment.ns }
        let threads = Set(waiting.map(\.thread))
        var evidence = launch.evidence(of: waiting.map(\.sample), thread: threads.count == 1 ? threads.first : nil)
        evidence.stacks = byStack.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.prefix(3).map {
            Insight.StackEvidence(frames: launch.frames(ofStack: $0.key), ns: $0.value, programFrame: launch.programFrame(ofStack: $0.key))
        }
        // Were the cores busy with the program's own threads, or with other programs?
        var own: UInt64 = 0
        for segment in waiting {
            let busy = launch.samplesByThread.lazy.filter { $0.key != segment.thread }.contains { _, rows in
                LaunchPath.overlapping(rows, segment.startNs, segment.endNs, launch).contains {
                    launch.profile.samples.state[rows[$0]] == .running
                }
            }
            if busy { own &+= segment.ns }
        }
        let ms = LaunchWindow.ms
        let cores = max(launch.profile.metadata.host.cpuCount, 1)
        var finding = "The launch's path was ready to run and waited \(ms(cost)) for one of the machine's \(cores) cores"
        finding +=
            own * 2 >= cost
            ? "; for \(ms(own)) of it the program's other threads were running."
            : "; for most of it no other thread of the program ran: other programs held the cores."
        let place = evidence.stacks.first?.programFrame.map { " Most of it in \($0)." } ?? ""
        return insight(launch, finding: finding + place, costNs: cost, thresholdNs: thresholdNs, evidence: evidence)
    }
}
