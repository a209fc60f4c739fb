import Foundation
import LiftoffTestSupport
import Testing

@testable import LiftoffReports

@Suite("HTML assets")
struct HTMLAssetTests {
    private let folder = repositoryRoot.appendingPathComponent("Sources/LiftoffReports/Assets")

    /// Each asset and its text: a file, or a folder of `.js` files joined in name order (`report/` is `report.js`).
    private func assets() throws -> [String: String] {
        var result: [String: String] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) {
            var isFolder: ObjCBool = false
            let url = folder.appendingPathComponent(name)
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder) else { continue }
            if isFolder.boolValue {
                let parts = try FileManager.default.contentsOfDirectory(atPath: url.path).filter { $0.hasSuffix(".js") }.sorted()
                guard !parts.isEmpty else { continue }
                result[name + ".js"] = try parts.map { try String(contentsOf: url.appendingPathComponent($0), encoding: .utf8) }.joined()
            } else if name.hasSuffix(".css") || name.hasSuffix(".js") {
                result[name] = try String(contentsOf: url, encoding: .utf8)
            }
        }
        return result
    }

    @Test("the embedded assets are exactly the files in Assets/ (run `make assets` when this fails)")
    func generatedFileIsCurrent() throws {
        let assets = try assets()
        #expect(assets.keys.sorted() == HTMLReportAssets.byFileName.keys.sorted(), "run `make assets`: the set of files changed")
        for (name, text) in assets {
            #expect(HTMLReportAssets.byFileName[name] == text, "run `make assets`: \(name) changed since it was embedded")
        }
    }

    @Test("no file of an asset is over 700 lines: the report's script is split by view")
    func assetFilesStaySmall() throws {
        let walker = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)
        while let url = walker?.nextObject() as? URL {
            guard ["js", "css"].contains(url.pathExtension) else { continue }
            let lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).count
            #expect(lines <= 701, "\(url.lastPathComponent): \(lines - 1) lines")
        }
    }

    @Test("no asset can end or confuse the element it is embedded in")
    func noClosingTags() throws {
        for (file, text) in HTMLReportAssets.byFileName {
            for forbidden in ["</script", "</style", "<!--"] {
                #expect(text.range(of: forbidden, options: .caseInsensitive) == nil, "\(file) contains \(forbidden)")
            }
        }
    }

    @Test("the generator refuses an asset with a closing tag, naming the file and line")
    func generatorRefusesClosingTags() throws {
        // A copy of the script and a scratch Assets folder, so the repository is not touched.
        let scratch = testScratch.appendingPathComponent("liftoff-assets-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let assets = scratch.appendingPathComponent("Sources/LiftoffReports/Assets")
        try FileManager.default.createDirectory(at: assets, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: scratch.appendingPathComponent("scripts"), withIntermediateDirectories: true)
        let script = scratch.appendingPathComponent("scripts/embed_assets.py")
        try FileManager.default.copyItem(at: repositoryRoot.appendingPathComponent("scripts/embed_assets.py"), to: script)
        try "body { color: red; }\n".write(to: assets.appendingPathComponent("ok.css"), atomically: true, encoding: .utf8)
        try "var a = 1;\nvar b = '</SCRIPT>';\n".write(
            to: assets.appendingPathComponent("bad.js"), atomically: true, encoding: .utf8)
        let refused = try runToEnd("/usr/bin/env", ["python3", script.path])
        #expect(refused.status == 1)
        #expect(refused.output.contains("Sources/LiftoffReports/Assets/bad.js:2 contains '</SCRIPT'"), "\(refused.output)")
        #expect(!FileManager.default.fileExists(atPath: scratch.appendingPathComponent("Sources/LiftoffReports/Generated").path))

        try FileManager.default.removeItem(at: assets.appendingPathComponent("bad.js"))
        let written = try runToEnd("/usr/bin/env", ["python3", script.path])
        #expect(written.status == 0, "\(written.output)")
        let generated = try String(
            contentsOf: scratch.appendingPathComponent("Sources/LiftoffReports/Generated/HTMLReportAssets.swift"), encoding: .utf8)
        #expect(generated.contains("static let okCSS = #\"\"\"\nbody { color: red; }\n\n\"\"\"#"))
        #expect(try runToEnd("/usr/bin/env", ["python3", script.path, "--check"]).status == 0)
    }
}
