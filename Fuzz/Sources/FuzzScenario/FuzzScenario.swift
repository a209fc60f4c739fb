import FuzzDriver
import Foundation
import Liftoff

// A scenario either parses or is refused with one sentence on one line.
@main
struct FuzzScenarioTarget {
    static func main() {
        FuzzDriver.main { data in
            do {
                _ = try Scenario.parse(String(decoding: data, as: UTF8.self))
            } catch let error as Scenario.ParseError {
                precondition(!error.description.contains("\n"), "a parse error spans lines: \(error.description)")
            } catch {
                preconditionFailure("Scenario.parse threw something other than a ParseError: \(error)")
            }
        }
    }
}
