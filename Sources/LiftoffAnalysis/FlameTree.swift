import LiftoffProfile

/// Samples merged into a call tree by frame name, weighted by their ticks: the one call tree that
/// every flame-style view draws (`flame.svg`, the HTML report's flame graph, folded stacks, the
/// differential flame graph).
///
/// Node 0 is the root. Children of a node are merged by name (an inlined copy of a function apart
/// from a called one) and kept sorted by name, so the same profile always gives the same tree.
public struct FlameTree: Sendable, Equatable {
    /// One function at one position in the call tree.
    public struct Node: Sendable, Equatable {
        /// Frame name (the root's is the tree's title).
        public var name: String
        /// Samples (ticks) in this node and below.
        public var total: Int
        /// Samples (ticks) whose leaf is this node.
        public var selfCount: Int
        /// Waiting samples in this node and below, blocked or runnable (part of ``total``).
        public var waiting: Int = 0
        /// Runnable samples in this node and below: preempted, waiting for a core (part of ``waiting``).
        public var runnable: Int = 0
        /// Samples in this node and below waiting for the disk (part of ``waiting``).
        public var disk: Int = 0
        /// The function was inlined into its caller here.
        public var isInlined = false
        /// Distance from the root (root = 0).
        public var depth: Int
        /// Parent node index (the root's is -1).
        public var parent: Int
        /// Child node indices, sorted by name.
        public var children: [Int]
    }

    /// The nodes; index 0 is the root.
    public private(set) var nodes: [Node]

    /// The root's total: samples in the tree.
    public var totalSamples: Int { nodes[0].total }

    /// Depth of the deepest node.
    public var maxDepth: Int { nodes.map(\.depth).max() ?? 0 }

    /// Builds the tree of a profile.
    /// - Parameters:
    ///   - profile: the profile whose samples make the tree.
    ///   - rootName: name of the root node.
    ///   - perThread: put each thread's samples under a node named after the thread.
    ///   - selection: (`samples:`) running samples only (CPU, the default) or every sample (wall clock).
    ///   - includeSample: which samples to count (by sample index); all when nil.
    public init(
        profile: Profile, rootName: String = "all", perThread: Bool = false,
        samples selection: Profile.SampleSelection = .cpu, includeSample: ((Int) -> Bool)? = nil
    ) {
        nodes = [Node(name: rootName, total: 0, selfCount: 0, depth: 0, parent: -1, children: [])]
        var childIndex: [ChildKey: Int] = [:]
        var threadBase: [Int: Int] = [:]
        var memo: [Int: [Int]] = [:]  // base node -> node of each stack under it (-1: not yet)
        let threadLabels = Dictionary(
            profile.threads.map { ($0.id, FlameTree.threadLabel($0)) }, uniquingKeysWith: { first, _ in first })

        func child(of parent: Int, named name: String, inlined: Bool = false) -> Int {
            let key = ChildKey(parent: parent, name: name, inlined: inlined)
            if let known = childIndex[key] { return known }
            nodes.append(
                Node(
                    name: name, total: 0, selfCount: 0, isInlined: inlined, depth: nodes[parent].depth + 1, parent: parent,
                    children: []))
            let index = nodes.count - 1
            nodes[parent].children.append(index)
            childIndex[key] = index
            return index
        }

        func node(forStack stack: Int, base: Int, _ known: inout [Int]) -> Int {
            if stack < 0 { return base }
            if known[stack] >= 0 { return known[stack] }
            let parent = node(forStack: profile.stacks.parent[stack], base: base, &known)
            let frame = profile.frames[profile.stacks.frame[stack]]
            let result = child(of: parent, named: frame.displayName, inlined: frame.isInlined)
            known[stack] = result
            return result
        }

        var waitingSelf: [Int: Int] = [:]
        var runnableSelf: [Int: Int] = [:]
        var diskSelf: [Int: Int] = [:]
        for sample in 0..<profile.samples.count {
            let state = profile.samples.state[sample]
            guard selection.includes(state) else { continue }
            if let includeSample, !includeSample(sample) { continue }
            var base = 0
            if perThread {
                let thread = profile.samples.thread[sample]
                if let known = threadBase[thread] {
                    base = known
                } else {
                    base = child(of: 0, named: threadLabels[thread] ?? "thread \(thread)")
                    threadBase[thread] = base
                }
            }
            var known = memo.removeValue(forKey: base) ?? [Int](repeating: -1, count: profile.stacks.count)
            let leaf = node(forStack: profile.samples.stack[sample], base: base, &known)
            memo[base] = known
            let ticks = profile.samples.ticks(sample)
            nodes[leaf].selfCount += ticks
            if state.isWaiting { waitingSelf[leaf, default: 0] += ticks }
            if state == .runnable { runnableSelf[leaf, default: 0] += ticks }
            if state == .disk { diskSelf[leaf, default: 0] += ticks }
        }
        // Totals: children always have larger indices than their parents.
        for index in nodes.indices {
            nodes[index].total = nodes[index].selfCount
            nodes[index].waiting = waitingSelf[index] ?? 0
            nodes[index].runnable = runnableSelf[index] ?? 0
            nodes[index].disk = diskSelf[index] ?? 0
        }
        for index in stride(from: nodes.count - 1, to: 0, by: -1) {
            nodes[nodes[index].parent].total += nodes[index].total
            nodes[nodes[index].parent].waiting += nodes[index].waiting
            nodes[nodes[index].parent].runnable += nodes[index].runnable
            nodes[nodes[index].parent].disk += nodes[index].disk
        }
        for index in nodes.indices where nodes[index].children.count > 1 {
            let sorted = nodes[index].children.sorted {
                (nodes[$0].name, nodes[$0].isInlined ? 1 : 0) < (nodes[$1].name, nodes[$1].isInlined ? 1 : 0)
            }
            nodes[index].children = sorted
        }
    }

    /// How a thread is named where one node stands for it: `name (tid)`.
    public static func threadLabel(_ thread: Profile.ThreadInfo) -> String {
        "\(thread.name) (\(thread.id))"
    }

    private struct ChildKey: Hashable {
        var parent: Int
        var name: String
        var inlined: Bool
    }
}
