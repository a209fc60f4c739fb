import FuzzDriver
import Foundation
import LiftoffHistory

// A history entry either reads or is refused with one sentence on one line; what reads has finite
// metrics, and a history of it, repeated with a step, analyzes without trapping.
@main
struct FuzzHistoryTarget {
    static func main() {
        FuzzDriver.main { data in
            do {
                let entry = try HistoryEntry.decode(data, source: "input")
                precondition(entry.metrics.values.allSatisfy(\.isFinite))
                var entries: [HistoryEntry] = []
                for index in 0..<12 {
                    var copy = entry
                    copy.commit = "c\(index)"
                    copy.time = HistoryTime.format(Double(index) * 60)
                    for key in copy.metrics.keys where index >= 6 { copy.metrics[key]! *= 1.5 }
                    entries.append(copy)
                }
                let analysis = HistoryAnalysis(entries: entries, options: ChangePointOptions(windowLength: 4, maxPValue: 0.05))
                _ = analysis.text()
                _ = analysis.markdown()
                _ = try analysis.json()
            } catch let error as HistoryError {
                precondition(!error.description.contains("\n"), "a refusal is one line: \(error.description)")
            } catch {
                preconditionFailure("an unexpected error: \(error)")
            }
        }
    }
}
