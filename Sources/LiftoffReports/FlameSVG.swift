import LiftoffProfile

/// The colours of every flame view, in one place: a function's colour comes from its name, so it
/// is the same in `flame.svg`, the HTML report's flame graph and timeline (`report/10-data.js`
/// computes the same hash), and from one render to the next.
public enum FlameColour {
    /// A colour derived from the name (FNV-1a): warm, as FlameGraph's palette, or cool for a
    /// Swift async function of a task's logical stack.
    public static func of(_ name: String, async: Bool = false) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        if async {
            return "rgb(\(80 + Int(hash % 60)),\(150 + Int((hash >> 8) % 70)),\(205 + Int((hash >> 16) % 50)))"
        }
        return "rgb(\(205 + Int(hash % 50)),\(Int((hash >> 8) % 230)),\(Int((hash >> 16) % 55)))"
    }

    /// A box whose samples were all waiting.
    public static let waiting = "rgb(196,201,212)"

    /// The root box.
    public static let root = "rgb(200,200,200)"

    /// The fill for a change from `base` to `head`: red when it grew, blue when it shrank, white
    /// when it stayed; the deeper, the larger the change relative to the larger side.
    public static func change(base: Double, head: Double) -> String {
        let larger = max(base, head)
        guard larger > 0 else { return "rgb(255,255,255)" }
        let change = (head - base) / larger  // -1 ... 1
        let fade = Int((1 - min(abs(change), 1)) * 200) + 55  // 55 (deep) ... 255 (white)
        return change >= 0 ? "rgb(255,\(fade),\(fade))" : "rgb(\(fade),\(fade),255)"
    }
}

/// The one flame layout and SVG shell that `flame.svg` and the differential flame graph share:
/// callers below callees, each box as wide as its weight, children side by side from the left
/// in the order given, a box narrower than the minimum left out (with everything above it).
struct FlameSVG {
    /// A box placed on the image.
    struct Box {
        var node: Int
        var x: Double
        var width: Double
        var depth: Int
    }

    var width: Double
    var rowHeight: Double
    /// Boxes narrower than this many pixels are left out (the root is always drawn).
    var minimumWidth: Double

    private let padding = 10.0

    /// Places a tree's boxes: `weight` of a node, its `children` (in drawing order) and `depth`.
    /// A parent's width is shared among its children by weight; children whose weights add up
    /// to more than their parent's (a differential graph's larger sides) are scaled to fit.
    func place(
        root: Int, weight: (Int) -> Double, children: (Int) -> [Int], depth: (Int) -> Int
    ) -> [Box] {
        var placed: [Box] = []
        var pending = [Box(node: root, x: padding, width: width - 2 * padding, depth: depth(root))]
        while let box = pending.popLast() {
            guard box.width >= minimumWidth || box.node == root else { continue }
            placed.append(box)
            let kids = children(box.node)
            let weights = kids.map(weight)
            let scale = box.width / max(weight(box.node), weights.reduce(0, +), .leastNonzeroMagnitude)
            var x = box.x
            for (child, childWeight) in zip(kids, weights) {
                pending.append(Box(node: child, x: x, width: childWeight * scale, depth: depth(child)))
                x += childWeight * scale
            }
        }
        return placed.sorted { $0.node < $1.node }
    }

    /// The SVG document: a title line, optional subtitle, then one group per box with its tooltip,
    /// fill and as much of its name as fits.
    func document(
        title: String, subtitle: String? = nil, boxes: [Box], footer: Double = 0, stroke: Bool = false,
        describe: (Int) -> (name: String, tooltip: String, fill: String)
    ) -> String {
        let top = subtitle == nil ? 34.0 : 52.0
        let deepest = boxes.map(\.depth).max() ?? 0
        let height = top + Double(deepest + 1) * rowHeight + padding + footer
        var out = ""
        out.reserveCapacity(512 + boxes.count * 220)
        out += "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
        out += "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"\(fmt(width))\" height=\"\(fmt(height))\" "
        out += "viewBox=\"0 0 \(fmt(width)) \(fmt(height))\" font-family=\"Verdana, sans-serif\" font-size=\"12\">\n"
        out += "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#f8f8f8\"/>\n"
        out += "<text x=\"\(fmt(width / 2))\" y=\"20\" text-anchor=\"middle\" font-size=\"15\">"
        out += "\(Markup.escape(Markup.singleLine(title)))</text>\n"
        if let subtitle {
            out += "<text x=\"\(fmt(width / 2))\" y=\"38\" text-anchor=\"middle\" font-size=\"11\" fill=\"#555\">"
            out += "\(Markup.escape(subtitle))</text>\n"
        }
        for box in boxes {
            let (name, tooltip, fill) = describe(box.node)
            let shown = Markup.singleLine(name)
            let y = height - padding - footer - Double(box.depth + 1) * rowHeight
            out += "<g><title>\(Markup.escape(Markup.singleLine(tooltip)))</title>"
            out += "<rect x=\"\(fmt(box.x, digits: 2))\" y=\"\(fmt(y))\" width=\"\(fmt(box.width, digits: 2))\" "
            out += "height=\"\(fmt(rowHeight - 1))\" fill=\"\(fill)\"\(stroke ? " stroke=\"#bbb\" stroke-width=\"0.3\"" : "") rx=\"2\"/>"
            let label = FlameSVG.label(shown, fitting: box.width)
            if !label.isEmpty {
                out += "<text x=\"\(fmt(box.x + 3, digits: 2))\" y=\"\(fmt(y + rowHeight - 4.5))\">\(Markup.escape(label))</text>"
            }
            out += "</g>\n"
        }
        out += "</svg>\n"
        return out
    }

    /// As much of the name as fits in `width` pixels at about 7 pixels a character.
    static func label(_ name: String, fitting width: Double) -> String {
        let characters = Int((width - 6) / 7)
        guard characters >= 3 else { return "" }
        if name.count <= characters { return name }
        return String(name.prefix(characters - 2)) + ".."
    }
}
