import LiftoffProfile

/// The functions a hang's sampled stacks have in common, the most telling first; Liftoff's own
/// frames (its run loop, the watcher) are left out.
package struct HangDigest {
    /// A function and the number of the hang's stacks it appears in.
    package struct Entry: Equatable {
        package var name: String
        package var count: Int
        /// The function's `File.swift:42`, when the profile has it.
        package var location: String? = nil
    }

    /// Functions by the number of stacks containing them, most first; among equals, the one
    /// deeper in the stacks first, so the innermost function the hang stayed in leads.
    package var topFrames: [Entry]

    package init(_ hang: Profile.HangRecord, in profile: Profile, limit: Int = 5) {
        var counts: [String: (count: Int, depth: Int)] = [:]
        var locations: [String: String] = [:]
        for stack in hang.stacks where stack >= 0 && stack < profile.stacks.count {
            var seen = Set<String>()
            for (depth, frame) in profile.frameIndices(ofStack: stack).enumerated() {
                // Liftoff's run loop is in every hang's stacks: what the hang stayed in is the user's.
                guard !profile.frames[frame].isLiftoff else { continue }
                let name = profile.frames[frame].displayName
                guard seen.insert(name).inserted else { continue }
                if locations[name] == nil, let location = profile.frames[frame].location { locations[name] = location }
                counts[name, default: (0, 0)].count += 1
                counts[name, default: (0, 0)].depth += depth
            }
        }
        topFrames = counts.sorted { left, right in
            let leftDepth = Double(left.value.depth) / Double(left.value.count)
            let rightDepth = Double(right.value.depth) / Double(right.value.count)
            return (left.value.count, leftDepth, right.key) > (right.value.count, rightDepth, left.key)
        }
        .prefix(limit)
        .map { Entry(name: $0.key, count: $0.value.count, location: locations[$0.key]) }
    }
}

extension Profile.HangRecord {
    /// When the hang ended (saturating, so a corrupt duration cannot overflow).
    package var endNs: UInt64 {
        let (sum, overflow) = startNs.addingReportingOverflow(durationNs)
        return overflow ? .max : sum
    }
}
