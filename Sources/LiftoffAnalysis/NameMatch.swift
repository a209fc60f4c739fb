import LiftoffProfile

/// Whether a function name holds one of a set of words, compared as UTF-8 bytes: the insight
/// rules ask this of every frame of every profile a comparison reads, and Foundation's
/// `String.contains` (which `contains` resolves to wherever Foundation is imported) is far slower.
struct NameMatch: Sendable {
    private let words: [[UInt8]]

    init(_ words: [String]) {
        self.words = words.map { Array($0.utf8) }
    }

    /// Whether `name` contains any of the words.
    func matches(_ name: String) -> Bool {
        var name = name
        return name.withUTF8 { bytes in
            words.contains { word in word.withUnsafeBufferPointer { ByteSearch.find($0, in: bytes) } }
        }
    }
}
