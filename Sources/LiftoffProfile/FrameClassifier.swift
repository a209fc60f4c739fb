import Foundation

/// Tells a library's own frames from the program's, by function name: reports fold a library's
/// frames away from the top of a violation's or a hang's stack, so that it points at the caller.
///
/// ```swift
/// let classifier = FrameClassifier(modules: ["MyKit"], cPrefixes: ["mk_"])
/// classifier.owns("MyKit.Store.load() -> ()")  // true
/// ```
public struct FrameClassifier: Sendable, Equatable {
    /// The Swift modules whose functions are the library's own.
    public var modules: Set<String>
    /// Prefixes of the library's C functions.
    public var cPrefixes: [String]

    /// Creates a classifier for the functions of `modules` and the C functions that start with one of `cPrefixes`.
    public init(modules: Set<String>, cPrefixes: [String] = []) {
        self.modules = modules
        self.cPrefixes = cPrefixes
    }

    /// Liftoff's own code: every module of the package and its C sampler (`lo_…`).
    public static let liftoff = FrameClassifier(
        modules: [
            "Liftoff", "LiftoffSampler", "LiftoffTesting", "LiftoffProfile", "LiftoffReports", "LiftoffTracing",
            "LiftoffLogging", "LiftoffServiceLifecycle", "LiftoffPprof", "LiftoffCLI",
        ],
        cPrefixes: ["lo_"])

    /// Whether the full (demangled) function name `name` is the library's: a C function with one
    /// of its prefixes, or a function whose qualified name (before its parameters; parameter types
    /// do not count) is in one of its modules, itself or in a closure or extension.
    public func owns(_ name: String) -> Bool {
        if cPrefixes.contains(where: { name.hasPrefix($0) }) { return true }
        // Most names hold none of the modules at all: told by their bytes before any parsing.
        guard modules.contains(where: { Self.utf8(of: name, contains: $0) }) else { return false }
        var head = Substring(name)
        if head.hasPrefix("(extension in "), let close = head.firstIndex(of: ")") {
            head = head[head.index(after: close)...]
        }
        head = Self.droppingClosureSignatures(head)
        head = head[..<(head.firstIndex(of: "(") ?? head.endIndex)]
        // A module name starts the qualified name, or follows a space (`closure #1 in M.f`,
        // `static M.T.f`) or a `:` (`generic specialization <…> of M.f`).
        var start = head.startIndex
        while start < head.endIndex {
            let word = head[start...].prefix { $0 != "." && $0 != " " && $0 != ":" && $0 != "<" }
            let end = word.endIndex
            if end < head.endIndex, head[end] == ".", modules.contains(String(word)) {
                let boundary = start == head.startIndex || [" ", ":"].contains(head[head.index(before: start)])
                if boundary { return true }
            }
            start = end < head.endIndex ? head.index(after: end) : end
        }
        return false
    }

    /// Whether `text` holds `word`, byte for byte.
    static func utf8(of text: String, contains word: String) -> Bool {
        var (text, word) = (text, word)
        return text.withUTF8 { bytes in word.withUTF8 { word in ByteSearch.find(word, in: bytes) } }
    }

    /// `closure #1 (inout M.State) -> [M.Frame] in M.T.f(x: Int)` as `M.T.f(x: Int)`: a closure's
    /// signature comes before the function it is in, and its parameter types say nothing about
    /// whose code it is.
    static func droppingClosureSignatures(_ name: Substring) -> Substring {
        var rest = name
        while rest.hasPrefix("closure #") || rest.hasPrefix("implicit closure #") {
            var depth = 0
            var index = rest.startIndex
            var next: Substring.Index?
            while index < rest.endIndex {
                switch rest[index] {
                case "(", "<", "[": depth += 1
                case ")", ">", "]": depth = max(0, depth - 1)
                case " " where depth == 0 && rest[index...].hasPrefix(" in "):
                    next = rest.index(index, offsetBy: 4)
                default: break
                }
                if next != nil { break }
                index = rest.index(after: index)
            }
            guard let next else { return rest }
            rest = rest[next...]
        }
        return rest
    }
}

/// Finding words in the bytes of names.
package enum ByteSearch {
    /// Whether `bytes` holds `word`.
    package static func find(_ word: UnsafeBufferPointer<UInt8>, in bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let first = word.first, word.count <= bytes.count, let base = bytes.baseAddress else { return word.isEmpty }
        var start = 0
        let last = bytes.count - word.count
        while start <= last {
            // The C library's memchr finds the next candidate a vector at a time.
            guard let found = memchr(base + start, Int32(first), last - start + 1) else { return false }
            start = UnsafeRawPointer(found) - UnsafeRawPointer(base)
            var offset = 1
            while offset < word.count, bytes[start + offset] == word[offset] { offset += 1 }
            if offset == word.count { return true }
            start += 1
        }
        return false
    }
}
