import LiftoffProfile

/// Every insight rule, in the order their insights are listed when they cost the same. A new
/// rule is a type conforming to ``InsightRule`` and a line here.
public enum Insights {
    /// Every rule.
    public static let rules: [any InsightRule] = [
        MainThreadWaitRule(
            kind: .sleep, id: "main-thread-sleep", title: "The main thread slept",
            why: "A sleep on the main thread during the launch adds its whole length to the time to first frame. "
                + "Wait for the event itself (a callback, a continuation) or move the wait off the main thread.",
            verb: "slept"),
        MainThreadWaitRule(
            kind: .lock, id: "main-thread-lock-wait", title: "The main thread waited for a lock",
            why: "While another thread holds a lock the main thread needs, the launch waits for that thread's work. "
                + "Hold the lock for less time, take it later, or give the main thread its own copy of the data.",
            verb: "waited for a lock for"),
        MainThreadWaitRule(
            kind: .io, id: "main-thread-io", title: "The main thread blocked in I/O",
            why: "File and network I/O take as long as the disk or the network take. Read what the first frame "
                + "needs only, from a cache, or on a background thread.",
            verb: "blocked in I/O for"),
        MainThreadWaitRule(
            kind: .task, id: "main-thread-blocked-by-task", title: "The main thread waited for other work",
            why: "Waiting on a semaphore, a group, a queue or a thread joins the launch to that work's whole length. "
                + "Start the work earlier, make it smaller, or let the first frame go without it.",
            verb: "waited for other threads' work for"),
        LaunchCPURule(),
        LibraryWorkRule(),
        LibraryLoadingRule(),
        WrappersRule(),
        PreMainRule(),
        StaticInitializersRule(),
        RelocationRule(),
        LibraryMappingRule(),
        DiskReadsRule(),
        MainThreadPageFaultsRule(),
        OversubscribedRule(),
        PathWaitedForCoreRule(),
        SwiftRuntimeRule(),
        HangRule(),
        DeferrableTasksRule(),
        ThreadRuleViolationRule(),
        BackgroundBudgetRule(),
    ]

    /// The rule with an id, if there is one.
    public static func rule(id: String) -> (any InsightRule)? { rules.first { $0.id == id } }

    /// The insights of a profile's launch, the costliest first.
    public static func of(_ profile: Profile, settings: InsightSettings = InsightSettings()) -> [Insight] {
        of(LaunchWindow(profile), settings: settings)
    }

    /// The insights of a launch, the costliest first.
    public static func of(_ launch: LaunchWindow, settings: InsightSettings = InsightSettings()) -> [Insight] {
        var found: [(Insight, Int)] = []
        for (order, rule) in rules.enumerated() {
            if let insight = rule.evaluate(launch, thresholdNs: settings.thresholdNs(for: rule)) { found.append((insight, order)) }
        }
        return found.sorted { ($0.0.costNs, $1.1) > ($1.0.costNs, $0.1) }.map(\.0)
    }
}

/// `dlopen`, symbol binding and relocation on the main thread during the launch, and static
/// initializers before `main`.
struct LibraryLoadingRule: InsightRule {
    let id = "library-loading"
    let title = "Loading libraries took launch time"
    let why =
        "Each library the program loads is mapped, relocated and initialized before its code runs, on the thread "
        + "that loads it. Load fewer libraries at launch (load plug-ins when first used), link statically, or "
        + "remove static initializers."
    let defaultThresholdNs: UInt64 = 10_000_000

    private static let dlopen = NameMatch(["dlopen"])

    static func isLoader(_ frame: Profile.Frame) -> Bool {
        let name = frame.name
        return name.hasPrefix("_dl_") || name.hasPrefix("dl_") || dlopen.matches(name) || name == "do_lookup_x"
            || name == "call_init" || name.hasPrefix("_GLOBAL__sub_I") || name == "__libc_csu_init"
    }

    func evaluate(_ launch: LaunchWindow, thresholdNs: UInt64) -> Insight? {
        let loader = launch.innermost(launch.frameFlags(Self.isLoader)).frame
        let mainEntry = launch.profile.phases.mainEntryNs
        // With the loader's timeline, the time before main is the static-initializers,
        // relocation and library-mapping insights' own, object by object: only the loading
        // after main (dlopen) is this rule's.
        let afterMainOnly = launch.profile.phases.preMain?.loader != nil
        let samples = launch.mainSamples.filter {
            let stack = launch.profile.samples.stack[$0]
            return stack >= 0 && stack < loader.count && loader[stack] >= 0
                && (!afterMainOnly || launch.profile.samples.timeNs[$0] >= mainEntry)
        }
        let cost = launch.ns(of: samples)
        guard cost >= thresholdNs, cost > 0 else { return nil }
        let beforeMain = launch.ns(of: samples.filter { launch.profile.samples.timeNs[$0] < mainEntry })
        let evidence = launch.evidence(of: samples, thread: launch.mainThreadID)
        // The program's function that most of the loading came from, over every sample: one
        // stack may lack it (a walk cut short in code the loader had just mapped).
        var byStack: [Int: UInt64] = [:]
        for sample in samples { byStack[launch.profile.samples.stack[sample], default: 0] &+= launch.ns(of: sample) }
        let place = launch.topCaller(of: byStack).map { ", from \($0)" } ?? ""
        var finding = "Loading and initializing libraries took \(LaunchWindow.ms(cost)) of \(launch.launchesOnMainThread ? "the main thread" : "the launch's thread")\(place)"
        finding += beforeMain > 0 ? "; \(LaunchWindow.ms(beforeMain)) of it before main." : "."
        return insight(launch, finding: finding, costNs: cost, thresholdNs: thresholdNs, evidence: evidence)
    }
}

/// More of the program's threads wanted a core than the machine has, so work waited for one.
struct OversubscribedRule: InsightRule {
    let id = "oversubscribed"
    let title = "More busy threads than cores"
    let why =
        "When more threads are ready to run than there are cores, each waits its turn, the main thread too. "
        + "Use fewer threads for launch work (a queue of limited width) and keep background work for after the first frame."
    let defaultThresholdNs: UInt64 = 20_000_000

    func evaluate(_ launch: LaunchWindow, thresholdNs: UInt64) -> Insight? {
        let cores = max(launch.profile.metadata.host.cpuCount, 1)
        // At most 4,000,000 ticks (over an hour at 1 kHz); a longer launch is looked at for that long.
        let ticks = Int(min(launch.lengthNs / launch.intervalNs, 3_999_999)) + 1
        guard ticks > 0 else { return nil }
        // Per tick, the threads that ran or waited for a core then, each counted once (a runnable
        // row's ticks may overlap the running row that follows it).
        var wanting = [UInt16](repeating: 0, count: ticks)
        var waitingSamples: [Int] = []
        var perThread: [Int: UInt64] = [:]
        for (thread, rows) in launch.samplesByThread {
            var marked = 0  // ticks below this are counted for this thread
            for sample in rows where launch.profile.samples.state[sample] != .blocked {
                let from = Int(min((max(launch.profile.samples.timeNs[sample], launch.startNs) - launch.startNs) / launch.intervalNs, 4_000_000))
                // Rounded up, without overflow whatever the times in the file.
                let span = min(launch.endNs(of: sample), launch.endNs) - launch.startNs
                let to = Int(min(span / launch.intervalNs, 4_000_000)) + (span % launch.intervalNs == 0 ? 0 : 1)
                let first = max(from, marked)
                let last = min(max(to, from + 1), ticks)
                guard first < last else { continue }
                for tick in first..<last { wanting[tick] &+= 1 }
                marked = last
                if launch.profile.samples.state[sample] == .runnable {
                    waitingSamples.append(sample)
                    perThread[thread, default: 0] &+= UInt64(last - first) &* launch.intervalNs
                }
            }
        }
        let over = wanting.lazy.filter { Int($0) > cores }.count
        let cost = UInt64(over) &* launch.intervalNs
        guard cost >= thresholdNs, cost > 0, !waitingSamples.isEmpty else { return nil }
        let peak = Int(wanting.max() ?? 0)
        let waited = perThread.values.reduce(0, &+)
        var evidence = launch.evidence(of: waitingSamples, thread: nil)
        for (thread, ns) in perThread.sorted(by: { ($0.value, $1.key) > ($1.value, $0.key) }).prefix(4) {
            let label = launch.profile.thread(withID: thread).map(FlameTree.threadLabel) ?? "thread \(thread)"
            evidence.notes.append("\(label) waited \(LaunchWindow.ms(ns)) for a core.")
        }
        let finding =
            "For \(LaunchWindow.ms(cost)) of the launch, up to \(peak) of the program's threads wanted a core and the "
            + "machine has \(cores); its threads waited \(LaunchWindow.ms(waited)) for one in all."
        return insight(launch, finding: finding, costNs: cost, thresholdNs: thresholdNs, evidence: evidence)
    }
}

/// Swift runtime work: generic metadata, protocol conformance lookups, mangled-name demangling.
struct SwiftRuntimeRule: InsightRule {
    let id = "swift-runtime"
    let title = "Swift runtime work"
    let why =
        "The first use of a generic type instantiates its metadata, a dynamic cast or `as?` to a protocol looks "
        + "up conformances across every loaded image, and reflection demangles type names: costs Swift programs "
        + "pay at launch. Fewer generic types and protocol casts on the launch path, and concrete types in hot "
        + "Codable models, cut them."
    let defaultThresholdNs: UInt64 = 15_000_000

    private static let runtime = NameMatch([
        "swift_getGenericMetadata", "swift_allocateGenericValueMetadata", "swift_allocateGenericClassMetadata",
        "swift_instantiateConcreteTypeFromMangledName", "swift_getCanonicalSpecializedMetadata", "swift_checkMetadataState",
        "swift_conformsToProtocol", "swift::_conformsToProtocol", "swift_getWitnessTable", "swift_getAssociatedTypeWitness",
        "swift_getAssociatedConformanceWitness", "swift_getTypeByMangledName", "swift::Demangle::", "swift_demangle",
        "swift::TypeDecoder",
    ])

    static func isRuntime(_ frame: Profile.Frame) -> Bool { runtime.matches(frame.name) }

    func evaluate(_ launch: LaunchWindow, thresholdNs: UInt64) -> Insight? {
        let runtime = launch.innermost(launch.frameFlags(Self.isRuntime)).frame
        func runtimeFrame(_ sample: Int) -> Int {
            let stack = launch.profile.samples.stack[sample]
            return stack >= 0 && stack < runtime.count ? Int(runtime[stack]) : -1
        }
        var samples: [Int] = []
        var byThread: [Int: UInt64] = [:]
        for (thread, rows) in launch.samplesByThread {
            for sample in rows where launch.profile.samples.state[sample] == .running && runtimeFrame(sample) >= 0 {
                samples.append(sample)
                byThread[thread, default: 0] &+= launch.ns(of: sample)
            }
        }
        let cost = launch.ns(of: samples)
        guard cost >= thresholdNs, cost > 0 else { return nil }
        let busiest = byThread.max { ($0.value, $1.key) < ($1.value, $0.key) }?.key
        var evidence = launch.evidence(of: samples, thread: byThread.count == 1 ? busiest : nil)
        // The runtime functions, and the program's functions they were called from, by time:
        // the stacks themselves rarely repeat.
        var byFrame: [Int: UInt64] = [:]
        var byCaller: [Int32: UInt64] = [:]
        for sample in samples {
            let stack = launch.profile.samples.stack[sample]
            byFrame[runtimeFrame(sample), default: 0] &+= launch.ns(of: sample)
            let caller = launch.programFrameOfStack[stack]
            if caller >= 0 { byCaller[caller, default: 0] &+= launch.ns(of: sample) }
        }
        // Named once per frame, not per sample.
        var functions: [String: UInt64] = [:]
        for (frame, ns) in byFrame where frame >= 0 { functions[LaunchWindow.name(launch.profile.frames[frame]), default: 0] &+= ns }
        var callers: [String: UInt64] = [:]
        for (frame, ns) in byCaller { callers[LaunchWindow.describe(launch.profile.frames[Int(frame)]), default: 0] &+= ns }
        func ranked(_ times: [String: UInt64]) -> [(String, UInt64)] {
            times.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.prefix(3).map { ($0.key, $0.value) }
        }
        let top = ranked(functions).first?.0 ?? "the runtime"
        if !functions.isEmpty {
            evidence.notes.append("In: " + ranked(functions).map { "\($0.0) \(LaunchWindow.ms($0.1))" }.joined(separator: ", ") + ".")
        }
        if !callers.isEmpty {
            evidence.notes.append("From: " + ranked(callers).map { "\($0.0) \(LaunchWindow.ms($0.1))" }.joined(separator: ", ") + ".")
        }
        let place = ranked(callers).first.map { ", called from \($0.0)" } ?? ""
        let finding = "Swift runtime work took \(LaunchWindow.ms(cost)) of CPU during the launch, most in \(top)\(place)."
        return insight(launch, finding: finding, costNs: cost, thresholdNs: thresholdNs, evidence: evidence)
    }
}
