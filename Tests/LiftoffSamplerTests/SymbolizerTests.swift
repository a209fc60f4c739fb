import Foundation
import LiftoffProfile
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

@Suite("Symbolizer")
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
}
