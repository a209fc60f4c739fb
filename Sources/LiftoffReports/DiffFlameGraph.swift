import LiftoffProfile

/// A differential flame graph of head against base: both sides' samples merged by call path,
/// each sample counted as the time it stands for (one interval at its profile's sampling rate)
/// and divided by the side's number of launches, so values are milliseconds per launch and a
/// side with more runs, or a higher rate, does not look bigger.
///
/// Each box is as wide as the larger of its two values, so stacks that vanished in head still
/// show. Red boxes grew, blue ones shrank, white ones stayed the same; the deeper the colour,
/// the larger the change relative to the box. Hovering shows both values per launch.
public struct DiffFlameGraph: Sendable {
    /// One call path in either side.
    public struct Node: Sendable, Equatable {
        /// Frame name.
        public var name: String
        /// Milliseconds per base launch sampled in this node and below.
        public var base: Double
        /// Milliseconds per head launch sampled in this node and below.
        public var head: Double
        /// Distance from the root.
        public var depth: Int
        /// Children, sorted by name.
        public var children: [Int]
    }

    /// Node 0 is the root.
    public private(set) var nodes: [Node]

    /// Merges the samples of each side's profiles: all of their running samples, or only those
    /// of the spans named `span` (as a span's samples are counted: its Swift task's, or its
    /// thread's, while it ran), to see where one span's time went.
    public init(base: [Profile], head: [Profile], span: String? = nil) {
        nodes = [Node(name: "all", base: 0, head: 0, depth: 0, children: [])]
        var index: [Key: Int] = [:]
        for (side, profiles) in [(0, base), (1, head)] where !profiles.isEmpty {
            for profile in profiles {
                guard profile.metadata.samplingRateHz > 0 else { continue }
                let weight = 1000.0 / Double(profile.metadata.samplingRateHz) / Double(profiles.count)
                var known = [Int](repeating: -1, count: profile.stacks.count)
                // CPU: running samples only, so waits do not pose as work that grew.
                let chosen = span.map { profile.sampleIndices(inSpansNamed: $0) } ?? Array(0..<profile.samples.count)
                for sample in chosen where profile.samples.state[sample] == .running {
                    var path: [Int] = []
                    var stack = profile.samples.stack[sample]
                    while stack >= 0 && known[stack] < 0 {
                        path.append(stack)
                        stack = profile.stacks.parent[stack]
                    }
                    var node = stack >= 0 ? known[stack] : 0
                    for entry in path.reversed() {
                        node = child(of: node, named: profile.frames[profile.stacks.frame[entry]].displayName, index: &index)
                        known[entry] = node
                    }
                    // Add the sample to its leaf and every ancestor.
                    let amount = weight * Double(profile.samples.weight[sample])
                    var current: Int? = node
                    while let at = current {
                        if side == 0 { nodes[at].base += amount } else { nodes[at].head += amount }
                        current = parents[at]
                    }
                }
            }
        }
        let names = nodes.map(\.name)
        for at in nodes.indices where nodes[at].children.count > 1 {
            nodes[at].children.sort { names[$0] < names[$1] }
        }
    }

    private var parents: [Int?] = [nil]

    private mutating func child(of parent: Int, named name: String, index: inout [Key: Int]) -> Int {
        let key = Key(parent: parent, name: name)
        if let known = index[key] { return known }
        nodes.append(Node(name: name, base: 0, head: 0, depth: nodes[parent].depth + 1, children: []))
        parents.append(parent)
        nodes[parent].children.append(nodes.count - 1)
        index[key] = nodes.count - 1
        return nodes.count - 1
    }

    private struct Key: Hashable {
        var parent: Int
        var name: String
    }

    /// The fill for a change from `base` to `head`: red when it grew, blue when it shrank.
    public static func colour(base: Double, head: Double) -> String {
        let larger = max(base, head)
        guard larger > 0 else { return "rgb(255,255,255)" }
        let change = (head - base) / larger  // -1 ... 1
        let fade = Int((1 - min(abs(change), 1)) * 200) + 55  // 55 (deep) ... 255 (white)
        return change >= 0 ? "rgb(255,\(fade),\(fade))" : "rgb(\(fade),\(fade),255)"
    }

    /// The SVG document.
    public func svg(width: Double = 1200, rowHeight: Double = 16, title: String) -> String {
        let padding = 10.0
        let top = 52.0
        var placed: [(node: Int, x: Double, width: Double)] = []
        var pending: [(Int, Double, Double)] = [(0, padding, width - 2 * padding)]
        var deepest = 0
        while let (at, x, boxWidth) = pending.popLast() {
            guard boxWidth >= 0.1 || at == 0 else { continue }
            placed.append((at, x, boxWidth))
            deepest = max(deepest, nodes[at].depth)
            let node = nodes[at]
            let weights = node.children.map { max(nodes[$0].base, nodes[$0].head) }
            let scale = boxWidth / max(max(node.base, node.head), weights.reduce(0, +), .leastNonzeroMagnitude)
            var childX = x
            for (child, weight) in zip(node.children, weights) {
                pending.append((child, childX, weight * scale))
                childX += weight * scale
            }
        }
        let height = top + Double(deepest + 1) * rowHeight + padding
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
        out += "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"\(fmt(width))\" height=\"\(fmt(height))\" "
        out += "viewBox=\"0 0 \(fmt(width)) \(fmt(height))\" font-family=\"Verdana, sans-serif\" font-size=\"12\">\n"
        out += "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#f8f8f8\"/>\n"
        out += "<text x=\"\(fmt(width / 2))\" y=\"20\" text-anchor=\"middle\" font-size=\"15\">\(Markup.escape(Markup.singleLine(title)))</text>\n"
        out += "<text x=\"\(fmt(width / 2))\" y=\"38\" text-anchor=\"middle\" font-size=\"11\" fill=\"#555\">"
        out += "Per launch, head against base: red grew, blue shrank, white unchanged; widths are the larger side.</text>\n"
        for (at, x, boxWidth) in placed.sorted(by: { $0.node < $1.node }) {
            let node = nodes[at]
            let y = height - padding - Double(node.depth + 1) * rowHeight
            let name = Markup.singleLine(node.name)
            let change = node.base > 0 ? "\(node.head >= node.base ? "+" : "")\(fmt((node.head / node.base - 1) * 100, digits: 1))%" : "new"
            let detail = node.head == 0 && node.base > 0 ? "gone in head" : change
            out += "<g><title>\(Markup.escape(name)): base \(fmt(node.base, digits: 2)) ms, "
            out += "head \(fmt(node.head, digits: 2)) ms per launch (\(detail))</title>"
            out += "<rect x=\"\(fmt(x, digits: 2))\" y=\"\(fmt(y))\" width=\"\(fmt(boxWidth, digits: 2))\" height=\"\(fmt(rowHeight - 1))\" "
            out += "fill=\"\(at == 0 ? "rgb(220,220,220)" : DiffFlameGraph.colour(base: node.base, head: node.head))\" "
            out += "stroke=\"#bbb\" stroke-width=\"0.3\" rx=\"2\"/>"
            let label = SVGFlameGraphRenderer.label(name, fitting: boxWidth)
            if !label.isEmpty {
                out += "<text x=\"\(fmt(x + 3, digits: 2))\" y=\"\(fmt(y + rowHeight - 4.5))\">\(Markup.escape(label))</text>"
            }
            out += "</g>\n"
        }
        out += "</svg>\n"
        return out
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

    /// Functions whose self time per launch changed most, summed over every path they appear on.
    public func biggestChanges(limit: Int) -> [(name: String, base: Double, head: Double)] {
        var byName: [String: (base: Double, head: Double)] = [:]
        for node in nodes.dropFirst() {
            let childBase = node.children.reduce(0) { $0 + nodes[$1].base }
            let childHead = node.children.reduce(0) { $0 + nodes[$1].head }
            byName[node.name, default: (0, 0)].base += max(node.base - childBase, 0)
            byName[node.name, default: (0, 0)].head += max(node.head - childHead, 0)
        }
        return byName.map { (name: $0.key, base: $0.value.base, head: $0.value.head) }
            .filter { $0.base != $0.head }
            .sorted { (abs($0.head - $0.base), $1.name) > (abs($1.head - $1.base), $0.name) }
            .prefix(limit)
            .map { $0 }
    }
}
