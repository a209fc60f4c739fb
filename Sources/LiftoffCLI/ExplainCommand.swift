import ArgumentParser
import Foundation
import LiftoffAnalysis
import LiftoffComparison
import LiftoffProfile
import LiftoffReports

/// `ID=DURATION`: an insight rule and a time, for `explain --threshold` and `check --insight`
/// (parsed by ``parse(_:)``, whose errors say what is wrong with the value).
struct InsightThreshold: Sendable {
    var id: String
    var ns: UInt64

    static func parse(_ text: String) throws -> InsightThreshold {
        guard let equals = text.lastIndex(of: "=") else {
            throw ValidationError("'\(text)' needs the form ID=DURATION, for example main-thread-sleep=20ms.")
        }
        let id = text[..<equals].trimmingCharacters(in: .whitespaces)
        guard Insights.rule(id: id) != nil else {
            throw ValidationError(
                "'\(id)' is not an insight; the insights are \(Insights.rules.map(\.id).joined(separator: ", ")).")
        }
        let ms = try CheckCommand.milliseconds(String(text[text.index(after: equals)...]))
        // Saturates: a limit past 584 years is no limit.
        let ns = ms * 1e6 >= Double(UInt64.max) ? UInt64.max : UInt64(ms * 1e6)
        return InsightThreshold(id: id, ns: ns)
    }
}

/// How `explain` writes its insights.
enum ExplainFormat: String, ExpressibleByArgument, CaseIterable {
    case text, markdown, json
}

/// `liftoff explain PROFILE`: why a launch was slow, in words.
struct ExplainCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "explain",
        abstract: "Say why a launch was slow: the insights of a profile, the costliest first.",
        discussion: """
            Each insight has a stable id, a one-line finding, what it cost the launch (and its \
            share), the threshold it crossed, and its evidence: the thread, the time range, the \
            heaviest stacks with the program's own function that led there, and notes. The launch \
            runs from the process start to the first frame (or --ready line, or the end of the \
            profile).

            The rules follow the path to ready: the launch's thread, and through each of its waits \
            for another thread (a lock, a semaphore, a join, a parked async main) the thread that \
            ended the wait. Under the insights, explain says how much of the launch they account \
            for, each moment counted once, and below 80 % names what is left.

            Rules (default threshold):
            \(Insights.rules.map { "  \($0.id.padding(toLength: 28, withPad: " ", startingAt: 0)) \(ExplainCommand.threshold($0.defaultThresholdNs))" }.joined(separator: "\n"))

            Examples:
              liftoff explain out/profile.json
              liftoff explain out/profile.json --format markdown >> "$GITHUB_STEP_SUMMARY"
              liftoff explain out/profile.json --threshold main-thread-io=2ms --format json
            """
    )

    @Argument(help: "The profile.json to explain, a folder holding one (liftoff profile's --out), or a folder of liftoff record's runs (its median run).")
    var profile: String

    @Option(name: .long, help: "Output: text, markdown or json.")
    var format: ExplainFormat = .text

    @Option(name: .long, help: "A rule's threshold as ID=DURATION (20ms, 1.5s); repeatable.", transform: InsightThreshold.parse)
    var threshold: [InsightThreshold] = []

    static func threshold(_ ns: UInt64) -> String { ns == 0 ? "any" : LaunchWindow.ms(ns) }

    /// A profile given as a file, or as a folder holding `profile.json`, or the median run (by
    /// time to ready) of a folder `liftoff record` wrote, which it names on standard error.
    static func loadProfile(_ path: String) throws -> Profile {
        var url = URL(fileURLWithPath: path)
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue {
            url = url.appendingPathComponent("profile.json")
            if !FileManager.default.fileExists(atPath: url.path),
                FileManager.default.fileExists(atPath: URL(fileURLWithPath: path).appendingPathComponent("record.json").path)
                    || FileManager.default.fileExists(atPath: URL(fileURLWithPath: path).appendingPathComponent(RecordManifest.journalName).path)
            {
                return try medianRun(path)
            }
        }
        do {
            return try Profile.load(from: url)
        } catch let error as ProfileError {
            throw CLIError(error.message)
        }
    }

    /// The run of a recording whose time to ready is the median (the lower of the middle two).
    static func medianRun(_ path: String) throws -> Profile {
        let runs: RunSet
        do {
            runs = try RunSet.load(path)
        } catch let error as RunSetError {
            throw CLIError(error.description)
        }
        let timed = runs.profiles.filter { $0.timeToFirstFrameNs != nil && $0.samples.count > 0 }
            .sorted { ($0.timeToFirstFrameNs ?? 0) < ($1.timeToFirstFrameNs ?? 0) }
        guard !timed.isEmpty else {
            throw CLIError("\(path) has no run with samples to explain; record with a profile (the agent or a program that links Liftoff).")
        }
        let median = timed[(timed.count - 1) / 2]
        let ms = Double(median.timeToFirstFrameNs ?? 0) / 1e6
        FileHandle.standardError.write(
            Data(String(format: "Explaining the median of %d runs (%.1f ms to %@).\n", timed.count, ms, median.readyName).utf8))
        return median
    }

    func run() throws {
        let loaded = try ExplainCommand.loadProfile(profile)
        var settings = InsightSettings()
        for limit in threshold { settings.thresholdsNs[limit.id] = limit.ns }
        let report = InsightReport(loaded, settings: settings)
        let text: String
        switch format {
        case .text: text = report.text()
        case .markdown: text = report.markdown().joined(separator: "\n")
        case .json: text = report.json()
        }
        try StandardOutput.write(Data(text.utf8))
    }
}
