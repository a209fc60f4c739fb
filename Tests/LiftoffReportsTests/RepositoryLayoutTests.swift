import Foundation
import LiftoffTestSupport
import Testing

@Suite("Repository layout")
struct RepositoryLayoutTests {
    @Test("no hand-written Swift file is over 500 lines (generated files are exempt)")
    func filesStaySmall() throws {
        var long: [String] = []
        for folder in ["Sources", "Tests", "Examples", "Benchmarks"] {
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
