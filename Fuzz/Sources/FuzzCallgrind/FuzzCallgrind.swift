import FuzzDriver
import Foundation
import LiftoffComparison

// A callgrind output either reads or is refused with one sentence on one line; what reads lists
// its functions the most instructions first.
@main
struct FuzzCallgrindTarget {
    static func main() {
        FuzzDriver.main { data in
            do {
                let counts = try CallgrindCounts.read(data: data)
                let functions = counts.functions
                precondition(zip(functions, functions.dropFirst()).allSatisfy { $0.instructions >= $1.instructions })
            } catch let error as CallgrindCounts.ReadError {
                precondition(!error.description.contains("\n"), "a refusal is one line: \(error.description)")
            } catch {
                preconditionFailure("an unexpected error: \(error)")
            }
        }
    }
}
