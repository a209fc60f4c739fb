import Inbox
import LiftoffTesting
import Testing

// Swift Testing runs these suites, and the tests in each, in parallel. Each test sees only the
// violations of the code it ran, including the blocks that code handed to Dispatch queues.

@Suite("Inbox on the main actor", .threadRules)
struct MainActorSuite {
    @Test @MainActor func markAllRead() {
        let model = InboxModel(messages: 30)
        model.markAllRead()
        #expect(model.unreadLabel.text == "0 unread")
    }

    @Test(arguments: [10, 300, 3_000])
    func reloadHopsToMain(messages: Int) async {
        let model = InboxModel(messages: messages)
        await model.reload()
        #expect(model.unreadLabel.text == "\((messages + 2) / 3) unread")
    }
}

@Suite("Careless reloads")
struct CarelessSuite {
    @Test func reloadCarelesslyIsCaughtWithItsCallSite() async {
        let model = InboxModel(messages: 30)
        await withKnownIssue {
            // Fails this test, and no other, with the stack of the label update.
            await expectNoThreadViolations { await model.reloadCarelessly() }
        } matching: { issue in
            issue.comments.contains { $0.rawValue.contains("reloadCarelessly") }
        }
    }

    @Test(arguments: 0..<20)
    func eachCarelessReloadIsOneViolation(attempt: Int) async {
        let model = InboxModel(messages: 30)
        let violations = await collectThreadViolations { await model.reloadCarelessly() }
        #expect(violations.count == 1)
        #expect(violations.first?.rule == ThreadRules.uiOnMain)
        #expect(violations.first?.operation == "Label.text")
    }
}

@Suite("Inbox, checked around each call")
struct ExpectationSuite {
    @Test func reloadKeepsUIWorkOnMain() async {
        let model = InboxModel(messages: 90)
        await expectNoThreadViolations { await model.reload() }   // fails with the violating stack
    }

    @Test @MainActor func markAllReadOnTheMainActor() {
        let model = InboxModel(messages: 90)
        expectNoThreadViolations { model.markAllRead() }
    }
}
