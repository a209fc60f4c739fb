import Foundation

/// Head's counted launches against base's (`liftoff record --count instructions`): the
/// instructions to the ready point, and the functions whose own instructions changed most.
///
/// Counts barely vary from run to run, so three runs a side decide: head regressed (or improved)
/// when the change of the medians is at least `threshold` (1 % by default) and at least
/// `noiseFactor` times the larger side's spread ((max − min) / median); when the spread is so
/// large that a change of the threshold could not be told from it (a launch that polls a clock
/// or races its threads), the verdict is inconclusive ("counts vary by N %").
public struct InstructionComparison: Sendable {
    /// One function's instructions, its own and inclusive, compared.
    public struct FunctionChange: Sendable, Equatable {
        /// Its name (demangled).
        public var name: String
        /// Its object: `the program` for the program's executable, else the library's name.
        public var object: String
        /// Its source file, where the debug information said.
        public var file: String?
        /// Base's median own instructions per launch.
        public var base: Double
        /// Head's median.
        public var head: Double
        /// Base's median inclusive instructions per launch (with the functions it called).
        public var baseInclusive: Double
        /// Head's median inclusive instructions.
        public var headInclusive: Double
        /// head − base, of its own instructions.
        public var change: Double { head - base }
        /// head − base, of its inclusive instructions.
        public var inclusiveChange: Double { headInclusive - baseInclusive }
    }

    /// Each counted base run's instructions.
    public var base: [UInt64]
    /// Each counted head run's instructions.
    public var head: [UInt64]
    /// The medians.
    public var baseMedian: Double, headMedian: Double
    /// Each side's spread: (max − min) / median.
    public var baseSpread: Double, headSpread: Double
    /// head / base − 1.
    public var change: Double
    /// The smallest change that counts, as a share (0.01).
    public var threshold: Double
    /// The verdict.
    public var verdict: Verdict
    /// The functions whose own instructions changed, the largest change first.
    public var functions: [FunctionChange]

    /// How many times the spread a change must be to count.
    public static let noiseFactor = 5.0

    /// Compares the counted runs of two sides.
    /// - Parameters:
    ///   - base: The counts of base's counted runs.
    ///   - head: The counts of head's counted runs.
    ///   - threshold: A change smaller than this share of base's count (and than the spread) is unchanged.
    ///   - demangle: Turns callgrind's names (Swift's are mangled) into readable ones.
    public init(base: [CallgrindCounts], head: [CallgrindCounts], threshold: Double = 0.01, demangle: (String) -> String = { $0 }) {
        self.base = base.map(\.instructions)
        self.head = head.map(\.instructions)
        self.threshold = threshold
        baseMedian = Statistics.median(self.base.map { Double($0) })
        headMedian = Statistics.median(self.head.map { Double($0) })
        func spread(_ values: [UInt64], _ median: Double) -> Double {
            guard let low = values.min(), let high = values.max(), median > 0 else { return 0 }
            return Double(high - low) / median
        }
        baseSpread = spread(self.base, baseMedian)
        headSpread = spread(self.head, headMedian)
        change = baseMedian > 0 ? headMedian / baseMedian - 1 : .nan
        let noise = max(baseSpread, headSpread)
        if base.isEmpty || head.isEmpty || !change.isFinite || Self.noiseFactor * noise >= threshold {
            // Counts that vary this much cannot tell a change of the threshold from the noise.
            verdict = .inconclusive
        } else if abs(change) < threshold {
            verdict = .unchanged
        } else if abs(change) >= Self.noiseFactor * noise {
            verdict = change > 0 ? .regressed : .improved
        } else {
            verdict = .inconclusive
        }
        // Per function: the median of its own instructions over each side's runs (0 where a run
        // never ran it), matched by name and object (the program's executable as one object).
        struct Key: Hashable {
            var name: String
            var object: String
        }
        var names: [String: String] = [:]
        var files: [Key: String] = [:]  // head's first, where head has the function
        func key(_ function: CallgrindCounts.Function, program: String?) -> Key {
            let name = names[function.name] ?? demangle(function.name)
            names[function.name] = name
            let fileName = function.object.split(separator: "/").last.map(String.init) ?? function.object
            // The program is the command callgrind ran, or the copy without debug sections counted instead.
            let isProgram = fileName == program.flatMap { $0.split(separator: "/").last.map(String.init) }
                || fileName.hasSuffix(".liftoff-nodebug")
            return Key(name: name, object: isProgram ? "the program" : FunctionTimes.objectKey(fileName, programObjects: []))
        }
        func table(_ runs: [CallgrindCounts]) -> [[Key: (own: Double, inclusive: Double)]] {
            runs.map { run in
                var byKey: [Key: (own: Double, inclusive: Double)] = [:]
                for function in run.functions {
                    let found = key(function, program: run.program)
                    let previous = byKey[found] ?? (0, 0)
                    byKey[found] = (previous.own + Double(function.instructions), previous.inclusive + Double(function.inclusiveInstructions))
                    if files[found] == nil { files[found] = function.file }
                }
                return byKey
            }
        }
        let headTable = table(head)
        let baseTable = table(base)
        let keys = Set(baseTable.flatMap(\.keys)).union(headTable.flatMap(\.keys))
        let smallest = max(100, 0.01 * abs(headMedian - baseMedian))
        functions = keys.map { key in
            FunctionChange(
                name: key.name, object: key.object, file: files[key], base: Statistics.median(baseTable.map { $0[key]?.own ?? 0 }),
                head: Statistics.median(headTable.map { $0[key]?.own ?? 0 }),
                baseInclusive: Statistics.median(baseTable.map { $0[key]?.inclusive ?? 0 }),
                headInclusive: Statistics.median(headTable.map { $0[key]?.inclusive ?? 0 }))
        }
        // What changed by less than 1 % of the launch's change (or 100 instructions) is left out:
        // a few instructions of padding or a stub that moved.
        .filter { abs($0.change) >= smallest }
        .sorted { (abs($0.change), $1.name) > (abs($1.change), $0.name) }
    }
}
