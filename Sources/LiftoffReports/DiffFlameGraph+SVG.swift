import LiftoffComparison
import LiftoffProfile

/// A differential flame graph as an SVG image, and as a page with the largest changes under it.
extension DiffFlameGraph {
    /// The SVG document.
    public func svg(width: Double = 1200, rowHeight: Double = 16, title: String) -> String {
        let svg = FlameSVG(width: width, rowHeight: rowHeight, minimumWidth: 0.1)
        let boxes = svg.place(
            root: 0, weight: { max(nodes[$0].base, nodes[$0].head) }, children: { nodes[$0].children },
            depth: { nodes[$0].depth })
        let subtitle = "Per launch, head against base: red grew, blue shrank, white unchanged; widths are the larger side."
        return svg.document(title: title, subtitle: subtitle, boxes: boxes, stroke: true) { at in
            let node = nodes[at]
            let change =
                node.base > 0 ? "\(node.head >= node.base ? "+" : "")\(fmt((node.head / node.base - 1) * 100, digits: 1))%" : "new"
            let detail = node.head == 0 && node.base > 0 ? "gone in head" : change
            let tooltip = "\(node.name): base \(fmt(node.base, digits: 2)) ms, head \(fmt(node.head, digits: 2)) ms per launch (\(detail))"
            return (node.name, tooltip, at == 0 ? FlameColour.root : FlameColour.change(base: node.base, head: node.head))
        }
    }

    /// A page showing the SVG, with the biggest changes listed under it.
    public func html(title: String, limit: Int = 25) -> String {
        var svgText = svg(title: title)
        if let start = svgText.range(of: "<svg") { svgText = String(svgText[start.lowerBound...]) }
        var rows = ""
        for entry in biggestChanges(limit: limit) {
            rows += "<tr><td>\(Markup.escape(Markup.singleLine(entry.name)))</td>"
            rows += "<td class=\"n\">\(fmt(entry.base, digits: 2))</td><td class=\"n\">\(fmt(entry.head, digits: 2))</td>"
            rows += "<td class=\"n\">\(entry.head >= entry.base ? "+" : "")\(fmt(entry.head - entry.base, digits: 2))</td></tr>\n"
        }
        var body = "<h1>\(Markup.escape(Markup.singleLine(title)))</h1>\n\(svgText)"
        body += "<h2>Largest changes in self time (ms per launch)</h2>\n"
        body += "<table><tr><th>Function</th><th>Base</th><th>Head</th><th>Change</th></tr>\n\(rows)</table>\n"
        return HTMLPage(title: title, style: HTMLReportAssets.diffCSS, body: body).render()
    }
}
