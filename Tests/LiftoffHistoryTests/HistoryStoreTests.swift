import Foundation
import LiftoffTestSupport
import Testing

@testable import LiftoffHistory

/// Entries as `history add` makes them, with a launch time series and a function that moves with it.
enum SyntheticHistory {
    static let environment = HistoryEntry.Environment(cpu: "Test CPU", cores: 2, os: "Linux 6.1", liftoff: "0.1.0", cache: "warm")

    /// `count` commits a minute apart; from `stepAt` on, `parse_config` takes `stepMs` more and the
    /// launch with it.
    static func entries(count: Int, stepAt: Int = .max, stepMs: Double = 0, noise: Double = 0.003, seed: UInt64 = 1) -> [HistoryEntry] {
        let launch = SyntheticSeries.make(count: count, noise: noise, seed: seed)
        let parse = SyntheticSeries.make(count: count, noise: noise, seed: seed &+ 99)
        return (0..<count).map { index in
            let extra = index >= stepAt ? stepMs : 0
            return HistoryEntry(
                commit: String(format: "c%04d", index), branch: "main", time: HistoryTime.format(1_790_000_000 + Double(index) * 60),
                environment: environment, runs: 5,
                metrics: ["time to ready": launch[index] + extra, "pre-main": 20 * launch[index] / 100],
                functions: [
                    HistoryEntry.Function(name: "parse_config", object: "the program", ms: parse[index] / 4 + extra),
                    HistoryEntry.Function(name: "memcpy", object: "libc.so", ms: 5 * launch[index] / 100),
                ])
        }
    }
}

/// A new, empty folder under the temporary directory.
func temporaryFolder() -> URL {
    let url = testScratch.appendingPathComponent("liftoff-history-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

@Suite("Launch history")
struct HistoryStoreTests {
    @Test("a history of 120 commits names the commit and the function that made the launch slower; a flat one names none")
    func namesCommitAndFunction() throws {
        let analysis = HistoryAnalysis(entries: SyntheticHistory.entries(count: 120, stepAt: 77, stepMs: 6))
        let changes = analysis.changes.filter { $0.metric == "time to ready" }
        let change = try #require(changes.first, "\(analysis.text())")
        #expect(changes.count == 1)
        #expect(change.commit == "c0077" && change.isRegression)
        #expect(change.functions.first?.name == "parse_config", "\(change.functions)")
        #expect(analysis.changes.allSatisfy { $0.metric != "pre-main" }, "pre-main did not move")
        #expect(analysis.text().contains("c0077"))

        let flat = HistoryAnalysis(entries: SyntheticHistory.entries(count: 120))
        #expect(flat.changes.isEmpty, "\(flat.text())")
        #expect(flat.text().contains("No change point in 2 metrics."))
    }

    @Test("a history of 400 commits, 50 metrics and 200 functions at the noise of counted launches (0.05 %) names the one commit and the one function that made launches slower; the flat one names none")
    func atScale() throws {
        func history(stepAt: Int) -> [HistoryEntry] {
            let series = (0..<50).map { SyntheticSeries.make(count: 400, noise: 0.0005, seed: UInt64(1_000 + $0)) }
            let functionSeries = (0..<200).map { SyntheticSeries.make(count: 400, noise: 0.0005, seed: UInt64(5_000 + $0)) }
            return (0..<400).map { index in
                let extra = index >= stepAt ? 6.0 : 0
                var metrics: [String: Double] = ["time to ready": series[0][index] + extra]
                for metric in 1..<50 { metrics["span: step \(metric)"] = series[metric][index] / Double(metric) }
                var functions = [HistoryEntry.Function(name: "parse_config", object: "the program", ms: functionSeries[0][index] / 4 + extra)]
                for function in 1..<200 {
                    functions.append(HistoryEntry.Function(name: "function\(function)", object: "the program", ms: functionSeries[function][index] / 50))
                }
                return HistoryEntry(
                    commit: String(format: "c%04d", index), branch: "main", time: HistoryTime.format(1_790_000_000 + Double(index) * 60),
                    environment: SyntheticHistory.environment, runs: 5, metrics: metrics, functions: functions)
            }
        }
        let analysis = HistoryAnalysis(entries: history(stepAt: 287))
        let changes = analysis.changes
        #expect(changes.map(\.metric) == ["time to ready"], "\(analysis.text())")
        let change = try #require(changes.first)
        #expect(change.commit == "c0287" && change.isRegression)
        #expect(change.functions.first?.name == "parse_config", "\(change.functions.prefix(3))")
        let flat = HistoryAnalysis(entries: history(stepAt: .max))
        #expect(flat.changes.isEmpty, "\(flat.text())")
    }

    @Test("a sparkline draws the lowest value lowest and the highest highest, one bar per value; a flat or hostile series stays drawable")
    func sparkline() {
        #expect(HistoryAnalysis.sparkline([1, 2, 3, 4, 5, 6, 7, 8]) == "▁▂▃▄▅▆▇█")
        #expect(HistoryAnalysis.sparkline([10, 10, 10]) == "▄▄▄")
        #expect(HistoryAnalysis.sparkline([100, 100, 106, 106]) == "▁▁██")
        #expect(HistoryAnalysis.sparkline([]) == "")
        #expect(HistoryAnalysis.sparkline([-Double.greatestFiniteMagnitude, .greatestFiniteMagnitude]) == "▁█")
        #expect(HistoryAnalysis.sparkline([1, .nan, 2]) == "▁·█")
    }

    @Test("times are ISO 8601 with or without fractions, in UTC or with an offset; impossible dates are refused")
    func timesAreRead() {
        #expect(HistoryTime.parse("2026-11-28T09:30:00Z") == 1_795_858_200)
        #expect(HistoryTime.parse("2026-11-28T10:30:00+01:00") == 1_795_858_200)
        #expect(HistoryTime.parse("2026-11-28T04:00:00-0530") == 1_795_858_200)
        #expect(HistoryTime.parse("2026-11-28T09:30:00.25Z") == 1_795_858_200.25)
        #expect(HistoryTime.parse("2024-02-29T23:59:59Z") == 1_709_251_199)
        #expect(HistoryTime.parse("1969-12-31T00:00:00Z") == -86_400)
        #expect(HistoryTime.parse("1795858200") == 1_795_858_200)
        for wrong in [
            "2026-02-29T00:00:00Z", "2026-13-01T00:00:00Z", "2026-11-28T24:00:00Z", "2026-11-28T09:30:00", "2026-11-28",
            "2026-11-28T09:30:00.Z", "2026-11-28T09:30:00Zjunk", "yesterday", "",
        ] {
            #expect(HistoryTime.parse(wrong) == nil, "\(wrong)")
        }
        let now = 1_795_858_200.125
        #expect(HistoryTime.parse(HistoryTime.formatPrecisely(now)) == now)
        #expect(HistoryTime.parse(HistoryTime.format(now)) == 1_795_858_200)
    }

    @Test("entries are ordered by time, not by the order they were added, and analyzed per environment")
    func orderAndEnvironments() throws {
        var entries = SyntheticHistory.entries(count: 80, stepAt: 40, stepMs: 8).shuffled()
        var other = SyntheticHistory.entries(count: 30)
        for index in other.indices { other[index].environment.cache = "cold" }
        entries += other
        let analysis = HistoryAnalysis(entries: entries)
        #expect(analysis.environments.map(\.entries) == [80, 30])
        #expect(analysis.changes.map(\.commit) == ["c0040"])
    }

    @Test("commits of the same time (a rebase, a merge) keep the order they were added in, whatever their names")
    func sameTimeOrder() {
        var entries = SyntheticHistory.entries(count: 60, stepAt: 30, stepMs: 8)
        for index in entries.indices {
            entries[index].time = "2026-11-01T10:00:00Z"
            entries[index].recorded = HistoryTime.formatPrecisely(1_790_000_000 + Double(index) * 0.25)
            entries[index].commit = String(format: "%04x", (index * 7919) % 65_536)
        }
        let analysis = HistoryAnalysis(entries: entries.shuffled())
        #expect(analysis.changes.map(\.commit) == [entries[30].commit])
    }

    @Test("the folder store: adding a commit twice leaves one identical file; what it wrote reads back")
    func folderStore() throws {
        let folder = temporaryFolder()
        let store = FolderHistoryStore(folder: folder)
        let entry = SyntheticHistory.entries(count: 1)[0]
        try store.add(entry)
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        let name = try #require(names.first)
        let first = try Data(contentsOf: folder.appendingPathComponent(name))
        try store.add(entry)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == [name])
        #expect(try Data(contentsOf: folder.appendingPathComponent(name)) == first)
        let loaded = try store.load()
        #expect(loaded.entries == [entry] && loaded.skipped.isEmpty)
        #expect(throws: HistoryError.self) {
            var hostile = entry
            hostile.commit = "../../etc/passwd"
            try store.add(hostile)
        }
    }

    @Test(
        "a corrupt, truncated or hostile entry is skipped with one sentence naming it; the rest are read",
        arguments: [
            ("truncated", "{\"schema\": \"liftoff.history-entry/1\", \"commit\": \"abc\""),
            ("not JSON", "\u{0}\u{1}garbage"),
            ("an array", "[1, 2, 3]"),
            ("another schema", "{\"schema\": \"liftoff.history-entry/9\", \"commit\": \"a\", \"time\": \"2026-01-01T00:00:00Z\", \"environment\": {\"cpu\": \"x\", \"cores\": 1, \"os\": \"\", \"liftoff\": \"\", \"cache\": \"warm\"}, \"runs\": 1, \"metrics\": {}, \"functions\": []}"),
            ("a schema with a line break", "{\"schema\": \"liftoff.history-e\\ntry/1\", \"commit\": \"a\", \"time\": \"2026-01-01T00:00:00Z\", \"environment\": {\"cpu\": \"x\", \"cores\": 1, \"os\": \"\", \"liftoff\": \"\", \"cache\": \"warm\"}, \"runs\": 1, \"metrics\": {}, \"functions\": []}"),
            ("a bad time", "{\"schema\": \"liftoff.history-entry/1\", \"commit\": \"a\", \"time\": \"yesterday\", \"environment\": {\"cpu\": \"x\", \"cores\": 1, \"os\": \"\", \"liftoff\": \"\", \"cache\": \"warm\"}, \"runs\": 1, \"metrics\": {}, \"functions\": []}"),
            ("a huge number", "{\"schema\": \"liftoff.history-entry/1\", \"commit\": \"a\", \"time\": \"2026-01-01T00:00:00Z\", \"environment\": {\"cpu\": \"x\", \"cores\": 99999999999999999999, \"os\": \"\", \"liftoff\": \"\", \"cache\": \"warm\"}, \"runs\": 1, \"metrics\": {}, \"functions\": []}"),
        ])
    func hostileEntries(_ kind: String, _ text: String) throws {
        let folder = temporaryFolder()
        let store = FolderHistoryStore(folder: folder)
        try store.add(SyntheticHistory.entries(count: 1)[0])
        try Data(text.utf8).write(to: folder.appendingPathComponent("bad.json"))
        let loaded = try store.load()
        #expect(loaded.entries.count == 1, "\(kind)")
        let reasons = loaded.skipped
        #expect(reasons.count == 1 && reasons.allSatisfy { $0.contains("bad.json") && !$0.contains("\n") }, "\(kind): \(reasons)")
    }
}
