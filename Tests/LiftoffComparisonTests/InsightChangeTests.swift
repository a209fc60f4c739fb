import Foundation
import LiftoffProfile
import LiftoffTestSupport
import Testing

@testable import LiftoffComparison

@Suite("Insight changes", .timeLimit(.minutes(5)))
struct InsightChangeTests {
    @Test("an insight in every head run and no base run appeared; one that grew is listed; one that held is not")
    func appearedAndGrew() throws {
        let appeared = InsightChange.between(base: [launchWithSleep(ms: 0), launchWithSleep(ms: 0)], head: [launchWithSleep(ms: 40), launchWithSleep(ms: 40)])
        let change = try #require(appeared.first)
        #expect(appeared.count == 1 && change.id == "main-thread-sleep" && change.appeared)
        #expect(change.baseMedianMs == 0 && change.headMedianMs == 40)
        #expect(change.headRuns == (2, 2) && change.baseRuns == (0, 2))
        #expect(change.finding.contains("load_config"))

        let grew = InsightChange.between(base: [launchWithSleep(ms: 20), launchWithSleep(ms: 20)], head: [launchWithSleep(ms: 60), launchWithSleep(ms: 60)])
        #expect(grew.map(\.id) == ["main-thread-sleep"] && grew.first?.appeared == false)

        let held = InsightChange.between(base: [launchWithSleep(ms: 40), launchWithSleep(ms: 40)], head: [launchWithSleep(ms: 41), launchWithSleep(ms: 40)])
        #expect(held.isEmpty, "a change of 1 ms in 40 is no growth")
    }

    @Test("a comparison lists the insights that appeared; they inform, the gated metric decides")
    func inComparison() throws {
        let base = RunSet(folder: URL(fileURLWithPath: "/base"), profiles: (0..<4).map { _ in launchWithSleep(ms: 0) })
        let head = RunSet(folder: URL(fileURLWithPath: "/head"), profiles: (0..<4).map { _ in launchWithSleep(ms: 40) })
        let comparison = try LaunchComparison(base: base, head: head)
        #expect(comparison.insights.map(\.id) == ["main-thread-sleep"])
        #expect(comparison.verdict == .unchanged, "every launch took 200 ms to its first frame")
    }
}
