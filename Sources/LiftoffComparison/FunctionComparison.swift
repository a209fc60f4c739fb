import LiftoffAnalysis
import LiftoffProfile

/// Head's launches against base's, function by function: which function made a launch slower,
/// by how much, and how sure.
///
/// Per run, each function's CPU time is the running samples whose innermost frame of the
/// program's own code it is (the library and runtime work it asked for included; a library
/// function's, the samples with no program frame above it), and its waiting time the waiting
/// samples whose innermost program frame it is (where the program waited, not the system call it
/// waited in; threads that never ran, idle pools and event loops, are left out); its total CPU
/// time (running samples with it anywhere on the stack) is reported alongside. Functions are
/// matched across builds by name and object, the program's executables counting as one object
/// whatever their file names, and libraries by their name up to `.so`. Base's and head's runs
/// are compared with a permutation test of the difference in means (sound for counts with many
/// ties), every function's CPU and waiting tested together under the Benjamini–Hochberg
/// false-discovery rate; the change is the Hodges–Lehmann shift with its Moses interval.
public struct FunctionComparison: Sendable {
    /// What the comparison concluded about one function.
    public enum Verdict: String, Sendable, Codable, CaseIterable {
        /// Head spends more time there, and it is a discovery at the false-discovery rate.
        case regressed
        /// Head spends less.
        case improved
        /// No discovery, or one smaller than a sampling interval and the threshold.
        case unchanged
        /// Too few samples to tell.
        case unresolved
        /// Only head has it, and it is a discovery.
        case added
        /// Only base has it, and it is a discovery.
        case removed
    }

    /// CPU (running samples) or waiting (off a CPU, in the program's own function).
    public enum Kind: String, Sendable, Codable, CaseIterable {
        /// Time on a CPU: running samples whose innermost frame of the program's own code is the
        /// function (or, with none, whose innermost frame it is).
        case cpu
        /// Time off a CPU: blocked samples whose innermost frame of the program's own code is the
        /// function. Runnable samples (waiting for a core) are neither: they measure how busy the
        /// machine was, not the function, and its CPU time already says what it needed.
        case waiting
    }

    /// One function's time of one kind, compared.
    public struct Row: Sendable, Equatable {
        /// The function.
        public var name: String
        /// Its object (executable or library): head's file name where head has the function.
        public var object: String
        /// Its source file, where the debug information says.
        public var file: String?
        /// Its line in `file`.
        public var line: Int?
        /// CPU or waiting.
        public var kind: Kind
        /// Base's median time per run, in milliseconds.
        public var baseMedianMs: Double
        /// Head's median time per run, in milliseconds.
        public var headMedianMs: Double
        /// Base's median total CPU time per run (the function anywhere on the stack), for CPU rows.
        public var baseTotalMs: Double?
        /// Head's median total CPU time per run, for CPU rows.
        public var headTotalMs: Double?
        /// The shift head − base in milliseconds per run (Hodges–Lehmann).
        public var changeMs: Double
        /// The lower end of the shift's 95 % interval (Moses).
        public var lowerMs: Double
        /// The upper end of the shift's 95 % interval.
        public var upperMs: Double
        /// The permutation test's p-value (1 when not tested).
        public var pValue: Double
        /// The Benjamini–Hochberg q-value over every tested row.
        public var qValue: Double
        /// The verdict.
        public var verdict: Verdict
    }

    /// Every function with samples on either side, the strongest evidence of a change first.
    public var rows: [Row]
    /// The false-discovery rate the verdicts keep.
    public var falseDiscoveryRate: Double
    /// The span whose samples alone were compared, if one.
    public var span: String?

    /// The rows that changed (regressed, improved, added, removed), largest change first.
    public var changes: [Row] {
        rows.filter { $0.verdict != .unchanged && $0.verdict != .unresolved }
            .sorted { (abs($0.changeMs), $1.name) > (abs($1.changeMs), $0.name) }
    }

    /// Compares every function of base's and head's runs.
    /// - Parameters:
    ///   - base: The profiles of base's runs.
    ///   - head: The profiles of head's runs.
    ///   - span: Compare only the samples of the spans with this name.
    ///   - falseDiscoveryRate: The expected share of false discoveries among the functions called changed.
    ///   - threshold: A change smaller than this share of base's median (and than one sampling
    ///     interval) is unchanged.
    ///   - minimumSamples: Fewer samples than this over every run of both sides is unresolved.
    public init(
        base: [Profile], head: [Profile], span: String? = nil, falseDiscoveryRate: Double = 0.05, threshold: Double = 0.05,
        minimumSamples: Int = 10
    ) {
        self.falseDiscoveryRate = falseDiscoveryRate
        self.span = span
        let baseRuns = base.map { FunctionTimes($0, span: span) }
        let headRuns = head.map { FunctionTimes($0, span: span) }
        let intervalMs = (baseRuns + headRuns).map(\.intervalMs).max() ?? 1
        var keys = Set<FunctionTimes.Key>()
        for run in baseRuns + headRuns {
            keys.formUnion(run.cpu.keys)
            keys.formUnion(run.waiting.keys)
        }
        var rows: [Row] = []
        var rowKeys: [FunctionTimes.Key] = []
        var tested: [Int] = []  // row indices with a p-value
        var pValues: [Double] = []
        for (position, key) in keys.sorted(by: { ($0.name, $0.object, $0.kind.rawValue) < ($1.name, $1.object, $1.kind.rawValue) }).enumerated() {
            let x = baseRuns.map { $0.value(key) }
            let y = headRuns.map { $0.value(key) }
            let samples = Int(((x + y).reduce(0, +) / intervalMs).rounded())
            let shift = Statistics.shift(base: x, head: y)
            let place = headRuns.lazy.compactMap { $0.places[key] }.first ?? baseRuns.lazy.compactMap { $0.places[key] }.first
            var row = Row(
                name: key.name, object: place?.object ?? key.object, file: place?.file, line: place?.line, kind: key.kind,
                baseMedianMs: Statistics.median(x),
                headMedianMs: Statistics.median(y), baseTotalMs: nil, headTotalMs: nil, changeMs: shift.estimate,
                lowerMs: shift.lower, upperMs: shift.upper, pValue: 1, qValue: 1, verdict: .unchanged)
            if key.kind == .cpu {
                row.baseTotalMs = Statistics.median(baseRuns.map { $0.total(key) })
                row.headTotalMs = Statistics.median(headRuns.map { $0.total(key) })
            }
            if samples < minimumSamples || x.count < 2 || y.count < 2 {
                row.verdict = .unresolved
            } else {
                // A seed per function, so one function's draws do not depend on the others'.
                var seed: UInt64 = 0xcbf2_9ce4_8422_2325 ^ UInt64(position)
                for byte in (key.name + key.kind.rawValue).utf8 { seed = (seed ^ UInt64(byte)) &* 0x100_0000_01b3 }
                row.pValue = Statistics.permutationTest(x, y, seed: seed)
                tested.append(rows.count)
                pValues.append(row.pValue)
            }
            rows.append(row)
            rowKeys.append(key)
        }
        for (index, q) in zip(tested, Statistics.benjaminiHochberg(pValues)) {
            rows[index].qValue = q
            let row = rows[index]
            let minimum = max(intervalMs, threshold * abs(row.baseMedianMs))
            let discovered = q <= falseDiscoveryRate
            let onlyHead = baseRuns.allSatisfy { $0.value(rowKeys[index]) == 0 }
            let onlyBase = headRuns.allSatisfy { $0.value(rowKeys[index]) == 0 }
            if onlyHead || onlyBase {
                rows[index].verdict = discovered ? (onlyHead ? .added : .removed) : .unresolved
            } else if discovered, abs(row.headMedianMs - row.baseMedianMs) >= minimum || abs(row.changeMs) >= minimum {
                rows[index].verdict = row.changeMs > 0 ? .regressed : .improved
            }
        }
        self.rows = rows.sorted { ($0.qValue, -abs($0.changeMs), $0.name) < ($1.qValue, -abs($1.changeMs), $1.name) }
    }
}

/// One run's time per function, in milliseconds.
struct FunctionTimes {
    struct Key: Hashable {
        var name: String
        var object: String
        var kind: FunctionComparison.Kind

        init(name: String, object: String, kind: FunctionComparison.Kind) {
            self.name = name
            self.object = object
            self.kind = kind
        }

    }

    /// Where a function is: its object's file name in this run, and its source file and line.
    struct Place {
        var object: String
        var file: String?
        var line: Int?
    }

    var cpu: [Key: Double] = [:]
    var totals: [Key: Double] = [:]
    var waiting: [Key: Double] = [:]
    var places: [Key: Place] = [:]
    var intervalMs: Double

    /// The object a function is matched by: `the program` for the program's executables, a
    /// library by its name up to `.so` (`libicuuc.so.72.1` and `libicuuc.so.74` are one).
    static func objectKey(_ object: String, programObjects: Set<String>) -> String {
        if programObjects.contains(object) { return "the program" }
        if let range = object.range(of: ".so.") { return String(object[..<range.lowerBound]) + ".so" }
        return object
    }

    /// The times of `profile`'s functions (within the spans named `span`); `inclusive: false`
    /// leaves out the inclusive totals and the waits, for what needs only the CPU each function
    /// was charged.
    init(_ profile: Profile, span: String?, inclusive: Bool = true) {
        intervalMs = Double(max(profile.samplingIntervalNs, 1)) / 1e6
        let programFrames = LaunchWindow.programFrames(of: profile)
        let programObjects = LaunchWindow.programObjects(of: profile)
        let chosen = span.map { profile.sampleIndices(inSpansNamed: $0) } ?? Array(0..<profile.samples.count)
        // Threads that never ran (idle pools, event loops, a parked async main) did no work to compare.
        var ran = Set<Int>()
        for sample in chosen where profile.samples.state[sample] == .running { ran.insert(profile.samples.thread[sample]) }
        // Functions are numbered once per frame; per stack, computed once: where its CPU goes, the
        // functions on it, where it waited. Times add up by number, and become keyed at the end.
        var keys: [Key] = []
        var numbers: [Key: Int] = [:]
        var places: [Key: Place] = [:]
        var numberOfFrame = [[Int32]](repeating: [Int32](repeating: -1, count: profile.frames.count), count: 2)
        func number(_ frameIndex: Int, _ kind: FunctionComparison.Kind) -> Int {
            let column = kind == .cpu ? 0 : 1
            guard frameIndex >= 0, frameIndex < profile.frames.count else { return -1 }
            if numberOfFrame[column][frameIndex] >= 0 { return Int(numberOfFrame[column][frameIndex]) }
            let frame = profile.frames[frameIndex]
            let key = Key(name: frame.displayName, object: Self.objectKey(frame.object, programObjects: programObjects), kind: kind)
            let found: Int
            if let known = numbers[key] {
                found = known
            } else {
                found = keys.count
                keys.append(key)
                numbers[key] = found
                places[key] = Place(object: frame.object, file: frame.file, line: frame.line)
            }
            numberOfFrame[column][frameIndex] = Int32(found)
            return found
        }
        func programOrLeaf(_ stack: Int) -> Int {
            let own = stack < programFrames.count ? Int(programFrames[stack]) : -1
            return own >= 0 ? own : profile.stacks.frame[stack]
        }
        var chargedTo = [Int](repeating: -2, count: profile.stacks.count)
        var onStack = [[Int]?](repeating: nil, count: profile.stacks.count)
        var waitedIn = [Int](repeating: -2, count: profile.stacks.count)
        var cpuByNumber: [Double?] = []
        var totalByNumber: [Double?] = []
        var waitingByNumber: [Double?] = []
        func add(_ ms: Double, _ number: Int, _ sums: inout [Double?]) {
            guard number >= 0 else { return }
            if sums.count <= number { sums += [Double?](repeating: nil, count: max(number + 1, keys.count) - sums.count) }
            sums[number] = (sums[number] ?? 0) + ms
        }
        for sample in chosen {
            let stack = profile.samples.stack[sample]
            guard stack >= 0, stack < profile.stacks.count else { continue }
            let ms = Double(profile.samples.ticks(sample)) * intervalMs
            if profile.samples.state[sample] == .running {
                if chargedTo[stack] == -2 { chargedTo[stack] = number(programOrLeaf(stack), .cpu) }
                add(ms, chargedTo[stack], &cpuByNumber)
                guard inclusive else { continue }
                if onStack[stack] == nil {
                    var seen = Set<Int>()
                    onStack[stack] = profile.frameIndices(ofStack: stack).map { number($0, .cpu) }.filter { $0 >= 0 && seen.insert($0).inserted }
                }
                for function in onStack[stack]! { add(ms, function, &totalByNumber) }
            } else if inclusive, profile.samples.state[sample] == .blocked, ran.contains(profile.samples.thread[sample]) {
                if waitedIn[stack] == -2 { waitedIn[stack] = number(programOrLeaf(stack), .waiting) }
                add(ms, waitedIn[stack], &waitingByNumber)
            }
        }
        func keyed(_ sums: [Double?]) -> [Key: Double] {
            var result: [Key: Double] = [:]
            for (number, ms) in sums.enumerated() { if let ms { result[keys[number]] = ms } }
            return result
        }
        cpu = keyed(cpuByNumber)
        totals = keyed(totalByNumber)
        waiting = keyed(waitingByNumber)
        self.places = places
    }

    func value(_ key: Key) -> Double { key.kind == .cpu ? cpu[key] ?? 0 : waiting[key] ?? 0 }

    func total(_ key: Key) -> Double { totals[key] ?? 0 }
}

extension FunctionComparison {
    /// One function's median CPU time over runs, charged as the comparison charges it (to the
    /// innermost frame of the program's own code, else to the leaf).
    public struct Median: Sendable, Equatable {
        /// The function's name.
        public var name: String
        /// `the program`, or a library's name up to `.so`.
        public var object: String
        /// Its median time on a CPU over the runs, in milliseconds.
        public var ms: Double
    }

    /// The functions with the most median CPU time over `profiles`, the most first (then by name),
    /// at most `limit` of them.
    public static func medians(of profiles: [Profile], limit: Int) -> [Median] {
        let runs = profiles.concurrentMap { FunctionTimes($0, span: nil, inclusive: false) }
        var keys = Set<FunctionTimes.Key>()
        for run in runs { keys.formUnion(run.cpu.keys) }
        let medians = keys.map { key in
            Median(name: key.name, object: key.object, ms: Statistics.median(runs.map { $0.cpu[key] ?? 0 }))
        }
        return Array(medians.filter { $0.ms > 0 }.sorted { ($1.ms, $0.name, $0.object) < ($0.ms, $1.name, $1.object) }.prefix(max(limit, 0)))
    }
}
