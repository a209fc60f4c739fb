import Foundation
import Testing

extension InsightPrograms {
    /// A Swift program that decodes a catalogue from the JSON file its argument names, twice, in
    /// its own `loadCatalogue`, then prints `ready`: a launch spent in JSONDecoder and Codable.
    static let catalogue = """
        import Foundation
        struct Item: Codable {
            var id: Int
            var name: String
            var tags: [String]
            var price: Double
            var stock: [String: Int]
        }
        @inline(never) func loadCatalogue(_ path: String) throws -> [Item] {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            var items: [Item] = []
            for _ in 0..<2 { items = try JSONDecoder().decode([Item].self, from: data) }
            return items
        }
        @main struct Catalogue {
            static func main() throws {
                let items = try loadCatalogue(CommandLine.arguments[1])
                print("ready \\(items.count)")
            }
        }
        """
}

extension InsightProgramTests {
    @Test("a launch that decodes JSON: library-work says JSON and Codable in words and names the program's callers")
    func libraryWork() throws {
        let program = try AgentPrograms.build(
            "insight-catalogue", source: InsightPrograms.catalogue, ext: "swift", compiler: try InsightPrograms.swiftc(),
            ["-O", "-g", "-parse-as-library"])
        // 20,000 items, 2 MB: about 250 ms of decoding here.
        let items: [[String: Any]] = (0..<20_000).map { index in
            ["id": index, "name": "item \(index)", "tags": ["t\(index % 7)", "u\(index % 13)"], "price": Double(index) * 0.25,
             "stock": ["a": index % 5, "b": index % 11]]
        }
        let file = temporaryFolder().appendingPathComponent("catalogue.json")
        try JSONSerialization.data(withJSONObject: items).write(to: file)

        let (ids, insights, _) = try explain([program, file.path], profileOptions: ["--ready", "^ready"])
        let work = try insight("library-work", in: insights)
        let finding = try #require(work["finding"] as? String)
        #expect(finding.contains("JSON and Codable"), "\(finding)")
        let notes = try #require(work["notes"] as? [String])
        let codable = try #require(notes.first { $0.hasPrefix("JSON and Codable:") }, "\(notes)")
        #expect(codable.contains("loadCatalogue(_:)") || codable.contains("Item.init(from:)"), "the program's callers: \(codable)")
        // The decoding is the path's CPU, and launch-cpu names the program's function that asked for it.
        let cpu = try insight("launch-cpu", in: insights)
        #expect((cpu["finding"] as? String)?.contains("loadCatalogue(_:)") == true, "\(ids) \(cpu["finding"] ?? "")")
    }
}
