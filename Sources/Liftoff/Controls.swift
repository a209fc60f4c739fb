/// A view that answers taps with target-action: it runs its actions and handles the tap.
open class Control: View, @unchecked Sendable {
    private var actions: [(Control) -> Void] = []

    /// Disabled controls pass taps on like plain views.
    public var isEnabled = true

    /// Adds an action run on every tap.
    public func addAction(_ action: @escaping (Control) -> Void) {
        ThreadRules.requireUIThread("Control.addAction(_:)")
        actions.append(action)
    }

    override open func handleTap(_ tap: Tap) -> Bool {
        guard isEnabled, !actions.isEmpty else { return false }
        for action in actions { action(self) }
        return true
    }
}

/// A button with a title.
open class Button: Control, @unchecked Sendable {
    /// The title.
    public var title: String {
        didSet { ThreadRules.requireUIThread("Button.title") { setNeedsDisplay() } }
    }

    /// Creates a button.
    public init(title: String, frame: Rect = .zero) {
        self.title = title
        super.init(frame: frame, name: title)
    }

    override open func draw(_ rect: Rect) {
        TextLayout.measure(title, width: rect.size.width)
    }
}

/// A line of text.
open class Label: View, @unchecked Sendable {
    /// The text.
    public var text: String {
        didSet { ThreadRules.requireUIThread("Label.text") { if text != oldValue { setNeedsDisplay() } } }
    }

    /// Creates a label.
    public init(text: String, frame: Rect = .zero) {
        self.text = text
        super.init(frame: frame, name: text)
        contentMode = .redraw
    }

    override open func draw(_ rect: Rect) {
        TextLayout.measure(text, width: rect.size.width)
    }
}

/// An image, named; it is decoded when drawn.
open class ImageView: View, @unchecked Sendable {
    /// The image's name.
    public var imageName: String {
        didSet { ThreadRules.requireUIThread("ImageView.imageName") { if imageName != oldValue { setNeedsDisplay() } } }
    }

    /// Creates an image view.
    public init(imageName: String, frame: Rect = .zero) {
        self.imageName = imageName
        super.init(frame: frame, name: imageName)
    }

    override open func draw(_ rect: Rect) {
        TextLayout.decodePlaceholder(imageName, size: rect.size)
    }
}

/// The small amount of real work drawing does in a headless runtime: line breaking and a
/// placeholder image decode, so draw passes take time proportional to what they draw.
enum TextLayout {
    @inline(never)
    @discardableResult
    static func measure(_ text: String, width: Double) -> Int {
        var lines = 1
        var lineWidth = 0.0
        for scalar in text.unicodeScalars {
            lineWidth += scalar.value < 128 ? 7 : 12
            if lineWidth > width, width > 0 {
                lines += 1
                lineWidth = 0
            }
        }
        return lines
    }

    @inline(never)
    @discardableResult
    static func decodePlaceholder(_ name: String, size: Size) -> UInt32 {
        var hash: UInt32 = 2_166_136_261
        let pixels = Int(max(1, size.width) * max(1, size.height)) / 16
        var seed = name.utf8.reduce(UInt32(0)) { $0 &* 31 &+ UInt32($1) }
        for _ in 0..<min(pixels, 4096) {
            seed = seed &* 1_103_515_245 &+ 12345
            hash = (hash ^ seed) &* 16_777_619
        }
        return hash
    }
}
