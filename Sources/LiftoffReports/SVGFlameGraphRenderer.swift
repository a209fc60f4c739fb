import LiftoffProfile

/// Renders a self-contained SVG flame graph: one box per function and call path, width
/// proportional to samples, callers below callees, siblings sorted by name. Hovering a box
/// shows its name, sample count and share (an SVG `<title>`, so no script is needed). Colours
/// come from a hash of the name, so a function keeps its colour across renders. Every name
/// is XML-escaped.
public struct SVGFlameGraphRenderer: Sendable {
    /// Total width of the image, in pixels.
    public var width: Double = 1200
    /// Height of one row, in pixels.
    public var rowHeight: Double = 16
    /// Boxes narrower than this many pixels are left out (their samples still count above).
    public var minimumWidth: Double = 0.1
    /// Draw each thread under its own node instead of merging all threads.
    public var perThread = false
    /// Running samples only (CPU, the default), or every sample with waits drawn in grey.
    public var samples: Profile.SampleSelection = .cpu

    /// Creates a renderer with the default geometry.
    public init(perThread: Bool = false, samples: Profile.SampleSelection = .cpu) {
        self.perThread = perThread
        self.samples = samples
    }

    /// The SVG document for `profile`.
    public func render(_ profile: Profile, title: String? = nil) -> String {
        let tree = FlameTree(profile: profile, rootName: "all", perThread: perThread, samples: samples)
        let heading = title ?? SVGFlameGraphRenderer.defaultTitle(profile, samples: samples)
        return render(tree, title: heading, asyncNames: Set(profile.frames.filter(\.isAsync).map(\.displayName)))
    }

    /// Fill of a box whose samples were all waiting.
    static let waitingColour = "rgb(196,201,212)"

    /// The SVG document for a flame tree; boxes named in `asyncNames` (Swift async functions of a
    /// task's logical stack) get cool colours.
    public func render(_ tree: FlameTree, title: String, asyncNames: Set<String> = []) -> String {
        let padding = 10.0
        let top = 34.0
        let total = max(tree.totalSamples, 1)
        let scale = (width - 2 * padding) / Double(total)
        var placed: [(node: Int, x: Double)] = []
        var deepest = 0
        var pending: [(node: Int, x: Double)] = [(0, padding)]
        while let (index, x) = pending.popLast() {
            let node = tree.nodes[index]
            guard Double(node.total) * scale >= minimumWidth || index == 0 else { continue }
            placed.append((index, x))
            deepest = max(deepest, node.depth)
            var childX = x
            for child in node.children {
                pending.append((child, childX))
                childX += Double(tree.nodes[child].total) * scale
            }
        }
        let height = top + Double(deepest + 1) * rowHeight + padding + 14
        var out = ""
        out.reserveCapacity(256 + placed.count * 220)
        out += "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
        out += "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"\(fmt(width))\" height=\"\(fmt(height))\" "
        out += "viewBox=\"0 0 \(fmt(width)) \(fmt(height))\" font-family=\"Verdana, sans-serif\" font-size=\"12\">\n"
        out += "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#f8f8f8\"/>\n"
        out += "<text x=\"\(fmt(width / 2))\" y=\"20\" text-anchor=\"middle\" font-size=\"15\">\(Markup.escape(Markup.singleLine(title)))</text>\n"
        for (index, x) in placed.sorted(by: { $0.node < $1.node }) {
            let node = tree.nodes[index]
            let boxWidth = Double(node.total) * scale
            let y = height - padding - 14 - Double(node.depth + 1) * rowHeight
            let name = Markup.singleLine(node.name)
            let share = Double(node.total) * 100 / Double(total)
            var samples = node.total == 1 ? "1 sample" : "\(node.total) samples"
            if node.waiting > node.runnable { samples += ", \(node.waiting - node.runnable) blocked" }
            if node.runnable > 0 { samples += ", \(node.runnable) runnable" }
            let allWaiting = index != 0 && node.waiting == node.total
            let fill =
                index == 0
                ? "rgb(200,200,200)" : allWaiting ? SVGFlameGraphRenderer.waitingColour : SVGFlameGraphRenderer.colour(for: node.name, async: asyncNames.contains(node.name))
            out += "<g><title>\(Markup.escape(name)) (\(samples), \(fmt(share, digits: 2))%)</title>"
            out += "<rect x=\"\(fmt(x))\" y=\"\(fmt(y))\" width=\"\(fmt(boxWidth))\" height=\"\(fmt(rowHeight - 1))\" "
            out += "fill=\"\(fill)\" rx=\"2\"/>"
            let label = SVGFlameGraphRenderer.label(name, fitting: boxWidth)
            if !label.isEmpty {
                out += "<text x=\"\(fmt(x + 3))\" y=\"\(fmt(y + rowHeight - 4.5))\">\(Markup.escape(label))</text>"
            }
            out += "</g>\n"
        }
        out += "</svg>\n"
        return out
    }

    /// `Liftoff flame graph: <program> (<n> running samples)`, or `(<n> samples, wall clock)`.
    static func defaultTitle(_ profile: Profile, samples selection: Profile.SampleSelection = .cpu) -> String {
        let program = ReportText.programName(profile)
        let samples: String
        switch selection {
        case .cpu: samples = ReportText.count(profile.samples.runningCount, "running sample")
        case .wall: samples = ReportText.count(profile.samples.totalTicks, "sample") + ", wall clock"
        }
        return "Liftoff flame graph" + (program.map { ": \($0)" } ?? "") + " (\(samples))"
    }

    /// A colour derived from the name (FNV-1a), the same for the same name everywhere: warm, or
    /// cool for a Swift async function of a task's logical stack.
    public static func colour(for name: String, async: Bool = false) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        if async {
            return "rgb(\(80 + Int(hash % 60)),\(150 + Int((hash >> 8) % 70)),\(205 + Int((hash >> 16) % 50)))"
        }
        let red = 205 + Int(hash % 50)
        let green = Int((hash >> 8) % 230)
        let blue = Int((hash >> 16) % 55)
        return "rgb(\(red),\(green),\(blue))"
    }

    /// As much of the name as fits in `width` pixels at about 7 pixels a character.
    static func label(_ name: String, fitting width: Double) -> String {
        let characters = Int((width - 6) / 7)
        guard characters >= 3 else { return "" }
        if name.count <= characters { return name }
        return String(name.prefix(characters - 2)) + ".."
    }
}

/// Fixed-point text for a number, without a trailing `.0` unless `fixed`: stable across platforms.
package func fmt(_ value: Double, digits: Int = 1, fixed: Bool = false) -> String {
    guard value.isFinite else { return value.isNaN ? "nan" : (value < 0 ? "-inf" : "inf") }
    var factor: Double = 1
    for _ in 0..<digits { factor *= 10 }
    let scaled = (value.magnitude * factor).rounded()
    guard scaled < 9.0e18 else { return String(value) }
    let whole = UInt64(scaled) / UInt64(factor)
    var fraction = UInt64(scaled) % UInt64(factor)
    let sign = value < 0 && scaled > 0 ? "-" : ""
    var width = digits
    if !fixed {
        if fraction == 0 { return sign + String(whole) }
        while fraction % 10 == 0 {
            fraction /= 10
            width -= 1
        }
    }
    guard width > 0 else { return sign + String(whole) }
    var text = String(fraction)
    while text.count < width { text = "0" + text }
    return sign + String(whole) + "." + text
}
