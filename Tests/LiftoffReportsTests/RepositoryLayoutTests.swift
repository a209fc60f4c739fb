import Foundation
import LiftoffTestSupport
import Testing

@Suite("Repository layout")
struct RepositoryLayoutTests {
    @Test("no hand-written Swift file is over 500 lines (generated files are exempt)")
    func filesStaySmall() throws {
        var long: [String] = []
        for folder in ["Sources", "Tests", "Examples", "Benchmarks", "Fuzz"] {
            let root = repositoryRoot.appendingPathComponent(folder)
            guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil) else { continue }
            for case let url as URL in walker {
                let path = url.path
                if path.contains("/.build") || path.contains("/Generated/") {
                    walker.skipDescendants()
                    continue
                }
                guard url.pathExtension == "swift" else { continue }
                let lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
                if lines.count > 501 { long.append("\(path.dropFirst(repositoryRoot.path.count + 1)): \(lines.count - 1) lines") }
            }
        }
        #expect(long.isEmpty, "split these by job: \(long.joined(separator: "; "))")
    }
}

extension RepositoryLayoutTests {
    /// The lines of `text` that say something, without their indentation.
    static func meaningfulLines<S: StringProtocol>(_ text: S) -> [String] {
        text.split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
    }

    /// The Swift code blocks of the README, each with the line it starts on.
    static func readmeSwiftBlocks() throws -> [(line: Int, lines: [String])] {
        let readme = try String(contentsOf: repositoryRoot.appendingPathComponent("README.md"), encoding: .utf8)
        var blocks: [(line: Int, lines: [String])] = []
        var current: (line: Int, text: [Substring])?
        for (number, line) in readme.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if var open = current {
                if line.hasPrefix("```") {
                    blocks.append((open.line, meaningfulLines(open.text.joined(separator: "\n"))))
                    current = nil
                } else {
                    open.text.append(line)
                    current = open
                }
            } else if line.hasPrefix("```swift") {
                current = (number + 1, [])
            }
        }
        return blocks
    }

    @Test("every Swift block in the README is code of an example package or a test, so it compiles as written")
    func readmeCodeIsCompiled() throws {
        var sources: [String: [String]] = [:]
        for folder in ["Examples", "Tests"] {
            let root = repositoryRoot.appendingPathComponent(folder)
            guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil) else { continue }
            for case let url as URL in walker {
                if url.lastPathComponent.hasPrefix(".build") {
                    walker.skipDescendants()
                    continue
                }
                guard url.pathExtension == "swift" else { continue }
                sources[url.path] = Self.meaningfulLines(try String(contentsOf: url, encoding: .utf8))
            }
        }
        let blocks = try Self.readmeSwiftBlocks()
        #expect(blocks.count >= 8, "the README shows the examples' code: \(blocks.count) blocks")
        for block in blocks {
            let home = sources.first { _, lines in
                lines.count >= block.lines.count
                    && (0...(lines.count - block.lines.count)).contains { start in
                        lines[start..<(start + block.lines.count)].elementsEqual(block.lines)
                    }
            }
            #expect(home != nil, "README.md:\(block.line): this block is in no example or test; copy it from one")
        }
    }
}
