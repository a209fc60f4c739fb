import Foundation
import LiftoffProfile

extension AgentRecording {
    /// A thread rule's finding in a program the agent checked (`liftoff profile --rules`): a call
    /// site of the program's main thread that made a blocking call, its first time and repeats.
    public struct Violation: Sendable, Equatable {
        /// The rule, e.g. `disk-read-on-main`.
        public var rule: Profile.RuleName
        /// What was called on what (`reading /etc/hosts`, `usleep for 30.000 ms`).
        public var operation: String
        /// How many times the call site broke the rule.
        public var count: Int
        /// The thread that made the call.
        public var threadID: Int
        /// `CLOCK_MONOTONIC` nanoseconds of the first time.
        public var timeNs: UInt64
        /// Return addresses from the program's caller of the C library's function on, leaf first.
        public var stack: [UInt]
    }

    /// The agent's lines (format 6; `rules.c`): rule, count, thread, time, the stack in hex and
    /// the operation, tab-separated, then "dropped N". Lines that do not parse are skipped.
    static func parseViolations(_ text: String) -> (violations: [Violation], dropped: Int) {
        var violations: [Violation] = []
        var dropped = 0
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: "\t", maxSplits: 5, omittingEmptySubsequences: false)
            if fields.count == 2, fields[0] == "dropped" {
                dropped = Int(fields[1]) ?? 0
                continue
            }
            guard fields.count == 6, !fields[0].isEmpty, let count = Int(fields[1]), let thread = Int(fields[2]),
                let time = UInt64(fields[3])
            else { continue }
            let stack = fields[4].split(separator: ",").compactMap { UInt($0, radix: 16) }
            violations.append(
                Violation(
                    rule: Profile.RuleName(rawValue: String(fields[0])), operation: String(fields[5]), count: count,
                    threadID: thread, timeNs: time, stack: stack))
        }
        return (violations, dropped)
    }
}
