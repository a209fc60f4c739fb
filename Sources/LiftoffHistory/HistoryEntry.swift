import Foundation
import LiftoffAnalysis
import LiftoffComparison
import LiftoffProfile

/// One commit's launch in a history: the medians of its recorded runs, metric by metric and
/// function by function, and the environment they ran in.
public struct HistoryEntry: Codable, Sendable, Equatable {
    /// What a series is compared within: launches of one environment only.
    public struct Environment: Codable, Sendable, Equatable, Hashable {
        /// The CPU's model name.
        public var cpu: String
        /// Logical CPUs.
        public var cores: Int
        /// Kernel name and release.
        public var os: String
        /// The Liftoff version that recorded.
        public var liftoff: String
        /// `warm`, `cold` or `cold-system`: whether the program's files were in the page cache.
        public var cache: String
        /// The Swift compiler that built the program (`6.3.1`), as its debug information names it;
        /// `unknown` when the program's file does not say (a C program, a stripped binary). Absent in
        /// entries written before Liftoff read it.
        public var swift: String?

        /// Creates an environment.
        public init(cpu: String, cores: Int, os: String, liftoff: String, cache: String, swift: String? = nil) {
            self.cpu = cpu
            self.cores = cores
            self.os = os
            self.liftoff = liftoff
            self.cache = cache
            self.swift = swift
        }

        /// A short, stable key: 12 hexadecimal digits of a hash of every field (an entry without a
        /// Swift version keeps the key it had before the field existed).
        public var key: String {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            let swiftPart = swift.map { "\u{1}\($0)" } ?? ""
            for byte in "\(cpu)\u{1}\(cores)\u{1}\(os)\u{1}\(liftoff)\u{1}\(cache)\(swiftPart)".utf8 {
                hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
            }
            let hex = String(hash, radix: 16)
            return String((String(repeating: "0", count: max(0, 16 - hex.count)) + hex).prefix(12))
        }

        /// One line for people: `Intel Xeon …, 2 cores, Linux 6.1, warm cache`.
        public var description: String {
            let compiler = swift.map { $0 == SwiftVersion.unknown ? "" : ", Swift \($0)" } ?? ""
            return "\(cpu), \(cores) cores, \(os)\(compiler), \(cache) cache"
        }
    }

    /// One function's median CPU time.
    public struct Function: Codable, Sendable, Equatable {
        /// The function's name.
        public var name: String
        /// `the program`, or a library's name up to `.so`.
        public var object: String
        /// Median milliseconds on a CPU.
        public var ms: Double

        /// Creates a function's entry.
        public init(name: String, object: String, ms: Double) {
            self.name = name
            self.object = object
            self.ms = ms
        }
    }

    /// The schema this Liftoff writes and reads.
    public static let currentSchema = "liftoff.history-entry/1"
    /// The most functions an entry keeps.
    public static let functionLimit = 200

    /// Always ``currentSchema``.
    public var schema = HistoryEntry.currentSchema
    /// The commit the launch was built from.
    public var commit: String
    /// The branch, where known.
    public var branch: String?
    /// When the commit was made (or recorded), ISO 8601: the series' order.
    public var time: String
    /// When the entry was added, ISO 8601 with fractions of a second: orders commits of the same
    /// time (a rebase, a merge) as they were recorded.
    public var recorded: String?
    /// Where it ran.
    public var environment: Environment
    /// How many runs the medians are of.
    public var runs: Int
    /// Each metric's median: milliseconds for times, counts for counters and instructions.
    public var metrics: [String: Double]
    /// The functions with the most median CPU time, the most first.
    public var functions: [Function]

    /// Creates an entry.
    public init(
        commit: String, branch: String?, time: String, environment: Environment, runs: Int, metrics: [String: Double],
        functions: [Function]
    ) {
        self.commit = commit
        self.branch = branch
        self.time = time
        self.environment = environment
        self.runs = runs
        self.metrics = metrics
        self.functions = functions
    }

    /// The entry of a recorded folder (or a profile folder): the medians of its runs' metrics (every
    /// group), of its insights' costs (`insight: ID`, 0 where a run had none), of the instructions
    /// where the runs were counted, and of the functions' CPU time.
    public static func of(
        _ runs: RunSet, commit: String, branch: String?, time: String, environment: Environment
    ) throws -> HistoryEntry {
        guard !runs.profiles.isEmpty else { throw HistoryError("\(runs.folder.path) has no successful run to add.") }
        var metrics: [String: Double] = [:]
        for (name, values) in runs.metrics(Set(MetricGroup.allCases)) where !values.isEmpty {
            metrics[name] = Statistics.median(values)
        }
        var insightCosts: [String: [Double]] = [:]
        for (position, insights) in runs.profiles.concurrentMap({ Insights.of($0) }).enumerated() {
            for insight in insights {
                insightCosts["insight: \(insight.id)", default: Array(repeating: 0, count: position)].append(Double(insight.costNs) / 1e6)
            }
            for key in insightCosts.keys where insightCosts[key]!.count <= position { insightCosts[key]!.append(0) }
        }
        for (name, values) in insightCosts { metrics[name] = Statistics.median(values) }
        if runs.isCounted {
            let counts = try runs.counts()
            if !counts.isEmpty { metrics["instructions"] = Statistics.median(counts.map { Double($0.instructions) }) }
        }
        let functions = FunctionComparison.medians(of: runs.profiles, limit: functionLimit).map {
            Function(name: $0.name, object: $0.object, ms: $0.ms)
        }
        return HistoryEntry(
            commit: commit, branch: branch, time: time, environment: environment, runs: runs.profiles.count, metrics: metrics,
            functions: functions)
    }

    /// The environment of this machine and the runs' first profile; the Swift version is read from
    /// the program the first profile names (its path as launched, or a name found through `PATH`).
    public static func environment(of runs: RunSet, cache: String) -> Environment {
        let host = runs.profiles.first?.metadata.host
        let cores = host.map(\.cpuCount).flatMap { $0 > 0 ? $0 : nil } ?? ProcessInfo.processInfo.activeProcessorCount
        var os = host?.os ?? ""
        if os.isEmpty {
            let read = { (name: String) in
                ((try? String(contentsOfFile: "/proc/sys/kernel/\(name)", encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            }
            os = "\(read("ostype")) \(read("osrelease"))"
        }
        let program = runs.profiles.first?.metadata.commandLine.first ?? ""
        return Environment(
            cpu: cpuModel(), cores: cores, os: os, liftoff: LiftoffVersion.current, cache: cache,
            swift: SwiftVersion.ofProgram(program))
    }

    /// The first `model name` of /proc/cpuinfo, or `unknown CPU`.
    static func cpuModel() -> String {
        guard let text = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8) else { return "unknown CPU" }
        for line in text.split(separator: "\n") where line.hasPrefix("model name") {
            if let colon = line.firstIndex(of: ":") { return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces) }
        }
        return "unknown CPU"
    }
}

/// A history that cannot be read or written, in one sentence.
public struct HistoryError: Error, CustomStringConvertible, Sendable {
    /// The sentence.
    public var description: String
    /// An error saying `description`.
    public init(_ description: String) { self.description = description }
}
