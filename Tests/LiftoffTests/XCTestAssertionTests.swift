import Dispatch
import LiftoffTesting
import XCTest

@inline(never)
func uiWorkFromXCTestWorker(_ view: View) {
    view.setNeedsDisplay()
}

/// `XCTAssertNoThreadViolations` in an XCTest case: it passes clean code and fails, once per
/// violation and with the violating stack, when the closure breaks a rule.
final class XCTestAssertionTests: XCTestCase {
    /// Failures recorded while `capturing` is set, kept instead of failing this test.
    private var captured: [String] = []
    private var capturing = false

    override func recordFailure(withDescription description: String, inFile filePath: String, atLine lineNumber: Int, expected: Bool) {
        if capturing {
            captured.append(description)
        } else {
            super.recordFailure(withDescription: description, inFile: filePath, atLine: lineNumber, expected: expected)
        }
    }

    override func tearDown() {
        ThreadRules.resetUIThread()
        super.tearDown()
    }

    func testUIWorkOnTheUIThreadPasses() {
        ThreadRules.designateCurrentThreadAsUIThread()
        capturing = true
        XCTAssertNoThreadViolations {
            let window = Window(frame: Rect(x: 0, y: 0, width: 10, height: 10))
            window.addSubview(View(frame: Rect(x: 0, y: 0, width: 5, height: 5)))
            window.setNeedsDisplay()
        }
        capturing = false
        XCTAssertEqual(captured, [])
    }

    func testUIWorkOffTheUIThreadFailsWithItsStack() {
        ThreadRules.designateCurrentThreadAsUIThread()
        let view = View(frame: Rect(x: 0, y: 0, width: 1, height: 1), name: "badge")
        capturing = true
        XCTAssertNoThreadViolations {
            let done = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                uiWorkFromXCTestWorker(view)
                done.signal()
            }
            done.wait()
        }
        capturing = false
        XCTAssertEqual(captured.count, 1, "one failure per violation: \(captured)")
        let report = captured.first ?? ""
        XCTAssertTrue(report.contains(ThreadRules.uiOnMain.rawValue), report)
        XCTAssertTrue(report.contains("uiWorkFromXCTestWorker"), "the violating stack is in the message: \(report)")
    }
}

/// `ThreadRulesTestCase`: every test of a subclass fails once per violation its code caused,
/// work it handed to a Dispatch queue included, and passes when there is none.
final class ThreadRulesTestCaseTests: ThreadRulesTestCase {
    /// Failures the base class recorded for violations, kept instead of failing this test.
    private var ruleFailures: [String] = []

    override func recordFailure(withDescription description: String, inFile filePath: String, atLine lineNumber: Int, expected: Bool) {
        if description.contains("Thread rule '") {
            ruleFailures.append(description)
        } else {
            super.recordFailure(withDescription: description, inFile: filePath, atLine: lineNumber, expected: expected)
        }
    }

    override func invokeTest() {
        super.invokeTest()
        let expected = name.contains("Breaks") ? 1 : 0
        XCTAssertEqual(ruleFailures.count, expected, "\(name): \(ruleFailures)")
        if name.contains("ReadingAFile") {
            XCTAssertTrue(ruleFailures.first?.contains("disk-read-on-main") == true, "\(ruleFailures)")
            XCTAssertTrue(ruleFailures.first?.contains("SettingsStore.load") == true, "\(ruleFailures)")
        } else if expected > 0 {
            XCTAssertTrue(ruleFailures.first?.contains("uiWorkFromXCTestWorker") == true, "\(ruleFailures)")
        }
        ThreadRules.resetUIThread()
    }

    func testCleanUIWorkPasses() {
        ThreadRules.designateCurrentThreadAsUIThread()
        let window = Window(frame: Rect(x: 0, y: 0, width: 10, height: 10))
        window.setNeedsDisplay()
    }

    func testBreaksTheRuleFromAQueue() {
        ThreadRules.designateCurrentThreadAsUIThread()
        let view = View(frame: Rect(x: 0, y: 0, width: 1, height: 1), name: "badge")
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            uiWorkFromXCTestWorker(view)
            done.signal()
        }
        done.wait()
    }

    func testBreaksByReadingAFileOnTheMainThread() throws {
        // XCTest runs its tests on the main thread.
        _ = try SettingsStore.load(try BlockingFixtures.settingsFile())
    }
}
