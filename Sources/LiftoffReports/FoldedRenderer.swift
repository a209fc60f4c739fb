import LiftoffProfile

/// Renders folded stacks, the line format of Brendan Gregg's FlameGraph:
/// `root;caller;leaf count`, one line per distinct stack, integer counts, lines sorted.
///
/// Frame names are escaped so that every line splits the same way in any reader:
/// `%` becomes `%25`, `;` becomes `%3B`, control characters (newlines, tabs, C1 controls, the
/// Unicode line and paragraph separators) become `%XX` per UTF-8 byte,
/// and a space becomes a no-break space (U+00A0; a no-break space already in a name becomes
/// `%C2%A0`), so names never contain the separators and stay readable where they are shown.
/// An empty profile gives empty text.
public enum FoldedRenderer {
    /// Folded stacks of all threads merged, or of each thread under a root frame `name (tid)`.
    /// - Parameter samples: running samples only (CPU, the default) or every sample (wall clock).
    public static func render(
        _ profile: Profile, perThread: Bool = false, samples selection: Profile.SampleSelection = .cpu
    ) -> String {
        var counts: [Key: Int] = [:]
        for sample in 0..<profile.samples.count where selection.includes(profile.samples.state[sample]) {
            let key = Key(thread: perThread ? profile.samples.thread[sample] : 0, stack: profile.samples.stack[sample])
            counts[key, default: 0] += profile.samples.ticks(sample)
        }
        let labels = Dictionary(
            profile.threads.map { ($0.id, escape(FlameTree.threadLabel($0))) }, uniquingKeysWith: { first, _ in first })
        // Each frame's name is escaped once; each sampled stack's line is built by walking up
        // from its leaf, so the work is the size of the output, whatever the depth (prefixes
        // are not kept: a 10,000-frame stack would make them quadratic).
        var names = [String?](repeating: nil, count: profile.frames.count)
        func name(_ frameIndex: Int) -> String {
            if let known = names[frameIndex] { return known }
            // Inlined functions end in `_[i]`, as perf's stackcollapse marks them (flamegraph.pl colours them).
            let frame = profile.frames[frameIndex]
            let escaped = escape(frame.displayName) + (frame.isInlined ? "_[i]" : "")
            names[frameIndex] = escaped
            return escaped
        }
        func path(_ leaf: Int) -> String {
            var parts: [String] = []
            var stack = leaf
            while stack >= 0 {
                parts.append(name(profile.stacks.frame[stack]))
                stack = profile.stacks.parent[stack]
            }
            return parts.reversed().joined(separator: ";")
        }
        var lines: [String] = []
        lines.reserveCapacity(counts.count)
        var merged: [String: Int] = [:]
        for (key, count) in counts {
            var line = path(key.stack)
            if perThread { line = (labels[key.thread] ?? "thread \(key.thread)") + ";" + line }
            merged[line, default: 0] += count
        }
        for (line, count) in merged { lines.append("\(line) \(count)") }
        lines.sort()
        return lines.isEmpty ? "" : lines.joined(separator: "\n") + "\n"
    }

    /// Escapes one frame name for a folded line (see the type's documentation).
    public static func escape(_ name: String) -> String {
        var needsWork = false
        for scalar in name.unicodeScalars where scalar.value < 0x21 || scalar == "%" || scalar == ";"
            || (0x7F...0xA0).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029
        {
            needsWork = true
            break
        }
        guard needsWork else { return name }
        var result = ""
        result.unicodeScalars.reserveCapacity(name.unicodeScalars.count + 8)
        for scalar in name.unicodeScalars {
            switch scalar.value {
            case 0x20: result.unicodeScalars.append("\u{A0}")
            case 0xA0: result += "%C2%A0"
            case 0x25, 0x3B, 0x00..<0x20, 0x7F:
                result += "%" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16, uppercase: true)
            case 0x80...0x9F, 0x2028, 0x2029:
                // Unicode line breaks and C1 controls, as their UTF-8 bytes, so no reader splits on them.
                result += String(scalar).utf8.map { "%" + String($0, radix: 16, uppercase: true) }.joined()
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    private struct Key: Hashable {
        var thread: Int
        var stack: Int
    }
}
