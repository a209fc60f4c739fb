import Foundation

/// Where a history's entries are kept.
public protocol HistoryStore: Sendable {
    /// Adds an entry; adding the same commit in the same environment again replaces it.
    func add(_ entry: HistoryEntry) throws
    /// Every readable entry, and one sentence per entry that could not be read (skipped).
    func load() throws -> (entries: [HistoryEntry], skipped: [String])
}

/// A folder of one JSON file per entry, `COMMIT-ENVIRONMENT.json`: written whole (to a temporary
/// file, then renamed), never edited, so the folder can live on a git branch and merge.
public struct FolderHistoryStore: HistoryStore {
    /// The folder.
    public var folder: URL
    /// The largest entry file read, in bytes: a larger one is skipped.
    public static let maximumEntryBytes = 8 << 20

    /// A store in `folder` (created on the first add).
    public init(folder: URL) { self.folder = folder }

    /// The file name of an entry: its commit (letters, digits, `-`, `_` and `.` only) and environment key.
    static func fileName(_ entry: HistoryEntry) throws -> String {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
        guard !entry.commit.isEmpty, entry.commit.count <= 200, entry.commit.allSatisfy(allowed.contains), !entry.commit.hasPrefix(".")
        else {
            throw HistoryError("'\(entry.commit)' is not a commit name: use letters, digits, '-', '_' and '.' (a SHA, a tag).")
        }
        return "\(entry.commit)-\(entry.environment.key).json"
    }

    public func add(_ entry: HistoryEntry) throws {
        var entry = entry
        let name = try Self.fileName(entry)
        // Added again: it keeps its place in the order of same-time commits, so the file is the same.
        if let data = try? Data(contentsOf: folder.appendingPathComponent(name)),
            let existing = try? HistoryEntry.decode(data, source: name), existing.recorded != nil
        {
            entry.recorded = existing.recorded
        }
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw HistoryError("Could not create the history folder \(folder.path): \(error.localizedDescription)")
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(entry) + Data("\n".utf8)
        let target = folder.appendingPathComponent(name)
        do {
            try data.write(to: target, options: .atomic)
        } catch {
            throw HistoryError("Could not write \(target.path): \(error.localizedDescription)")
        }
    }

    public func load() throws -> (entries: [HistoryEntry], skipped: [String]) {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isFolder) else {
            throw HistoryError("\(folder.path) does not exist: add an entry first (liftoff history add).")
        }
        guard isFolder.boolValue else { throw HistoryError("\(folder.path) is not a folder of history entries.") }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        var entries: [HistoryEntry] = []
        var skipped: [String] = []
        for name in names.sorted() where name.hasSuffix(".json") {
            let url = folder.appendingPathComponent(name)
            do {
                let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
                if let size = attributes[.size] as? Int, size > Self.maximumEntryBytes {
                    skipped.append("\(url.path) is larger than \(Self.maximumEntryBytes >> 20) MB: skipped.")
                    continue
                }
                entries.append(try HistoryEntry.decode(Data(contentsOf: url), source: url.path))
            } catch let error as HistoryError {
                skipped.append(error.description)
            } catch {
                skipped.append("\(url.path) could not be read (\(error.localizedDescription)): skipped.")
            }
        }
        return (entries, skipped)
    }
}

extension HistoryEntry {
    /// The order of a series: by the commit's time, then by when the entries were added, then by commit.
    public static func inSeriesOrder(_ left: HistoryEntry, _ right: HistoryEntry) -> Bool {
        let (a, b) = (HistoryTime.parse(left.time) ?? 0, HistoryTime.parse(right.time) ?? 0)
        if a != b { return a < b }
        let (c, d) = (left.recorded.flatMap(HistoryTime.parse) ?? 0, right.recorded.flatMap(HistoryTime.parse) ?? 0)
        if c != d { return c < d }
        return left.commit < right.commit
    }

    /// An entry from its JSON, checked: its schema, a commit, a time, and finite metrics.
    public static func decode(_ data: Data, source: String) throws -> HistoryEntry {
        let entry: HistoryEntry
        do {
            entry = try JSONDecoder().decode(HistoryEntry.self, from: data)
        } catch {
            throw HistoryError("\(source) is not a history entry (\(Self.reason(error))): skipped.")
        }
        guard entry.schema == currentSchema else {
            throw HistoryError("\(source) has schema \(entry.schema); this liftoff reads \(currentSchema) only: skipped.")
        }
        guard !entry.commit.isEmpty, HistoryTime.parse(entry.time) != nil else {
            throw HistoryError("\(source) has no commit or no time that is ISO 8601: skipped.")
        }
        guard entry.metrics.values.allSatisfy(\.isFinite), entry.functions.allSatisfy({ $0.ms.isFinite }) else {
            throw HistoryError("\(source) has a metric that is not a finite number: skipped.")
        }
        return entry
    }

    private static func reason(_ error: Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): return "no \(key.stringValue)"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            return "wrong type at \(context.codingPath.map(\.stringValue).joined(separator: "."))"
        case DecodingError.dataCorrupted: return "not JSON"
        default: return "unreadable"
        }
    }
}

/// Times of entries: ISO 8601 in UTC, with or without fractional seconds.
public enum HistoryTime {
    /// The seconds since 1970 of an ISO 8601 time, or of a number of seconds since 1970; nil otherwise.
    public static func parse(_ text: String) -> Double? {
        if let seconds = Double(text), seconds.isFinite, seconds >= 0, seconds < 1e11 { return seconds }
        let plain = ISO8601DateFormatter()
        if let date = plain.date(from: text) { return date.timeIntervalSince1970 }
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return fractional.date(from: text)?.timeIntervalSince1970
    }

    /// An ISO 8601 time in UTC, to the millisecond.
    public static func formatPrecisely(_ seconds: Double) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: seconds))
    }

    /// An ISO 8601 time in UTC, to the second.
    public static func format(_ seconds: Double) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: seconds))
    }
}
