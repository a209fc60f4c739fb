import Dispatch
import Liftoff
import LiftoffTestSupport
import LiftoffTesting
import Testing

/// Parties that wait for each other once, so two collections overlap in time for sure.
actor Rendezvous {
    private let parties: Int
    private var arrived = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(parties: Int) {
        self.parties = parties
    }

    func meet() async {
        arrived += 1
        if arrived >= parties {
            for continuation in waiting { continuation.resume() }
            waiting = []
        } else {
            await withCheckedContinuation { waiting.append($0) }
        }
    }
}

@inline(never)
func breakRule(_ rule: Profile.RuleName, _ operation: String) { ThreadRules.report(rule: rule, operation: operation) }

/// Not serialized: these tests run beside each other, as a user's parallel suites do. The suite
/// as a whole holds the process lock, so tests that clear the record or replace the rules'
/// handlers do not run meanwhile.
@Suite("Collections side by side", .processStateForWholeSuite)
struct ParallelCollectionTests {
    /// Runs `body` for sides "left" and "right" at once, each in a collection of its own.
    private func collectOnTwoSides(
        _ body: @escaping @Sendable (String) async -> Void
    ) async -> [String: [ThreadViolation]] {
        await withTaskGroup(of: (String, [ThreadViolation]).self) { group in
            for side in ["left", "right"] {
                group.addTask { (side, await collectThreadViolations { await body(side) }) }
            }
            var results: [String: [ThreadViolation]] = [:]
            for await (side, violations) in group { results[side] = violations }
            return results
        }
    }

    @Test("two collections running at once each get their own violations, repeats included, and those of the tasks they start")
    func overlappingCollections() async {
        let started = Rendezvous(parties: 2)
        let finishing = Rendezvous(parties: 2)
        let results = await collectOnTwoSides { side in
            breakRule("parallel-\(side)", "before")
            await started.meet()
            // A repeat of the other side's call site must not count here.
            for _ in 0..<3 { breakRule("parallel-shared", "same call site") }
            await Task { breakRule("parallel-\(side)", "in a task it started") }.value
            await finishing.meet()
        }
        for side in ["left", "right"] {
            let violations = results[side] ?? []
            #expect(
                violations.map { $0.rule.rawValue }.sorted() == ["parallel-\(side)", "parallel-\(side)", "parallel-shared"],
                "\(side): \(violations.map { "\($0.rule) \($0.operation)" })")
            #expect(violations.first { $0.rule == "parallel-shared" }?.count == 3, "\(side) counts its own three repeats")
        }
    }

    @Test("work two collections hand to Dispatch queues at once belongs to the collection that handed it over")
    func dispatchedWorkBelongsToItsCollection() async {
        let started = Rendezvous(parties: 2)
        let results = await collectOnTwoSides { side in
            await started.meet()
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                let work = DispatchGroup()
                DispatchQueue.global().async(group: work) { breakRule("handed-\(side)", "group") }
                work.enter()
                DispatchQueue.global(qos: .utility).async {
                    breakRule("handed-\(side)", "async")
                    // Handed on again, from a worker thread.
                    DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(5)) {
                        breakRule("handed-\(side)", "after")
                        work.leave()
                    }
                }
                work.notify(queue: .global()) {
                    breakRule("handed-\(side)", "notify")
                    done.resume()
                }
            }
        }
        for side in ["left", "right"] {
            let violations = results[side] ?? []
            #expect(Set(violations.map(\.rule)) == ["handed-\(side)"], "\(side): \(violations.map { "\($0.rule)" })")
            #expect(violations.map(\.operation).sorted() == ["after", "async", "group", "notify"])
        }
    }

    @Test("work a test hands to Dispatch outside any collection is not collected beside it")
    func dispatchedOutsideAnyCollection() async {
        // The tests above collect while this one's dispatched blocks break a rule.
        for _ in 0..<20 {
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().async {
                    breakRule("handed-outside-any-collection", "from a queue")
                    done.resume()
                }
            }
            try? await Task.sleep(for: .milliseconds(2))
        }
        let mine = ThreadRules.violations.filter { $0.rule == "handed-outside-any-collection" }
        #expect(mine.map(\.count).reduce(0, +) >= 20)
        #expect(mine.allSatisfy { $0.test != nil }, "the blocks carry the test that handed them over")
    }

    @Test("the .threadRules trait records one issue, with the violating stack, per violation of the test's code")
    func traitRecordsViolations() async throws {
        let trait = ThreadRulesTrait.threadRules
        let test = try #require(Test.current)
        try await withKnownIssue {
            try await trait.provideScope(for: test, testCase: nil) {
                await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                    DispatchQueue.global().async {
                        breakRule("trait-rule", "from a queue")
                        done.resume()
                    }
                }
            }
        } matching: { issue in
            issue.comments.contains { $0.rawValue.contains("trait-rule") && $0.rawValue.contains("breakRule") }
        }
    }

    @Test("the .threadRules trait records nothing for a test that breaks no rule")
    func traitPassesCleanCode() async throws {
        // Runs beside the test above: its violation must not land here.
        try await ThreadRulesTrait.threadRules.provideScope(for: try #require(Test.current), testCase: nil) {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Breaks `rule` twenty times over about 40 ms, from two call sites, and collects.
    private func breakTwentyTimes(_ rule: Profile.RuleName) async {
        let violations = await collectThreadViolations {
            for round in 0..<20 {
                breakRule(rule, "round \(round % 2)")
                try? await Task.sleep(for: .milliseconds(2))
            }
        }
        #expect(Set(violations.map(\.rule)) == [rule])
        #expect(violations.map(\.count).reduce(0, +) == 20)
    }

    @Test("a test beside others sees exactly its own violations (1 of 2)")
    func besideOthersOne() async { await breakTwentyTimes("beside-one") }

    @Test("a test beside others sees exactly its own violations (2 of 2)")
    func besideOthersTwo() async { await breakTwentyTimes("beside-two") }

    @Test("code of a test outside any collection is not collected by the tests beside it")
    func outsideAnyCollection() async {
        // The two tests above collect while this one breaks a rule from its own task.
        for _ in 0..<20 {
            breakRule("outside-any-collection", "in the test's task")
            try? await Task.sleep(for: .milliseconds(2))
        }
        let mine = ThreadRules.violations.filter { $0.rule == "outside-any-collection" }
        #expect(mine.map(\.count).reduce(0, +) >= 20)
    }

    @Test("a collection inside another keeps what it collected; the outer one sees the rest, repeats included")
    func nestedCollections() {
        let (inner, outer) = collectThreadViolations { () -> [ThreadViolation] in
            breakRule("nested", "outside")
            let inner = collectThreadViolations {
                for _ in 0..<2 { breakRule("nested", "shared call site") }
                breakRule("nested", "inside")
            }.violations
            for _ in 0..<3 { breakRule("nested", "shared call site") }
            return inner
        }
        #expect(inner.map(\.operation).sorted() == ["inside", "shared call site"])
        #expect(inner.first { $0.operation == "shared call site" }?.count == 2)
        #expect(outer.map(\.operation).sorted() == ["outside", "shared call site"])
        #expect(outer.first { $0.operation == "shared call site" }?.count == 3, "the repeats after the inner collection")
    }

    @Test("the .threadRules trait points its issue at the line that broke the rule")
    func traitIssueAtCallSite() async throws {
        let test = try #require(Test.current)
        let line = #line + 3
        try await withKnownIssue {
            try await ThreadRulesTrait.threadRules.provideScope(for: test, testCase: nil) {
                ThreadRules.report(rule: "trait-call-site", operation: "here")
            }
        } matching: { issue in
            issue.comments.contains { $0.rawValue.contains("trait-call-site") }
                && issue.sourceLocation?.line == line && issue.sourceLocation?.fileName == "ParallelCollectionTests.swift"
        }
    }
}
