/// How a view's content follows a change of its size.
public enum ContentMode: Sendable, Equatable {
    /// Redraw the content when the size changes.
    case redraw
    /// Stretch the drawn content; no redraw.
    case scaleToFill
    /// Keep the content's size, centred; no redraw.
    case center
    /// Keep the content at the top-left; no redraw.
    case topLeft
}

/// A rectangle on screen that draws on demand and takes part in hit testing and the responder
/// chain.
///
/// ``setNeedsDisplay()`` only marks a view; it draws once, at the end of the current run-loop
/// iteration, however often it was marked, parents before children and siblings in order.
/// Subviews are ordered: the last added is on top. Every method that changes a view checks that
/// it runs on the main thread and records a ``ThreadViolation`` when it does not.
open class View: Responder, @unchecked Sendable {
    /// Frame in the superview's coordinates.
    public var frame: Rect {
        didSet {
            ThreadRules.requireUIThread("\(type(of: self)).frame") {
                if frame.size != oldValue.size, contentMode == .redraw { setNeedsDisplay() }
            }
        }
    }

    /// The view's own coordinate space: origin zero, the frame's size.
    public var bounds: Rect { Rect(origin: .zero, size: frame.size) }

    /// Subviews, back to front.
    public private(set) var subviews: [View] = []
    /// The view this one is a subview of.
    public private(set) weak var superview: View?
    /// The view controller whose root view this is.
    weak var owningController: ViewController?

    /// Hidden views neither draw nor receive taps.
    public var isHidden = false {
        didSet {
            ThreadRules.requireUIThread("\(type(of: self)).isHidden") {
                if !isHidden, oldValue { setNeedsDisplay() }
            }
        }
    }

    /// Opacity, 0 to 1; views below 0.01 receive no taps.
    public var alpha = 1.0 {
        didSet { ThreadRules.requireUIThread("\(type(of: self)).alpha") }
    }

    /// What a size change does to the content.
    public var contentMode: ContentMode = .scaleToFill

    /// Whether the view takes taps.
    public var isUserInteractionEnabled = true

    /// A name for reports and tests.
    public var name: String

    /// Whether the view is marked for drawing.
    public private(set) var needsDisplay = true
    /// How many times the view drew.
    public private(set) var drawCount = 0

    /// Creates a view.
    public init(frame: Rect = .zero, name: String? = nil) {
        self.frame = frame
        self.name = name ?? ""
        super.init()
    }

    override open var responderName: String {
        name.isEmpty ? String(describing: type(of: self)) : "\(type(of: self))(\(name))"
    }

    /// Adds `view` on top of the other subviews, moving it from any previous superview.
    public func addSubview(_ view: View) {
        ThreadRules.requireUIThread("\(type(of: self)).addSubview(_:)") {
            view.removeFromSuperview()
            subviews.append(view)
            view.superview = self
            view.setNeedsDisplay()
        }
    }

    /// Inserts `view` at `index` in the back-to-front order.
    public func insertSubview(_ view: View, at index: Int) {
        ThreadRules.requireUIThread("\(type(of: self)).insertSubview(_:at:)") {
            view.removeFromSuperview()
            subviews.insert(view, at: max(0, min(index, subviews.count)))
            view.superview = self
            view.setNeedsDisplay()
        }
    }

    /// Removes the view from its superview.
    public func removeFromSuperview() {
        ThreadRules.requireUIThread("\(type(of: self)).removeFromSuperview()") {
            guard let parent = superview else { return }
            parent.subviews.removeAll { $0 === self }
            superview = nil
            parent.setNeedsDisplay()
        }
    }

    /// Marks the view to draw at the end of the current run-loop iteration.
    public func setNeedsDisplay() {
        ThreadRules.requireUIThread("\(type(of: self)).setNeedsDisplay()")
        needsDisplay = true
    }

    /// Draws the view's content into `rect` (its bounds). Called by the display pass only.
    open func draw(_ rect: Rect) {}

    /// The window the view is in, if any.
    public var window: Window? {
        var view: View = self
        while let parent = view.superview { view = parent }
        return view as? Window
    }

    /// Whether `point` (in the view's coordinates) is inside it.
    open func point(inside point: Point) -> Bool { bounds.contains(point) }

    /// The front-most visible, interactive descendant (or the view itself) under `point`, given
    /// in the view's coordinates.
    open func hitTest(_ point: Point) -> View? {
        guard !isHidden, alpha >= 0.01, isUserInteractionEnabled, self.point(inside: point) else { return nil }
        for subview in subviews.reversed() {
            let local = Point(x: point.x - subview.frame.origin.x, y: point.y - subview.frame.origin.y)
            if let hit = subview.hitTest(local) { return hit }
        }
        return self
    }

    /// A view passes taps to its view controller when it is one's root view, else to its superview.
    override open var nextResponder: Responder? {
        if let owningController { return owningController }
        return superview
    }

    /// Draws this view if marked, then its visible subviews, front to back in order. Returns
    /// the number of views drawn.
    func displayIfNeeded() -> Int {
        guard !isHidden else { return 0 }
        var drawn = 0
        if needsDisplay {
            needsDisplay = false
            drawCount += 1
            draw(bounds)
            drawn += 1
        }
        for subview in subviews {
            drawn += subview.displayIfNeeded()
        }
        return drawn
    }

    /// Whether this view or a visible descendant is marked for drawing.
    public var subtreeNeedsDisplay: Bool {
        guard !isHidden else { return false }
        return needsDisplay || subviews.contains { $0.subtreeNeedsDisplay }
    }

    /// Number of views in this subtree, the view included.
    public var subtreeCount: Int { 1 + subviews.reduce(0) { $0 + $1.subtreeCount } }
}

/// The root of a view hierarchy, shown by the application.
open class Window: View, @unchecked Sendable {
    /// The application showing the window, once it is key.
    weak var application: Application?

    /// The controller whose view fills the window.
    public var rootViewController: ViewController? {
        didSet {
            ThreadRules.requireUIThread("Window.rootViewController") {
                oldValue?.viewIfLoaded?.removeFromSuperview()
                if let controller = rootViewController {
                    let view = controller.view
                    view.frame = bounds
                    addSubview(view)
                }
            }
        }
    }

    /// Makes this the application's key window and shows it.
    public func makeKeyAndVisible(in application: Application) {
        ThreadRules.requireUIThread("Window.makeKeyAndVisible()") {
            self.application = application
            isHidden = false
            application.setKeyWindow(self)
        }
    }

    /// A window passes taps to the application.
    override open var nextResponder: Responder? { application }

    /// Whether the window shows anything: it has subviews or draws itself.
    public var hasContent: Bool { !subviews.isEmpty || type(of: self) != Window.self }
}

/// Manages one view, loaded on first use.
open class ViewController: Responder, @unchecked Sendable {
    private var loadedView: View?

    /// A name for reports.
    public var title: String

    /// Creates a controller.
    public init(title: String = "") {
        self.title = title
        super.init()
    }

    /// The root view, loaded (``loadView()`` then ``viewDidLoad()``) on first access.
    public var view: View {
        ThreadRules.requireUIThread("ViewController.view")
        if let loadedView { return loadedView }
        let view = loadView()
        view.owningController = self
        loadedView = view
        viewDidLoad()
        return view
    }

    /// The root view if it has been loaded.
    public var viewIfLoaded: View? { loadedView }

    /// Whether the root view has been loaded.
    public var isViewLoaded: Bool { loadedView != nil }

    /// Creates the root view; the default is an empty view.
    open func loadView() -> View { View(name: title) }

    /// Called once, after the root view loaded.
    open func viewDidLoad() {}

    /// A controller passes taps to its view's superview.
    override open var nextResponder: Responder? { loadedView?.superview }

    override open var responderName: String {
        title.isEmpty ? String(describing: type(of: self)) : "\(type(of: self))(\(title))"
    }
}
