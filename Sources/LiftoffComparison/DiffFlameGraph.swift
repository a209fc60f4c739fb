import LiftoffAnalysis
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
    /// thread's, while it ran), to see where one span's time went. Each profile's call tree
    /// (`FlameTree`) is added to its side, path by path.
    public init(base: [Profile], head: [Profile], span: String? = nil) {
        nodes = [Node(name: "all", base: 0, head: 0, depth: 0, children: [])]
        var index: [Key: Int] = [:]
        for (isHead, profiles) in [(false, base), (true, head)] {
            for profile in profiles where profile.metadata.samplingRateHz > 0 {
                let msPerTick = 1000.0 / Double(profile.metadata.samplingRateHz) / Double(profiles.count)
                var chosen: [Bool]? = nil
                if let span {
                    var flags = [Bool](repeating: false, count: profile.samples.count)
                    for sample in profile.sampleIndices(inSpansNamed: span) { flags[sample] = true }
                    chosen = flags
                }
                // CPU: running samples only, so waits do not pose as work that grew.
                let tree = FlameTree(profile: profile, samples: .cpu, includeSample: chosen.map { flags in { flags[$0] } })
                add(tree, msPerTick: msPerTick, toHead: isHead, index: &index)
            }
        }
        let names = nodes.map(\.name)
        for at in nodes.indices where nodes[at].children.count > 1 {
            nodes[at].children.sort { names[$0] < names[$1] }
        }
    }

    private mutating func add(_ tree: FlameTree, msPerTick: Double, toHead: Bool, index: inout [Key: Int]) {
        var pending: [(from: Int, to: Int)] = [(0, 0)]
        while let (from, to) = pending.popLast() {
            let amount = Double(tree.nodes[from].total) * msPerTick
            if toHead { nodes[to].head += amount } else { nodes[to].base += amount }
            for child in tree.nodes[from].children {
                pending.append((child, self.child(of: to, named: tree.nodes[child].name, index: &index)))
            }
        }
    }

    private mutating func child(of parent: Int, named name: String, index: inout [Key: Int]) -> Int {
        let key = Key(parent: parent, name: name)
        if let known = index[key] { return known }
        nodes.append(Node(name: name, base: 0, head: 0, depth: nodes[parent].depth + 1, children: []))
        nodes[parent].children.append(nodes.count - 1)
        index[key] = nodes.count - 1
        return nodes.count - 1
    }

    private struct Key: Hashable {
        var parent: Int
        var name: String
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
