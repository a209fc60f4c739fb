/// A touch at a point, in the coordinates of the window it landed in.
public struct Tap: Sendable, Equatable {
    /// Where the finger landed, in window coordinates.
    public var location: Point

    /// Creates a tap.
    public init(location: Point) {
        self.location = location
    }
}

/// An object in the responder chain: it may handle a tap, or pass it to ``nextResponder``.
///
/// Responders may be reached from any thread so that the main-thread check can report misuse;
/// their state must only change on the main thread, which every mutating method checks.
open class Responder: @unchecked Sendable {
    /// Creates a responder.
    public init() {}

    /// The next object in the chain, or nil at its end.
    open var nextResponder: Responder? { nil }

    /// Handles a tap; return `true` when handled. The default handles nothing, so the tap
    /// travels on to `nextResponder`.
    open func handleTap(_ tap: Tap) -> Bool { false }

    /// A short name for reports, such as `Button(Load more)`.
    open var responderName: String { String(describing: type(of: self)) }
}
