import Inbox
import LiftoffTesting
import XCTest

/// Every test fails once per thread-rule violation its code causes.
final class InboxXCTests: ThreadRulesTestCase {
    func testReloadUpdatesTheLabelOnMain() async {
        let model = InboxModel(messages: 9)
        await model.reload()
        XCTAssertEqual(model.unreadLabel.text, "3 unread")
    }

    func testCarelessReloadIsOneViolation() async {
        let model = InboxModel(messages: 9)
        let violations = await collectThreadViolations { await model.reloadCarelessly() }
        XCTAssertEqual(violations.map(\.operation), ["Label.text"])
    }
}

/// `XCTAssertNoThreadViolations` around one call, in a plain test case.
final class InboxAssertionTests: XCTestCase {
    func testMarkAllReadOnTheMainActor() async {
        let model = InboxModel(messages: 9)
        await XCTAssertNoThreadViolations { await model.markAllRead() }
        XCTAssertEqual(model.unreadLabel.text, "0 unread")
    }
}
