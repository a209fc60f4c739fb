import CLiftoffTestSupport
import Foundation
import LiftoffProfile
import Testing

@testable import LiftoffSampler

/// The line of `Tests/CLiftoffTestSupport/test_support.c` that carries `marker`.
func supportSourceLine(_ marker: String) throws -> Int {
    let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("CLiftoffTestSupport/test_support.c")
    let lines = try String(contentsOf: source, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
    let tag = "marker: \(marker)"
    let index = lines.firstIndex { line in line.range(of: tag) != nil }
    return try #require(index, "no line marked '\(tag)'") + 1
}

/// A symbolizer that answers with fixed inlining, for builder tests.
struct InliningSymbolizer: Symbolizer {
    func symbolize(_ address: UInt) -> SymbolizedFrame { frames(at: address).last! }
    func frames(at address: UInt) -> [SymbolizedFrame] {
        let outer = SymbolizedFrame(
            name: "outer\(address)", object: "app", offset: 0, isResolved: true, file: "/src/App.swift",
            line: Int(address), declarationFile: "/src/App.swift", declarationLine: 10)
        guard address == 0x100 else { return [outer] }
        let inlined = SymbolizedFrame(
            name: "inlinedHelper", object: "app", offset: 0, isResolved: true, file: "/src/Helper.swift", line: 7,
            declarationFile: "/src/Helper.swift", declarationLine: 5, isInlined: true)
        return [inlined, outer]
    }
}

@Suite("Source lines and inlined frames", .timeLimit(.minutes(5)))
struct SourceLineTests {
    @Test("a function inlined into a C function is its own frame, marked inlined, with the lines of both")
    func inlinedCFunction() throws {
        let address = lo_test_inlined_return_address()
        let frames = ELFSymbolizer().frames(at: address - 1)
        try #require(frames.count == 2, "\(frames.map(\.name))")
        let callee = frames[0]
        let caller = frames[1]
        #expect(callee.name == "lo_test_inlined_callee")
        #expect(callee.isInlined)
        #expect(callee.file?.hasSuffix("test_support.c") == true)
        #expect(callee.line == (try supportSourceLine("callee line")))
        #expect(caller.name == "lo_test_inlined_return_address")
        #expect(!caller.isInlined)
        #expect(caller.line == (try supportSourceLine("caller line")))
        #expect(caller.location == "test_support.c:\(try supportSourceLine("caller line"))")
        // The symbol table's single answer is the function that holds the address.
        #expect(ELFSymbolizer().symbolize(address - 1).name == "lo_test_inlined_return_address")
    }

    @Test("a Swift frame carries its file and the line of the call it made")
    func swiftFileAndLine() throws {
        let line = #line + 1
        let stack = Sampler.captureCurrentStack()
        let symbolizer = ELFSymbolizer()
        let frames = stack.flatMap { symbolizer.frames(at: $0 - 1) }
        let test = try #require(frames.first { $0.name.contains("swiftFileAndLine") }, "\(frames.map(\.name))")
        #expect(test.file.map { URL(fileURLWithPath: $0).lastPathComponent } == "SourceLineTests.swift")
        #expect(test.line == line)
        #expect(test.declarationLine == line - 2)
    }

    @Test("sampled stacks get one frame per function at its declaration; event stacks get the executed line")
    func builderExpandsInlinedFrames() throws {
        var builder = ProfileBuilder(symbolizer: InliningSymbolizer(), timeOriginNs: 0)
        builder.simplifiesNames = false
        // 0x101 and 0x102 are return addresses, looked up one byte early: 0x100 and 0x101.
        builder.add(RawSample(threadID: 1, timeNs: 1, truncated: false, addresses: [0x50, 0x101, 0x102]))
        let added = builder.addStack([0x50, 0x101, 0x102])
        let event = try #require(added)
        let profile = builder.build(
            metadata: ProfileRecorder.metadata(commandLine: ["x"], startTime: Date(), rateHz: 1),
            phases: Profile.Phases(processStartNs: 0, preMainNs: 0, mainEntryNs: 0, endNs: 1), threadNames: [:],
            mainThreadID: 1, counts: Profile.SampleCounts())
        let sampled = profile.frameIndices(ofStack: profile.samples.stack[0]).map { profile.frames[$0] }
        #expect(sampled.map(\.name) == ["outer257", "outer256", "inlinedHelper", "outer80"])
        #expect(sampled.map(\.isInlined) == [false, false, true, false])
        #expect(sampled.map(\.line) == [10, 10, 5, 10])
        let executed = profile.frameIndices(ofStack: event).map { profile.frames[$0] }
        // A captured stack's leaf is a return address too (unless `leafIsExact`): 0x50 is looked up as 0x4f.
        #expect(executed.map(\.name) == ["outer257", "outer256", "inlinedHelper", "outer79"])
        #expect(executed.map(\.location) == ["App.swift:257", "App.swift:256", "Helper.swift:7", "App.swift:79"])
        // Round trip: file, line and the inlined mark survive profile.json.
        let decoded = try Profile.decode(try profile.jsonData())
        #expect(decoded.frames == profile.frames)
    }
}
