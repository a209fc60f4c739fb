import Foundation
import LiftoffAnalysis
import LiftoffProfile
import LiftoffTestSupport
import Testing

/// Libraries and programs with a known loader's work: relocations, an initializer that sleeps.
enum LoaderPrograms {
    /// A library holding a table of `count` pointers: as many relative relocations.
    static func pointerTableLibrary(count: Int) throws -> String {
        let entries = (0..<count).map { "&cells[\($0 % 16)]" }.joined(separator: ",")
        return try AgentPrograms.build(
            "libpointers\(count).so", source: "static int cells[16];\nint *pointer_table[\(count)] = {\(entries)};\n",
            ext: "c", compiler: "/usr/bin/cc", ["-shared", "-fPIC", "-O1"])
    }

    /// A program linked to the 40 ms initializer's library and to a table of 100,000 pointers.
    static func program() throws -> String {
        let slow = try PreMainTests.programWithSlowInitializer(milliseconds: 40)
        let folder = URL(fileURLWithPath: slow).deletingLastPathComponent().path
        let table = try pointerTableLibrary(count: 100_000)
        return try AgentPrograms.build(
            "loaderwork", source: "int slow_value(void);\nextern int *pointer_table[];\nint main(void) { return slow_value() == 42 && pointer_table[3] ? 0 : 1; }\n",
            ext: "c", compiler: "/usr/bin/cc",
            ["-O1", "\(folder)/libslowinit40.so", table, "-Wl,-rpath,\(folder)"])
    }

    /// An audit library of the user's own: it writes a line to `$USER_AUDIT_OUT` for each object.
    static func userAudit() throws -> String {
        try AgentPrograms.build(
            "libuseraudit.so",
            source: """
                #define _GNU_SOURCE
                #include <fcntl.h>
                #include <link.h>
                #include <stdlib.h>
                #include <string.h>
                #include <unistd.h>
                unsigned int la_version(unsigned int version) { return version; }
                unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie) {
                    const char *out = getenv("USER_AUDIT_OUT");
                    int fd = out ? open(out, O_WRONLY | O_CREAT | O_APPEND, 0600) : -1;
                    if (fd >= 0) { write(fd, "objopen\\n", 8); close(fd); }
                    return 0;
                }
                """, ext: "c", compiler: "/usr/bin/cc", ["-shared", "-fPIC", "-O1"])
    }
}

@Suite("The loader, object by object", .serialized, .processState(timeLimit: .seconds(300)))
struct LoaderTimelineTests {
    func profile(
        _ command: [String], environment: [String: String] = [:]
    ) throws -> (status: Int32, stdout: String, profile: Profile?, out: URL) {
        let out = temporaryFolder()
        let result = try BuiltTool.find().run(["profile", "--out", out.path, "--"] + command, environment: environment)
        return (result.status, result.stdout, try? Profile.load(from: out.appendingPathComponent("profile.json")), out)
    }

    @Test("a library's 40 ms initializer is named with its time and function; mapping, relocation and initializers follow in order")
    func slowInitializerNamed() throws {
        let program = try LoaderPrograms.program()
        // A warm launch: one run first brings every page the launch touches (the agent's included,
        // which a cold test before this one may have evicted) into the page cache, so no read
        // from storage falls inside the sleep.
        _ = try profile([program])
        let run = try profile([program])
        #expect(run.status == 0, "\(run.stdout)")
        let profile = try #require(run.profile)
        let loader = try #require(profile.phases.preMain?.loader, "the loader's timeline is in the profile: \(run.stdout)")
        #expect(loader.objects.first?.path == program, "the executable is mapped first: \(loader.objects.map(\.path))")
        let slow = try #require(loader.objects.firstIndex { $0.fileName == "libslowinit40.so" })
        let initializer = try #require(loader.initializers.first { $0.object == slow && $0.function == "slow_init" })
        // The initializer sleeps 40 ms: its time is that, within 5 ms, and none of it was on a CPU.
        #expect(initializer.durationNs >= 39_000_000 && initializer.durationNs <= 45_000_000, "\(initializer)")
        #expect(initializer.cpuNs < 5_000_000 && initializer.readNothing, "\(initializer)")
        // The library's other initializers (the compiler's frame_dummy) take microseconds.
        let all = loader.initializerNs(ofObject: slow)
        #expect(all >= initializer.durationNs && all - initializer.durationNs < 1_000_000, "\(all) against \(initializer.durationNs)")
        // In order: the loader's start, each object mapped, relocation, then the initializers.
        let start = profile.phases.programStartNs ?? profile.phases.processStartNs
        #expect(loader.startNs >= start && loader.mappedNs <= loader.relocatedNs, "\(loader.startNs) \(loader.mappedNs) \(loader.relocatedNs)")
        #expect(loader.objects.map(\.mappedNs) == loader.objects.map(\.mappedNs).sorted())
        for object in loader.objects { #expect(object.searchNs.map { $0 <= object.mappedNs } ?? true, "\(object)") }
        let first = try #require(loader.initializers.map(\.startNs).min())
        // Between relocation's end and the first initializer the loader only walks its list: 5 ms
        // at most, plus however long a busy machine held the thread off a core before main (the
        // kernel's count for this run).
        let offCore = profile.phases.preMain?.runnableNs ?? 0
        #expect(
            first >= loader.relocatedNs && first - loader.relocatedNs < 5_000_000 + offCore,
            "relocated \(loader.relocatedNs), first \(first), \(offCore) ns waiting for a core before main")
        #expect(loader.initializedNs.map { $0 >= initializer.endNs } == true)
        // The parts add up to the time before main: what no audit library sees (the kernel's exec,
        // the loader starting), mapping, relocation, the initializers, and the step from the last
        // one to main; the parts the audit library cannot time are a small share of it.
        let initialized = try #require(loader.initializedNs)
        try #require(loader.startNs >= start && initialized >= loader.relocatedNs && profile.phases.mainEntryNs >= initialized)
        let before = loader.startNs - start
        let after = profile.phases.mainEntryNs - initialized
        #expect(
            before + loader.mappingNs + loader.relocationNs + (initialized - loader.relocatedNs) + after == profile.phases.mainEntryNs - start)
        #expect(before + after < (profile.phases.mainEntryNs - start) / 5 + offCore, "exec → loader \(before) ns, initializers → main \(after) ns")
        // The table's 100,000 pointers are as many relative relocations.
        let table = try #require(loader.objects.first { $0.fileName == "libpointers100000.so" })
        #expect(table.relativeRelocations >= 100_000 && table.relocations >= table.relativeRelocations, "\(table)")
        #expect(run.stdout.contains("loader, object by object: "), "\(run.stdout)")
        // The Chrome trace draws the loader's work before the first sample, on the main thread.
        let trace = try String(contentsOf: run.out.appendingPathComponent("trace.json"), encoding: .utf8)
        for name in ["\"loader\"", "\"exec → loader\"", "\"relocation\"", "\"map libslowinit40.so\"", "\"initializer slow_init (libslowinit40.so)\""] {
            #expect(trace.contains(name), "trace.json has \(name)")
        }
        // Named with its time (checked above) and its function.
        #expect(run.stdout.contains("libslowinit40.so 4") && run.stdout.contains("(slow_init)"), "the summary names the slow library: \(run.stdout)")

        let insights = Insights.of(profile)
        let found = try #require(insights.first { $0.id == "static-initializers" }, "\(insights.map(\.id))")
        #expect(found.finding.contains("libslowinit40.so") && found.finding.contains("slow_init"), "\(found.finding)")
        #expect(found.costNs >= 39_000_000)
        #expect(!insights.contains { $0.id == "disk-reads" && $0.costNs >= 30_000_000 }, "a sleep is not the disk's: \(insights.map(\.finding))")
    }

    @Test("each object's relocation counts are what readelf lists in its relocation sections")
    func relocationCountsMatchReadelf() throws {
        let program = try LoaderPrograms.program()
        let run = try profile([program])
        let loader = try #require(run.profile?.phases.preMain?.loader)
        var checked = 0
        for object in loader.objects where !object.isLoader && object.path.hasPrefix("/") {
            let listing = try runToEnd("/usr/bin/readelf", ["-rW", object.path]).output
            var entries: UInt64 = 0, relr: UInt64 = 0
            for line in listing.split(separator: "\n") {
                let words = line.split(separator: " ")
                if line.hasPrefix("Relocation section"), !line.contains(".relr"), let at = words.firstIndex(of: "contains"),
                    let count = UInt64(words[words.index(after: at)])
                {
                    entries += count
                }
                if words.count == 2, words[1] == "offsets", let count = UInt64(words[0]) { relr += count }
            }
            let dynamic = try runToEnd("/usr/bin/readelf", ["-dW", object.path]).output
            let relative = dynamic.split(separator: "\n").first { $0.contains("(RELACOUNT)") }
                .flatMap { $0.split(separator: " ").last.flatMap { UInt64($0) } } ?? 0
            #expect(object.relocations == entries + relr, "\(object.fileName): \(object.relocations) against readelf's \(entries) + \(relr)")
            #expect(object.relativeRelocations == relative + relr, "\(object.fileName): \(object.relativeRelocations) against \(relative) + \(relr)")
            checked += 1
        }
        #expect(checked >= 4, "the executable, the two libraries and libc: \(loader.objects.map(\.fileName))")
    }

    @Test("through env, the timeline is the final program's; a user's own LD_AUDIT still runs; without the audit library the profile says why")
    func wrappersAndUserAudit() throws {
        let program = try LoaderPrograms.program()
        let wrapped = try profile(["/usr/bin/env", "FOO=1", program])
        let loader = try #require(wrapped.profile?.phases.preMain?.loader, "\(wrapped.stdout)")
        #expect(loader.objects.first?.path == program, "\(loader.objects.map(\.path))")

        let marker = temporaryFolder().appendingPathComponent("user-audit.log")
        let own = try profile([program], environment: ["LD_AUDIT": try LoaderPrograms.userAudit(), "USER_AUDIT_OUT": marker.path])
        #expect(own.status == 0, "\(own.stdout)")
        let lines = (try? String(contentsOf: marker, encoding: .utf8)) ?? ""
        #expect(lines.split(separator: "\n").count >= 4, "the user's audit library saw the objects: \(lines)")
        #expect(own.profile?.phases.preMain?.loader != nil, "and so did Liftoff's")

        // `env -u LD_AUDIT` clears it on the way: the program runs, its profile says why the
        // loader's time is not split.
        let cleared = try profile(["/usr/bin/env", "-u", "LD_AUDIT", program])
        #expect(cleared.status == 0, "\(cleared.stdout)")
        let preMain = try #require(cleared.profile?.phases.preMain)
        #expect(preMain.loader == nil && preMain.loaderNote?.contains("did not run Liftoff's audit library") == true, "\(preMain)")
        #expect(cleared.stdout.contains("not split by object"), "\(cleared.stdout)")
    }

    @Test("as an unprivileged user, the loader's timeline is recorded the same way")
    func unprivileged() throws {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else { return }
        let program = try LoaderPrograms.program()
        let out = temporaryFolder()
        chmod(out.path, 0o777)
        let tool = try BuiltTool.find().url.path
        let result = try runToEnd(
            "/usr/bin/setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups", tool, "profile", "--out", out.path, "--", program])
        #expect(result.status == 0, "\(result.output)")
        let loader = try #require(try Profile.load(from: out.appendingPathComponent("profile.json")).phases.preMain?.loader)
        #expect(loader.initializers.contains { $0.function == "slow_init" && $0.durationNs >= 39_000_000 }, "\(loader.initializers)")
    }

    @Test("a Swift program's loader timeline names the Swift runtime, Foundation and ICU's data")
    func swiftProgram() throws {
        let source = """
            import Foundation
            let formatter = DateFormatter()
            formatter.dateStyle = .medium
            print(formatter.string(from: Date(timeIntervalSince1970: 0)).isEmpty ? "empty" : "ok")
            """
        let program = try AgentPrograms.build("loader-swift", source: source, ext: "swift", compiler: "/opt/swift/usr/bin/swiftc", ["-O"])
        let run = try profile([program])
        #expect(run.status == 0, "\(run.stdout)")
        let loader = try #require(run.profile?.phases.preMain?.loader)
        let names = Set(loader.objects.map(\.fileName))
        for name in ["libswiftCore.so", "libFoundation.so", "lib_FoundationICU.so"] {
            #expect(names.contains(name), "\(name) among \(names.sorted())")
        }
        #expect(loader.relocationCount > 10_000, "the Swift runtime relocates: \(loader.relocationCount)")
    }
}
