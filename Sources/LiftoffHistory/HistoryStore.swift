import Foundation
import LiftoffProfile

/// Where a history's entries are kept.
public protocol HistoryStore: Sendable {
    /// Adds an entry; adding the same commit in the same environment again replaces it, and
    /// with `keepingTime` keeps the time it was first added with (an entry whose time was not
    /// given is then the same file however often it is added).
    func add(_ entry: HistoryEntry, keepingTime: Bool) throws
    /// Every readable entry, and one sentence per entry that could not be read (skipped).
    func load() throws -> (entries: [HistoryEntry], skipped: [String])
}

extension HistoryStore {
    /// Adds an entry; adding the same commit in the same environment again replaces it.
    public func add(_ entry: HistoryEntry) throws { try add(entry, keepingTime: false) }
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
            throw HistoryError("\(String(reflecting: entry.commit)) is not a commit name: use letters, digits, '-', '_' and '.' (a SHA, a tag).")
        }
        return "\(entry.commit)-\(entry.environment.key).json"
    }

    public func add(_ entry: HistoryEntry, keepingTime: Bool) throws {
        var entry = entry
        let name = try Self.fileName(entry)
        // Added again: it keeps its place in the order of same-time commits, so the file is the same.
        if let data = try? Data(contentsOf: folder.appendingPathComponent(name)),
            let existing = try? HistoryEntry.decode(data, source: name)
        {
            if existing.recorded != nil { entry.recorded = existing.recorded }
            if keepingTime { entry.time = existing.time }
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
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasSuffix(".json") }.sorted()
        // Entries are read and decoded on every core: a history of a thousand commits is a thousand files.
        let results = names.concurrentMap { name in
            Result { () throws(HistoryError) in try readEntry(folder.appendingPathComponent(name)) }
        }
        var entries: [HistoryEntry] = []
        var skipped: [String] = []
        for result in results {
            switch result {
            case .success(let entry): entries.append(entry)
            case .failure(let error): skipped.append(error.description)
            }
        }
        return (entries, skipped)
    }

    /// One entry file, checked; every failure is a ``HistoryError`` saying that it was skipped.
    private func readEntry(_ url: URL) throws(HistoryError) -> HistoryEntry {
        do {
            let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
            if let size = attributes[.size] as? Int, size > Self.maximumEntryBytes {
                throw HistoryError("\(url.path) is larger than \(Self.maximumEntryBytes >> 20) MB: skipped.")
            }
            return try HistoryEntry.decode(Data(contentsOf: url), source: url.path)
        } catch let error as HistoryError {
            throw error
        } catch {
            throw HistoryError("\(url.path) could not be read (\(error.localizedDescription)): skipped.")
        }
    }
}

extension HistoryEntry {
    /// The order of a series: by the commit's time, then by when the entries were added, then by commit.
    public static func inSeriesOrder(_ left: HistoryEntry, _ right: HistoryEntry) -> Bool {
        SeriesKey(left) < SeriesKey(right)
    }

    /// `entries` in the order of a series (``inSeriesOrder(_:_:)``), each entry's times read once.
    public static func inSeriesOrder(_ entries: [HistoryEntry]) -> [HistoryEntry] {
        entries.map { (SeriesKey($0), $0) }.sorted { $0.0 < $1.0 }.map(\.1)
    }

    /// What orders an entry in its series.
    private struct SeriesKey: Comparable {
        var time: Double
        var recorded: Double
        var commit: String

        init(_ entry: HistoryEntry) {
            time = HistoryTime.parse(entry.time) ?? 0
            recorded = entry.recorded.flatMap(HistoryTime.parse) ?? 0
            commit = entry.commit
        }

        static func < (left: SeriesKey, right: SeriesKey) -> Bool {
            (left.time, left.recorded, left.commit) < (right.time, right.recorded, right.commit)
        }
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
            throw HistoryError("\(source) has schema \(String(reflecting: entry.schema)); this liftoff reads \(currentSchema) only: skipped.")
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
    /// The seconds since 1970 of an ISO 8601 time (`2026-11-28T09:30:00Z`, with or without fractions of a
    /// second, `Z` or an offset such as `+01:00`), or of a number of seconds since 1970; nil otherwise.
    public static func parse(_ text: String) -> Double? {
        if let seconds = Double(text), seconds.isFinite, seconds >= 0, seconds < 1e11 { return seconds }
        return parseInternetTime(Array(text.utf8))
    }

    /// RFC 3339's date-time, read by hand: a date formatter costs more to make than a history has entries.
    private static func parseInternetTime(_ bytes: [UInt8]) -> Double? {
        var position = 0
        func digits(_ count: Int) -> Int? {
            guard position + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[position..<position + count] {
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            position += count
            return value
        }
        func expect(_ characters: String) -> Bool {
            guard position < bytes.count, characters.utf8.contains(bytes[position]) else { return false }
            position += 1
            return true
        }
        guard let year = digits(4), expect("-"), let month = digits(2), expect("-"), let day = digits(2), expect("Tt"),
            let hour = digits(2), expect(":"), let minute = digits(2), expect(":"), let second = digits(2)
        else { return nil }
        var fraction = 0.0
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            position += 1
            var scale = 0.1
            let start = position
            while position < bytes.count, bytes[position] >= 0x30, bytes[position] <= 0x39 {
                fraction += Double(bytes[position] - 0x30) * scale
                scale /= 10
                position += 1
            }
            guard position > start else { return nil }
        }
        var offset = 0
        if expect("Zz") {
        } else if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
            let sign = bytes[position] == UInt8(ascii: "-") ? -1 : 1
            position += 1
            guard let hours = digits(2), hours <= 23 else { return nil }
            _ = expect(":")
            guard let minutes = digits(2), minutes <= 59 else { return nil }
            offset = sign * (hours * 3600 + minutes * 60)
        } else {
            return nil
        }
        let daysInMonth = [31, year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard position == bytes.count, (1...12).contains(month), (1...daysInMonth[month - 1]).contains(day), hour <= 23, minute <= 59,
            second <= 60
        else { return nil }
        // Days from 1970-01-01 to the date, in the proleptic Gregorian calendar.
        let y = month <= 2 ? year - 1 : year
        let era = y / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return Double(days * 86_400 + hour * 3600 + minute * 60 + second - offset) + fraction
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
