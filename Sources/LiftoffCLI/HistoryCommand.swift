import ArgumentParser
import Foundation
import LiftoffComparison
import LiftoffHistory
import LiftoffHistoryPostgres
import LiftoffReports

/// `liftoff history`: every commit's launch, and the commits that changed it.
struct HistoryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Keep every commit's launch, and find the commits that changed it.",
        discussion: """
            A pull-request gate compares two builds; drift and steps that arrive through many small \
            commits need the series. `history add` keeps one entry per commit (the medians of a \
            recorded folder: times, phases, counters, instructions, insights' costs and the top 200 \
            functions) in a folder of JSON files that can live on a git branch. `history analyze` \
            finds change points per metric with E-divisive means and a t-test, as Apache Otava does, \
            and names the functions whose own series changed with them.

            Examples:
              liftoff history add runs/head --commit "$(git rev-parse HEAD)" --store launch-history
              liftoff history analyze --store launch-history
              liftoff history analyze --store launch-history --metric instructions --fail-on-change --recent 1
              liftoff history report --store launch-history -o history.html
              liftoff history import launch-history --store postgres://ci@db.example.com/launches
            """,
        subcommands: [HistoryAddCommand.self, HistoryAnalyzeCommand.self, HistoryReportCommand.self, HistoryImportCommand.self, HistoryExportCommand.self])
}

/// `--store FOLDER|postgres://…`, shared by the subcommands.
struct HistoryStoreOptions: ParsableArguments {
    @Option(name: .long, help: "The history: a folder of one JSON file per entry, or a PostgreSQL database (postgres://…).")
    var store: String = "launch-history"

    var opened: any HistoryStore { HistoryStoreOptions.open(store) }

    /// The store `text` names: a PostgreSQL database for a `postgres://` URL, else a folder.
    static func open(_ text: String) -> any HistoryStore {
        PostgresHistoryStore.isConnection(text) ? PostgresHistoryStore(connection: text) : FolderHistoryStore(folder: URL(fileURLWithPath: text))
    }

    /// What the user sees of a store: a folder's path, a database URL without its password.
    static func describe(_ text: String) -> String {
        guard PostgresHistoryStore.isConnection(text), var parts = URLComponents(string: text) else { return text }
        if parts.password != nil { parts.password = "***" }
        return parts.string ?? "the database"
    }
}

/// `liftoff history import SOURCE` and `export DESTINATION`: entries from one store to another.
enum HistoryCopy {
    static func copy(from source: String, to destination: String) throws {
        do {
            let (entries, skipped) = try HistoryStoreOptions.open(source).load()
            for reason in skipped { FileHandle.standardError.write(Data("liftoff: \(reason)\n".utf8)) }
            let target = HistoryStoreOptions.open(destination)
            for entry in entries { try target.add(entry) }
            try StandardOutput.write(
                "Copied \(entries.count) entries from \(HistoryStoreOptions.describe(source)) to \(HistoryStoreOptions.describe(destination))"
                    + (skipped.isEmpty ? ".\n" : "; skipped \(skipped.count).\n"))
        } catch let error as HistoryError {
            throw CLIError(error.description)
        }
    }
}

struct HistoryImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import", abstract: "Copy every entry of another store (a folder or postgres://…) into --store.")

    @Argument(help: "The store to copy from.")
    var source: String

    @OptionGroup var storage: HistoryStoreOptions

    func run() throws { try HistoryCopy.copy(from: source, to: storage.store) }
}

struct HistoryExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export", abstract: "Copy every entry of --store into another store (a folder or postgres://…).")

    @Argument(help: "The store to copy to.")
    var destination: String

    @OptionGroup var storage: HistoryStoreOptions

    func run() throws { try HistoryCopy.copy(from: storage.store, to: destination) }
}

/// `liftoff history add DIR --commit SHA`.
struct HistoryAddCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Add a recorded folder's launch to the history as one commit's entry.",
        discussion: """
            DIR is a folder written by liftoff record (its runs), or a folder of profiles. Adding the \
            same commit again in the same environment replaces its entry.
            """)

    @Argument(help: "A folder written by liftoff record, or a folder of profiles.")
    var folder: String

    @Option(name: .long, help: "The commit the launch was built from (a SHA or a tag).")
    var commit: String

    @Option(name: .long, help: "The branch the commit is on.")
    var branch: String?

    @Option(name: .long, help: "When the commit was made: ISO 8601 or seconds since 1970 (now when not given); the series' order.")
    var time: String?

    @Option(
        name: .long,
        help: "Whether the runs had the program's files in the page cache: warm, cold or cold-system (default: as record --cache recorded them; warm when it did not say).")
    var cache: String?

    @OptionGroup var storage: HistoryStoreOptions

    func validate() throws {
        if let time, HistoryTime.parse(time) == nil {
            throw ValidationError("--time '\(time)' is not ISO 8601 (2026-11-28T08:00:00Z) or seconds since 1970.")
        }
        if let cache, !["warm", "cold", "cold-system"].contains(cache) {
            throw ValidationError("--cache is warm, cold or cold-system, not '\(cache)'.")
        }
    }

    func run() throws {
        let started = Date()
        let runs: RunSet
        do {
            // A folder `record --baseline` wrote holds base/ and head/: the head runs are the commit's.
            let head = URL(fileURLWithPath: folder).appendingPathComponent("head")
            let recordedHere = FileManager.default.fileExists(atPath: URL(fileURLWithPath: folder).appendingPathComponent("record.json").path)
            runs = try RunSet.load(!recordedHere && FileManager.default.fileExists(atPath: head.appendingPathComponent("record.json").path) ? head.path : folder)
        } catch let error as RunSetError {
            throw CLIError(error.description)
        }
        let when = time.flatMap(HistoryTime.parse).map(HistoryTime.format) ?? HistoryTime.format(Date().timeIntervalSince1970)
        if runs.cacheMode == "mixed" {
            throw CLIError("The runs in \(folder) started with different page caches (cold and not); add each mode's runs as an entry of its own.")
        }
        let recorded = CacheMode.isCold(runs.cacheMode) ? runs.cacheMode : "warm"
        if let cache, cache != recorded, CacheMode.isCold(runs.cacheMode) || runs.cacheMode == "warm" {
            throw CLIError("--cache \(cache) was given, but the runs in \(folder) were recorded with --cache \(runs.cacheMode).")
        }
        let environment = HistoryEntry.environment(of: runs, cache: cache ?? recorded)
        do {
            var entry = try HistoryEntry.of(runs, commit: commit, branch: branch, time: when, environment: environment)
            entry.recorded = HistoryTime.formatPrecisely(Date().timeIntervalSince1970)
            // Without --time, an entry added again keeps the time it was first added with.
            try storage.opened.add(entry, keepingTime: time == nil)
            try StandardOutput.write(
                "Added \(commit) (\(entry.runs) runs, \(entry.metrics.count) metrics, \(entry.functions.count) functions) to \(HistoryStoreOptions.describe(storage.store)) "
                    + "in environment \(environment.key) in \(Int(Date().timeIntervalSince(started) * 1000)) ms.\n")
        } catch let error as HistoryError {
            throw CLIError(error.description)
        }
    }
}

/// How `history analyze` writes.
enum HistoryFormat: String, ExpressibleByArgument, CaseIterable {
    case text, markdown, json
}

/// `liftoff history analyze`.
struct HistoryAnalyzeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "analyze",
        abstract: "Find the commits that changed the launch: change points per metric and environment.",
        discussion: """
            Within each environment (CPU, cores, OS, Liftoff version, cache mode), entries are \
            ordered by time. Each metric's series is split where E-divisive means finds a change \
            that a t-test between its two sides confirms (Otava's split and merge steps; the \
            defaults are Otava's, a window of 50 commits and p ≤ 0.001, but for a change of at least \
            1 %: a t-test alone finds a 0.1 % "change" in about one flat series in ten). Wall times \
            from shared machines are noisy: series of instructions and counters find steps that \
            wall time hides. Exits 2 with --fail-on-change when a change point made a metric \
            worse (among the last --recent commits, when given).
            """)

    @OptionGroup var analysis: HistoryAnalysisOptions

    @Option(name: .long, help: "Output format: text, markdown or json.")
    var format: HistoryFormat = .text

    @Flag(name: .long, help: "Exit 2 when a change point made a metric worse.")
    var failOnChange = false

    @Option(name: .long, help: "With --fail-on-change, only change points among the last N commits count.")
    var recent: Int?

    func validate() throws {
        if let recent, recent < 1 { throw ValidationError("--recent must be 1 or more, not \(recent).") }
    }

    func run() throws {
        let (result, _) = try analysis.analyze()
        switch format {
        case .text: try StandardOutput.write(result.text())
        case .markdown: try StandardOutput.write(result.markdown())
        case .json: try StandardOutput.write(try result.json())
        }
        guard failOnChange else { return }
        let worse = result.series.contains { series in
            series.changes.contains { $0.isRegression && (recent == nil || $0.index >= series.points.count - recent!) }
        }
        if worse { throw ExitCode(2) }
    }
}

/// What `history analyze` and `history report` share: which entries, and how change points are found.
struct HistoryAnalysisOptions: ParsableArguments {
    @OptionGroup var storage: HistoryStoreOptions

    @Option(name: .long, help: "Analyze this metric only (repeatable): 'time to ready', instructions, 'insight: main-thread-io', ….")
    var metric: [String] = []

    @Option(name: .long, help: "Entries of this branch only.")
    var branch: String?

    @Option(name: .long, help: "The sliding window, in commits (at least 2).")
    var window: Int = 50

    @Option(name: .customLong("max-pvalue"), help: "The largest p-value a change point may have (above 0, below 1).")
    var maxPValue: Double = 0.001

    @Option(name: .customLong("min-magnitude"), help: "The smallest relative change a change point must make, in percent (Otava's default is 0).")
    var minMagnitude: Double = 1

    func validate() throws {
        guard window >= 2, window <= 100_000 else { throw ValidationError("--window must be 2 to 100000 commits, not \(window).") }
        guard maxPValue > 0, maxPValue < 1 else { throw ValidationError("--max-pvalue must be above 0 and below 1, not \(maxPValue).") }
        guard minMagnitude >= 0, minMagnitude.isFinite else {
            throw ValidationError("--min-magnitude must be a percentage of 0 or more, not \(minMagnitude).")
        }
    }

    /// The store's entries (skipped ones said on standard error) and their analysis.
    func analyze() throws -> (analysis: HistoryAnalysis, entries: [HistoryEntry]) {
        let loaded: (entries: [HistoryEntry], skipped: [String])
        do {
            loaded = try storage.opened.load()
        } catch let error as HistoryError {
            throw CLIError(error.description)
        }
        for reason in loaded.skipped { FileHandle.standardError.write(Data("liftoff: \(reason)\n".utf8)) }
        let options = ChangePointOptions(windowLength: window, maxPValue: maxPValue, minMagnitude: minMagnitude / 100)
        let analysis = HistoryAnalysis(
            entries: loaded.entries, skipped: loaded.skipped, options: options, metrics: metric.isEmpty ? nil : Set(metric),
            branch: branch)
        if !metric.isEmpty, analysis.series.isEmpty, !loaded.entries.isEmpty {
            throw CLIError("No entry has the metric \(metric.map { "'\($0)'" }.joined(separator: " or ")).")
        }
        return (analysis, loaded.entries.filter { branch == nil || $0.branch == branch })
    }
}

/// `liftoff history report -o FILE.html`.
struct HistoryReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Write the history as one HTML page: a chart per metric with its change points.",
        discussion: """
            The page works offline. Hovering a point shows its commit, time and value; clicking \
            two points compares their commits (every metric, and the functions that moved most).
            """)

    @OptionGroup var analysis: HistoryAnalysisOptions

    @Option(name: [.short, .long], help: "The HTML file to write (standard output when not given).")
    var output: String?

    func run() throws {
        let (result, entries) = try analysis.analyze()
        let page = try HistoryHTMLRenderer.render(result, entries: entries)
        guard let output else { return try StandardOutput.write(page) }
        do {
            try Data(page.utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
        } catch {
            throw CLIError("Could not write \(output): \(error.localizedDescription)")
        }
        try StandardOutput.write("Wrote \(output) (\(result.series.count) charts, \(result.changes.count) change points).\n")
    }
}
