import Dispatch
import Liftoff
import LiftoffSampler
import Testing

/// A view that logs its draws and the taps it sees.
final class LoggingView: View, @unchecked Sendable {
    // Touched only by the serialized runtime tests, on the loop's thread.
    nonisolated(unsafe) static var log: [String] = []
    var handles = false

    override func draw(_ rect: Rect) { LoggingView.log.append("draw \(name)") }

    override func handleTap(_ tap: Tap) -> Bool {
        LoggingView.log.append("tap \(name)")
        return handles
    }
}

final class LoggingController: ViewController, @unchecked Sendable {
    var loads = 0
    override func loadView() -> View { LoggingView(frame: Rect(x: 0, y: 0, width: 200, height: 200), name: "root") }
    override func viewDidLoad() { loads += 1 }
    override func handleTap(_ tap: Tap) -> Bool {
        LoggingView.log.append("tap controller")
        return false
    }
}

@inline(never)
func touchViewOffMainThread(_ view: View) {
    view.setNeedsDisplay()
}

extension RuntimeTests {
    @Suite("Views")
    struct ViewTests {
        /// A launched app whose key window holds `build`'s views.
        private func launched(_ build: @escaping (Window) -> Void) -> (ApplicationDriver, Window) {
            let delegate = RecordingDelegate()
            delegate.buildsWindow = false
            var made: Window?
            delegate.onFinishLaunching = { app in
                let window = Window(frame: Rect(x: 0, y: 0, width: 320, height: 480), name: "window")
                build(window)
                window.makeKeyAndVisible(in: app)
                made = window
            }
            let driver = ApplicationDriver(delegate: delegate)
            driver.send(.launch(LaunchOptions()))
            LoggingView.log = []
            return (driver, made!)
        }

        @Test("ten marks in one iteration draw the view once, at the end of the iteration")
        func coalescing() {
            let view = LoggingView(frame: Rect(x: 0, y: 0, width: 50, height: 50), name: "v")
            let (driver, _) = launched { $0.addSubview(view) }
            defer { driver.close() }
            let before = view.drawCount
            driver.perform {
                for _ in 0..<10 { view.setNeedsDisplay() }
                #expect(LoggingView.log.isEmpty, "marking does not draw")
            }
            #expect(view.drawCount == before + 1)
            #expect(LoggingView.log == ["draw v"])
            driver.turn()
            #expect(view.drawCount == before + 1, "nothing marked, nothing drawn")
        }

        @Test("parents draw before children and siblings in order; hidden views do not draw")
        func drawOrder() {
            let parent = LoggingView(frame: Rect(x: 0, y: 0, width: 100, height: 100), name: "parent")
            let first = LoggingView(frame: Rect(x: 0, y: 0, width: 10, height: 10), name: "first")
            let second = LoggingView(frame: Rect(x: 0, y: 0, width: 10, height: 10), name: "second")
            let child = LoggingView(frame: Rect(x: 0, y: 0, width: 5, height: 5), name: "child")
            let hidden = LoggingView(frame: Rect(x: 0, y: 0, width: 5, height: 5), name: "hidden")
            let (driver, _) = launched { window in
                window.addSubview(parent)
                parent.addSubview(first)
                parent.addSubview(second)
                first.addSubview(child)
                parent.addSubview(hidden)
            }
            defer { driver.close() }
            driver.perform {
                for view in [second, child, hidden, first, parent] { view.setNeedsDisplay() }
                hidden.isHidden = true
            }
            #expect(LoggingView.log == ["draw parent", "draw first", "draw child", "draw second"])
        }

        @Test("a size change redraws only in content mode .redraw; a move never does")
        func contentModes() {
            let redraw = LoggingView(frame: Rect(x: 0, y: 0, width: 10, height: 10), name: "redraw")
            redraw.contentMode = .redraw
            let scale = LoggingView(frame: Rect(x: 0, y: 0, width: 10, height: 10), name: "scale")
            let (driver, _) = launched { window in
                window.addSubview(redraw)
                window.addSubview(scale)
            }
            defer { driver.close() }
            driver.perform {
                redraw.frame = Rect(x: 0, y: 0, width: 20, height: 20)
                scale.frame = Rect(x: 0, y: 0, width: 20, height: 20)
            }
            #expect(LoggingView.log == ["draw redraw"])
            LoggingView.log = []
            driver.perform { redraw.frame = Rect(x: 5, y: 5, width: 20, height: 20) }
            #expect(LoggingView.log.isEmpty)
        }

        @Test("hit testing finds the front-most visible, interactive view under the point")
        func hitTesting() {
            let back = View(frame: Rect(x: 0, y: 0, width: 100, height: 100), name: "back")
            let front = View(frame: Rect(x: 50, y: 50, width: 100, height: 100), name: "front")
            let inner = View(frame: Rect(x: 10, y: 10, width: 20, height: 20), name: "inner")
            let ghost = View(frame: Rect(x: 0, y: 0, width: 300, height: 300), name: "ghost")
            ghost.alpha = 0
            let (driver, window) = launched { window in
                window.addSubview(back)
                window.addSubview(front)
                front.addSubview(inner)
                window.addSubview(ghost)
            }
            defer { driver.close() }
            #expect(window.hitTest(Point(x: 55, y: 55))?.name == "front", "the last added is on top")
            #expect(window.hitTest(Point(x: 65, y: 65))?.name == "inner")
            #expect(window.hitTest(Point(x: 10, y: 10))?.name == "back")
            #expect(window.hitTest(Point(x: 200, y: 10))?.name == "window")
            front.isHidden = true
            #expect(window.hitTest(Point(x: 65, y: 65))?.name == "back")
            #expect(window.hitTest(Point(x: 400, y: 10)) == nil)
        }

        @Test("an unhandled tap travels view → superview → view controller → window → application, then is discarded")
        func responderChain() {
            let controller = LoggingController()
            let leaf = LoggingView(frame: Rect(x: 10, y: 10, width: 20, height: 20), name: "leaf")
            let (driver, _) = launched { window in
                window.rootViewController = controller
                controller.view.addSubview(leaf)
            }
            defer { driver.close() }
            driver.send(.tap(Point(x: 15, y: 15)))
            #expect(LoggingView.log.prefix(3) == ["tap leaf", "tap root", "tap controller"])
            #expect(kinds(driver).last == "touch discarded")
            #expect(leaf.nextResponder === controller.view)
            #expect(controller.view.nextResponder === controller)
            #expect(controller.nextResponder === controller.view.superview)
            #expect(controller.view.superview?.nextResponder === driver.application)
            #expect(controller.loads == 1, "the view loaded once, lazily")

            leaf.handles = true
            driver.send(.tap(Point(x: 15, y: 15)))
            #expect(kinds(driver).last == "touch LoggingView(leaf)")
        }

        @Test("a button runs its action on a tap and handles it")
        func buttonTargetAction() {
            let button = Button(title: "Go", frame: Rect(x: 0, y: 0, width: 50, height: 30))
            nonisolated(unsafe) var taps = 0
            button.addAction { _ in taps += 1 }
            let (driver, _) = launched { $0.addSubview(button) }
            defer { driver.close() }
            driver.send(.tap(Point(x: 10, y: 10)))
            #expect(taps == 1)
            #expect(kinds(driver).last == "touch Button(Go)")
        }

        @Test("a view touched off the main thread is reported with the caller in its stack")
        func offMainThreadViolation() throws {
            let view = View(frame: Rect(x: 0, y: 0, width: 10, height: 10), name: "target")
            let (driver, _) = launched { $0.addSubview(view) }
            defer { driver.close() }
            ThreadRules.clearViolations()
            driver.perform { view.setNeedsDisplay() }
            #expect(ThreadRules.violations.isEmpty, "the main thread is never flagged")
            let done = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                for _ in 0..<2 { touchViewOffMainThread(view) }
                done.signal()
            }
            done.wait()
            let violation = try #require(ThreadRules.violations.first)
            #expect(ThreadRules.violations.count == 1, "repeats from one call site are counted")
            #expect(violation.count == 2)
            #expect(violation.operation == "View.setNeedsDisplay()")
            #expect(violation.threadID != CurrentThread.id)
            let symbolizer = ELFSymbolizer()
            let names = violation.stack.map { symbolizer.symbolize($0 &- 1).name }
            #expect(names.contains { $0.contains("touchViewOffMainThread") }, "\(names.prefix(6))")
            driver.turn()
            #expect(kinds(driver).last == "violation ui-on-main")
            ThreadRules.clearViolations()
        }
    }
}
