import LiftoffProfile

// The loader's work object by object, from Liftoff's audit library: the initializers that ran
// before main, relocation, and the search for and mapping of each object.

/// Static initializers that ran before `main`, object by object.
struct StaticInitializersRule: InsightRule {
    let id = "static-initializers"
    let title = "Static initializers ran before main"
    let why =
        "Every library's static initializers (C++ constructors of globals, __attribute__((constructor)) functions, "
        + "runtime set-up) run before main, one after another on the main thread. Make them lazy (initialize on "
        + "first use), keep them from sleeping, waiting or reading files, and load plug-ins when first used rather "
        + "than linking them."
    let defaultThresholdNs: UInt64 = 10_000_000

    func evaluate(_ launch: LaunchWindow, thresholdNs: UInt64) -> Insight? {
        guard let loader = launch.profile.phases.preMain?.loader else { return nil }
        let slow = loader.slowestInitializers(atLeast: max(thresholdNs, 1))
        guard !slow.isEmpty else { return nil }
        let ms = LaunchWindow.ms
        let cost = slow.reduce(UInt64(0)) { $0 &+ $1.ns }
        let named = slow.prefix(3).map { "\(loader.objects[$0.object].fileName) \(ms($0.ns)) (\($0.longest.function))" }
        let finding = "Initializers ran \(ms(cost)) before main: \(named.joined(separator: ", "))."
        let first = slow.map(\.longest.startNs).min() ?? loader.relocatedNs
        var evidence = Insight.Evidence(
            thread: launch.mainThreadLabel, threadID: launch.mainThreadID, startNs: first,
            endNs: loader.initializedNs ?? slow.map(\.longest.endNs).max() ?? first)
        for entry in slow.prefix(10) {
            let object = loader.objects[entry.object]
            evidence.notes.append(
                "\(object.path): initializers \(ms(entry.ns)), the longest \(entry.longest.function) \(ms(entry.longest.durationNs)).")
        }
        return insight(launch, finding: finding, costNs: cost, thresholdNs: thresholdNs, evidence: evidence)
    }
}

/// Relocation before `main`.
struct RelocationRule: InsightRule {
    let id = "relocation"
    let title = "Relocating libraries before main"
    let why =
        "Before main the loader writes every pointer a library holds to where the library was mapped, and binds the "
        + "symbols it imports. Fewer and smaller dynamic libraries relocate less: link the Swift runtime statically "
        + "(-static-stdlib, --static-swift-stdlib), prefer FoundationEssentials to Foundation, avoid large tables of "
        + "pointers (offsets need no relocation), and bind lazily rather than with -z now where security allows."
    let defaultThresholdNs: UInt64 = 5_000_000

    func evaluate(_ launch: LaunchWindow, thresholdNs: UInt64) -> Insight? {
        guard let loader = launch.profile.phases.preMain?.loader, loader.relocationNs >= max(thresholdNs, 1) else { return nil }
        let ms = LaunchWindow.ms
        let most = loader.objects.filter { !$0.isLoader && !$0.isLiftoffs }.sorted { $0.relocations > $1.relocations }.prefix(3)
        let named = most.map { "\($0.fileName) \($0.relocations)" }
        let finding =
            "Relocating \(loader.objects.count) objects took \(ms(loader.relocationNs)) before main "
            + "(\(loader.relocationCount) relocations; the most: \(named.joined(separator: ", ")))."
        var evidence = Insight.Evidence(
            thread: launch.mainThreadLabel, threadID: launch.mainThreadID, startNs: loader.mappedNs, endNs: loader.relocatedNs)
        for object in most {
            evidence.notes.append(
                "\(object.path): \(object.relocations) relocations, \(object.relativeRelocations) relative, \(object.pltRelocations) in the PLT.")
        }
        return insight(launch, finding: finding, costNs: loader.relocationNs, thresholdNs: thresholdNs, evidence: evidence)
    }
}

/// Searching for and mapping libraries before `main`.
struct LibraryMappingRule: InsightRule {
    let id = "library-mapping"
    let title = "Finding and mapping libraries before main"
    let why =
        "Before main the loader searches the library path for each library the program needs, opens it and maps it; "
        + "a cold page cache makes each one wait for the disk. Fewer libraries map faster: link the Swift runtime "
        + "statically, keep the search path short (an rpath that names the folder), and merge small libraries."
    let defaultThresholdNs: UInt64 = 10_000_000

    func evaluate(_ launch: LaunchWindow, thresholdNs: UInt64) -> Insight? {
        guard let loader = launch.profile.phases.preMain?.loader, loader.mappingNs >= max(thresholdNs, 1) else { return nil }
        let ms = LaunchWindow.ms
        let slowest = loader.objects.filter { !$0.isLiftoffs }.compactMap { object in object.searchAndMapNs.map { (object, $0) } }
            .sorted { $0.1 > $1.1 }.prefix(3)
        let named = slowest.map { "\($0.0.fileName) \(ms($0.1))" }
        var finding = "Finding and mapping \(loader.objects.count) objects took \(ms(loader.mappingNs)) before main"
        if !named.isEmpty { finding += " (the longest: \(named.joined(separator: ", ")))" }
        finding += "."
        var evidence = Insight.Evidence(
            thread: launch.mainThreadLabel, threadID: launch.mainThreadID, startNs: loader.startNs, endNs: loader.mappedNs)
        for (object, ns) in slowest {
            evidence.notes.append("\(object.path): searched for and mapped in \(ms(ns)), \(object.sizeBytes / 1000) kB.")
        }
        return insight(launch, finding: finding, costNs: loader.mappingNs, thresholdNs: thresholdNs, evidence: evidence)
    }
}
