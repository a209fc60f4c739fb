import Foundation
import LiftoffHistory
import Liftoff
import LiftoffCLI
import LiftoffComparison
import LiftoffFormats
import LiftoffProfile
import LiftoffReports
import LiftoffTestSupport
import Testing

/// The fuzz targets' committed corpus (`Fuzz/Corpus/`), replayed with the invariants the targets
/// check (`Fuzz/Sources/`), in every `make test`: the libFuzzer builds themselves run in
/// `make fuzz` and CI.
@Suite("Fuzz corpus")
struct FuzzCorpusTests {
    private func corpus(_ name: String) throws -> [(file: String, data: Data)] {
        let folder = repositoryRoot.appendingPathComponent("Fuzz/Corpus/\(name)")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(!files.isEmpty, "Fuzz/Corpus/\(name) holds inputs")
        return try files.map { ($0, try Data(contentsOf: folder.appendingPathComponent($0))) }
    }

    @Test("each profile either loads or is refused, and one that loads renders in every format")
    func profiles() throws {
        for (file, data) in try corpus("profile") {
            guard let profile = try? Profile.decode(data, source: file) else { continue }
            for format in ReportFormats.all {
                _ = try? format.render(profile, options: ReportOptions())
                _ = try? format.render(profile, options: ReportOptions(perThread: true, samples: .wall))
            }
            _ = ProfileSummary(profile, limit: 10)
            #expect(!DiffFlameGraph(base: [profile], head: [profile]).svg(title: file).isEmpty, "\(file)")
        }
    }

    @Test("each scenario parses or is refused with one sentence on one line")
    func scenarios() throws {
        for (file, data) in try corpus("scenario") {
            do {
                _ = try Scenario.parse(String(decoding: data, as: UTF8.self))
            } catch let error as Scenario.ParseError {
                #expect(!error.description.contains("\n"), "\(file): \(error.description)")
            }
        }
    }

    @Test("each callgrind output reads or is refused with one sentence on one line")
    func callgrind() throws {
        for (file, data) in try corpus("callgrind") {
            do {
                _ = try CallgrindCounts.read(data: data)
            } catch let error as CallgrindCounts.ReadError {
                #expect(!error.description.contains("\n"), "\(file): \(error.description)")
            }
        }
    }

    @Test("each history entry reads or is refused with one sentence on one line, and a history of it analyzes")
    func history() throws {
        for (file, data) in try corpus("history") {
            do {
                let entry = try HistoryEntry.decode(data, source: file)
                let finite = entry.metrics.values.allSatisfy { $0.isFinite }
                #expect(finite, "\(file)")
                let entries = (0..<12).map { index -> HistoryEntry in
                    var copy = entry
                    copy.commit = "c\(index)"
                    copy.time = HistoryTime.format(Double(index) * 60)
                    for key in copy.metrics.keys where index >= 6 { copy.metrics[key]! *= 1.5 }
                    return copy
                }
                let analysis = HistoryAnalysis(entries: entries, options: ChangePointOptions(windowLength: 4, maxPValue: 0.05))
                #expect(!analysis.text().isEmpty && !analysis.markdown().isEmpty)
                _ = try analysis.json()
            } catch let error as HistoryError {
                #expect(!error.description.contains("\n"), "\(file): \(error.description)")
            }
        }
    }

    @Test("each command line splits into words that, quoted back, split the same way")
    func shellWords() throws {
        #expect(ShellWords.quote(["a b", "it's", ""]) == #"'a b' 'it'\''s' ''"#)
        for (file, data) in try corpus("shellwords") {
            guard let words = try? ShellWords.split(String(decoding: data, as: UTF8.self)) else { continue }
            let quoted = ShellWords.quote(words)
            #expect(try ShellWords.split(quoted) == words, "\(file)")
        }
    }
}
