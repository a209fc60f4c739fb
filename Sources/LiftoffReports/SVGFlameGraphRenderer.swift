import LiftoffAnalysis
import LiftoffProfile

/// Renders a self-contained SVG flame graph: one box per function and call path, width
/// proportional to samples, callers below callees, siblings sorted by name. Hovering a box
/// shows its name, sample count and share (an SVG `<title>`, so no script is needed). Colours
/// come from a hash of the name (``FlameColour``), so a function keeps its colour across renders.
/// Every name is XML-escaped.
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

    /// The SVG document for a flame tree; boxes named in `asyncNames` (Swift async functions of a
    /// task's logical stack) get cool colours.
    public func render(_ tree: FlameTree, title: String, asyncNames: Set<String> = []) -> String {
        let total = max(tree.totalSamples, 1)
        let svg = FlameSVG(width: width, rowHeight: rowHeight, minimumWidth: minimumWidth)
        let boxes = svg.place(
            root: 0, weight: { Double(tree.nodes[$0].total) }, children: { tree.nodes[$0].children },
            depth: { tree.nodes[$0].depth })
        return svg.document(title: title, boxes: boxes, footer: 14) { index in
            let node = tree.nodes[index]
            var samples = ReportText.count(node.total, "sample")
            let blocked = node.waiting - node.runnable - node.disk
            if blocked > 0 { samples += ", \(blocked) blocked" }
            if node.runnable > 0 { samples += ", \(node.runnable) runnable" }
            if node.disk > 0 { samples += ", \(node.disk) waiting for the disk" }
            let share = fmt(Double(node.total) * 100 / Double(total), digits: 2)
            let fill =
                index == 0
                ? FlameColour.root
                : node.waiting == node.total ? FlameColour.waiting : FlameColour.of(node.name, async: asyncNames.contains(node.name))
            return (node.name, "\(node.name) (\(samples), \(share)%)", fill)
        }
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
}
