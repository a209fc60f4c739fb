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
            words.contains { word in Self.find(word, in: bytes) }
        }
    }

    private static func find(_ word: [UInt8], in bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let first = word.first, word.count <= bytes.count else { return word.isEmpty }
        var start = 0
        let last = bytes.count - word.count
        while start <= last {
            if bytes[start] == first {
                var offset = 1
                while offset < word.count, bytes[start + offset] == word[offset] { offset += 1 }
                if offset == word.count { return true }
            }
            start += 1
        }
        return false
    }
}
