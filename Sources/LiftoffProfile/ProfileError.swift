/// Why a profile could not be read or written.
public struct ProfileError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure.
    public enum Code: String, Sendable, Equatable {
        /// The file could not be opened or read.
        case unreadable
        /// The file could not be written.
        case unwritable
        /// The file ends before the JSON document does.
        case truncated
        /// The file is not JSON, or not shaped like a profile.
        case malformed
        /// The file is a profile of another schema version, or of no schema at all.
        case wrongSchema
        /// The JSON parses but its tables contradict each other (an index out of range).
        case inconsistent
    }

    /// The kind of failure.
    public var code: Code
    /// One sentence saying what is wrong, for people.
    public var message: String
    /// The offending value: a path, a schema string, a field.
    public var value: String

    /// Creates an error.
    public init(_ code: Code, _ message: String, value: String = "") {
        self.code = code
        self.message = message
        self.value = value
    }

    public var description: String { message }
}
