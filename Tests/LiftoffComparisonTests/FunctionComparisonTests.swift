import Foundation
import LiftoffProfile
import LiftoffTestSupport
import Testing

@testable import LiftoffComparison

/// Launches whose functions are sampled as a real sampler would: each tick of the run lands on a
/// function drawn from the launch's mix, so every run's counts vary by chance alone.
struct SampledLaunches {
    /// Functions and their mean milliseconds per run.
    var mix: [(name: String, ms: Double)]
    var seed: UInt64

    /// `count` runs: each function's ticks a Poisson draw around its mean.
    func runs(_ count: Int) -> [Profile] {
        var generator = SplitMix64(seed: seed)
        return (0..<count).map { _ in
            var launch = LaunchBuilder()
            launch.endMs = 2000
            var at: UInt64 = 0
            for (name, ms) in mix {
                let ticks = UInt64(Self.poisson(ms, &generator))
                guard ticks > 0 else { continue }
                launch.add(thread: 1, .running, ["main", "launch", name], fromMs: at, toMs: at + ticks)
                at += ticks
            }
            return launch.profile()
        }
    }

    /// A Poisson draw of mean `mean` (Knuth's method for small means, normal above 60).
    static func poisson(_ mean: Double, _ generator: inout SplitMix64) -> Int {
        if mean > 60 {
            let u1 = max(generator.nextUnit(), 1e-12)
            let u2 = generator.nextUnit()
            let normal = (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2)
            return max(0, Int((mean + normal * mean.squareRoot()).rounded()))
        }
        let limit = exp(-mean)
        var product = generator.nextUnit()
        var count = 0
        while product > limit {
            count += 1
            product *= generator.nextUnit()
        }
        return count
    }

    /// A launch mix of 120 functions from 0.2 to 20 ms per run.
    static func mix(seed: UInt64) -> [(name: String, ms: Double)] {
        var generator = SplitMix64(seed: seed)
        return (0..<120).map { ("function\($0)", 0.2 + generator.nextUnit() * 20) }
    }
}

/// The simulations are long and CPU-bound; they yield between trials so that other suites' tests
/// still run beside them.
@Suite("Per-function comparison", .timeLimit(.minutes(5)))
struct FunctionComparisonTests {
    @Test("the permutation test matches an exact enumeration where one is possible, ties and all")
    func permutationTest() {
        // 4 + 4 values: 70 relabellings, enumerated here; the Monte Carlo test must come close.
        let x: [Double] = [0, 0, 1, 2]
        let y: [Double] = [2, 3, 3, 5]
        let pooled = x + y
        let observed = abs(y.reduce(0, +) / 4 - x.reduce(0, +) / 4)
        var extreme = 0
        var total = 0
        for mask in 0..<(1 << 8) where mask.nonzeroBitCount == 4 {
            let sumY = (0..<8).filter { mask & (1 << $0) != 0 }.map { pooled[$0] }.reduce(0, +)
            let sumX = pooled.reduce(0, +) - sumY
            if abs(sumY / 4 - sumX / 4) >= observed - 1e-9 { extreme += 1 }
            total += 1
        }
        let exact = Double(extreme) / Double(total)
        let estimate = Statistics.permutationTest(x, y, maxPermutations: 200_000, exceedances: 5_000)
        #expect(abs(estimate - exact) < 0.01, "exact \(exact), estimated \(estimate)")
        #expect(Statistics.permutationTest([1, 1, 1], [1, 1, 1]) == 1, "all equal: nothing to tell")
        #expect(Statistics.permutationTest((0..<30).map(Double.init), (100..<130).map(Double.init)) < 1e-4)
    }

    @Test("Benjamini–Hochberg q-values match the textbook example, in the input's order")
    func benjaminiHochberg() {
        let p = [0.01, 0.04, 0.03, 0.005, 0.5]
        let q = Statistics.benjaminiHochberg(p)
        // Sorted: 0.005·5/1 = 0.025, 0.01·5/2 = 0.025, 0.03·5/3 = 0.05, 0.04·5/4 = 0.05, 0.5.
        let expected = [0.025, 0.05, 0.05, 0.025, 0.5]
        for (value, want) in zip(q, expected) { #expect(abs(value - want) < 1e-12, "\(q)") }
    }

    @Test("the differences' order statistics, found without listing them, match a sort of every difference")
    func orderStatistics() {
        var generator = SplitMix64(seed: 42)
        for trial in 0..<50 {
            let n = 1 + generator.nextIndex(below: 12)
            let m = 1 + generator.nextIndex(below: 12)
            // Few distinct values: many ties, as per-run tick counts have.
            let x = (0..<n).map { _ in Double(generator.nextIndex(below: 6)) * 0.5 }.sorted()
            let y = (0..<m).map { _ in Double(generator.nextIndex(below: 6)) * 0.5 + (trial % 2 == 0 ? 0 : 0.25) }.sorted()
            let all = y.flatMap { yValue in x.map { yValue - $0 } }.sorted()
            let differences = PairwiseDifferences(base: x, head: y)
            for k in 1...all.count { #expect(differences.kth(k) == all[k - 1], "trial \(trial), k \(k)") }
        }
    }

    @Test("the Hodges–Lehmann shift and its interval cover a known shift")
    func shift() {
        let base = (0..<30).map { Double($0 % 10) }
        let head = base.map { $0 + 5 }
        let shift = Statistics.shift(base: base, head: head)
        #expect(shift.estimate == 5)
        #expect(shift.lower <= 5 && shift.upper >= 5 && shift.upper - shift.lower <= 4, "\(shift)")
    }

    @Test("head adds one function's work: that function is named regressed every time; other names stay within the false-discovery rate")
    func addedWork() async throws {
        // Over 40 seeds: the slower function is named every time. Now and then a function that
        // did not change is named beside it: the share of such names among all names, averaged
        // over the seeds, is the false-discovery rate, 5 % here (allowing the spread of 40 trials).
        let trials = 40
        var proportions: [Double] = []
        var covered = 0
        for seed in 0..<UInt64(trials) {
            let mix = SampledLaunches.mix(seed: 7 + seed)
            var slower = mix
            slower[17].ms += 8
            let comparison = FunctionComparison(
                base: SampledLaunches(mix: mix, seed: 10 + seed * 2).runs(20), head: SampledLaunches(mix: slower, seed: 11 + seed * 2).runs(20))
            let row = try #require(comparison.changes.first { $0.name == "function17" }, "seed \(seed): function17 not named")
            #expect(row.verdict == .regressed && row.kind == .cpu && row.qValue <= 0.05)
            if row.lowerMs <= 8 && row.upperMs >= 8 { covered += 1 }
            proportions.append(Double(comparison.changes.count - 1) / Double(comparison.changes.count))
            // Long and CPU-bound: let other suites' tests run on the shared pool between trials.
            await Task.yield()
        }
        let mean = proportions.reduce(0, +) / Double(trials)
        let spread = (proportions.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(trials - 1)).squareRoot()
        #expect(mean <= 0.05 + 3 * spread / Double(trials).squareRoot(), "false-discovery proportion \(mean)")
        // The 95 % interval of the shift holds the 8 ms added in most trials (ties make it coarse).
        #expect(covered * 10 >= trials * 8, "the interval held 8 ms in \(covered) of \(trials) trials")
    }

    @Test("two builds of one program match function by function whatever their file names; CPU goes to the program's innermost function; idle threads are not compared")
    func buildsMatch() throws {
        func runs(_ executable: String, extraMs: UInt64, seed: UInt64) -> [Profile] {
            var generator = SplitMix64(seed: seed)
            return (0..<12).map { _ in
                var launch = LaunchBuilder()
                launch.threads.append(Profile.ThreadInfo(id: 2, name: "loop", isMain: false))
                let jitter = UInt64(generator.nextUnit() * 4)
                // parse_config's time is mostly the C library's, which it called.
                launch.add(thread: 1, .running, ["\(executable)|main", "\(executable)|parse_config", "libc.so.6|strtod"], fromMs: 0, toMs: 30 + jitter)
                launch.add(thread: 1, .running, ["\(executable)|main", "\(executable)|build_index"], fromMs: 30 + jitter, toMs: 60 + jitter + extraMs)
                launch.add(thread: 2, .blocked, ["libc.so.6|epoll_wait"], fromMs: 0, toMs: 60 + jitter + extraMs)
                launch.endMs = 60 + jitter + extraMs
                var profile = launch.profile()
                profile.metadata.commandLine = ["/tmp/\(executable)"]
                return profile
            }
        }
        let comparison = FunctionComparison(base: runs("catalog-main", extraMs: 0, seed: 1), head: runs("catalog-pr123", extraMs: 20, seed: 2))
        #expect(!comparison.rows.contains { $0.verdict == .added || $0.verdict == .removed }, "\(comparison.changes.map { ($0.name, $0.verdict) })")
        let build = try #require(comparison.rows.first { $0.name == "build_index" && $0.kind == .cpu })
        #expect(build.verdict == .regressed && build.object == "catalog-pr123", "\(build)")
        let parse = try #require(comparison.rows.first { $0.name == "parse_config" && $0.kind == .cpu })
        #expect(parse.baseMedianMs >= 30, "strtod's time is charged to parse_config, which called it: \(parse)")
        #expect(!comparison.rows.contains { $0.name == "strtod" && $0.kind == .cpu && $0.baseMedianMs > 0 })
        #expect(!comparison.rows.contains { $0.name == "epoll_wait" }, "an idle event loop is not compared")
        #expect(FunctionTimes.objectKey("libicuuc.so.72.1", programObjects: []) == "libicuuc.so")
    }

    @Test("head removes one function's work: improved; a function only head has: added")
    func removedAndAdded() throws {
        let mix = SampledLaunches.mix(seed: 8)
        var faster = mix
        faster[3].ms = max(faster[3].ms - 10, 0.1)
        faster.append(("newFunction", 6))
        let comparison = FunctionComparison(
            base: SampledLaunches(mix: mix, seed: 3).runs(20), head: SampledLaunches(mix: faster, seed: 4).runs(20))
        let verdicts = Dictionary(comparison.changes.map { ($0.name, $0.verdict) }, uniquingKeysWith: { first, _ in first })
        #expect(verdicts == ["function3": .improved, "newFunction": .added], "\(verdicts)")
    }

    @Test("A/A: the same launches on both sides, 200 seeds: a run names a function at most at the false-discovery rate")
    func noFalseDiscoveries() async {
        // Under the complete null every discovery is false, so the false-discovery rate is the
        // chance that a comparison names any function at all: Benjamini–Hochberg keeps it at
        // 5 % or below. Allow for the spread of 200 trials (binomial, 3 standard deviations).
        var flagged = 0
        let trials = 200
        for seed in 0..<UInt64(trials) {
            let mix = SampledLaunches.mix(seed: 100 + seed)
            let comparison = FunctionComparison(
                base: SampledLaunches(mix: mix, seed: 1000 + seed * 2).runs(12),
                head: SampledLaunches(mix: mix, seed: 1001 + seed * 2).runs(12))
            if !comparison.changes.isEmpty { flagged += 1 }
            await Task.yield()
        }
        let rate = Double(flagged) / Double(trials)
        let allowance = 0.05 + 3 * (0.05 * 0.95 / Double(trials)).squareRoot()
        #expect(rate <= allowance, "\(flagged) of \(trials) A/A comparisons named a function")
    }

    @Test("few samples are unresolved, not a verdict")
    func unresolved() {
        let mix: [(name: String, ms: Double)] = [("work", 30), ("rare", 0.1)]
        let comparison = FunctionComparison(
            base: SampledLaunches(mix: mix, seed: 5).runs(10), head: SampledLaunches(mix: mix, seed: 6).runs(10))
        #expect(comparison.rows.first { $0.name == "rare" }?.verdict == .unresolved)
    }
}

@Suite("Run counters")
struct RunCounterTests {
    @Test("a live process's counters are read from /proc; the stat line's name may hold spaces and parentheses")
    func read() throws {
        let own = try #require(RunCounters.read(pid: getpid()))
        #expect(own.readCalls > 0 && own.minorFaults > 0 && own.userCPUMs + own.systemCPUMs > 0, "\(own)")
        let parsed = try #require(
            RunCounters.parse(
                io: "rchar: 10\nwchar: 20\nsyscr: 3\nsyscw: 4\nread_bytes: 4096\n",
                stat: "42 (a (b) c) S 1 42 42 0 -1 4194560 700 0 5 0 150 25 0 0 20 0 1 0 100 0 0",
                status: "voluntary_ctxt_switches:\t9\nnonvoluntary_ctxt_switches:\t2\n", ticksPerSecond: 100))
        #expect(
            parsed
                == RunCounters(
                    bytesRead: 10, bytesWritten: 20, readCalls: 3, writeCalls: 4, storageBytesRead: 4096, minorFaults: 700,
                    majorFaults: 5, userCPUMs: 1500, systemCPUMs: 250, voluntarySwitches: 9, involuntarySwitches: 2))
        #expect(RunCounters.parse(io: "", stat: "no parenthesis", status: "", ticksPerSecond: 100) == nil)
    }
}
