/// A script of system events for `liftoff simulate`: one step per line, or several on a line
/// separated by `;`. `#` starts a comment.
///
/// Steps: `launch`, `launch-background REASON`, `home`, `interrupt`, `interrupt-end`,
/// `foreground`, `purge`, `kill`, `terminate`, `tap X Y`, `wait MS`, `background-task NAME MS`.
public struct Scenario: Sendable, Equatable {
    /// One step.
    public enum Step: Sendable, Equatable {
        /// Deliver a system event.
        case event(SystemEvent)
        /// Let `milliseconds` of clock time pass.
        case wait(milliseconds: UInt64)
        /// The app begins a background task that ends after `milliseconds`.
        case backgroundTask(name: String, milliseconds: UInt64)
    }

    /// A step with where it came from.
    public struct Line: Sendable, Equatable {
        /// 1-based line number in the script.
        public var number: Int
        /// The step's text.
        public var text: String
        /// The step.
        public var step: Step
    }

    /// The steps, in order.
    public var lines: [Line]

    /// A mistake in a scenario: the line, the word, and what is wrong.
    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        /// 1-based line number.
        public var line: Int
        /// The offending word.
        public var word: String
        /// One sentence.
        public var description: String
    }

    /// The longest wait or task a script may name, in milliseconds (about 104 days), so that
    /// the clock's arithmetic stays exact.
    public static let maximumMilliseconds: UInt64 = Profile.maximumNs / 1_000_000

    /// Parses a script.
    /// - Throws: ``ParseError`` for the first bad step, naming its line and word.
    public static func parse(_ text: String) throws -> Scenario {
        var lines: [Line] = []
        // A byte-order mark and Windows (CRLF) or old Mac (CR) line ends are accepted: Swift
        // reads "\r\n" as one character, so lines are split at any line end.
        let body = text.hasPrefix("\u{FEFF}") ? Substring(text.dropFirst()) : Substring(text)
        for (offset, rawLine) in body.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let number = offset + 1
            let content = rawLine.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            for part in content.split(separator: ";") {
                let words = part.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" }).map(String.init)
                guard let head = words.first else { continue }
                let step = try parseStep(head, Array(words.dropFirst()), line: number)
                lines.append(Line(number: number, text: words.joined(separator: " "), step: step))
            }
        }
        return Scenario(lines: lines)
    }

    private static func parseStep(_ word: String, _ arguments: [String], line: Int) throws -> Step {
        func fail(_ offending: String, _ message: String) -> ParseError {
            ParseError(line: line, word: offending, description: "Line \(line): \(message)")
        }
        func expect(_ count: Int, _ usage: String) throws {
            guard arguments.count == count else {
                throw fail(word, "'\(word)' takes \(count == 0 ? "no arguments" : usage), not '\(arguments.joined(separator: " "))'.")
            }
        }
        func milliseconds(_ text: String) throws -> UInt64 {
            guard let value = UInt64(text) else {
                throw fail(text, "'\(text)' is not a whole number of milliseconds.")
            }
            guard value <= Scenario.maximumMilliseconds else {
                throw fail(
                    text,
                    "\(text) ms is longer than a simulation goes (at most \(Scenario.maximumMilliseconds) ms, about 104 days).")
            }
            return value
        }
        func coordinate(_ text: String) throws -> Double {
            guard let value = Double(text), value.isFinite else { throw fail(text, "'\(text)' is not a coordinate.") }
            return value
        }
        switch word {
        case "launch":
            try expect(0, "")
            return .event(.launch(LaunchOptions(reason: .user)))
        case "launch-background":
            try expect(1, "a reason, such as 'location' or 'remote-notification'")
            return .event(.launch(LaunchOptions(reason: .init(backgroundWord: arguments[0]))))
        case "home":
            try expect(0, "")
            return .event(.userLeaves)
        case "interrupt":
            try expect(0, "")
            return .event(.interruptionBegan)
        case "interrupt-end":
            try expect(0, "")
            return .event(.interruptionEnded)
        case "foreground":
            try expect(0, "")
            return .event(.returnToForeground)
        case "purge":
            try expect(0, "")
            return .event(.memoryPurge)
        case "kill":
            try expect(0, "")
            return .event(.userKill)
        case "terminate":
            try expect(0, "")
            return .event(.systemTerminate)
        case "tap":
            try expect(2, "two coordinates, X and Y")
            return .event(.tap(Point(x: try coordinate(arguments[0]), y: try coordinate(arguments[1]))))
        case "wait":
            try expect(1, "a number of milliseconds")
            return .wait(milliseconds: try milliseconds(arguments[0]))
        case "background-task":
            try expect(2, "a name and a number of milliseconds")
            return .backgroundTask(name: arguments[0], milliseconds: try milliseconds(arguments[1]))
        default:
            throw fail(
                word,
                "unknown step '\(word)'; steps are launch, launch-background, home, interrupt, interrupt-end, "
                    + "foreground, purge, kill, terminate, tap, wait, background-task.")
        }
    }
}
