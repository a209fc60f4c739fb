import LiftoffProfile

extension LaunchRecorder {
    /// A span begun with ``beginSpan(_:category:parent:startNs:attributes:)``; ``endSpan(_:endNs:)``
    /// ends it.
    public struct OpenSpan: Sendable, Hashable {
        /// Its index in the profile's spans; -1 for a span not recorded (begun after the launch
        /// ended, or past ``LaunchRecorder/spanLimit``), which updating and ending leave alone.
        public let index: Int

        /// Whether the span is recorded in the profile.
        public var isRecorded: Bool { index >= 0 }

        /// A span not recorded, which updating and ending leave alone.
        public static let unrecorded = OpenSpan(index: -1)
    }

    /// The span the calling task runs in (inside ``span(_:category:_:)`` or
    /// ``withCurrentSpan(_:_:)``), if any.
    public var currentSpan: OpenSpan? { LaunchRecorder.currentSpan.map(OpenSpan.init) }

    /// Begins a span that ``endSpan(_:endNs:)`` ends, for spans that do not fit one closure:
    /// a tracing backend's, a service's start. It belongs to the calling thread and Swift task
    /// (their samples while it lasts are its own), under `parent`, or else under the span the
    /// calling task runs in. A span still open when the profile is finished ends then, with
    /// the attribute `liftoff.unended`.
    /// - Parameters:
    ///   - name: the span's name, as reports show it.
    ///   - category: what kind of span it is (a plain span by default).
    ///   - parent: the span it belongs under (by default the one the calling task runs in).
    ///   - startNs: when it began, in nanoseconds since the process start (now by default).
    ///   - attributes: key-value pairs kept with the span.
    public func beginSpan(
        _ name: String, category: Profile.SpanCategory = .span, parent: OpenSpan? = nil, startNs: UInt64? = nil,
        attributes: [String: String] = [:]
    ) -> OpenSpan {
        // A parent not recorded leaves the span under the current one.
        let parentIndex: Int?? = parent.flatMap { $0.isRecorded ? .some($0.index) : nil }
        let index = open(
            name, category: category, parent: parentIndex, startNs: startNs,
            attributes: attributes.isEmpty ? nil : attributes, unended: true)
        return index.map(OpenSpan.init) ?? .unrecorded
    }

    /// Adds to a span's attributes (replacing those of the same keys), and renames it when
    /// `name` is given.
    public func update(_ span: OpenSpan, name: String? = nil, attributes: [String: String]) {
        amend(span.index, name: name, attributes: attributes)
    }

    /// Ends a span begun with ``beginSpan(_:category:parent:startNs:attributes:)``, now or at
    /// `endNs` (nanoseconds since the process start). Ending it again moves its end.
    public func endSpan(_ span: OpenSpan, endNs: UInt64? = nil) {
        close(span.index, endNs: endNs)
    }

    /// Runs `body` inside `span`: spans it opens with ``span(_:category:_:)`` are its children.
    public func withCurrentSpan<T>(_ span: OpenSpan, _ body: () throws -> T) rethrows -> T {
        guard span.isRecorded else { return try body() }
        return try LaunchRecorder.$currentSpan.withValue(span.index) { try body() }
    }
}
