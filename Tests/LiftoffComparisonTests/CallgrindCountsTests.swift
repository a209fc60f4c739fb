import Foundation
import LiftoffTestSupport
import Testing

@testable import LiftoffComparison

@Suite("Callgrind counts")
struct CallgrindCountsTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
    static let parts = [fixtures.appendingPathComponent("counts.callgrind"), fixtures.appendingPathComponent("counts.callgrind.1")]

    @Test("parts are summed up to the one the ready point triggered; compressed names, calls= lines and self costs are read")
    func toReady() throws {
        let counts = try CallgrindCounts.read(files: Self.parts)
        #expect(counts.instructions == 1600, "part 1's summary; the termination part is after ready")
        #expect(counts.trigger == "dump ready")
        let byName = Dictionary(uniqueKeysWithValues: counts.functions.map { ($0.name, $0) })
        #expect(byName["main"]?.instructions == 150, "its own lines, not the 1,000 of the memset it called")
        #expect(byName["main"]?.file == "/src/app.c" && byName["main"]?.object == "/tmp/app")
        #expect(byName["build_index"]?.instructions == 300)
        #expect(byName["memset"]?.instructions == 1150 && byName["memset"]?.object == "/usr/lib/x86_64-linux-gnu/libc.so.6")
        #expect(byName["memset"]?.file == nil, "??? is no file")
        #expect(byName["shutdown"] == nil)
        #expect(counts.functions.first?.name == "memset", "the most first")
        #expect(byName["main"]?.inclusiveInstructions == 1150, "its own 150 and the memset it called, 1,000")
        #expect(byName["build_index"]?.inclusiveInstructions == 300 && byName["memset"]?.inclusiveInstructions == 1150)
    }

    @Test("a function's inclusive cost counts its calls to itself once, and is at most the launch's")
    func inclusiveRecursion() throws {
        let text = """
            version: 1
            cmd: ./walk
            events: Ir
            summary: 1000
            fn=(1) main
            1 10
            cfn=(2) walk
            calls=1 0
            2 990
            fn=(2)
            3 600
            cfn=(2)
            calls=4 0
            3 390
            cfn=(3) leaf
            calls=1 0
            4 390
            fn=(3)
            5 390

            """
        let counts = try CallgrindCounts.read(data: Data(text.utf8))
        let byName = Dictionary(uniqueKeysWithValues: counts.functions.map { ($0.name, $0) })
        #expect(byName["main"]?.inclusiveInstructions == 1000)
        #expect(byName["walk"]?.instructions == 600)
        #expect(byName["walk"]?.inclusiveInstructions == 990, "its own 600 and leaf's 390; the recursive call's 390 not again")
        #expect(byName["leaf"]?.inclusiveInstructions == 390)
    }

    @Test("with no ready part every part counts, to the exit; Ir is found among several events")
    func toExit() throws {
        let counts = try CallgrindCounts.read(files: Self.parts, readyTrigger: "no such trigger")
        #expect(counts.instructions == 1670)
        #expect(counts.functions.first { $0.name == "shutdown" }?.instructions == 70)
        #expect(counts.trigger == "Program termination")
    }

    @Test("a file that is not callgrind's, or is missing, is one sentence")
    func hostile() throws {
        let folder = testScratch.appendingPathComponent("callgrind-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let cases: [(String, Data)] = [
            ("text", Data("hello\nworld\n".utf8)), ("cost first", Data("5 100\nversion: 1\n".utf8)),
            ("binary", Data([0xff, 0xfe, 0x00, 0x0a, 0x31])), ("empty", Data()),
            ("huge numbers", Data("version: 1\nevents: Ir\nfn=(1) f\n1 99999999999999999999999\n1 18446744073709551615\n1 5\n".utf8)),
        ]
        for (name, data) in cases {
            let file = folder.appendingPathComponent(name)
            try data.write(to: file)
            do {
                let counts = try CallgrindCounts.read(files: [file])
                #expect(name == "huge numbers", "\(name) was read: \(counts)")
                #expect(counts.functions.first?.instructions == .max, "saturates, never traps")
            } catch let error as CallgrindCounts.ReadError {
                #expect(error.description.hasPrefix(file.path), "\(error)")
            }
        }
        #expect(throws: CallgrindCounts.ReadError.self) { try CallgrindCounts.read(files: [folder.appendingPathComponent("missing")]) }
        #expect(throws: CallgrindCounts.ReadError.self) { try CallgrindCounts.read(files: []) }
    }
}
