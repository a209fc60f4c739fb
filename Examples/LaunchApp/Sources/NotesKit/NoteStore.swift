import Foundation
import Synchronization

/// The notes and settings the app loads at launch. Launch tasks fill it from several threads.
public final class NoteStore: Sendable {
    /// Settings kept in a JSON file.
    public struct Settings: Codable, Sendable, Equatable {
        /// The window's title.
        public var title = "Notes"
        /// How many notes the first screen lists.
        public var notesOnLaunch = 12
    }

    private struct State {
        var settings: Settings?
        var notes: [String] = []
        var index: [Substring: Int] = [:]
    }

    private let state = Mutex(State())
    private let settingsFile: URL

    /// A store whose settings live in `settingsFile` (written with defaults when missing).
    public init(
        settingsFile: URL = FileManager.default.temporaryDirectory.appendingPathComponent("notes-settings.json")
    ) {
        self.settingsFile = settingsFile
    }

    /// The settings, once read.
    public var settings: Settings? { state.withLock { $0.settings } }
    /// The notes, newest first, once parsed.
    public var notes: [String] { state.withLock { $0.notes } }
    /// How many distinct words the search index holds.
    public var indexedWords: Int { state.withLock { $0.index.count } }

    /// Reads the settings file, writing one with defaults first when there is none.
    public func readSettings() throws {
        if !FileManager.default.fileExists(atPath: settingsFile.path) {
            try JSONEncoder().encode(Settings()).write(to: settingsFile, options: .atomic)
        }
        let settings = try JSONDecoder().decode(Settings.self, from: Data(contentsOf: settingsFile))
        state.withLock { $0.settings = settings }
    }

    /// Builds and sorts the notes: the launch's CPU-heavy step.
    public func parseNotes(count: Int = 40_000) {
        var notes: [String] = []
        notes.reserveCapacity(count)
        for number in 0..<count {
            notes.append("Note \(number): \(String(number * 7919 % 104_729, radix: 36)) meeting agenda")
        }
        notes.sort { $0.hashValue < $1.hashValue }
        state.withLock { $0.notes = notes }
    }

    /// Counts every word of every note, for search. Not needed for the first frame.
    public func indexForSearch() {
        var index: [Substring: Int] = [:]
        for note in notes {
            for word in note.split(separator: " ") { index[word, default: 0] += 1 }
        }
        state.withLock { $0.index = index }
    }
}
