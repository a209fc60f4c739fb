import LiftoffProfile

// What Liftoff's runtime already knows about a launch (hangs, launch tasks, thread rules,
// background budgets), as insights of the same form as the sampled ones.

/// Hangs of the main thread during the launch.
struct HangRule: InsightRule {
    let id = "hang"
    let title = "The main thread hung"
    let why =
        "A hang is the main thread away from its run loop for 250 ms or more: nothing is drawn and no input is "
        + "handled meanwhile. Its stacks show what it ran; move that work off the main thread or split it up."
    let defaultThresholdNs: UInt64 = 250_000_000

    func evaluate(_ launch: LaunchWindow, thresholdNs: UInt64) -> Insight? {
        let hangs = launch.profile.hangs.filter { $0.startNs < launch.endNs && $0.endNs > launch.startNs }
        let cost = hangs.reduce(UInt64(0)) { total, hang in
            total &+ (min(hang.endNs, launch.endNs) - max(hang.startNs, launch.startNs))
        }
        guard let longest = hangs.max(by: { $0.durationNs < $1.durationNs }), cost >= thresholdNs, cost > 0 else { return nil }
        var evidence = Insight.Evidence(
            thread: launch.mainThreadLabel, threadID: launch.mainThreadID, startNs: longest.startNs, endNs: longest.endNs)
        var counts: [Int: Int] = [:]
        for stack in longest.stacks where stack >= 0 && stack < launch.profile.stacks.count { counts[stack, default: 0] += 1 }
        let perStack = longest.stacks.isEmpty ? 0 : longest.durationNs / UInt64(longest.stacks.count)
        evidence.stacks = counts.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.prefix(3).map { stack, count in
            Insight.StackEvidence(
                frames: launch.frames(ofStack: stack), ns: perStack &* UInt64(count),
                programFrame: launch.programFrame(ofStack: stack))
        }
        for entry in HangDigest(longest, in: launch.profile, limit: 3).topFrames {
            evidence.notes.append("\(entry.name)\(entry.location.map { " — \($0)" } ?? "") in \(entry.count) of its stacks.")
        }
        let place = evidence.stacks.first?.programFrame.map { " in \($0)" } ?? ""
        let finding =
            "The main thread hung \(hangs.count == 1 ? "once" : "\(hangs.count) times") for \(LaunchWindow.ms(cost)), "
            + "the longest \(LaunchWindow.ms(longest.durationNs)) running \(longest.running)\(place)."
        return insight(launch, finding: finding, costNs: cost, thresholdNs: thresholdNs, evidence: evidence)
    }
}

/// Main-lane launch tasks before the first frame that nothing on the way to it needed.
struct DeferrableTasksRule: InsightRule {
    let id = "deferrable-tasks"
    let title = "Work the first frame did not need"
    let why =
        "A main-lane task that no task on the critical path depends on delays the first frame by its whole length. "
        + "Give it the mainAfterFirstFrame lane or a background lane."
    let defaultThresholdNs: UInt64 = 5_000_000

    func evaluate(_ launch: LaunchWindow, thresholdNs: UInt64) -> Insight? {
        let tasks = launch.profile.tasks.filter { $0.couldDefer && ($0.startNs ?? .max) < launch.endNs }
        let cost = tasks.reduce(UInt64(0)) { $0 &+ ($1.durationNs ?? 0) }
        guard cost >= thresholdNs, cost > 0 else { return nil }
        var evidence = Insight.Evidence(
            thread: launch.mainThreadLabel, threadID: launch.mainThreadID, startNs: tasks.compactMap(\.startNs).min() ?? launch.startNs,
            endNs: tasks.compactMap(\.endNs).max() ?? launch.endNs)
        for task in tasks.sorted(by: { ($0.durationNs ?? 0) > ($1.durationNs ?? 0) }) {
            evidence.notes.append("\(task.name): \(LaunchWindow.ms(task.durationNs ?? 0)) on the main lane, nothing on the critical path needs it.")
        }
        let names = tasks.prefix(3).map(\.name).joined(separator: ", ")
        let finding =
            "\(tasks.count == 1 ? "One main-lane task" : "\(tasks.count) main-lane tasks") (\(names)) took "
            + "\(LaunchWindow.ms(cost)) before the first frame and could run after it."
        return insight(launch, finding: finding, costNs: cost, thresholdNs: thresholdNs, evidence: evidence)
    }
}

/// Thread-rule violations during the launch (not the background budget's).
struct ThreadRuleViolationRule: InsightRule {
    let id = "thread-rule-violation"
    let title = "Thread rules were broken"
    let why =
        "UI work off the main thread is a data race with the main thread; blocking work on the main thread during "
        + "the launch delays the first frame. Each violation names the call site to change."
    let defaultThresholdNs: UInt64 = 0

    func evaluate(_ launch: LaunchWindow, thresholdNs: UInt64) -> Insight? {
        let violations = launch.profile.violations.filter { $0.rule != .backgroundCPU && $0.timeNs < launch.endNs }
        guard !violations.isEmpty else { return nil }
        var evidence = Insight.Evidence(
            thread: nil, threadID: nil, startNs: violations.map(\.timeNs).min() ?? launch.startNs,
            endNs: violations.map(\.timeNs).max() ?? launch.startNs)
        for (position, violation) in violations.prefix(5).enumerated() {
            // The first is the finding; the notes list the others.
            if position > 0 { evidence.notes.append(launch.profile.sentence(for: violation)) }
            if let stack = violation.stack, evidence.stacks.count < 3 {
                evidence.stacks.append(
                    Insight.StackEvidence(frames: launch.frames(ofStack: stack), ns: 0, programFrame: launch.programFrame(ofStack: stack)))
            }
        }
        let count = violations.reduce(0) { $0 + $1.count }
        let finding = "\(count == 1 ? "1 violation" : "\(count) violations") of thread rules during the launch: "
            + launch.profile.sentence(for: violations[0])
        return insight(launch, finding: finding, costNs: 0, thresholdNs: thresholdNs, evidence: evidence)
    }
}

/// Background work over its CPU budget.
struct BackgroundBudgetRule: InsightRule {
    let id = "background-budget"
    let title = "Background work over budget"
    let why =
        "In the background the program may use at most 80 % of a core averaged over a minute; past that the "
        + "system may end it. Do less while in the background, or defer it until the program is active."
    let defaultThresholdNs: UInt64 = 0

    func evaluate(_ launch: LaunchWindow, thresholdNs: UInt64) -> Insight? {
        let violations = launch.profile.violations.filter { $0.rule == .backgroundCPU }
        guard let first = violations.first else { return nil }
        let evidence = Insight.Evidence(
            thread: "\(first.threadName) (\(first.threadID))", threadID: first.threadID, startNs: first.timeNs, endNs: first.timeNs,
            notes: violations.prefix(5).map { launch.profile.sentence(for: $0) })
        let cpu = launch.profile.spans.filter { $0.category == .backgroundTask }.reduce(UInt64(0)) { $0 &+ ($1.cpuNs ?? 0) }
        let finding = "The program went over its background CPU budget: \(first.message)"
        return insight(launch, finding: finding, costNs: cpu, thresholdNs: thresholdNs, evidence: evidence)
    }
}
