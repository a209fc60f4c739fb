/// A point in a view's coordinate space.
public struct Point: Sendable, Equatable, CustomStringConvertible {
    /// Horizontal position.
    public var x: Double
    /// Vertical position, growing downwards.
    public var y: Double

    /// Creates a point.
    public init(x: Double, y: Double) {
        self.x = x
        self.y = y
    }

    /// The origin.
    public static let zero = Point(x: 0, y: 0)

    public var description: String { "(\(x), \(y))" }
}

/// A width and height.
public struct Size: Sendable, Equatable {
    /// Width.
    public var width: Double
    /// Height.
    public var height: Double

    /// Creates a size.
    public init(width: Double, height: Double) {
        self.width = width
        self.height = height
    }

    /// No size.
    public static let zero = Size(width: 0, height: 0)
}

/// A rectangle: origin at the top-left corner and a size.
public struct Rect: Sendable, Equatable, CustomStringConvertible {
    /// Top-left corner.
    public var origin: Point
    /// Width and height.
    public var size: Size

    /// Creates a rectangle.
    public init(x: Double, y: Double, width: Double, height: Double) {
        origin = Point(x: x, y: y)
        size = Size(width: width, height: height)
    }

    /// Creates a rectangle from an origin and a size.
    public init(origin: Point, size: Size) {
        self.origin = origin
        self.size = size
    }

    /// The empty rectangle at the origin.
    public static let zero = Rect(x: 0, y: 0, width: 0, height: 0)

    /// Whether the rectangle has no area.
    public var isEmpty: Bool { size.width <= 0 || size.height <= 0 }

    /// Whether `point` lies inside (the top and left edges are inside, the others are not).
    public func contains(_ point: Point) -> Bool {
        point.x >= origin.x && point.y >= origin.y && point.x < origin.x + size.width
            && point.y < origin.y + size.height
    }

    public var description: String { "(\(origin.x), \(origin.y), \(size.width), \(size.height))" }
}
