import LiftoffProfile

// The time before `main` and the waits for the disk: what the loader and a cold page cache cost a
// launch, from the kernel's counts before `main` and the samples that waited for the disk after it.

/// The loader's time before `main`: mapping, relocating and initializing objects.
struct PreMainRule: InsightRule {
    let id = "pre-main"
    let title = "The time before main"
    let why =
        "Before main the loader maps every library the program needs, relocates it and runs its static "
        + "initializers; none of the program's code has run yet. Swift on Linux: link the Swift runtime "
        + "statically (-static-stdlib, --static-swift-stdlib), import FoundationEssentials instead of Foundation "
        + "where it is enough (no ICU), link fewer dynamic libraries, load plug-ins when first used, and keep "
        + "static initializers from sleeping, waiting or reading files."
    let defaultThresholdNs: UInt64 = 20_000_000

    func evaluate(_ launch: LaunchWindow, thresholdNs: UInt64) -> Insight? {
        guard let preMain = launch.profile.phases.preMain, preMain.durationNs >= thresholdNs, preMain.durationNs > 0 else {
            return nil
        }
        let programStart = launch.profile.phases.programStartNs ?? launch.profile.phases.processStartNs
        var evidence = Insight.Evidence(
            thread: launch.mainThreadLabel, threadID: launch.mainThreadID, startNs: programStart,
            endNs: NanosecondDuration(nanoseconds: preMain.durationNs).after(programStart))
        evidence.notes.append("\(Profile.PreMain.title): \(preMain.sentence).")
        let ms = LaunchWindow.ms
        var finding = "The loader took \(ms(preMain.durationNs)) before main: \(ms(preMain.onCPUNs)) on a CPU"
        if preMain.runnableNs > 0 { finding += ", \(ms(preMain.runnableNs)) waiting for a core" }
        if preMain.blockedNs > 0 {
            finding += ", \(ms(preMain.blockedNs)) blocked"
            finding +=
                preMain.bytesRead > 0
                ? " while it read \(Self.bytes(preMain.bytesRead)) from storage (libraries not in the page cache)"
                : " with nothing read from storage (a static initializer that sleeps, waits or takes a lock)"
            let notDisk = min(preMain.loader?.initializersOffCPUWithoutReadingNs ?? 0, preMain.blockedNs)
            if preMain.bytesRead > 0, notDisk >= 1_000_000 {
                finding += "; \(ms(notDisk)) of it in static initializers that read nothing (they slept or waited)"
            }
        }
        finding += "."
        return insight(launch, finding: finding, costNs: preMain.durationNs, thresholdNs: thresholdNs, evidence: evidence)
    }

    /// `512 kB`, `62.4 MB`.
    static func bytes(_ count: UInt64) -> String { Profile.PreMain.amount(count) }
}

/// The programs the launch's process ran before the program itself, with `exec`: `env`, a wrapper
/// script, a version manager's shim (pyenv, rbenv, asdf), and the processes they started.
struct WrappersRule: InsightRule {
    let id = "wrappers"
    let title = "Programs ran before the program"
    let why =
        "Each program a wrapper runs before the real one (env, a shell script, a version manager's shim that asks "
        + "which version to use) is a process start, a loader and its own work, often with children of its own. "
        + "Start the program by its full path where the launch matters (a service's command line, a container's "
        + "entry point), or have the shim resolve once (pyenv's and rbenv's `exec` of the resolved path, asdf's "
        + "`reshim`)."
    let defaultThresholdNs: UInt64 = 10_000_000

    func evaluate(_ launch: LaunchWindow, thresholdNs: UInt64) -> Insight? {
        let phases = launch.profile.phases
        guard let programStart = phases.programStartNs, programStart > phases.processStartNs else { return nil }
        let cost = programStart - phases.processStartNs
        guard cost >= thresholdNs, cost > 0, let root = launch.profile.processes.first, root.programs.count > 1 else { return nil }
        let ms = LaunchWindow.ms
        let before = root.programs.dropLast()
        let chain = before.map(\.fileName)
        let program = root.programs.last?.fileName ?? "the program"
        var evidence = Insight.Evidence(
            thread: launch.mainThreadLabel, threadID: launch.mainThreadID, startNs: phases.processStartNs, endNs: programStart)
        // The child processes the wrappers started meanwhile, the longest first.
        let length = { (process: Profile.ProcessRecord) in process.endNs - min(process.endNs, process.startNs) }
        let children = launch.profile.processes.dropFirst().filter { $0.startNs < programStart }
            .sorted { (length($0), $1.id) > (length($1), $0.id) }
        for child in children.prefix(4) { evidence.notes.append("\(child.label) ran \(ms(length(child))) meanwhile.") }
        var finding = "The launch ran \(chain.count) program\(chain.count == 1 ? "" : "s") before \(program) "
            + "(\(chain.joined(separator: " → "))), \(ms(cost)) before \(program) began"
        if !children.isEmpty { finding += ", with \(children.count) child process\(children.count == 1 ? "" : "es") of theirs" }
        finding += "."
        return insight(launch, finding: finding, costNs: cost, thresholdNs: thresholdNs, evidence: evidence)
    }
}

/// Waits for the disk: libraries and data read before `main`, and page faults and reads that
/// waited for storage after it.
struct DiskReadsRule: InsightRule {
    let id = "disk-reads"
    let title = "The launch waited for the disk"
    let why =
        "Code and data not in the page cache are read from storage when first touched: after a deploy, a reboot or "
        + "a scale-out every launch is cold. Fewer and smaller objects read less: a static Swift runtime, stripped "
        + "binaries, FoundationEssentials instead of Foundation (no ICU data), fewer libraries, and ICU-backed "
        + "formatting deferred until it is needed."
    let defaultThresholdNs: UInt64 = 10_000_000

    /// Before main: the loader's blocked time, when it read from storage, less what initializers
    /// that read nothing spent off a CPU (a sleep or a lock is not the disk's).
    static func beforeMainNs(_ launch: LaunchWindow) -> UInt64 {
        guard let preMain = launch.profile.phases.preMain, preMain.bytesRead > 0 else { return 0 }
        let notDisk = preMain.loader?.initializersOffCPUWithoutReadingNs ?? 0
        return preMain.blockedNs - min(preMain.blockedNs, notDisk)
    }

    func evaluate(_ launch: LaunchWindow, thresholdNs: UInt64) -> Insight? {
        let preMain = launch.profile.phases.preMain
        let notDisk = preMain?.loader?.initializersOffCPUWithoutReadingNs ?? 0
        let before = Self.beforeMainNs(launch)
        // After it: the disk waits of the launch's thread, which the launch waited for; the other
        // threads' are evidence.
        var samples: [Int] = []
        var byThread: [Int: UInt64] = [:]
        for (thread, rows) in launch.samplesByThread {
            for sample in rows where launch.profile.samples.state[sample] == .disk {
                samples.append(sample)
                byThread[thread, default: 0] &+= launch.ns(of: sample)
            }
        }
        // What the launch waited for: the disk waits on its path to ready, the launch's thread's
        // own and those of the threads it waited for.
        let onPath = Self.pathDiskWaits(launch)
        let after = onPath.map { $0.reduce(0) { $0 &+ $1.ns } } ?? launch.mainThreadID.flatMap { byThread[$0] } ?? 0
        let pathThreads = Set(onPath?.map(\.thread) ?? [])
        let cost = before &+ after
        guard cost >= thresholdNs, cost > 0 else { return nil }
        var evidence = launch.evidence(of: samples, thread: byThread.count == 1 ? byThread.keys.first : nil)
        if let preMain, preMain.bytesRead > 0 {
            var note = "Before main: \(PreMainRule.bytes(preMain.bytesRead)) read, \(LaunchWindow.ms(preMain.blockedNs)) blocked"
            if notDisk > 0 { note += ", of which \(LaunchWindow.ms(min(notDisk, preMain.blockedNs))) in initializers that read nothing" }
            evidence.notes.append(note + ".")
            if samples.isEmpty {
                evidence.startNs = launch.profile.phases.programStartNs ?? launch.startNs
                evidence.endNs = NanosecondDuration(nanoseconds: preMain.durationNs).after(evidence.startNs)
            }
        }
        for (thread, ns) in byThread.sorted(by: { ($0.value, $1.key) > ($1.value, $0.key) }).prefix(4) {
            let label = launch.profile.thread(withID: thread).map(FlameTree.threadLabel) ?? "thread \(thread)"
            evidence.notes.append("\(label) waited \(LaunchWindow.ms(ns)) for the disk after main.")
        }
        var parts: [String] = []
        if before > 0, let preMain { parts.append("\(LaunchWindow.ms(before)) before main (\(PreMainRule.bytes(preMain.bytesRead)) read)") }
        if after > 0 {
            let place = evidence.stacks.first?.programFrame.map { ", most in \($0)" } ?? ""
            let others = pathThreads.subtracting(launch.mainThreadID.map { [$0] } ?? [])
            let whose = !others.isEmpty ? "the launch's path" : launch.launchesOnMainThread ? "the main thread" : "the launch's thread"
            parts.append("\(LaunchWindow.ms(after)) after it on \(whose)\(place)")
        }
        var finding = "The launch waited \(LaunchWindow.ms(cost)) for the disk: " + parts.joined(separator: " and ") + "."
        // A cold launch (`--cache cold`) knows what it read of each file it started without.
        if let read = launch.profile.cache?.filesRead, !read.isEmpty {
            let names = read.prefix(4).map { "\($0.path.split(separator: "/").last.map(String.init) ?? $0.path) \(PreMainRule.bytes($0.readBytes ?? 0))" }
            finding += " It read " + names.joined(separator: ", ") + (read.count > 4 ? ", …" : "") + "."
            for file in read.prefix(12) { evidence.notes.append("Read \(PreMainRule.bytes(file.readBytes ?? 0)) of \(file.path).") }
        }
        // Where the kernel recorded the page faults that read, which files they read, at which offsets.
        if let faults = launch.profile.diskFaults, faults.total > 0 {
            if launch.profile.cache?.filesRead.isEmpty ?? true {
                let names = faults.files.prefix(4).map { "\($0.path.split(separator: "/").last.map(String.init) ?? $0.path) (\($0.faults))" }
                if !names.isEmpty { finding += " Its page faults read " + names.joined(separator: ", ") + (faults.files.count > 4 ? ", …" : "") + "." }
            }
            for file in faults.files.prefix(8) { evidence.notes.append(Self.faultNote(file)) }
        }
        return insight(launch, finding: finding, costNs: cost, thresholdNs: thresholdNs, evidence: evidence)
    }
}

extension DiskReadsRule {
    /// The stretches of the path to ready that waited for the disk; nil when there is no path.
    static func pathDiskWaits(_ launch: LaunchWindow) -> [LaunchPath.Segment]? {
        guard !launch.path.segments.isEmpty else { return nil }
        return launch.path.segments.filter { $0.sample >= 0 && launch.profile.samples.state[$0.sample] == .disk }
    }

    /// One evidence note on a file the launch's page faults read: how many, before `main`, and
    /// where in the file.
    static func faultNote(_ file: Profile.FaultedFile) -> String {
        let count = file.faults == 1 ? "1 page fault" : "\(file.faults) page faults"
        let before = file.beforeMain == 0 ? "" : file.beforeMain == file.faults ? ", before main" : ", \(file.beforeMain) before main"
        let shown = file.offsets.prefix(6).map { "0x" + String($0, radix: 16) }.joined(separator: ", ")
        let more = file.faults > 6 ? ", …" : ""
        return "\(count) read \(file.path) from storage\(before), at offset\(file.offsets.count == 1 ? "" : "s") \(shown)\(more)."
    }
}

/// The program's own functions whose code or data the launch's thread waited for the disk to
/// read: its page faults after `main` (a sample waiting for the disk outside a system call is a
/// fault), by the innermost function of the program on each stack.
struct MainThreadPageFaultsRule: InsightRule {
    let id = "main-thread-page-faults"
    let title = "The launch's thread waited for page faults"
    let why =
        "A page fault that reads from storage stops the thread until the read completes: the code or data it "
        + "touched was not in memory (a cold launch, or a large mapping read at random). Touch less during the "
        + "launch, read a file's data in bulk or ahead of time (read(2), MADV_WILLNEED, posix_fadvise) instead "
        + "of faulting it in page by page, keep a smaller binary (stripped, a static Swift runtime), and move "
        + "work that touches large data off the launch's thread."
    let defaultThresholdNs: UInt64 = 5_000_000

    func evaluate(_ launch: LaunchWindow, thresholdNs: UInt64) -> Insight? {
        guard let thread = launch.mainThreadID, let rows = launch.samplesByThread[thread] else { return nil }
        // The disk waits on the path to ready (the launch's thread's, and those of the threads it
        // waited for), or the launch thread's when there is no path.
        let waits: [(sample: Int, ns: UInt64)] =
            DiskReadsRule.pathDiskWaits(launch)?.map { ($0.sample, $0.ns) }
            ?? rows.filter { launch.profile.samples.state[$0] == .disk }.map { ($0, launch.ns(of: $0)) }
        var samples: [Int] = []
        var cost: UInt64 = 0
        var byFunction: [String: UInt64] = [:]
        var threads = Set<Int>()
        for (sample, ns) in waits {
            samples.append(sample)
            cost &+= ns
            threads.insert(launch.profile.samples.thread[sample])
            let place = launch.programFrame(ofStack: launch.profile.samples.stack[sample]) ?? "code outside the program's own"
            byFunction[place, default: 0] &+= ns
        }
        guard cost >= thresholdNs, cost > 0 else { return nil }
        var evidence = launch.evidence(of: samples, thread: threads.count == 1 ? threads.first : nil)
        let ranked = byFunction.sorted { ($0.value, $1.key) > ($1.value, $0.key) }
        for (place, ns) in ranked.prefix(4) { evidence.notes.append("\(LaunchWindow.ms(ns)) in \(place).") }
        let top = ranked[0]
        let who = threads.subtracting([thread]).isEmpty ? launch.launchThread : "The launch's path"
        let finding =
            "\(who) waited \(LaunchWindow.ms(cost)) for page faults reading from the disk, "
            + "\(LaunchWindow.ms(top.value)) of it in \(top.key)."
        return insight(launch, finding: finding, costNs: cost, thresholdNs: thresholdNs, evidence: evidence)
    }
}
