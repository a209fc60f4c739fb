import Foundation
import LiftoffTestSupport
import Testing

@testable import LiftoffHistory

@Suite("History environments")
struct EnvironmentTests {
    @Test("the Swift version is read from the program's debug information: this test binary's compiler, unknown for a stripped C program")
    func swiftVersionOfPrograms() throws {
        let executable = try #require(Bundle.main.executablePath.map { URL(fileURLWithPath: $0).resolvingSymlinksInPath().path })
        // The toolchain that built this test binary says its version itself.
        let swift = Process()
        let output = Pipe()
        swift.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        swift.arguments = ["swift", "--version"]
        swift.standardOutput = output
        swift.standardError = FileHandle.nullDevice
        try swift.run()
        let said = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        swift.waitUntilExit()
        let expected = try #require(SwiftVersion.version(inStrings: Data(said.utf8)), "swift --version: \(said)")
        #expect(SwiftVersion.ofProgram(executable) == expected)

        #expect(SwiftVersion.ofProgram("true", searchPath: "/usr/bin:/bin") == "unknown", "a stripped C program")
        #expect(SwiftVersion.ofProgram("no-such-program-here", searchPath: "/usr/bin") == "unknown")
        #expect(SwiftVersion.ofProgram("") == "unknown")
    }

    @Test("a truncated, foreign or hostile file gives unknown, never a trap")
    func hostileFiles() throws {
        let folder = temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let executable = try #require(Bundle.main.executablePath)
        let real = try Data(contentsOf: URL(fileURLWithPath: executable))
        var hostile = real.prefix(64)
        // A section table past the end of the file, with the largest counts the header can say.
        hostile.replaceSubrange(0x28..<0x30, with: [UInt8](repeating: 0xff, count: 8))
        hostile.replaceSubrange(0x3a..<0x40, with: [UInt8](repeating: 0xff, count: 6))
        let cases: [(String, Data)] = [
            ("empty", Data()),
            ("text", Data("#!/bin/sh\necho Swift version 9.9\n".utf8)),
            ("header only", real.prefix(64)),
            ("cut in its section table", real.prefix(real.count / 2)),
            ("hostile header", hostile),
        ]
        for (name, data) in cases {
            let url = folder.appendingPathComponent(name.replacingOccurrences(of: " ", with: "-"))
            try data.write(to: url)
            #expect(SwiftVersion.ofProgram(url.path) == "unknown", "\(name)")
        }
    }

    @Test("an environment's key is the one it had before the Swift version existed when it has none, and a new one with it")
    func keys() throws {
        let before = HistoryEntry.Environment(cpu: "Test CPU", cores: 2, os: "Linux 6.1", liftoff: "0.1.0", cache: "warm")
        // The key entries written before the field existed carry in their file names.
        #expect(before.key == "0d5e387ea383", "\(before.key)")
        var with = before
        with.swift = "6.3.1"
        #expect(with.key != before.key)
        #expect(with.description.contains("Swift 6.3.1"))
        with.swift = "unknown"
        #expect(!with.description.contains("Swift"))

        let decoded = try JSONDecoder().decode(
            HistoryEntry.Environment.self,
            from: Data(#"{"cpu":"Test CPU","cores":2,"os":"Linux 6.1","liftoff":"0.1.0","cache":"warm"}"#.utf8))
        #expect(decoded == before && decoded.swift == nil)
    }
}
