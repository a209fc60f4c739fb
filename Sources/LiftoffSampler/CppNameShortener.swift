/// Short names for demangled C++ functions, read the way Swift's simplified names are: the
/// qualified name without template arguments, parameter types, return type or qualifiers.
///
/// `bool swift::RefCounts<swift::RefCountBitsT<(swift::RefCountInlinedness)1> >::doDecrementSlow<(swift::PerformDeinit)1>(swift::RefCountBitsT<…>, unsigned int)`
/// reads `swift::RefCounts<…>::doDecrementSlow<…>(…)`; `std::__1::` and the Swift runtime's
/// private namespaces (`__swift::__runtime::`) are left out.
package enum CppNameShortener {
    /// Whether a symbol is a mangled C++ name (Itanium ABI).
    static func isCpp(_ mangled: String) -> Bool { mangled.hasPrefix("_Z") }

    /// Inline and private namespaces that say nothing a reader needs.
    private static let hiddenNamespaces: Set<Substring> = ["__1", "__2", "__cxx11", "__swift", "__runtime"]

    /// The short form of a demangled C++ function name, or nil when it has nothing to shorten
    /// (no parameter list, or already short).
    package static func shortName(_ name: String) -> String? {
        let characters = Array(name.utf8)
        guard characters.contains(UInt8(ascii: "(")), characters.count < 65_536 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(min(characters.count, 256))
        var index = 0
        var sawParameters = false
        while index < characters.count {
            let character = characters[index]
            if starts(characters, at: index, with: "(anonymous namespace)") {
                output += Array("(anonymous namespace)".utf8)
                index += "(anonymous namespace)".utf8.count
                continue
            }
            if isOperatorStart(characters, at: index) {
                index = copyOperator(characters, from: index, into: &output)
                continue
            }
            switch character {
            case UInt8(ascii: "{"):
                // `{lambda(int)#1}` names a lambda: kept whole.
                guard let end = characters[index...].firstIndex(of: UInt8(ascii: "}")) else { return nil }
                output += characters[index...end]
                index = end + 1
            case UInt8(ascii: "<"):
                guard let end = closing(characters, from: index) else { return nil }
                output += Array("<…>".utf8)
                index = end + 1
            case UInt8(ascii: "("):
                guard let end = closing(characters, from: index) else { return nil }
                output += Array((end == index + 1 ? "()" : "(…)").utf8)
                index = end + 1
                sawParameters = true
                // A parameter list followed by a scope (`f(int)::$_2::operator()`) goes on; after
                // the last one come qualifiers (` const`, ` &&`, ` [clone .cold]`): left out.
                if !starts(characters, at: index, with: "::") { index = characters.count }
            case UInt8(ascii: " "):
                // A space at the top level before the parameters ends a return type
                // (`bool swift::RefCounts<…>::…`): what came before it is dropped.
                output.removeAll(keepingCapacity: true)
                index += 1
            default:
                output.append(character)
                index += 1
            }
        }
        guard sawParameters else { return nil }
        let short = String(decoding: output, as: UTF8.self)
            .split(separator: "::", omittingEmptySubsequences: false)
            .enumerated().filter { position, part in position == 0 && part.isEmpty || !hiddenNamespaces.contains(part) }
            .map(\.element).joined(separator: "::")
        return short == name || short.isEmpty ? nil : short
    }

    private static func starts(_ characters: [UInt8], at index: Int, with text: String) -> Bool {
        let bytes = Array(text.utf8)
        return index + bytes.count <= characters.count && Array(characters[index..<(index + bytes.count)]) == bytes
    }

    /// `operator` as a word: at the start, or after `::` or a space.
    private static func isOperatorStart(_ characters: [UInt8], at index: Int) -> Bool {
        guard starts(characters, at: index, with: "operator") else { return false }
        if index > 0, characters[index - 1] != UInt8(ascii: ":"), characters[index - 1] != UInt8(ascii: " ") { return false }
        let next = index + 8 < characters.count ? characters[index + 8] : 0
        let isIdentifier = (next >= UInt8(ascii: "a") && next <= UInt8(ascii: "z")) || (next >= UInt8(ascii: "A") && next <= UInt8(ascii: "Z"))
            || (next >= UInt8(ascii: "0") && next <= UInt8(ascii: "9")) || next == UInt8(ascii: "_")
        return !isIdentifier
    }

    /// Copies `operator` and its symbol (`<<`, `()`, `[]`, ` new`, ` bool`), whose brackets are
    /// not brackets; returns the index after it.
    private static func copyOperator(_ characters: [UInt8], from start: Int, into output: inout [UInt8]) -> Int {
        var index = start + 8
        output += Array("operator".utf8)
        if starts(characters, at: index, with: "()") || starts(characters, at: index, with: "[]") {
            output += characters[index..<(index + 2)]
            return index + 2
        }
        if index < characters.count, characters[index] == UInt8(ascii: " ") {
            // `operator new`, `operator delete[]`, a conversion `operator bool`: a word.
            output.append(UInt8(ascii: " "))
            index += 1
            while index < characters.count, characters[index] != UInt8(ascii: "("), characters[index] != UInt8(ascii: "<") {
                output.append(characters[index])
                index += 1
            }
            return index
        }
        let symbols = Set("+-*/%^&|~!=<>,".utf8)
        while index < characters.count, symbols.contains(characters[index]) {
            output.append(characters[index])
            index += 1
        }
        // `operator< <int>(…)`: the space only keeps the operator apart from its template arguments.
        if starts(characters, at: index, with: " <") { index += 1 }
        return index
    }

    /// The index of the bracket that closes the one at `start` (`<` or `(`), counting both kinds.
    private static func closing(_ characters: [UInt8], from start: Int) -> Int? {
        var depth = 0
        var index = start
        while index < characters.count {
            switch characters[index] {
            case UInt8(ascii: "<"), UInt8(ascii: "("): depth += 1
            case UInt8(ascii: ">"), UInt8(ascii: ")"):
                depth -= 1
                if depth == 0 { return index }
            default: break
            }
            // Inside a bracket an operator's symbols are not brackets (`std::less<>::operator()`).
            if index > start, isOperatorStart(characters, at: index) {
                var skipped: [UInt8] = []
                index = copyOperator(characters, from: index, into: &skipped)
                continue
            }
            index += 1
        }
        return nil
    }
}
