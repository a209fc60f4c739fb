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
    @Test("the README's layout names every module and test folder, and every file it names exists")
    func readmeLayoutMatchesTree() throws {
        let readme = try String(contentsOf: repositoryRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let start = try #require(readme.range(of: "\n## Layout\n"))
        let end = readme[start.upperBound...].range(of: "\n## ")?.lowerBound ?? readme.endIndex
        let layout = readme[start.upperBound..<end]
        let named = Set(layout.split(separator: "`").enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) })
        var missing: [String] = []
        for folder in ["Sources", "Tests"] {
            let entries = try FileManager.default.contentsOfDirectory(atPath: repositoryRoot.appendingPathComponent(folder).path)
            for entry in entries.sorted() where !entry.hasPrefix(".") {
                var isFolder: ObjCBool = false
                let path = repositoryRoot.appendingPathComponent("\(folder)/\(entry)").path
                guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue else { continue }
                let mentioned = named.contains(entry) || named.contains("\(folder)/\(entry)") || named.contains("\(entry)/")
                    || named.contains("\(folder)/\(entry)/") || layout.contains("`\(entry)`") || layout.contains("`\(entry)/`")
                if !mentioned { missing.append("\(folder)/\(entry)") }
            }
        }
        #expect(missing.isEmpty, "the README's layout does not name: \(missing.joined(separator: ", "))")

        // Every file the layout names (`agent.c`, `Liftoff/MainRunLoop.swift`) is in the tree.
        let files = Set(Self.files(in: ["Sources", "Tests", "scripts"]).map(\.lastPathComponent))
        let fileNames = named.filter { name in
            [".swift", ".c", ".py", ".js", ".css", ".proto"].contains { name.hasSuffix($0) } && !name.contains("*") && !name.contains(" ")
        }
        let stale = fileNames.filter { !files.contains(String($0.split(separator: "/").last ?? "")) }
        #expect(stale.isEmpty, "the README's layout names files that do not exist: \(stale.sorted())")
        #expect(fileNames.count >= 10, "the layout names the files a newcomer opens: \(fileNames.count)")
    }

    @Test(
        "the C sampler and the agent are one-way: no file calls into a file that calls it, directly or around a circle",
        arguments: [["Sources/CLiftoffSampler"], ["Sources/CLiftoffSampler", "Sources/CLiftoffAgent"]])
    func cFilesCallOneWay(_ folders: [String]) throws {
        var texts: [String: String] = [:]
        for folderPath in folders {
            let folder = repositoryRoot.appendingPathComponent(folderPath)
            let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".c") }
            for file in files {
                texts[folderPath + "/" + file] = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            }
        }
        // Where each non-static `lo_` function is defined: a line that starts with its return type.
        let definition = try Regex(#"(?m)^(?!static)[A-Za-z_][\w \*]*?\b(lo_\w+)\s*\([^;{]*\)\s*\{"#)
        var home: [String: String] = [:]
        for (file, text) in texts {
            for match in text.matches(of: definition) {
                if let name = match.output[1].substring { home[String(name)] = file }
            }
        }
        var calls: [String: Set<String>] = [:]
        for (file, text) in texts {
            for (name, owner) in home where owner != file && text.contains(name + "(") { calls[file, default: []].insert(owner) }
        }
        func reaches(_ from: String, _ to: String, _ seen: inout Set<String>) -> Bool {
            for next in calls[from] ?? [] {
                if next == to { return true }
                if seen.insert(next).inserted, reaches(next, to, &seen) { return true }
            }
            return false
        }
        var circles: [String] = []
        for (file, callees) in calls {
            for callee in callees {
                var seen: Set<String> = []
                if reaches(callee, file, &seen) { circles.append("\(file) → \(callee)") }
            }
        }
        #expect(home.count > 50, "the functions were found: \(home.count)")
        #expect(circles.isEmpty, "these calls close a circle: \(circles.sorted())")
    }

    /// Every file under the repository's `folders`, build folders left out.
    static func files(in folders: [String]) -> [URL] {
        var result: [URL] = []
        for folder in folders {
            let root = repositoryRoot.appendingPathComponent(folder)
            guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil) else { continue }
            for case let url as URL in walker {
                if url.lastPathComponent.hasPrefix(".build") {
                    walker.skipDescendants()
                    continue
                }
                result.append(url)
            }
        }
        return result
    }

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
        for url in Self.files(in: ["Examples", "Tests"]) where url.pathExtension == "swift" {
            sources[url.path] = Self.meaningfulLines(try String(contentsOf: url, encoding: .utf8))
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
