import ArgumentParser

/// Splits a command line into words like a POSIX shell does for quotes and backslashes, without
/// expanding anything: how `liftoff record --baseline 'CMD …'` reads its command.
public enum ShellWords {
    /// `words` as one command line a shell (and ``split(_:)``) splits back into them: each word
    /// in single quotes, a quote inside as `'\''`, scalar by scalar (a quote may carry a
    /// combining mark).
    public static func quote(_ words: [String]) -> String {
        words.map { word in
            var view = String.UnicodeScalarView()
            view.append("'")
            for scalar in word.unicodeScalars {
                if scalar == "'" { view.append(contentsOf: #"'\''"#.unicodeScalars) } else { view.append(scalar) }
            }
            view.append("'")
            return String(view)
        }.joined(separator: " ")
    }

    /// The words of `text`.
    /// - Throws: `ValidationError` for an unclosed quote or a trailing lone backslash.
    public static func split(_ text: String) throws -> [String] {
        // Unicode scalars, not characters: a quote followed by a combining mark is one Swift
        // character, but to a shell it is still a quote.
        var words: [String] = []
        var current = String.UnicodeScalarView()
        var inWord = false
        var quote: Unicode.Scalar?
        var escaped = false
        var escapedInQuotes = false
        for character in text.unicodeScalars {
            if escaped {
                current.append(character)
                escaped = false
                continue
            }
            if escapedInQuotes {
                if !"$`\"\\\n".unicodeScalars.contains(character) { current.append("\\") }
                current.append(character)
                escapedInQuotes = false
                continue
            }
            switch (quote, character) {
            case (nil, "\\"):
                escaped = true
                inWord = true
            case ("\"", "\\"):
                // Inside double quotes a backslash escapes only $, `, ", \ and a newline.
                escapedInQuotes = true
            case (nil, "'"), (nil, "\""):
                quote = character
                inWord = true
            case ("'", "'"), ("\"", "\""):
                quote = nil
            case (nil, _) where character.properties.isWhitespace:
                if inWord { words.append(String(current)) }
                current = String.UnicodeScalarView()
                inWord = false
            default:
                current.append(character)
                inWord = true
            }
        }
        if quote != nil { throw ValidationError("The command '\(text)' has an unclosed quote.") }
        if escaped || escapedInQuotes { throw ValidationError("The command '\(text)' ends with a lone backslash.") }
        if inWord { words.append(String(current)) }
        return words
    }
}
