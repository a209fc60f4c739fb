import Foundation
import LiftoffProfile
import LiftoffTestSupport
import Testing

@testable import LiftoffAnalysis

@Suite("Insights", .timeLimit(.minutes(5)))
struct InsightTests {
    static let sleepStack = ["main", "load_config", "libc.so.6|usleep", "libc.so.6|clock_nanosleep"]

    @Test("a main thread asleep for 50 ms in the launch: main-thread-sleep, 50 ms, the program's function named")
    func sleep() throws {
        var launch = LaunchBuilder()
        launch.endMs = 100
        launch.add(thread: 1, .running, ["main", "parse"], fromMs: 0, toMs: 30)
        launch.add(thread: 1, .blocked, Self.sleepStack, fromMs: 30, toMs: 80)
        launch.add(thread: 1, .running, ["main", "parse"], fromMs: 80, toMs: 100)
        let insights = Insights.of(launch.profile())
        let found = try #require(insights.first)
        #expect(insights.map(\.id) == ["main-thread-sleep", "launch-cpu"], "50 ms asleep, and 50 ms of parse: half the launch")
        #expect(found.costNs == 50_000_000)
        #expect(found.evidence.startNs == 30_000_000 && found.evidence.endNs == 80_000_000)
        #expect(found.evidence.thread == "main (1)")
        #expect(found.finding == "The main thread slept 50 ms in usleep, called from load_config.")
        #expect(found.evidence.stacks.first?.frames == ["clock_nanosleep", "usleep", "load_config"])
        #expect(abs(found.share - 0.5) < 1e-9, "50 of the launch's 100 ms")
    }

    @Test("thresholds: under the default nothing fires, a lower one set by id fires")
    func thresholds() throws {
        var launch = LaunchBuilder()
        launch.add(thread: 1, .blocked, Self.sleepStack, fromMs: 0, toMs: 5)
        launch.add(thread: 1, .running, ["main", "parse"], fromMs: 5, toMs: 100)
        #expect(Insights.of(launch.profile()).map(\.id) == ["launch-cpu"], "5 ms asleep is under the 10 ms default; 95 ms in parse is not")
        var settings = InsightSettings()
        settings.thresholdsNs["main-thread-sleep"] = 2_000_000
        let found = try #require(Insights.of(launch.profile(), settings: settings).first { $0.id == "main-thread-sleep" })
        #expect(found.thresholdNs == 2_000_000)
    }

    @Test("only the launch counts: a sleep after the first frame is no insight")
    func window() {
        var launch = LaunchBuilder()
        launch.firstFrameMs = 40
        launch.add(thread: 1, .running, ["main", "parse"], fromMs: 0, toMs: 40)
        launch.add(thread: 1, .blocked, Self.sleepStack, fromMs: 40, toMs: 200)
        #expect(Insights.of(launch.profile()).map(\.id) == ["launch-cpu"], "the 40 ms launch computed; its sleep came after")
    }

    @Test("a lock wait names what the busiest other thread ran meanwhile; each waiting sample counts for one kind")
    func lockWait() throws {
        var launch = LaunchBuilder()
        launch.threads.append(Profile.ThreadInfo(id: 2, name: "worker", isMain: false))
        launch.add(thread: 1, .blocked, ["main", "read_table", "libc.so.6|pthread_mutex_lock", "libc.so.6|__lll_lock_wait"], fromMs: 1, toMs: 61)
        launch.add(thread: 2, .running, ["start", "compute_table"], fromMs: 1, toMs: 61)
        launch.add(thread: 1, .running, ["main", "draw"], fromMs: 61, toMs: 71)
        let insights = Insights.of(launch.profile())
        // The holder's 60 ms of compute_table are on the path to ready, with main's 10 ms of draw.
        #expect(insights.map(\.id) == ["launch-cpu", "main-thread-lock-wait"])
        let found = try #require(insights.first { $0.id == "main-thread-lock-wait" })
        #expect(found.finding.contains("in pthread_mutex_lock, called from read_table"))
        #expect(found.evidence.notes == ["Meanwhile worker (2) ran compute_table for 60 ms."])
        let cpu = try #require(insights.first)
        #expect(cpu.costNs == 70_000_000)
        #expect(cpu.finding.contains("most of it in compute_table (60 ms)"))
    }

    @Test("I/O and waits for other work are told apart by the functions on the stack")
    func waitKinds() {
        var launch = LaunchBuilder()
        launch.add(thread: 1, .blocked, ["main", "load", "libc.so.6|read"], fromMs: 0, toMs: 30)
        launch.add(thread: 1, .blocked, ["main", "prepare", "libdispatch.so|dispatch_group_wait", "libc.so.6|futex_wait"], fromMs: 30, toMs: 50)
        let ids = Insights.of(launch.profile()).map(\.id)
        #expect(ids == ["main-thread-io", "main-thread-blocked-by-task"], "the costliest first")
    }

    @Test("more threads wanting a core than the machine has: oversubscribed; as many as the cores: nothing")
    func oversubscribed() {
        var launch = LaunchBuilder()
        for thread in 2...3 { launch.threads.append(Profile.ThreadInfo(id: thread, name: "w\(thread)", isMain: false)) }
        launch.add(thread: 1, .running, ["main", "work"], fromMs: 0, toMs: 50)
        launch.add(thread: 2, .running, ["start", "crunch"], fromMs: 0, toMs: 50)
        launch.add(thread: 3, .runnable, ["start", "crunch"], fromMs: 0, toMs: 50)
        #expect(Insights.of(launch.profile()).map(\.id) == ["oversubscribed"])
        launch.cpuCount = 3
        #expect(Insights.of(launch.profile()).isEmpty)
    }

    @Test("loader frames on the main thread: library-loading, with the part before main")
    func libraryLoading() throws {
        var launch = LaunchBuilder()
        launch.add(thread: 1, .running, ["ld.so|_dl_start", "ld.so|_dl_relocate_object"], fromMs: 0, toMs: 1)
        launch.add(thread: 1, .running, ["main", "load_plugins", "libc.so.6|dlopen", "ld.so|_dl_open", "ld.so|do_lookup_x"], fromMs: 1, toMs: 25)
        let found = try #require(Insights.of(launch.profile()).first)
        #expect(found.id == "library-loading" && found.costNs == 25_000_000)
        #expect(found.finding.contains("load_plugins") && found.finding.contains("1 ms of it before main"))
        // With the loader's timeline, the time before main is its own insights': only the dlopen is counted.
        var timed = launch.profile()
        timed.phases.preMain = Profile.PreMain(
            durationNs: 1_000_000, onCPUNs: 1_000_000, runnableNs: 0, blockedNs: 0, bytesRead: 0, majorFaults: 0, minorFaults: 10)
        timed.phases.preMain?.loader = Profile.Loader(startNs: 0, relocatedNs: 500_000, initializedNs: 900_000, objects: [], initializers: [])
        let afterMain = try #require(Insights.of(timed).first { $0.id == "library-loading" })
        #expect(afterMain.costNs == 24_000_000 && !afterMain.finding.contains("before main"), "\(afterMain.finding)")
    }

    @Test("Swift runtime work on any thread: swift-runtime, with the runtime functions and the program's callers")
    func swiftRuntime() throws {
        var launch = LaunchBuilder()
        let stack = ["main", "Item.init(from:)", "libswiftCore.so|swift_conformsToProtocolMaybeInstantiateSuperclasses"]
        launch.add(thread: 1, .running, stack, fromMs: 0, toMs: 20)
        launch.add(thread: 1, .running, ["main", "draw"], fromMs: 20, toMs: 40)
        let found = try #require(Insights.of(launch.profile()).first)
        #expect(found.id == "swift-runtime" && found.costNs == 20_000_000)
        #expect(found.evidence.notes.contains("From: Item.init(from:) 20 ms."))
    }

    @Test("a long time before main is pre-main, said as blocked with nothing read: a static initializer, not the disk")
    func preMain() throws {
        var launch = LaunchBuilder()
        launch.add(thread: 1, .running, ["main", "draw"], fromMs: 45, toMs: 50)
        var profile = launch.profile()
        profile.phases.preMain = Profile.PreMain(
            durationNs: 43_000_000, onCPUNs: 2_500_000, runnableNs: 0, blockedNs: 40_500_000, bytesRead: 0, majorFaults: 0,
            minorFaults: 300)
        let found = try #require(Insights.of(profile).first)
        #expect(found.id == "pre-main" && found.costNs == 43_000_000)
        #expect(found.finding.contains("40.5 ms blocked with nothing read from storage"), "\(found.finding)")
        #expect(!Insights.of(profile).contains { $0.id == "disk-reads" }, "nothing was read: no disk insight")
        profile.phases.preMain?.durationNs = 15_000_000
        #expect(!Insights.of(profile).contains { $0.id == "pre-main" }, "under its 20 ms threshold")
    }

    @Test("programs the process ran before the program itself (a version manager's shim): wrappers, with the chain and the children, and explained in the coverage")
    func wrappers() throws {
        var launch = LaunchBuilder()
        launch.endMs = 100
        launch.firstFrameMs = 100
        launch.add(thread: 1, .running, ["main", "serve"], fromMs: 61, toMs: 100)
        var profile = launch.profile()
        profile.phases.programStartNs = 60_000_000
        profile.phases.mainEntryNs = 61_000_000
        profile.processes = [
            Profile.ProcessRecord(
                id: 1, parentID: 0, commandLine: ["/srv/app"], startNs: 0, endNs: 100_000_000,
                programs: [
                    Profile.Program(commandLine: ["/usr/bin/env", "bash", "/shims/app"], startNs: 0, endNs: 2_000_000),
                    Profile.Program(commandLine: ["/bin/bash", "/shims/app"], startNs: 2_000_000, endNs: 60_000_000),
                    Profile.Program(commandLine: ["/srv/app"], startNs: 60_000_000, endNs: 100_000_000),
                ]),
            Profile.ProcessRecord(id: 7, parentID: 1, commandLine: ["/bin/bash", "/shims/which-version"], startNs: 5_000_000, endNs: 45_000_000),
        ]
        let insights = Insights.of(profile)
        let found = try #require(insights.first { $0.id == "wrappers" }, "\(insights.map(\.id))")
        #expect(found.costNs == 60_000_000)
        #expect(found.finding == "The launch ran 2 programs before app (env → bash), 60 ms before app began, with 1 child process of theirs.", "\(found.finding)")
        #expect(found.evidence.notes == ["which-version (7) ran 40 ms meanwhile."], "\(found.evidence.notes)")
        let coverage = LaunchCoverage(LaunchWindow(profile), insights: insights)
        #expect(!coverage.unexplained.contains { $0.what == "programs run before the program" }, "\(coverage)")
        // Without the insight, the wrappers' time is named for what it is.
        let bare = LaunchCoverage(LaunchWindow(profile), insights: [])
        #expect(bare.unexplained.contains { $0.what == "programs run before the program" && $0.ns == 60_000_000 }, "\(bare)")
    }

    @Test("the loader's timeline: relocation names the objects with the most relocations, library-mapping the slowest to find and map")
    func loaderInsights() throws {
        var launch = LaunchBuilder()
        launch.add(thread: 1, .running, ["main", "draw"], fromMs: 30, toMs: 40)
        var profile = launch.profile()
        let objects = [
            Profile.LoadedObject(path: "/app/App", searchNs: nil, mappedNs: 1_000_000, sizeBytes: 9_000_000, relativeRelocations: 900, relocations: 1_000, pltRelocations: 50),
            Profile.LoadedObject(path: "/opt/swift/libFoundation.so", searchNs: 1_000_000, mappedNs: 9_000_000, sizeBytes: 40_000_000, relativeRelocations: 60_000, relocations: 90_000, pltRelocations: 4_000),
            Profile.LoadedObject(path: "/opt/swift/libswiftCore.so", searchNs: 9_000_000, mappedNs: 12_000_000, sizeBytes: 6_000_000, relativeRelocations: 20_000, relocations: 30_000, pltRelocations: 900),
            Profile.LoadedObject(path: "/lib64/ld-linux-x86-64.so.2", searchNs: nil, mappedNs: 500_000, sizeBytes: 200_000, relativeRelocations: 0, relocations: 500_000, pltRelocations: 0),
            Profile.LoadedObject(path: "/opt/liftoff/libLiftoffAgent.so", searchNs: 12_000_000, mappedNs: 13_000_000, sizeBytes: 1_000_000, relativeRelocations: 1, relocations: 100, pltRelocations: 0),
        ]
        profile.phases.preMain = Profile.PreMain(
            durationNs: 29_000_000, onCPUNs: 20_000_000, runnableNs: 0, blockedNs: 9_000_000, bytesRead: 0, majorFaults: 0, minorFaults: 3_000)
        // Mapped from 0.5 to 13 ms, relocated by 20 ms.
        profile.phases.preMain?.loader = Profile.Loader(startNs: 500_000, relocatedNs: 20_000_000, initializedNs: 21_000_000, objects: objects, initializers: [])
        let insights = Insights.of(profile)
        let relocation = try #require(insights.first { $0.id == "relocation" }, "\(insights.map(\.id))")
        #expect(relocation.costNs == 7_000_000)
        // The loader's own relocations are not counted, nor is Liftoff's library named.
        #expect(
            relocation.finding == "Relocating 5 objects took 7 ms before main (121100 relocations; the most: libFoundation.so 90000, libswiftCore.so 30000, App 1000).",
            "\(relocation.finding)")
        #expect(relocation.evidence.notes.first == "/opt/swift/libFoundation.so: 90000 relocations, 60000 relative, 4000 in the PLT.")
        let mapping = try #require(insights.first { $0.id == "library-mapping" }, "\(insights.map(\.id))")
        #expect(mapping.costNs == 12_500_000)
        #expect(mapping.finding.contains("the longest: libFoundation.so 8 ms, libswiftCore.so 3 ms"), "\(mapping.finding)")
        // Under their thresholds, neither fires.
        profile.phases.preMain?.loader = Profile.Loader(startNs: 500_000, relocatedNs: 13_000_000, initializedNs: 13_500_000, objects: objects, initializers: [])
        profile.phases.preMain?.loader?.objects = objects.map { var object = $0; object.mappedNs = min(object.mappedNs, 9_000_000); return object }
        let quiet = Insights.of(profile).map(\.id)
        #expect(!quiet.contains("relocation") && !quiet.contains("library-mapping"), "\(quiet)")
    }

    @Test("a cold launch's waits for the disk, before main and on the launch's thread after it, are disk-reads")
    func diskReads() throws {
        var launch = LaunchBuilder()
        launch.add(thread: 1, .disk, ["main", "load_catalog", "libc.so.6|memcpy"], fromMs: 80, toMs: 92)
        launch.add(thread: 1, .running, ["main", "load_catalog"], fromMs: 92, toMs: 100)
        launch.threads.append(Profile.ThreadInfo(id: 2, name: "worker", isMain: false))
        launch.add(thread: 2, .disk, ["worker", "libicuuc.so|doLoadFromCommonData"], fromMs: 80, toMs: 85)
        var profile = launch.profile()
        profile.phases.preMain = Profile.PreMain(
            durationNs: 75_000_000, onCPUNs: 10_000_000, runnableNs: 0, blockedNs: 65_000_000, bytesRead: 62_400_000,
            majorFaults: 900, minorFaults: 3000)
        let found = try #require(Insights.of(profile).first { $0.id == "disk-reads" })
        #expect(found.costNs == 77_000_000, "65 ms before main and the main thread's 12 ms after: \(found.costNs)")
        #expect(found.finding.contains("65 ms before main (62.4 MB read)"), "\(found.finding)")
        #expect(found.finding.contains("12 ms after it on the main thread, most in load_catalog"), "\(found.finding)")
        #expect(found.evidence.notes.contains("worker (2) waited 5 ms for the disk after main."), "\(found.evidence.notes)")
        let preMain = try #require(Insights.of(profile).first { $0.id == "pre-main" })
        #expect(preMain.finding.contains("while it read 62.4 MB from storage"), "\(preMain.finding)")
        #expect(!found.finding.contains("It read"), "no file is named when the launch did not evict its files")

        // Launched with --cache cold: the files it read, the most first.
        profile.cache = Profile.CacheState(
            mode: "cold",
            files: [
                Profile.CachedFile(path: "/usr/lib/libicudata.so.72", sizeBytes: 31_000_000, residentBytes: 0, readBytes: 30_100_000),
                Profile.CachedFile(path: "/srv/app/App", sizeBytes: 9_000_000, residentBytes: 0, readBytes: 4_200_000),
                Profile.CachedFile(path: "/usr/lib/libc.so.6", sizeBytes: 1_900_000, residentBytes: 1_900_000, readBytes: 0),
                Profile.CachedFile(path: "/opt/lib/unknown.so", sizeBytes: 1_000_000, residentBytes: nil),
            ])
        let named = try #require(Insights.of(profile).first { $0.id == "disk-reads" })
        #expect(named.finding.hasSuffix(" It read libicudata.so.72 30.1 MB, App 4.2 MB."), "\(named.finding)")
        #expect(named.evidence.notes.contains("Read 30.1 MB of /usr/lib/libicudata.so.72."), "\(named.evidence.notes)")
    }

    @Test("what the runtime knows becomes insights too: deferrable tasks and violations")
    func launchRecords() {
        var settings = InsightSettings()
        settings.thresholdsNs["deferrable-tasks"] = 500_000
        let ids = Insights.of(launchProfile(), settings: settings).map(\.id)
        #expect(ids == ["deferrable-tasks", "thread-rule-violation"], "the costliest first, a violation costs no time")
    }

    @Test("the Insights article's table of rules lists every rule with its default threshold")
    func documentedTable() throws {
        let article = try String(
            contentsOf: repositoryRoot.appendingPathComponent("Sources/Liftoff/Documentation.docc/Insights.md"), encoding: .utf8)
        var listed: [String: String] = [:]
        for line in article.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 3, let id = cells.first?.trimmingCharacters(in: CharacterSet(charactersIn: "`")),
                Insights.rule(id: id) != nil
            else { continue }
            listed[id] = cells.last
        }
        for rule in Insights.rules {
            let threshold = rule.defaultThresholdNs == 0 ? "any" : LaunchWindow.ms(rule.defaultThresholdNs)
            #expect(listed[rule.id] == threshold, "\(rule.id): Insights.md says \(listed[rule.id] ?? "nothing"), the code \(threshold)")
        }
    }

    @Test("times and weights at the ends of their ranges, as a corrupt file may hold, give insights without trapping")
    func extremeTimes() {
        var launch = LaunchBuilder()
        for thread in 2...4 { launch.threads.append(Profile.ThreadInfo(id: thread, name: "w\(thread)", isMain: false)) }
        for thread in 1...4 { launch.add(thread: thread, .runnable, ["main", "crunch"], fromMs: 0, toMs: 3) }
        var profile = launch.profile()
        profile.phases.endNs = .max
        profile.samples.timeNs = profile.samples.timeNs.map { $0 == 0 ? 0 : .max - $0 }
        profile.samples.weight = profile.samples.weight.map { _ in .max }
        profile.hangs = [Profile.HangRecord(startNs: .max - 1, durationNs: .max, running: "x", stacks: [0])]
        _ = Insights.of(profile)
        profile.metadata.samplingRateHz = 1_000_000_000
        _ = Insights.of(profile)
    }

    @Test("every rule has a distinct id, a title and a reason")
    func rules() {
        let ids = Insights.rules.map(\.id)
        #expect(Set(ids).count == ids.count)
        for rule in Insights.rules { #expect(!rule.title.isEmpty && rule.why.count > 40, "\(rule.id)") }
    }
}
