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
    @Test("the layout in ExtendingLiftoff.md names every module and test folder, and every file it names exists")
    func layoutMatchesTree() throws {
        let article = try String(contentsOf: Self.catalog.appendingPathComponent("ExtendingLiftoff.md"), encoding: .utf8)
        let start = try #require(article.range(of: "\n## Layout\n"))
        let end = article[start.upperBound...].range(of: "\n## ")?.lowerBound ?? article.endIndex
        let layout = article[start.upperBound..<end]
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
        #expect(missing.isEmpty, "ExtendingLiftoff.md's layout does not name: \(missing.joined(separator: ", "))")

        // Every file the layout names (`agent.c`, `Liftoff/MainRunLoop.swift`) is in the tree.
        let files = Set(Self.files(in: ["Sources", "Tests", "scripts"]).map(\.lastPathComponent))
        let fileNames = named.filter { name in
            [".swift", ".c", ".py", ".js", ".css", ".proto"].contains { name.hasSuffix($0) } && !name.contains("*") && !name.contains(" ")
        }
        let stale = fileNames.filter { !files.contains(String($0.split(separator: "/").last ?? "")) }
        #expect(stale.isEmpty, "ExtendingLiftoff.md's layout names files that do not exist: \(stale.sorted())")
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

    /// The main documentation catalog, whose articles hold the reference.
    static let catalog = repositoryRoot.appendingPathComponent("Sources/Liftoff/Documentation.docc")

    /// The README and every Markdown file of every module's documentation catalog
    /// (`Sources/MODULE/NAME.docc/…`).
    static func documentationFiles() -> [URL] {
        let articles = files(in: ["Sources"]).filter { url in
            url.pathExtension == "md" && catalogFolder(of: url) != nil
        }
        return [repositoryRoot.appendingPathComponent("README.md")] + articles.sorted { $0.path < $1.path }
    }

    /// The documentation catalog (`Sources/MODULE/NAME.docc`) that holds `url`, if one does.
    static func catalogFolder(of url: URL) -> URL? {
        let components = relativePath(url).split(separator: "/")
        guard components.count >= 4, components[0] == "Sources", components[2].hasSuffix(".docc") else { return nil }
        return repositoryRoot.appendingPathComponent(components[0...2].joined(separator: "/"))
    }

    /// `url`'s path from the repository's root, as messages name it.
    static func relativePath(_ url: URL) -> String {
        String(url.path.dropFirst(repositoryRoot.path.count + 1))
    }

    /// The names of the articles of the main catalog (its landing page left out).
    static func catalogArticles() -> [String] {
        files(in: ["Sources/Liftoff/Documentation.docc"])
            .filter { $0.pathExtension == "md" && $0.lastPathComponent != "Liftoff.md" }
            .map { $0.deletingPathExtension().lastPathComponent }
            .sorted()
    }

    /// The Swift code blocks of the README and the articles, each with its file and the line it starts on.
    static func documentationSwiftBlocks() throws -> [(file: String, line: Int, lines: [String])] {
        var blocks: [(file: String, line: Int, lines: [String])] = []
        for url in documentationFiles() {
            let text = try String(contentsOf: url, encoding: .utf8)
            var current: (line: Int, text: [Substring])?
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                if var open = current {
                    if line.hasPrefix("```") {
                        blocks.append((relativePath(url), open.line, meaningfulLines(open.text.joined(separator: "\n"))))
                        current = nil
                    } else {
                        open.text.append(line)
                        current = open
                    }
                } else if line.hasPrefix("```swift") {
                    current = (number + 1, [])
                }
            }
        }
        return blocks
    }

    /// The targets of the Markdown links and images in `text` outside code (fenced blocks and code
    /// spans), each with the line it is on.
    static func markdownLinks(_ text: String) throws -> [(line: Int, target: String)] {
        let codeSpan = try Regex("`[^`]*`")
        let link = try Regex(#"\]\(<?([^)\s>]+)>?(?:\s+"[^"]*")?\)"#)
        var links: [(line: Int, target: String)] = []
        var fenced = false
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") {
                fenced.toggle()
                continue
            }
            guard !fenced else { continue }
            for match in String(line).replacing(codeSpan, with: "").matches(of: link) {
                if let target = match.output[1].substring { links.append((number + 1, String(target))) }
            }
        }
        return links
    }

    @Test("every Swift block in the README and the articles is code of an example package or a test, so it compiles as written")
    func documentationCodeIsCompiled() throws {
        var sources: [String: [String]] = [:]
        for url in Self.files(in: ["Examples", "Tests"]) where url.pathExtension == "swift" {
            sources[url.path] = Self.meaningfulLines(try String(contentsOf: url, encoding: .utf8))
        }
        let blocks = try Self.documentationSwiftBlocks()
        #expect(blocks.count >= 8, "the documentation shows the examples' code: \(blocks.count) blocks")
        for block in blocks {
            let home = sources.first { _, lines in
                lines.count >= block.lines.count
                    && (0...(lines.count - block.lines.count)).contains { start in
                        lines[start..<(start + block.lines.count)].elementsEqual(block.lines)
                    }
            }
            #expect(home != nil, "\(block.file):\(block.line): this block is in no example or test; copy it from one")
        }
    }
}

extension RepositoryLayoutTests {
    @Test("every relative link in the README and the articles resolves to a file or folder of the repository")
    func relativeLinksResolve() throws {
        var missing: [String] = []
        var checked = 0
        for url in Self.documentationFiles() {
            let folder = url.deletingLastPathComponent()
            for link in try Self.markdownLinks(String(contentsOf: url, encoding: .utf8)) {
                let target = link.target
                if ["http://", "https://", "mailto:", "#", "doc:"].contains(where: { target.hasPrefix($0) }) { continue }
                let path = String(target.split(separator: "#", maxSplits: 1).first ?? "")
                checked += 1
                // The file system resolves the `..` steps, as a browser on GitHub does.
                if !FileManager.default.fileExists(atPath: folder.path + "/" + path) {
                    missing.append("\(Self.relativePath(url)):\(link.line): \(target)")
                }
            }
        }
        #expect(checked >= 20, "the README and the articles link to the repository's files: \(checked) links")
        #expect(missing.isEmpty, "these links lead nowhere: \(missing.joined(separator: "; "))")
    }

    @Test("the README is a front page: at most 250 lines, and it links to every article of the Liftoff catalog")
    func readmeIsAFrontPage() throws {
        let readme = try String(contentsOf: repositoryRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let lines = readme.split(separator: "\n", omittingEmptySubsequences: false).count - (readme.hasSuffix("\n") ? 1 : 0)
        #expect(lines <= 250, "README.md has \(lines) lines: move the reference into an article")
        let targets = try Set(Self.markdownLinks(readme).map { String($0.target.split(separator: "#", maxSplits: 1).first ?? "") })
        let articles = Self.catalogArticles()
        #expect(articles.count >= 10, "the catalog's articles were found: \(articles)")
        let unlinked = articles.filter { !targets.contains("Sources/Liftoff/Documentation.docc/\($0).md") }
        #expect(unlinked.isEmpty, "README.md links to no article named \(unlinked.joined(separator: ", "))")
    }

    @Test("every article of the Liftoff catalog is in its landing page's topics, and every <doc:> link names an article of its catalog")
    func catalogTopicsListEveryArticle() throws {
        let docLink = try Regex(#"<doc:([^>#]+)(?:#[^>]*)?>"#)
        let landing = try String(contentsOf: Self.catalog.appendingPathComponent("Liftoff.md"), encoding: .utf8)
        let topics = try #require(landing.range(of: "\n## Topics\n"))
        let listed = Set(landing[topics.upperBound...].matches(of: docLink).compactMap { $0.output[1].substring.map(String.init) })
        let articles = Set(Self.catalogArticles())
        #expect(!articles.isEmpty)
        #expect(articles.subtracting(listed).isEmpty, "Liftoff.md's topics do not list: \(articles.subtracting(listed).sorted())")

        var unknown: [String] = []
        for url in Self.documentationFiles() {
            guard let catalog = Self.catalogFolder(of: url) else { continue }
            let names = Set(
                Self.files(in: [Self.relativePath(catalog)]).filter { $0.pathExtension == "md" }.map { $0.deletingPathExtension().lastPathComponent })
            let text = try String(contentsOf: url, encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                for match in line.matches(of: docLink) {
                    guard let name = match.output[1].substring.map(String.init), !names.contains(name) else { continue }
                    unknown.append("\(Self.relativePath(url)):\(number + 1): <doc:\(name)>")
                }
            }
        }
        #expect(unknown.isEmpty, "these <doc:> links name no article of their catalog: \(unknown.joined(separator: "; "))")
    }

    @Test(".spi.yml names exactly the modules that have a DocC catalog, each a library product of the package")
    func indexBuildsEveryCatalog() throws {
        let sources = repositoryRoot.appendingPathComponent("Sources")
        let withCatalog = Set(try FileManager.default.contentsOfDirectory(atPath: sources.path).filter {
            FileManager.default.fileExists(atPath: sources.appendingPathComponent("\($0)/Documentation.docc").path)
        })
        #expect(withCatalog.isSuperset(of: ["Liftoff", "LiftoffTesting", "LiftoffAnalysis", "LiftoffComparison", "LiftoffReports"]))
        let manifest = try String(contentsOf: repositoryRoot.appendingPathComponent(".spi.yml"), encoding: .utf8)
        let listed = manifest.split(separator: "\n").compactMap { line -> String? in
            let text = line.trimmingCharacters(in: .whitespaces)
            return text.hasPrefix("- ") && !text.contains(":") ? String(text.dropFirst(2)) : nil
        }
        #expect(Set(listed) == withCatalog, ".spi.yml lists \(listed.sorted()); the catalogs are \(withCatalog.sorted())")
        let package = try String(contentsOf: repositoryRoot.appendingPathComponent("Package.swift"), encoding: .utf8)
        for module in withCatalog {
            #expect(package.contains(".library(name: \"\(module)\", targets: [\"\(module)\"])"), "\(module) is not a library product")
        }
    }
}
