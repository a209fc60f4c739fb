import Foundation
import LiftoffAnalysis
import LiftoffProfile

/// Renders a short Markdown summary of a launch for a pull-request comment: time to first
/// frame against the target, phases, spans, what ran on the main thread before the first frame and
/// what could move, the slowest tasks, violations, hangs, frames, background tasks and the
/// functions with the most self time.
///
/// The text always stays under ``limit`` characters, however large the profile: tables keep
/// their first rows and say how many were left out. Names are escaped so that they cannot
/// break a table or inject HTML.
public struct MarkdownRenderer: Sendable {
    /// Upper bound on the length of the result, in characters (GitHub comments allow 65,536).
    public var limit = 65_000
    /// Rows kept in each table.
    public var rowsPerTable = 20
    /// The time-to-first-frame target, in milliseconds. Nil: 400 ms for an app with a life
    /// cycle, and no target for any other program.
    public var targetMs: Double? = nil

    /// Creates a renderer.
    public init(limit: Int = 65_000, rowsPerTable: Int = 20) {
        self.limit = limit
        self.rowsPerTable = rowsPerTable
    }

    /// The Markdown summary of `profile`.
    public func render(_ profile: Profile) -> String {
        var lines: [String] = []
        let program = ReportText.programName(profile) ?? "launch"
        lines.append("## Launch profile: \(MarkdownRenderer.inline(program))")
        lines.append("")
        if !profile.hasLifeCycle, profile.timeToFirstFrameNs == nil {
            // A program without Liftoff's life cycle, profiled to its end.
            lines.append("**Ran for \(ReportText.ms(Double(profile.phases.endNs) / 1e6))** (no life cycle: profiled to its end).")
        } else if let ttff = profile.timeToFirstFrameNs {
            let value = Double(ttff) / 1e6
            if let target = targetMs ?? (profile.hasLifeCycle ? 400 : nil) {
                let verdict = value <= target ? "within the \(fmt(target)) ms target" : "**over** the \(fmt(target)) ms target"
                lines.append("**Time to \(profile.readyName): \(ReportText.ms(value))**, \(verdict).")
            } else {
                lines.append("**Time to \(profile.readyName): \(ReportText.ms(value))**.")
            }
        } else {
            lines.append("**No first frame was committed.**")
        }
        lines.append("")
        // The summary is written beside the HTML report (summary.md, index.html).
        lines += InsightReport(profile).markdown(heading: "### Insights", report: HTMLFormat().fileName)
        if profile.processes.count > 1 {
            lines.append("### Processes")
            lines.append("")
            lines.append("| Process | Parent | Start | End | Programs |")
            lines.append("|---|---|---:|---:|---|")
            for process in profile.processes {
                // Each program with its time before main and what it read from storage after it,
                // where the agent measured them.
                let programs = process.programs.map { program in
                    var parts: [String] = []
                    if let preMain = program.preMain { parts.append("\(ReportText.ms(Double(preMain.durationNs) / 1e6)) before main") }
                    if let after = program.afterMain, after.bytesRead > 0 {
                        parts.append("\(Profile.PreMain.amount(after.bytesRead)) read after main")
                    }
                    return program.fileName + (parts.isEmpty ? "" : " (" + parts.joined(separator: ", ") + ")")
                } + (process.unfollowedExec.map { ["\($0) (not followed)"] } ?? [])
                lines.append(
                    "| \(MarkdownRenderer.inline(process.label)) | \(process.parentID) | \(ReportText.ms(Double(process.startNs) / 1e6)) | "
                        + "\(ReportText.ms(Double(process.endNs) / 1e6)) | \(MarkdownRenderer.inline(programs.joined(separator: " → "))) |")
            }
            lines.append("")
        }
        let running = profile.samples.runningCount
        let runnable = profile.samples.ticks(in: .runnable)
        let disk = profile.samples.ticks(in: .disk)
        let total = profile.samples.totalTicks
        lines.append(
            "Recorded \(ReportText.count(total, "sample")) (\(running) running, \(total - running - runnable - disk) blocked, "
                + "\(runnable) runnable\(disk > 0 ? ", \(disk) waiting for the disk" : "")) at \(profile.metadata.samplingRateHz) Hz on "
                + "\(MarkdownRenderer.inline(profile.metadata.host.name)) (\(profile.metadata.host.cpuCount) CPUs), "
                + "\(MarkdownRenderer.inline(profile.metadata.buildConfiguration)) build, \(MarkdownRenderer.inline(profile.metadata.startTime)).")
        lines.append("")
        lines += phaseTable(profile)
        lines += spanTable(profile)
        lines += mainThreadAnswer(profile)
        lines += taskTable(profile)
        lines += violationTable(profile)
        lines += hangTable(profile)
        lines += framesAndBackground(profile)
        lines += topFunctions(profile)
        return MarkdownRenderer.bounded(lines, limit: limit)
    }

    private func phaseTable(_ profile: Profile) -> [String] {
        let phases = profile.phases
        var rows: [(String, UInt64, UInt64)] = [("process start → main entry", phases.processStartNs, phases.mainEntryNs)]
        if let exec = phases.programStartNs {
            rows = [("wrappers: process start → program exec", phases.processStartNs, exec), ("program exec → main entry", exec, phases.mainEntryNs)]
        }
        if let firstFrame = phases.firstFrameNs {
            rows.append(("main entry → \(profile.readyName)", phases.mainEntryNs, firstFrame))
            rows.append(("\(profile.readyName) → end of recording", firstFrame, phases.endNs))
        } else {
            rows.append(("main entry → end of recording", phases.mainEntryNs, phases.endNs))
        }
        var lines = ["### Phases", "", "| Phase | Start | Duration |", "|---|---:|---:|"]
        for (name, start, end) in rows {
            lines.append("| \(name) | \(ReportText.ms(start)) | \(ReportText.ms(NanosecondDuration.between(start, end).nanoseconds)) |")
        }
        let callbacks = profile.spans.filter { $0.category == .callback }
        for span in callbacks.prefix(rowsPerTable) {
            lines.append(
                "| \(MarkdownRenderer.cell(span.name)) (callback) | \(ReportText.ms(span.startNs)) | \(ReportText.ms(span.durationNs)) |")
        }
        if let preMain = phases.preMain {
            lines += ["", "\(Profile.PreMain.title): \(MarkdownRenderer.cell(preMain.sentence))."]
            if let loader = preMain.loader { lines += loaderTable(loader) }
            if let note = preMain.loaderNote { lines += ["", MarkdownRenderer.cell(note)] }
        }
        lines.append("")
        return lines
    }

    /// The loader's objects: when each was mapped, its size, relocations and initializers' time.
    private func loaderTable(_ loader: Profile.Loader) -> [String] {
        var lines = [
            "", "\(Profile.Loader.title): \(MarkdownRenderer.cell(loader.sentence)).", "",
            "| Object | Search and map (ms) | Size (kB) | Relocations | Initializers (ms) | Longest initializer |",
            "|---|---:|---:|---:|---:|---|",
        ]
        let outer = loader.outermostInitializers
        for (index, object) in loader.objects.enumerated().prefix(rowsPerTable) {
            let own = outer.filter { $0.object == index }
            let longest = own.max { $0.durationNs < $1.durationNs }
            let search = object.searchAndMapNs.map { ReportText.ms($0) } ?? ""
            let initializers = own.isEmpty ? "" : ReportText.ms(loader.initializerNs(ofObject: index))
            lines.append(
                "| \(MarkdownRenderer.cell(object.fileName)) | \(search) | \(object.sizeBytes / 1000) | \(object.relocations) | "
                    + "\(initializers) | \(MarkdownRenderer.cell(longest?.function ?? "")) |")
        }
        return lines
    }

    private func spanTable(_ profile: Profile) -> [String] {
        let table = SpanTable(profile)
        let rows = table.rows
        guard !rows.isEmpty else { return [] }
        // Spans that started Swift tasks: how many, and how long their jobs waited for a thread.
        let tasks = table.hasTaskFigures
        var lines = [
            "### Spans", "",
            "| Span | Thread | Start | Duration | CPU | Samples |" + (tasks ? " Tasks started | Waited to run |" : ""),
            "|---|---|---:|---:|---:|---:|" + (tasks ? "---:|---:|" : ""),
        ]
        for row in rows.prefix(rowsPerTable) {
            let name = String(repeating: "↳ ", count: min(row.depth, 8)) + MarkdownRenderer.cell(row.name)
            let cpu = row.cpuNs.map { ReportText.ms($0) } ?? ""
            let samples = row.samples.map { "\($0) running" + (row.waitingSamples.map { ", \($0) waiting" } ?? "") } ?? ""
            let taskCells = tasks
                ? " \(row.childTasks.map(String.init) ?? "") | \(row.scheduledNs.map { ReportText.ms($0) } ?? "") |" : ""
            lines.append(
                "| \(name) | \(MarkdownRenderer.cell(row.thread)) | \(ReportText.ms(row.startNs)) | "
                    + "\(ReportText.ms(row.durationNs)) | \(cpu) | \(samples) |" + taskCells)
        }
        if rows.count > rowsPerTable { lines += ["", "… and \(rows.count - rowsPerTable) more spans."] }
        lines.append("")
        return lines
    }

    private func mainThreadAnswer(_ profile: Profile) -> [String] {
        guard let firstFrame = profile.phases.firstFrameNs, !profile.tasks.isEmpty else { return [] }
        let main = profile.threads.first(where: \.isMain)?.id
        let before = profile.tasks.filter { task in
            guard let start = task.startNs else { return false }
            return start < firstFrame && (task.threadID == main || task.lane == .main)
        }
        var lines = ["### Main thread before the first frame", ""]
        if before.isEmpty {
            lines.append("No launch task ran on the main thread before the first frame.")
        } else {
            let total = before.compactMap(\.durationNs).reduce(NanosecondDuration(nanoseconds: 0)) { $0 + NanosecondDuration(nanoseconds: $1) }.nanoseconds
            lines.append(
                "\(ReportText.count(before.count, "task")) ran there for \(ReportText.ms(total)): "
                    + before.prefix(rowsPerTable).map { "`\(MarkdownRenderer.code($0.name))`" }.joined(separator: ", ")
                    + (before.count > rowsPerTable ? " and \(before.count - rowsPerTable) more" : "") + ".")
            let movable = before.filter(\.couldDefer)
            if movable.isEmpty {
                lines.append("None of them could move: each is UI work or something UI work waits for.")
            } else {
                lines.append(
                    "Could move off the main thread or after the first frame: "
                        + movable.prefix(rowsPerTable).map { "`\(MarkdownRenderer.code($0.name))`" }.joined(separator: ", ")
                        + (movable.count > rowsPerTable ? " and \(movable.count - rowsPerTable) more" : "") + ".")
            }
        }
        lines.append("")
        return lines
    }

    private func taskTable(_ profile: Profile) -> [String] {
        guard !profile.tasks.isEmpty else { return [] }
        let sorted = profile.tasks.sorted { ($0.durationNs ?? 0, $1.name) > ($1.durationNs ?? 0, $0.name) }
        var lines = [
            "### Slowest tasks (★ on the critical path)", "",
            "| Task | Lane | Thread | Start | Duration | Wait | CPU | Could defer |", "|---|---|---|---:|---:|---:|---:|---|",
        ]
        for task in sorted.prefix(rowsPerTable) {
            let name = (task.onCriticalPath ? "★ " : "") + MarkdownRenderer.cell(task.name)
                + (task.status == .completed ? "" : " (\(MarkdownRenderer.cell(task.status.rawValue)))")
            lines.append(
                "| \(name) | \(MarkdownRenderer.cell(task.lane.rawValue)) | \(MarkdownRenderer.cell(ReportText.threadName(of: task, in: profile))) | "
                    + "\(task.startNs.map { ReportText.ms($0) } ?? "–") | \(task.durationNs.map { ReportText.ms($0) } ?? "–") | "
                    + "\(ReportText.ms(task.waitNs)) | \(task.cpuNs.map { ReportText.ms($0) } ?? "–") | \(task.couldDefer ? "yes" : "") |")
        }
        if sorted.count > rowsPerTable { lines += ["", "\(sorted.count - rowsPerTable) more tasks are in the HTML report."] }
        lines.append("")
        return lines
    }

    private func violationTable(_ profile: Profile) -> [String] {
        var lines = ["### Thread violations: \(profile.violations.count)", ""]
        guard !profile.violations.isEmpty else { return lines + ["None recorded.", ""] }
        lines += ["| Rule | Thread | Time | Count | Message | Where |", "|---|---|---:|---:|---|---|"]
        for violation in profile.violations.prefix(rowsPerTable) {
            let place = violation.stack.flatMap { profile.userFrame(ofStack: $0) }.map(\.placeDescription) ?? "–"
            lines.append(
                "| \(MarkdownRenderer.cell(violation.rule.rawValue)) | \(MarkdownRenderer.cell(violation.threadName)) | "
                    + "\(ReportText.ms(violation.timeNs)) | \(violation.count) | \(MarkdownRenderer.cell(violation.message)) | "
                    + "\(MarkdownRenderer.cell(place)) |")
        }
        if profile.violations.count > rowsPerTable {
            lines += ["", "\(profile.violations.count - rowsPerTable) more violations are in the HTML report."]
        }
        lines.append("")
        return lines
    }

    private func hangTable(_ profile: Profile) -> [String] {
        var lines = ["### Hangs: \(profile.hangs.count)", ""]
        guard !profile.hangs.isEmpty else { return lines + ["None recorded.", ""] }
        lines += ["| Start | Duration | Running | Most sampled function |", "|---:|---:|---|---|"]
        for hang in profile.hangs.prefix(rowsPerTable) {
            let top = HangDigest(hang, in: profile).topFrames.first
            let topText =
                top.map { entry in
                    let place = entry.location.map { ", \($0)" } ?? ""
                    return "\(MarkdownRenderer.cell(entry.name)) (\(entry.count) of \(hang.stacks.count) stacks\(place))"
                } ?? "–"
            lines.append(
                "| \(ReportText.ms(hang.startNs)) | \(ReportText.ms(hang.durationNs)) | \(MarkdownRenderer.cell(hang.running)) | \(topText) |")
        }
        lines.append("")
        return lines
    }

    private func framesAndBackground(_ profile: Profile) -> [String] {
        // A program without the app life cycle (a server, a tool) draws no frames.
        var lines = profile.hasLifeCycle || !profile.displayFrames.isEmpty
            ? [
                "### Frames and budgets", "",
                "Frames: \(profile.displayFrames.count), slow (over 16.7 ms) \(profile.slowFrameCount), "
                    + "frozen (over 700 ms) \(profile.frozenFrameCount).",
            ]
            : ["### Sampling", ""]
        let background = profile.spans.filter { $0.category == .backgroundTask }
        if !background.isEmpty {
            lines.append("Background tasks: " + background.prefix(rowsPerTable).map {
                "`\(MarkdownRenderer.code($0.name))` \(ReportText.ms($0.durationNs))"
                    + ($0.cpuNs.map { " (CPU \(ReportText.ms($0)))" } ?? "")
            }.joined(separator: ", ") + ".")
        }
        if let termination = profile.termination {
            lines.append(
                "**Terminated** at \(ReportText.ms(termination.timeNs)) while \(MarkdownRenderer.inline(termination.phase)): "
                    + "\(MarkdownRenderer.inline(termination.reason)).")
        }
        let counts = profile.counts
        lines.append(
            "Stacks captured by signal: \(counts.captured) (a thread that had not run since a sample found it "
                + "blocked is recorded as still blocked there, without a signal), dropped \(counts.dropped), failed \(counts.failed), "
                + "skipped \(counts.skipped), truncated \(counts.truncated)"
                + (counts.lostTaskEvents > 0 ? "; task events lost \(counts.lostTaskEvents) (some tasks may lack runs)." : "."))
        lines.append("")
        return lines
    }

    private func topFunctions(_ profile: Profile) -> [String] {
        let summary = ProfileSummary(profile, limit: rowsPerTable)
        var lines: [String] = []
        if !summary.topSelf.isEmpty {
            lines += [
                "### Top functions by CPU time (running samples)", "", "| Self | Samples | Function |", "|---:|---:|---|",
            ]
            for entry in summary.topSelf {
                lines.append(
                    "| \(fmt(entry.share * 100, digits: 1, fixed: true))% | \(entry.selfSamples) | \(MarkdownRenderer.cell(entry.name)) |")
            }
            lines.append("")
        }
        if !summary.topWaits.isEmpty {
            let interval = 1000 / Double(max(profile.metadata.samplingRateHz, 1))
            lines += [
                "### Where threads waited", "", "| Waiting | Samples | How | Thread | In |", "|---:|---:|---|---|---|",
            ]
            for wait in summary.topWaits {
                lines.append(
                    "| \(ReportText.ms(Double(wait.samples) * interval)) | \(wait.samples) | \(wait.state.word) | "
                        + "\(MarkdownRenderer.cell(wait.thread)) | \(MarkdownRenderer.cell(wait.function)) |")
            }
            lines.append("")
        }
        if let idle = summary.idleLine(rateHz: profile.metadata.samplingRateHz) {
            lines += [MarkdownRenderer.inline(idle), ""]
        }
        return lines
    }

    /// Joins the lines, cutting at a line boundary when the text would pass `limit`.
    static func bounded(_ lines: [String], limit: Int) -> String {
        let note = "\n_The summary was cut here to stay under \(limit) characters; the HTML report has everything._\n"
        var lines = lines
        while lines.last?.isEmpty == true { lines.removeLast() }
        var result = ""
        for line in lines {
            if result.count + line.count + 1 + note.count > limit {
                return result + note
            }
            result += line + "\n"
        }
        return result
    }

    /// Text for a table cell: at most 160 characters on one line, with `|`, HTML and Markdown escaped.
    static func cell(_ text: String) -> String {
        let single = Markup.singleLine(text)
        let short = single.count > 160 ? String(single.prefix(157)) + "..." : single
        return inline(short).replacingOccurrences(of: "|", with: "\\|")
    }

    /// Text inside a sentence: HTML-escaped and with Markdown's emphasis and code characters escaped.
    static func inline(_ text: String) -> String {
        var result = ""
        for character in Markup.singleLine(text) {
            switch character {
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "&": result += "&amp;"
            case "*", "_", "`", "[", "]", "\\", "#", "~": result += "\\\(character)"
            default: result.append(character)
            }
        }
        return result
    }

    /// Text inside a code span: one line, at most 80 characters, without backticks.
    static func code(_ text: String) -> String {
        let single = Markup.singleLine(text).replacingOccurrences(of: "`", with: "'")
        return single.count > 80 ? String(single.prefix(77)) + "..." : single
    }
}
