import ArgumentParser
import Foundation
import LiftoffCLI
import LiftoffTestSupport
import Testing

@Suite("the documentation's command lines", .timeLimit(.minutes(5)))
struct DocumentedCommandTests {
    /// Every `liftoff …` command line of a shell block in the README and the DocC articles, with
    /// its continuation lines joined and its trailing comment removed.
    static func documentedCommands() throws -> [(place: String, line: String)] {
        var files = [repositoryRoot.appendingPathComponent("README.md")]
        let sources = repositoryRoot.appendingPathComponent("Sources")
        for module in try FileManager.default.contentsOfDirectory(atPath: sources.path) {
            let catalog = sources.appendingPathComponent("\(module)/Documentation.docc")
            for name in (try? FileManager.default.contentsOfDirectory(atPath: catalog.path)) ?? [] where name.hasSuffix(".md") {
                files.append(catalog.appendingPathComponent(name))
            }
        }
        var commands: [(String, String)] = []
        for file in files {
            let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            var fence: String?
            var index = 0
            while index < lines.count {
                let line = lines[index]
                defer { index += 1 }
                if line.hasPrefix("```") {
                    fence = fence == nil ? String(line.dropFirst(3)) : nil
                    continue
                }
                guard fence == "sh", line.trimmingCharacters(in: .whitespaces).hasPrefix("liftoff ") else { continue }
                let start = index
                var command = withoutComment(line)
                while command.hasSuffix("\\"), index + 1 < lines.count {
                    index += 1
                    command = String(command.dropLast()) + " " + withoutComment(lines[index])
                }
                commands.append(("\(file.path.dropFirst(repositoryRoot.path.count + 1)):\(start + 1)", command))
            }
        }
        return commands
    }

    /// `line` without a comment that starts outside quotes after a blank.
    static func withoutComment(_ line: String) -> String {
        var quote: Character?
        var previous: Character = " "
        for (offset, character) in line.enumerated() {
            if let open = quote {
                if character == open { quote = nil }
            } else if character == "'" || character == "\"" {
                quote = character
            } else if character == "#", previous == " " {
                return String(line.prefix(offset)).trimmingCharacters(in: .whitespaces)
            }
            previous = character
        }
        return line.trimmingCharacters(in: .whitespaces)
    }

    @Test("every liftoff command line in the README and the articles parses with today's options")
    func documentedCommandsParse() throws {
        let commands = try Self.documentedCommands()
        #expect(commands.count >= 20, "\(commands.count) command lines found")
        // What the shell would put in place of the command substitutions the examples use.
        let substitutions = [
            "$(git rev-parse HEAD)": "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
            "$(git show -s --format=%cI HEAD)": "2026-11-28T08:00:00+00:00",
        ]
        var refused: [String] = []
        for (place, documented) in commands {
            let line = substitutions.reduce(documented) { $0.replacingOccurrences(of: $1.key, with: $1.value) }
            #expect(!line.contains("$("), "\(place): a command substitution this test cannot stand in for: \(line)")
            let words = try ShellWords.split(line)
            do {
                _ = try LiftoffCommand.parseAsRoot(Array(words.dropFirst()))
            } catch {
                // --version and --help end parsing with a clean exit.
                if LiftoffCommand.exitCode(for: error) == .success { continue }
                refused.append("\(place): \(line) — \(LiftoffCommand.message(for: error))")
            }
        }
        #expect(refused.isEmpty, "\(refused.joined(separator: "\n"))")
    }
}
