import Foundation
import LiftoffAnalysis
import LiftoffComparison
import LiftoffProfile
import LiftoffTestSupport
import Testing

@testable import LiftoffCLI

#if canImport(Glibc)
import Glibc
#endif

/// Waits for the disk told apart from waits for a core: a page fault that reads is state D, and
/// a signal sent meanwhile is answered only when the read completes.
@Suite("Disk waits", .serialized, .processState(timeLimit: .seconds(300)))
struct DiskWaitTests {
    func ticks(_ profile: Profile, in function: String) -> [Profile.SampleState: Int] {
        var counts: [Profile.SampleState: Int] = [:]
        for row in 0..<profile.samples.count {
            let names = profile.frameIndices(ofStack: profile.samples.stack[row]).map { profile.frames[$0].name }
            if names.contains(function) { counts[profile.samples.state[row], default: 0] += profile.samples.ticks(row) }
        }
        return counts
    }

    /// `liftoff profile` of `program` given the 128 MB data file, evicted first: the file, the
    /// run, its folder and its profile.
    func profileOnEvictedData(_ program: String) throws -> (file: String, run: (status: Int32, stdout: String, stderr: String), out: URL, profile: Profile) {
        let file = try DiskWaitTests.dataFile()
        try DiskWaitTests.evict(file)
        let out = temporaryFolder()
        let run = try BuiltTool.find().run(["profile", "--out", out.path, "--", program, file])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        return (file, run, out, try Profile.load(from: out.appendingPathComponent("profile.json")))
    }

    @Test("a cold mapping's page faults are disk waits, not runnable; warm, there are none")
    func coldFaults() throws {
        let program = try AgentPrograms.build("toucher", source: DiskWaitTests.toucher, ext: "c", compiler: "/usr/bin/cc", ["-O1", "-g"])
        let (file, cold, out, profile) = try profileOnEvictedData(program)
        let counts = ticks(profile, in: "touch_pages")
        let disk = counts[.disk, default: 0], runnable = counts[.runnable, default: 0], blocked = counts[.blocked, default: 0]
        // The truth of the same run, from the program's own clocks: how long it waited for a core.
        let log = try String(contentsOf: out.appendingPathComponent("output.log"), encoding: .utf8)
        let numbers = try #require(log.firstMatch(of: /touch_pages: ([0-9.]+) ms wall, ([0-9.]+) ms CPU, ([0-9.]+) ms waiting/), "\(log)")
        let queued = try #require(Double(numbers.3))
        let tickMs = Double(profile.samplingIntervalNs) / 1e6
        #expect(disk > 0, "cold: \(counts)")
        // No disk wait is taken for a wait for a core: runnable ticks stay within the program's own
        // run-queue time, a fifth more, and the ticks at the edges of its waits, where a state read
        // a tick apart can miss a fault that began or ended between (one in twenty of its waits).
        let edges = max(2, Double(disk + runnable) / 20)
        #expect(
            Double(runnable) * tickMs <= queued * 1.2 + edges * tickMs,
            "runnable \(runnable) ticks against \(queued) ms waiting for a core: \(counts)")
        // Of its waits that were not for a core (on a busy machine some are), at least 80 % are disk waits.
        let otherWaits = blocked + max(0, runnable - Int(queued / tickMs))
        #expect(Double(disk) >= 0.8 * Double(disk + otherWaits), "\(counts), \(queued) ms waiting for a core")
        #expect(cold.stdout.contains("waiting for the disk"), "the summary counts them: \(cold.stdout)")
        // The insight names the program's function that faulted.
        let faults = try #require(Insights.of(profile).first { $0.id == "main-thread-page-faults" }, "\(Insights.of(profile).map(\.id))")
        #expect(faults.finding.contains("touch_pages"), "\(faults.finding)")
        #expect(faults.costNs >= UInt64(disk) * profile.samplingIntervalNs / 2, "\(faults.costNs) for \(disk) disk ticks")

        // The kernel's own record of the faults places them in the data file, at its offsets.
        let recorded = try #require(profile.diskFaults, "the page faults were recorded")
        #expect(recorded.refused == nil, "\(recorded)")
        let data = try #require(recorded.files.first { $0.path == file }, "\(recorded.files.map(\.path))")
        let size = try #require((try FileManager.default.attributesOfItem(atPath: file)[.size] as? NSNumber)?.uint64Value)
        #expect(data.faults >= 1 && data.beforeMain == 0, "touched after main: \(data.faults) faults, \(data.beforeMain) before main")
        #expect(!data.offsets.isEmpty && data.offsets.allSatisfy { $0 < size && $0 % 4096 == 0 }, "\(data.offsets.prefix(8))")
        #expect(data.processIDs == [profile.processes.first?.id ?? -1], "\(data.processIDs)")
        #expect(cold.stdout.contains("Page faults that read from storage: at least") && cold.stdout.contains("random-128M.bin"), "\(cold.stdout)")
        let reads = try #require(Insights.of(profile).first { $0.id == "disk-reads" })
        #expect(reads.evidence.notes.contains { $0.contains("read \(file) from storage, at offset") }, "\(reads.evidence.notes)")

        let warmOut = temporaryFolder()
        let warm = try BuiltTool.find().run(["profile", "--out", warmOut.path, "--", program, file])
        #expect(warm.status == 0)
        let warmProfile = try Profile.load(from: warmOut.appendingPathComponent("profile.json"))
        // Warm, touch_pages reads nothing from storage, by the kernel's count in that run (once,
        // under load, 14 of its pages were read again; then only faults that read are reported).
        let warmLog = try String(contentsOf: warmOut.appendingPathComponent("output.log"), encoding: .utf8)
        let warmRead = try #require(warmLog.firstMatch(of: /([0-9]+) bytes read from storage/).flatMap { UInt64($0.1) }, "\(warmLog)")
        let warmFaults = warmProfile.diskFaults?.files.first { $0.path == file }?.faults ?? 0
        #expect(UInt64(warmFaults) * 4096 <= warmRead, "warm: \(warmFaults) faults read the file, \(warmRead) bytes read: \(String(describing: warmProfile.diskFaults))")
        if warmRead == 0 {
            #expect(ticks(warmProfile, in: "touch_pages")[.disk, default: 0] == 0, "warm: no disk waits")
            #expect(!Insights.of(warmProfile).contains { $0.id == "main-thread-page-faults" }, "warm: no page-fault insight")
        }
    }

    @Test("a worker thread that faults an evicted mapping in at random waits for the disk; main, joining it, waited for those reads: the insights count them on the path to ready")
    func coldFaultsOnAWorker() throws {
        let source = DiskWaitTests.toucher
            .replacingOccurrences(of: "#include <fcntl.h>", with: "#include <fcntl.h>\n#include <pthread.h>")
            .replacingOccurrences(
                of: "int main(int argc, char **argv) {",
                with: """
                    static const unsigned char *g_data; static size_t g_pages; static unsigned long g_sum;
                    static void *worker(void *unused) { g_sum = touch_pages(g_data, g_pages); return unused; }
                    int main(int argc, char **argv) {
                    """)
            .replacingOccurrences(
                of: "unsigned long sum = touch_pages(data, st.st_size / 4096 / 4);",
                with: "g_data = data; g_pages = st.st_size / 4096 / 4; pthread_t t; pthread_create(&t, 0, worker, 0); pthread_join(t, 0); unsigned long sum = g_sum;")
        let program = try AgentPrograms.build("worker-toucher", source: source, ext: "c", compiler: "/usr/bin/cc", ["-O1", "-g", "-pthread"])
        let (file, _, _, profile) = try profileOnEvictedData(program)
        let main = try #require(profile.threads.first { $0.isMain }?.id)
        // The worker's ticks in touch_pages: its waits were for the disk.
        var disk = 0, blocked = 0
        for row in 0..<profile.samples.count where profile.samples.thread[row] != main {
            let names = profile.frameIndices(ofStack: profile.samples.stack[row]).map { profile.frames[$0].name }
            guard names.contains("touch_pages") else { continue }
            switch profile.samples.state[row] {
            case .disk: disk += profile.samples.ticks(row)
            case .blocked: blocked += profile.samples.ticks(row)
            default: break
            }
        }
        #expect(disk > 0 && Double(disk) >= 0.8 * Double(disk + blocked), "the worker's waits: \(disk) disk, \(blocked) blocked")
        let faults = try #require(profile.diskFaults?.files.first { $0.path == file }, "\(String(describing: profile.diskFaults))")
        #expect(faults.faults >= 1 && faults.beforeMain == 0)
        // Main waited in pthread_join for the worker: its disk waits are the launch's.
        let insights = Insights.of(profile)
        let reads = try #require(insights.first { $0.id == "disk-reads" }, "\(insights.map(\.id))")
        #expect(reads.finding.contains("on the launch's path"), "\(reads.finding)")
        #expect(reads.costNs >= UInt64(disk) * profile.samplingIntervalNs / 2, "\(reads.costNs) ns for \(disk) disk ticks")
        let pageFaults = try #require(insights.first { $0.id == "main-thread-page-faults" }, "\(insights.map(\.id))")
        #expect(pageFaults.finding.hasPrefix("The launch's path waited") && pageFaults.finding.contains("touch_pages"), "\(pageFaults.finding)")
    }

    @Test("a program of the tree that reads an evicted file after its main has those bytes in its after-main counts, and the summary says so")
    func afterMainReads() throws {
        let data = AgentPrograms.folder.appendingPathComponent("after-main-\(getpid()).bin").path
        try Data(repeating: 1, count: 4 << 20).write(to: URL(fileURLWithPath: data))
        let fd = open(data, O_RDONLY)
        try #require(fd >= 0)
        fsync(fd)
        close(fd)
        try DiskWaitTests.evict(data)
        let out = temporaryFolder()
        let run = try BuiltTool.find().run(["profile", "--out", out.path, "--", "/bin/sh", "-c", "cat '\(data)' > /dev/null; true"])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        let profile = try Profile.load(from: out.appendingPathComponent("profile.json"))
        let cat = try #require(profile.processes.flatMap(\.programs).first { $0.fileName == "cat" }, "\(profile.processes.map(\.label))")
        let after = try #require(cat.afterMain, "cat's counts from main to its exit")
        #expect(after.bytesRead >= 4 << 20, "cat read the evicted file after its main: \(after)")
        #expect(after.durationNs > 0 && after.onCPUNs + after.runnableNs + after.blockedNs == after.durationNs, "\(after)")
        #expect(run.stdout.contains("after main: cat read 4.2 MB"), "\(run.stdout)")
        let markdown = try String(contentsOf: out.appendingPathComponent("summary.md"), encoding: .utf8)
        #expect(markdown.contains("cat (") && markdown.contains("MB read after main"), "\(markdown)")
    }

    @Test("--cache cold evicts the program and the libraries a first run mapped, says what stayed and who keeps it; --cache warm reads nothing")
    func cacheModes() throws {
        let program = try PreMainTests.programWithSlowInitializer(milliseconds: 40)
        let out = temporaryFolder()
        let cold = try BuiltTool.find().run(["profile", "--cache", "cold", "--out", out.path, "--", program])
        #expect(cold.status == 0, "\(cold.stdout)\(cold.stderr)")
        try expectEvicted(program: program, out: out, summary: cold.stdout)

        let warmOut = temporaryFolder()
        let warm = try BuiltTool.find().run(["profile", "--cache", "warm", "--out", warmOut.path, "--", program])
        #expect(warm.status == 0)
        let warmProfile = try Profile.load(from: warmOut.appendingPathComponent("profile.json"))
        #expect(warmProfile.cache?.mode == "warm")
        #expect(
            warmProfile.phases.preMain?.bytesRead == 0,
            "warm: nothing read from storage before main: \(String(describing: warmProfile.phases.preMain)); \(warm.stdout)")
    }

    @Test("as an unprivileged user, --cache cold evicts, reads residency where the kernel tells it (the user's own files), and says where it does not")
    func cacheColdUnprivileged() throws {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else { return }
        let built = try PreMainTests.programWithSlowInitializer(milliseconds: 40)
        let library = URL(fileURLWithPath: built).deletingLastPathComponent().appendingPathComponent("libslowinit40.so").path
        let out = temporaryFolder()
        chmod(out.path, 0o777)
        // The program is the user's own (mincore tells its owner the truth); the library is root's.
        let program = out.appendingPathComponent("slowinit40").path
        try FileManager.default.copyItem(atPath: built, toPath: program)
        let nobody = try #require(getpwnam("nobody")).pointee.pw_uid
        #expect(chown(program, nobody, gid_t(UInt32.max)) == 0)
        let tool = try BuiltTool.find().url.path
        let cold = try runToEnd(
            "/usr/bin/setpriv",
            ["--reuid=nobody", "--regid=nogroup", "--clear-groups", tool, "profile", "--cache", "cold", "--out", out.path, "--", program])
        #expect(cold.status == 0, "\(cold.output)")
        let cache = try #require(try Profile.load(from: out.appendingPathComponent("profile.json")).cache)
        let byPath = Dictionary(cache.files.map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
        let own = try #require(byPath[program], "\(cache.files.map(\.path))")
        #expect(own.sizeBytes > 0 && own.residentBytes == 0, "its own file: evicted, and mincore says so truthfully: \(own)")
        #expect((own.readBytes ?? 0) > 0, "and what the launch read of it: \(own)")
        let rootOwned = try #require(byPath[library], "\(cache.files.map(\.path))")
        #expect(
            rootOwned.residentBytes == nil && rootOwned.readBytes == nil,
            "root's file: mincore would answer 'all in memory', so it is unknown: \(rootOwned)")
        let libc = try #require(cache.files.first { $0.path.hasSuffix("/libc.so.6") })
        #expect(libc.residentBytes == nil && (libc.keptBy ?? "").contains("liftoff itself"), "\(libc)")
        // The page-fault event on one's own child needs no privilege.
        let faults = try Profile.load(from: out.appendingPathComponent("profile.json")).diskFaults
        #expect(faults != nil && faults?.refused == nil, "\(String(describing: faults))")
        let line = try #require(cold.output.split(separator: "\n").first { $0.hasPrefix("Cache: cold: ") }, "\(cold.output)")
        #expect(line.contains("stayed is unknown") && line.contains("libc.so.6 is mapped by"), "\(line)")
        // The eviction itself needs no privilege: the launch read its files from storage.
        let profile = try Profile.load(from: out.appendingPathComponent("profile.json"))
        #expect(try #require(profile.phases.preMain).bytesRead > 0, "\(String(describing: profile.phases.preMain))")
    }

    @Test("--cache cold-system, as root, drops the whole page cache: a file the launch reads but never maps is read from storage too, in profile and record; an unprivileged user is refused before anything runs")
    func coldSystem() throws {
        guard getuid() == 0 else { return }
        // A data file the program reads with read(2): no first run sees it mapped, so --cache cold
        // keeps it; dropping the whole cache does not. The program prints what its read of that
        // file alone took from storage (other suites may evict files the interpreter loads).
        let data = temporaryFolder().appendingPathComponent("data.bin")
        try Data(repeating: 7, count: 4 << 20).write(to: data)
        let reader = [
            "/usr/bin/python3", "-c",
            "import sys\n"
                + "def io(): return int([l for l in open('/proc/self/io') if l.startswith('read_bytes')][0].split()[1])\n"
                + "before = io(); open(sys.argv[1], 'rb').read(); print('read_bytes:', io() - before)",
            data.path,
        ]
        func readBytes(_ output: String) -> Int? {
            output.firstMatch(of: /read_bytes: ([0-9]+)/).flatMap { Int($0.1) }
        }
        let out = temporaryFolder()
        let cold = try BuiltTool.find().run(["profile", "--cache", "cold-system", "--out", out.path, "--"] + reader)
        #expect(cold.status == 0, "\(cold.stdout)\(cold.stderr)")
        let read = try #require(readBytes(cold.stdout), "\(cold.stdout)")
        #expect(read >= 4 << 20, "the data file was read from storage: \(read) bytes")
        let profile = try Profile.load(from: out.appendingPathComponent("profile.json"))
        let cache = try #require(profile.cache)
        #expect(cache.mode == "cold-system")
        #expect(!cache.files.contains { $0.path.contains("libLiftoff") }, "Liftoff's own libraries stay: \(cache.files.map(\.path))")
        let python = try #require(cache.files.first { $0.path.contains("python3") }, "\(cache.files.map(\.path))")
        #expect(python.residentBytes == 0 && (python.readBytes ?? 0) > 0, "\(python)")
        let line = try #require(cold.stdout.split(separator: "\n").first { $0.hasPrefix("Cache: cold-system: ") }, "\(cold.stdout)")
        #expect(line.contains("whole page cache was dropped"), "\(line)")
        // The same file, warm, is not read again.
        let warm = try BuiltTool.find().run(["profile", "--out", temporaryFolder().path, "--"] + reader)
        #expect(readBytes(warm.stdout) == 0, "\(warm.stdout)")

        let recordOut = temporaryFolder()
        let recorded = try BuiltTool.find().run(["record", "--runs", "2", "--cache", "cold-system", "--out", recordOut.path, "--"] + reader)
        #expect(recorded.status == 0, "\(recorded.stdout)\(recorded.stderr)")
        let manifest = try JSONDecoder().decode(RecordManifest.self, from: Data(contentsOf: recordOut.appendingPathComponent("record.json")))
        #expect(manifest.runs.count == 2 && manifest.runs.allSatisfy { $0.cache?.mode == "cold-system" }, "\(manifest.runs.map(\.cache))")
        for run in manifest.runs {
            let log = try String(contentsOf: recordOut.appendingPathComponent(run.log), encoding: .utf8)
            #expect((readBytes(log) ?? 0) >= 4 << 20, "run \(run.index) read the data file from storage: \(log)")
        }

        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else { return }
        let tool = try BuiltTool.find().url.path
        let refusedOut = temporaryFolder().appendingPathComponent("never")
        let refused = try runToEnd(
            "/usr/bin/setpriv",
            ["--reuid=nobody", "--regid=nogroup", "--clear-groups", tool, "profile", "--cache", "cold-system", "--out", refusedOut.path, "--", "/bin/true"])
        #expect(refused.status != 0 && refused.output.contains("only root may"), "\(refused.output)")
        #expect(!FileManager.default.fileExists(atPath: refusedOut.path), "nothing ran")
    }

    @Test("a -static-stdlib Swift program launched cold maps no Swift runtime library: its own executable is read from storage instead; linked dynamically, libswiftCore is among its files")
    func staticSwiftCold() throws {
        let source = """
            var counts: [String: Int] = [:]
            for i in 0..<20_000 { counts["key \\(i % 500)", default: 0] += i }
            print("ready \\(counts.count)")
            """
        let swiftc = try InsightPrograms.swiftc()
        let statics = try AgentPrograms.build("swift-static-stdlib", source: source, ext: "swift", compiler: swiftc, ["-O", "-static-stdlib"])
        let dynamic = try AgentPrograms.build("swift-dynamic-stdlib", source: source, ext: "swift", compiler: swiftc, ["-O"])
        func cold(_ program: String) throws -> Profile {
            let out = temporaryFolder()
            let run = try BuiltTool.find().run(["profile", "--cache", "cold", "--out", out.path, "--", program])
            #expect(run.status == 0 && run.stdout.contains("ready 500"), "\(run.stdout)\(run.stderr)")
            return try Profile.load(from: out.appendingPathComponent("profile.json"))
        }
        let lean = try cold(statics)
        let cache = try #require(lean.cache)
        #expect(!cache.files.contains { $0.path.contains("libswift") }, "no Swift runtime to evict or read: \(cache.files.map(\.path))")
        let own = try #require(cache.files.first { $0.path == statics }, "\(cache.files.map(\.path))")
        #expect(own.residentBytes == 0 && (own.readBytes ?? 0) > 0, "its executable, runtime and all, is what it reads: \(own)")
        let objects = try #require(lean.phases.preMain?.loader?.objects.map(\.fileName), "the loader's timeline")
        #expect(!objects.isEmpty && !objects.contains { $0.hasPrefix("libswift") }, "\(objects)")

        let linked = try cold(dynamic)
        #expect(linked.cache?.files.contains { $0.path.hasSuffix("/libswiftCore.so") } == true, "\(linked.cache?.files.map(\.path) ?? [])")
        #expect(linked.phases.preMain?.loader?.objects.contains { $0.fileName == "libswiftCore.so" } == true)
    }

    @Test("a library another process keeps mapped cannot be evicted: --cache cold says so, naming that process and its pid")
    func keptByAHelper() throws {
        let program = try PreMainTests.programWithSlowInitializer(milliseconds: 40)
        let library = URL(fileURLWithPath: program).deletingLastPathComponent().appendingPathComponent("libslowinit40.so").path
        // A helper maps the library and touches every page, then waits.
        let helper = Process()
        helper.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        helper.arguments = [
            "-c",
            "import mmap, sys, time\nf = open(sys.argv[1], 'rb')\nm = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)\n"
                + "print(sum(m[i] for i in range(0, len(m), 4096)), flush=True)\ntime.sleep(60)",
            library,
        ]
        let pipe = Pipe()
        helper.standardOutput = pipe
        try helper.run()
        defer {
            kill(helper.processIdentifier, SIGKILL)  // it may have inherited SIGTERM blocked
            helper.waitUntilExit()
        }
        _ = pipe.fileHandleForReading.availableData  // the helper's line: every page is mapped
        let out = temporaryFolder()
        let cold = try BuiltTool.find().run(["profile", "--cache", "cold", "--out", out.path, "--", program])
        #expect(cold.status == 0, "\(cold.stdout)\(cold.stderr)")
        let cache = try #require(try Profile.load(from: out.appendingPathComponent("profile.json")).cache)
        let file = try #require(cache.files.first { $0.path == library }, "\(cache.files.map(\.path))")
        #expect((file.residentBytes ?? 0) > 0, "its mapped pages stayed: \(file)")
        #expect((file.keptBy ?? "").contains("(\(helper.processIdentifier))"), "the helper is named with its pid: \(file)")
        let line = try #require(cold.stdout.split(separator: "\n").first { $0.hasPrefix("Cache: cold: ") }, "\(cold.stdout)")
        #expect(line.contains("libslowinit40.so") && line.contains("(\(helper.processIdentifier))"), "\(line)")
    }

    @Test("--cache cold on a program on tmpfs says its file system keeps it in memory, and runs as-is")
    func coldOnTmpfs() throws {
        let built = try PreMainTests.programWithSlowInitializer(milliseconds: 40)
        let folder = URL(fileURLWithPath: "/dev/shm/liftoff-tmpfs-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let program = folder.appendingPathComponent("slowinit40").path
        try FileManager.default.copyItem(atPath: built, toPath: program)
        let out = temporaryFolder()
        let cold = try BuiltTool.find().run(["profile", "--cache", "cold", "--out", out.path, "--", program])
        #expect(cold.status == 0, "\(cold.stdout)\(cold.stderr)")
        let cache = try #require(try Profile.load(from: out.appendingPathComponent("profile.json")).cache)
        let file = try #require(cache.files.first { $0.path == program }, "\(cache.files.map(\.path))")
        #expect(file.residentBytes == file.sizeBytes && (file.keptBy ?? "").contains("tmpfs"), "\(file)")
        let line = try #require(cold.stdout.split(separator: "\n").first { $0.hasPrefix("Cache: cold: ") }, "\(cold.stdout)")
        #expect(line.contains("slowinit40") && line.contains("tmpfs"), "\(line)")
    }

    @Test("a program the agent does not sample is evicted with the libraries its loader lists, found from its first pages")
    func linkedFiles() throws {
        let program = try PreMainTests.programWithSlowInitializer(milliseconds: 40)
        let interpreter = try #require(PageCache.interpreter(of: program))
        #expect(interpreter.hasSuffix("/ld-linux-x86-64.so.2") || interpreter.hasSuffix("/ld-linux-aarch64.so.1"), "\(interpreter)")
        let files = PageCache.linkedFiles(of: program)
        #expect(files.first == program)
        #expect(files.contains { $0.hasSuffix("/libslowinit40.so") } && files.contains { $0.hasSuffix("/libc.so.6") }, "\(files)")
        #expect(PageCache.interpreter(of: "/etc/hostname") == nil, "not ELF")
    }

    /// The cold launch of `program` recorded in `out` evicted the program and its library, none of
    /// which stayed, while the C library, mapped by every process, stayed and names who keeps it.
    func expectEvicted(program: String, out: URL, summary: String) throws {
        let library = URL(fileURLWithPath: program).deletingLastPathComponent().appendingPathComponent("libslowinit40.so").path
        let profile = try Profile.load(from: out.appendingPathComponent("profile.json"))
        let cache = try #require(profile.cache)
        #expect(cache.mode == "cold")
        let byPath = Dictionary(cache.files.map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
        for path in [program, library] {
            let file = try #require(byPath[path], "\(path) was evicted: \(cache.files.map(\.path))")
            #expect(file.sizeBytes > 0 && file.residentBytes == 0, "nobody else maps it, so none of it stayed: \(file)")
            #expect((file.readBytes ?? 0) > 0, "the launch read it from storage: \(file)")
        }
        // The C library is mapped by every process: its pages stay, and the report says who keeps them.
        let libc = try #require(cache.files.first { $0.path.hasSuffix("/libc.so.6") })
        #expect((libc.residentBytes ?? 0) > 0 && (libc.keptBy ?? "").hasPrefix("mapped by"), "\(libc)")
        #expect(cache.unknownFiles.isEmpty, "every file's residency was read: \(cache.unknownFiles)")
        #expect(!cache.files.contains { $0.path.hasSuffix("/libLiftoffAgent.so") || $0.path.hasSuffix("/libLiftoffAudit.so") },
                "Liftoff's own libraries stay in memory: \(cache.files.map(\.path))")
        #expect(try #require(profile.phases.preMain).bytesRead > 0, "cold: the program's files are read from storage before main")
        let line = try #require(summary.split(separator: "\n").first { $0.hasPrefix("Cache: cold: ") }, "\(summary)")
        #expect(line.contains("libc.so.6") && !line.contains("libslowinit40.so"), "only what stayed is named: \(line)")
    }

    /// A program whose library holds 8 MB of read-only data that `touch_data` reads a byte of
    /// per page.
    static func bigDataProgram() throws -> String {
        let values = (0..<2048).map { String($0 * 7 % 251) }.joined(separator: ",")
        return try AgentPrograms.programWithLibrary(
            "bigdata", main: "#include <stdio.h>\nunsigned long touch_data(void);\nint main(void) { printf(\"%lu\\n\", touch_data()); return 0; }\n",
            library: "libbigdata.so",
            librarySource: """
                #include <stddef.h>
                static const unsigned char data[8 << 20] = {\(values)};
                __attribute__((noinline)) unsigned long touch_data(void) {
                    unsigned long sum = 0;
                    for (size_t i = 0; i < sizeof data; i += 4096) sum += ((volatile const unsigned char *)data)[i];
                    return sum;
                }
                """)
    }

    @Test("record --cache cold evicts before every run of base and head and keeps each run's residency; compare refuses a warm set against it unless --allow-mixed-cache, which names the cold penalty")
    func recordCold() throws {
        let program = try DiskWaitTests.bigDataProgram()
        let library = URL(fileURLWithPath: program).deletingLastPathComponent().appendingPathComponent("libbigdata.so").path
        let cold = temporaryFolder()
        let recorded = try BuiltTool.find().run(["record", "--runs", "3", "--cache", "cold", "--out", cold.path, "--baseline", program, "--", program])
        #expect(recorded.status == 0, "\(recorded.stdout)\(recorded.stderr)")
        #expect(recorded.stdout.contains("evicted before each run"), "\(recorded.stdout)")
        #expect(recorded.stdout.contains("Read from storage during the last run: "), "\(recorded.stdout)")
        for side in ["base", "head"] {
            let folder = cold.appendingPathComponent(side)
            let manifest = try JSONDecoder().decode(RecordManifest.self, from: Data(contentsOf: folder.appendingPathComponent("record.json")))
            #expect(manifest.runs.count == 3 && manifest.runs.allSatisfy(\.succeeded), "\(manifest.runs.map(\.outcome))")
            for run in manifest.runs {
                let cache = try #require(run.cache, "run \(run.index) of \(side) keeps its page cache")
                #expect(cache.mode == "cold")
                #expect(!cache.files.contains { $0.path.contains("libLiftoff") }, "Liftoff's own libraries stay: \(cache.files.map(\.path))")
                for path in [program, library] {
                    let file = try #require(cache.files.first { $0.path == path }, "\(path) is evicted: \(cache.files.map(\.path))")
                    #expect(file.residentBytes == 0, "run \(run.index) of \(side): \(file)")
                }
                let read = try #require(cache.files.first { $0.path == library }?.readBytes, "run \(run.index) of \(side)")
                #expect(read >= 4_000_000, "run \(run.index) of \(side) read the library's data: \(read) bytes")
                let profile = try Profile.load(from: folder.appendingPathComponent(try #require(run.profile)))
                #expect(profile.cache == cache, "the run's profile says how it started")
                #expect(
                    profile.diskFaults?.files.contains { $0.path == library && $0.faults > 0 } == true,
                    "the faults that read the library are placed in it: \(String(describing: profile.diskFaults?.files.map(\.path)))")
                // Every run read the library's data from storage, not only the first.
                #expect((run.counters?.storageBytesRead ?? 0) >= 4_000_000, "run \(run.index) of \(side): \(String(describing: run.counters))")
            }
        }
        let warm = temporaryFolder()
        let warmRecorded = try BuiltTool.find().run(["record", "--runs", "3", "--cache", "warm", "--out", warm.path, "--", program])
        #expect(warmRecorded.status == 0, "\(warmRecorded.stdout)\(warmRecorded.stderr)")
        let head = cold.appendingPathComponent("head").path
        let refused = try BuiltTool.find().run(["compare", warm.path, head])
        #expect(refused.status == 1 && refused.stderr.contains("--allow-mixed-cache"), "\(refused.stdout)\(refused.stderr)")
        let mixed = try BuiltTool.find().run(["compare", warm.path, head, "--allow-mixed-cache", "--inconclusive", "pass", "--format", "json"])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(mixed.stdout.utf8)) as? [String: Any], "\(mixed.stdout)\(mixed.stderr)")
        let insights = try #require(json["insights"] as? [[String: Any]])
        let penalty = try #require(insights.first { $0["id"] as? String == "cold-penalty" }, "\(insights)")
        let finding = try #require(penalty["finding"] as? String)
        let read = try #require(finding.firstMatch(of: /([0-9.]+) MB more read from storage/).flatMap { Double($0.1) }, "\(finding)")
        #expect(read >= 4, "\(finding)")
    }
}
