import Foundation
import LiftoffProfile
import LiftoffTestSupport
import Testing

@testable import LiftoffReports

#if canImport(FoundationXML)
import FoundationXML
import LiftoffAnalysis
#endif

@Suite("SVG flame graph", .timeLimit(.minutes(5)))
struct SVGRendererTests {
    @Test("a hand-made profile renders to exactly the expected SVG")
    func exactOutput() {
        let expected = """
            <?xml version="1.0" encoding="UTF-8" standalone="no"?>
            <svg version="1.1" xmlns="http://www.w3.org/2000/svg" width="1200" height="106" viewBox="0 0 1200 106" font-family="Verdana, sans-serif" font-size="12">
            <rect x="0" y="0" width="100%" height="100%" fill="#f8f8f8"/>
            <text x="600" y="20" text-anchor="middle" font-size="15">Liftoff flame graph: app (4 running samples)</text>
            <g><title>all (4 samples, 100%)</title><rect x="10" y="66" width="1180" height="15" fill="rgb(200,200,200)" rx="2"/><text x="13" y="77.5">all</text></g>
            <g><title>main (4 samples, 100%)</title><rect x="10" y="50" width="1180" height="15" fill="rgb(241,201,3)" rx="2"/><text x="13" y="61.5">main</text></g>
            <g><title>work (3 samples, 75%)</title><rect x="10" y="34" width="885" height="15" fill="rgb(215,193,26)" rx="2"/><text x="13" y="45.5">work</text></g>
            </svg>

            """
        #expect(SVGFlameGraphRenderer().render(tinyProfile()) == expected)
    }

    @Test("hostile names are escaped: the SVG is well-formed XML and carries no markup from names")
    func hostileNamesEscaped() throws {
        let svg = SVGFlameGraphRenderer().render(hostileProfile())
        #expect(!svg.contains("<script"))
        #expect(!svg.contains("<b>"))
        #expect(svg.contains("a&lt;b&gt;&amp;&quot;c&quot;"))
        #expect(svg.contains("&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;"))
        #expect(svg.contains("Liftoff flame graph: evil&lt;app&gt; (8 running samples)"))
        #expect(svg.contains("new line"), "a newline in a name shows as a space")

        final class Collector: NSObject, XMLParserDelegate {
            var titles: [String] = []
            var current: String?
            func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
                if name == "title" { current = "" }
            }
            func parser(_ parser: XMLParser, foundCharacters string: String) { current? += string }
            func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
                if name == "title", let current { titles.append(current) }
                current = nil
            }
        }
        let parser = XMLParser(data: Data(svg.utf8))
        let collector = Collector()
        parser.delegate = collector
        #expect(parser.parse(), "the SVG parses as XML")
        #expect(collector.titles.contains("</script><script>alert(1)</script> (1 sample, 12.5%)"))
        #expect(collector.titles.contains("semi;colon (4 samples, 50%)"))
    }

    @Test("colours are stable per name and warm")
    func colours() throws {
        // Stable: a fixed value for a fixed name, in every run (a hash of the name, no random seed).
        #expect(FlameColour.of("main") == "rgb(241,201,3)")
        #expect(FlameColour.of("main") != FlameColour.of("work"))
        // Warm, as FlameGraph's palette: strong red, some green, little blue, for any name.
        let names = (0..<500).map { "Module.function\($0)(argument:)" } + ["", "<script>", "ü", "a;b"]
        for name in names {
            let text = FlameColour.of(name)
            let parts = try #require(
                text.hasPrefix("rgb(") && text.hasSuffix(")") ? text.dropFirst(4).dropLast().split(separator: ",").compactMap { Int($0) } : nil)
            try #require(parts.count == 3, "\(text)")
            #expect((205...254).contains(parts[0]) && (0...229).contains(parts[1]) && (0...54).contains(parts[2]), "\(name): \(text)")
        }
    }

    @Test("labels are cut to the box width and left out of boxes too narrow for three characters")
    func labels() {
        #expect(FlameSVG.label("abcdefghij", fitting: 200) == "abcdefghij")
        #expect(FlameSVG.label("abcdefghij", fitting: 48) == "abcd..")
        #expect(FlameSVG.label("abcdefghij", fitting: 20).isEmpty)
    }

    @Test("per-thread trees put each thread under its own node")
    func perThreadTree() {
        let tree = FlameTree(profile: hostileProfile(), perThread: true)
        let threads = tree.nodes[0].children.map { tree.nodes[$0].name }
        #expect(threads == ["main (1)", "work;er (2)"])
        #expect(tree.nodes[0].children.map { tree.nodes[$0].total } == [5, 3])
        #expect(tree.totalSamples == 8)
    }

    @Test("an empty profile still renders a valid document")
    func empty() {
        let svg = SVGFlameGraphRenderer().render(emptyProfile())
        #expect(svg.hasSuffix("</svg>\n"))
        #expect(XMLParser(data: Data(svg.utf8)).parse())
    }
}
