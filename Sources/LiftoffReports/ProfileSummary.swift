import LiftoffProfile

/// Numbers a person reads first: samples per thread and the functions with the most self time.
public struct ProfileSummary: Sendable, Equatable {
    /// A function and the samples whose leaf it was.
    public struct Entry: Sendable, Equatable {
        /// Frame name.
        public var name: String
        /// Samples with this function as the leaf.
        public var selfSamples: Int
        /// Share of all samples, 0 ... 1.
        public var share: Double
    }

    /// All samples.
    public var samples: Int
    /// Samples lost because the ring was full.
    public var dropped: Int
    /// Samples per thread label (`name (tid)`), in the profile's thread order.
    public var samplesPerThread: [(label: String, samples: Int)]
    /// Functions by self samples, most first (ties by name).
    public var topSelf: [Entry]

    /// Summarizes `profile`, keeping the `limit` top functions.
    public init(_ profile: Profile, limit: Int = 10) {
        samples = profile.samples.count
        dropped = profile.counts.dropped
        var perThread: [Int: Int] = [:]
        var selfByName: [String: Int] = [:]
        for index in 0..<profile.samples.count {
            perThread[profile.samples.thread[index], default: 0] += 1
            let frame = profile.frames[profile.stacks.frame[profile.samples.stack[index]]]
            selfByName[frame.name, default: 0] += 1
        }
        samplesPerThread = profile.threads.map { (FlameTree.threadLabel($0), perThread[$0.id] ?? 0) }
        let total = max(samples, 1)
        topSelf = selfByName.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
            .prefix(limit)
            .map { Entry(name: $0.key, selfSamples: $0.value, share: Double($0.value) / Double(total)) }
    }

    public static func == (lhs: ProfileSummary, rhs: ProfileSummary) -> Bool {
        lhs.samples == rhs.samples && lhs.dropped == rhs.dropped && lhs.topSelf == rhs.topSelf
            && lhs.samplesPerThread.map(\.label) == rhs.samplesPerThread.map(\.label)
            && lhs.samplesPerThread.map(\.samples) == rhs.samplesPerThread.map(\.samples)
    }
}
