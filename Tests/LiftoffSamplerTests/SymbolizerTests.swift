import Foundation
import LiftoffProfile
import LiftoffTestSupport
import Testing

@testable import LiftoffSampler

@inline(never)
func knownFrameForSymbolizer() -> [UInt] {
    Sampler.captureCurrentStack()
}

/// A symbolizer with a fixed table, for deterministic builder tests.
struct FakeSymbolizer: Symbolizer {
    var table: [UInt: String]
    func symbolize(_ address: UInt) -> SymbolizedFrame {
        if let name = table[address] {
            return SymbolizedFrame(name: name, object: "fake", offset: 0, isResolved: true)
        }
        return SymbolizedFrame(name: "fake+0x\(String(address, radix: 16))", object: "fake", offset: address, isResolved: false)
    }
}

@Suite("Symbolizer", .timeLimit(.minutes(5)))
struct SymbolizerTests {
    @Test("Swift functions of the test binary come out demangled, with their module")
    func swiftNamesDemangled() throws {
        let stack = knownFrameForSymbolizer()
        try #require(!stack.isEmpty)
        let frame = ELFSymbolizer().symbolize(stack[0] - 1)
        #expect(frame.isResolved)
        #expect(frame.name == "LiftoffSamplerTests.knownFrameForSymbolizer() -> Swift.Array<Swift.UInt>")
        #expect(!frame.name.hasPrefix("$s"))
    }

    @Test("a C function in a shared library resolves to its name and library")
    func sharedLibraryFunction() throws {
        let handle = dlopen(nil, RTLD_NOW)
        let address = try #require(dlsym(handle, "getpid"))
        let frame = ELFSymbolizer().symbolize(UInt(bitPattern: address) + 1)
        #expect(frame.isResolved)
        #expect(frame.name.hasSuffix("getpid"))
        #expect(frame.object.hasPrefix("libc.so"))
        #expect(frame.offset == 1)
    }

    @Test("PLT stubs are named after the function they jump to, as perf names them")
    func pltStubsNamed() throws {
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let data = try Data(contentsOf: URL(fileURLWithPath: executable), options: .alwaysMapped)
        let table = try #require(ELFSymbolTable(image: data))
        let stubs = table.symbols.filter { table.name(of: $0).hasSuffix("@plt") }
        // The test binary calls the Swift runtime and libc through its PLT.
        #expect(stubs.count > 50, "\(stubs.count) named stubs")
        let names = Set(stubs.map { table.name(of: $0) })
        #expect(names.contains("swift_retain@plt"), "\(names.sorted().prefix(20))")
        let retain = try #require(stubs.first { table.name(of: $0) == "swift_retain@plt" })
        // Any byte of the stub resolves to it.
        #expect(table.lookup(retain.start + 5)?.name == "swift_retain@plt")
        #expect(Demangler().demangle("$sSS5countSivg@plt") == "Swift.String.count.getter : Swift.Int@plt")
    }

    @Test("among aliases at one address the global name wins, as perf picks it: malloc, not __GI___libc_malloc")
    func aliasChoice() throws {
        let address = try #require(dlsym(dlopen(nil, RTLD_NOW), "malloc"))
        let frame = ELFSymbolizer().symbolize(UInt(bitPattern: address) + 4)
        #expect(frame.name == "malloc")
    }

    @Test("an address outside every object becomes a hexadecimal name")
    func unknownAddress() {
        let frame = ELFSymbolizer().symbolize(0x10)
        #expect(!frame.isResolved)
        #expect(frame.name == "0x10")
        #expect(frame.object == "?")
    }

    @Test("names that are not mangled pass through the demangler unchanged")
    func plainNamesUnchanged() {
        _ = dlopen("libstdc++.so.6", RTLD_LAZY)  // as any process with C++ frames has
        let demangler = Demangler()
        #expect(demangler.demangle("memcpy") == "memcpy")
        #expect(demangler.demangle("_ZN7liftoff5frameEv") == "liftoff::frame()")
        #expect(demangler.demangle("$sSi") == "Swift.Int")
    }

    @Test("the builder deduplicates frames and stacks and looks return addresses up one byte early")
    func builderDeduplicates() {
        let symbolizer = FakeSymbolizer(table: [0x100: "leaf", 0x1FF: "caller", 0x2FF: "root", 0x101: "other"])
        var builder = ProfileBuilder(symbolizer: symbolizer, timeOriginNs: 1_000)
        builder.add(RawSample(threadID: 7, timeNs: 1_500, truncated: false, addresses: [0x100, 0x200, 0x300]))
        builder.add(RawSample(threadID: 7, timeNs: 2_500, truncated: false, addresses: [0x100, 0x200, 0x300]))
        builder.add(RawSample(threadID: 8, timeNs: 900, truncated: false, addresses: [0x101, 0x200, 0x300]))
        let profile = builder.build(
            metadata: ProfileRecorder.metadata(commandLine: ["x"], startTime: Date(), rateHz: 100),
            phases: Profile.Phases(processStartNs: 0, preMainNs: 0, mainEntryNs: 0, endNs: 2_000),
            threadNames: [7: "main"], mainThreadID: 7, counts: Profile.SampleCounts())
        #expect(profile.frames.map(\.name) == ["root", "caller", "leaf", "other"])
        #expect(profile.stacks.parent == [-1, 0, 1, 1])
        #expect(profile.stacks.frame == [0, 1, 2, 3])
        #expect(profile.samples.stack == [2, 2, 3])
        #expect(profile.samples.timeNs == [500, 1_500, 0])
        #expect(profile.threads == [
            Profile.ThreadInfo(id: 7, name: "main", isMain: true),
            Profile.ThreadInfo(id: 8, name: "thread 8", isMain: false),
        ])
        #expect(throws: Never.self) { try profile.validate() }
    }

    @Test("a wait that goes on with the same stack extends its row; a new stack or a running sample starts one")
    func builderWeightsWaits() {
        let symbolizer = FakeSymbolizer(table: [0x100: "poll", 0x1FF: "wait_polling", 0x2FF: "main", 0x3FF: "wait_for_lock"])
        var builder = ProfileBuilder(symbolizer: symbolizer, timeOriginNs: 0)
        builder.intervalNs = 1_000_000
        let polling: [UInt] = [0x100, 0x200, 0x300]
        let locking: [UInt] = [0x100, 0x400, 0x300]
        // The handler's blocked sample, then waiting records of 10 and 5 ticks, the last stamped late.
        builder.add(RawSample(threadID: 7, timeNs: 1_000_000, truncated: false, addresses: polling, state: .blocked))
        builder.add(RawSample(threadID: 7, timeNs: 2_000_000, truncated: false, addresses: polling, state: .blocked, weight: 10))
        builder.add(RawSample(threadID: 7, timeNs: 12_900_000, truncated: false, addresses: polling, state: .blocked, weight: 5))
        // The next wait has its own stack; a running sample with the same stack never merges.
        builder.add(RawSample(threadID: 7, timeNs: 17_000_000, truncated: false, addresses: locking, state: .blocked, weight: 3))
        builder.add(RawSample(threadID: 7, timeNs: 20_000_000, truncated: false, addresses: locking, state: .running))
        // After a running sample, a wait starts a row of its own; one that starts two intervals
        // after the last row ends is another wait too.
        builder.add(RawSample(threadID: 7, timeNs: 23_000_000, truncated: false, addresses: locking, state: .blocked, weight: 2))
        builder.add(RawSample(threadID: 7, timeNs: 27_000_000, truncated: false, addresses: locking, state: .blocked, weight: 1))
        let profile = builder.build(
            metadata: ProfileRecorder.metadata(commandLine: ["x"], startTime: Date(), rateHz: 1000),
            phases: Profile.Phases(processStartNs: 0, preMainNs: 0, mainEntryNs: 0, endNs: 30_000_000),
            threadNames: [7: "main"], mainThreadID: 7, counts: Profile.SampleCounts())
        #expect(profile.samples.weight == [16, 3, 1, 2, 1])
        #expect(profile.samples.timeNs == [1_000_000, 17_000_000, 20_000_000, 23_000_000, 27_000_000])
        #expect(profile.samples.state == [.blocked, .blocked, .running, .blocked, .blocked])
        #expect(profile.samples.totalTicks == 23)
        #expect(throws: Never.self) { try profile.validate() }
        #expect(throws: Never.self) { try profile.validateRanges() }
    }
}

extension SymbolizerTests {
    @Test("a closure in top-level code keeps its module in its short name")
    func topLevelClosureShortName() {
        #expect(
            SwiftNameSimplifier.shortName("closure #2 in ", full: "closure #2 () -> () in LinesCLI", object: "cli")
                == "closure #2 in LinesCLI")
        #expect(
            SwiftNameSimplifier.shortName("Parser.parse()", full: "App.Parser.parse() -> ()", object: "app") == "Parser.parse()")
    }
}

extension SymbolizerTests {
    @Test("short Swift names are the toolchain's swift-demangle --simplified names, with no toolchain needed")
    func shortNamesMatchTheToolchain() throws {
        // Every Swift symbol this test binary defines: thousands of functions, closures, thunks,
        // witnesses and specializations of this package, its dependencies and the test libraries.
        let binary = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let symbols = try runToEnd("/usr/bin/nm", ["--defined-only", "--format=just-symbols", binary])
        try #require(symbols.status == 0, "nm: \(symbols.output)")
        let mangled = Array(Set(symbols.output.split(separator: "\n").map(String.init).filter(SwiftNameSimplifier.isSwift)))
            .sorted()
        try #require(mangled.count > 5_000, "\(mangled.count) Swift symbols")
        let ours = SwiftNameSimplifier.simplify(mangled)
        let known = try #require(mangled.first { $0.hasPrefix("$s14LiftoffSampler19SwiftNameSimplifierO10simplified") && $0.hasSuffix("FZ") })
        #expect(ours[known] == "static SwiftNameSimplifier.simplified(_:)")

        // The toolchain's tool over the same names, one per line.
        let tool = try #require(
            (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { "\($0)/swift-demangle" }
                .first { FileManager.default.isExecutableFile(atPath: $0) },
            "swift-demangle is on the PATH of a machine that builds Swift")
        let input = testScratch.appendingPathComponent("mangled-\(UUID().uuidString).txt")
        try (mangled.joined(separator: "\n") + "\n").write(to: input, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: input) }
        let theirs = try runToEnd("/bin/sh", ["-c", "\"$0\" --simplified < \"$1\" 2>/dev/null", tool, input.path])
        try #require(theirs.status == 0)
        let lines = theirs.output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        try #require(lines.count >= mangled.count)
        var differences: [String] = []
        for (name, line) in zip(mangled, lines) where (ours[name] ?? name) != line {
            differences.append("\(name): \(ours[name] ?? name) ≠ \(line)")
        }
        #expect(differences.isEmpty, "\(differences.count) of \(mangled.count) differ: \(differences.prefix(5))")
    }
}
