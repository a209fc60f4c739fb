import LiftoffAnalysis
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
    /// Folded stacks of all threads merged, or of each thread under a root frame `name (tid)`:
    /// a line per node of the call tree (`FlameTree`) that has samples of its own.
    /// - Parameters:
    ///   - profile: the profile to fold.
    ///   - perThread: each thread's stacks under a root frame `name (tid)`, instead of merged.
    ///   - selection: (`samples:`) running samples only (CPU, the default) or every sample (wall clock).
    public static func render(
        _ profile: Profile, perThread: Bool = false, samples selection: Profile.SampleSelection = .cpu
    ) -> String {
        let tree = FlameTree(profile: profile, perThread: perThread, samples: selection)
        // Each node's name is escaped once; each line is built by walking up from its node, so
        // the work is the size of the output, whatever the depth (prefixes are not kept: a
        // 10,000-frame stack would make them quadratic).
        var names = [String?](repeating: nil, count: tree.nodes.count)
        func name(_ index: Int) -> String {
            if let known = names[index] { return known }
            // Inlined functions end in `_[i]`, as perf's stackcollapse marks them (flamegraph.pl colours them).
            let escaped = escape(tree.nodes[index].name) + (tree.nodes[index].isInlined ? "_[i]" : "")
            names[index] = escaped
            return escaped
        }
        var lines: [String] = []
        for index in tree.nodes.indices.dropFirst() where tree.nodes[index].selfCount > 0 {
            var parts: [String] = []
            var at = index
            while at > 0 {
                parts.append(name(at))
                at = tree.nodes[at].parent
            }
            lines.append(parts.reversed().joined(separator: ";") + " \(tree.nodes[index].selfCount)")
        }
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
}
