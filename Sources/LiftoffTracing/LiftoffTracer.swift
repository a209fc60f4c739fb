import Foundation
import Liftoff
import Synchronization
import Tracing

/// A swift-distributed-tracing backend that puts every span on the Liftoff timeline.
///
/// Bootstrap it once, at the start of `main`, with the launch's recorder:
///
/// ```swift
/// let recorder = try LaunchRecorder.start()
/// InstrumentationSystem.bootstrap(LiftoffTracer(recorder: recorder))
/// ```
///
/// From then on each span a library starts (Hummingbird's tracing middleware, AsyncHTTPClient,
/// your own `withSpan`) is a span of the profile, with its attributes, kind and status as text,
/// until the launch ends (``LaunchRecorder/LaunchEnd``): spans started later, a server's
/// requests, record nothing and cost next to nothing (`isRecording` is false).
/// It nests under the span of the context it was started in, across tasks, as tracing's own
/// `ServiceContext` propagates; the samples of the Swift task that started it belong to it
/// while it lasts. `liftoff compare --metrics spans` and `liftoff check --max-phase` then treat
/// each span as a launch metric by its name.
public struct LiftoffTracer: Tracer {
    /// The recorder the spans go to.
    public let recorder: LaunchRecorder

    /// A tracer recording into `recorder`.
    public init(recorder: LaunchRecorder) {
        self.recorder = recorder
    }

    /// Starts a span under the Liftoff span of `context`, or else under the recorder's current span.
    public func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> LiftoffSpan {
        var context = context()
        let parent = context.liftoffSpan ?? recorder.currentSpan
        let open = recorder.beginSpan(
            operationName, category: .span, parent: parent, startNs: LiftoffTracer.recorderNs(instant(), recorder),
            attributes: ["span.kind": "\(kind)", "code.function": function, "code.file": "\(fileID):\(line)"])
        context.liftoffSpan = open
        return LiftoffSpan(recorder: recorder, open: open, operationName: operationName, context: context)
    }

    /// Nothing to propagate between processes: spans stay in this profile.
    public func extract<Carrier, Extract>(
        _ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract
    ) where Extract: Extractor, Extract.Carrier == Carrier {}

    /// Nothing to propagate between processes: spans stay in this profile.
    public func inject<Carrier, Inject>(
        _ context: ServiceContext, into carrier: inout Carrier, using injector: Inject
    ) where Inject: Injector, Inject.Carrier == Carrier {}

    /// Spans are in the recorder as soon as they end; there is nothing to flush.
    public func forceFlush() {}

    /// `instant` (wall-clock time since the epoch) as the recorder's time (nanoseconds since the
    /// process start), measured back from now so that clock steps do not move it.
    static func recorderNs(_ instant: some TracerInstant, _ recorder: LaunchRecorder) -> UInt64 {
        let now = recorder.nowNs
        let wallNow = DefaultTracerClock.now.nanosecondsSinceEpoch
        let wall = instant.nanosecondsSinceEpoch
        if wall >= wallNow { return NanosecondDuration(nanoseconds: now).after(wall - wallNow) }
        return NanosecondDuration.between(wallNow - wall, now).nanoseconds
    }
}

/// A span of a ``LiftoffTracer``: a span of the profile, ended when the tracing span ends.
public final class LiftoffSpan: Tracing.Span {
    private struct State {
        var name: String
        var attributes = SpanAttributes()
        var status: SpanStatus?
        var ended = false
    }

    private let recorder: LaunchRecorder
    private let open: LaunchRecorder.OpenSpan
    private let state: Mutex<State>

    /// The span's context: its parent's, with this span as the Liftoff parent of spans started in it.
    public let context: ServiceContext

    init(recorder: LaunchRecorder, open: LaunchRecorder.OpenSpan, operationName: String, context: ServiceContext) {
        self.recorder = recorder
        self.open = open
        self.context = context
        state = Mutex(State(name: operationName))
    }

    /// The span's name; renaming it renames the profile's span.
    public var operationName: String {
        get { state.withLock { $0.name } }
        set {
            state.withLock { $0.name = newValue }
            recorder.update(open, name: newValue, attributes: [:])
        }
    }

    /// Its attributes; they are written to the profile as text when the span ends.
    public var attributes: SpanAttributes {
        get { state.withLock { $0.attributes } }
        set {
            guard open.isRecorded else { return }
            state.withLock { $0.attributes = newValue }
        }
    }

    /// Whether it records: a span of the launch, until it ends. One started after the launch
    /// ended records nothing, so libraries can skip building its attributes.
    public var isRecording: Bool { open.isRecorded && state.withLock { !$0.ended } }

    /// Keeps the status, written as `status` (and `status.message`) when the span ends.
    public func setStatus(_ status: SpanStatus) {
        state.withLock { $0.status = status }
    }

    /// Records the event as a mark on the timeline, named `SPAN: EVENT`.
    public func addEvent(_ event: SpanEvent) {
        recorder.mark("\(operationName): \(event.name)")
    }

    /// Records the error as the attribute `error` and the status as an error.
    public func recordError<Instant: TracerInstant>(
        _ error: any Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant
    ) {
        state.withLock { state in
            state.attributes["error"] = String(describing: error)
            if state.status == nil { state.status = SpanStatus(code: .error) }
        }
    }

    /// Links are not drawn; the timeline has no place for them.
    public func addLink(_ link: SpanLink) {}

    /// Ends the profile's span at `instant`, with the attributes and status as text.
    public func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) {
        let (attributes, status, first) = state.withLock { state -> (SpanAttributes, SpanStatus?, Bool) in
            defer { state.ended = true }
            return (state.attributes, state.status, !state.ended)
        }
        guard first else { return }
        var text: [String: String] = [:]
        attributes.forEach { key, value in text[key] = LiftoffSpan.text(value) }
        if let status {
            text["status"] = status.code == .ok ? "ok" : "error"
            if let message = status.message { text["status.message"] = message }
        }
        recorder.update(open, attributes: text)
        recorder.endSpan(open, endNs: LiftoffTracer.recorderNs(instant(), recorder))
    }

    /// An attribute's value as text.
    static func text(_ attribute: SpanAttribute) -> String {
        switch attribute {
        case .int32(let value): return String(value)
        case .int64(let value): return String(value)
        case .double(let value): return String(value)
        case .bool(let value): return String(value)
        case .string(let value): return value
        case .stringConvertible(let value): return value.description
        case .int32Array(let values): return values.map(String.init).joined(separator: ", ")
        case .int64Array(let values): return values.map(String.init).joined(separator: ", ")
        case .doubleArray(let values): return values.map { String($0) }.joined(separator: ", ")
        case .boolArray(let values): return values.map(String.init).joined(separator: ", ")
        case .stringArray(let values): return values.joined(separator: ", ")
        case .stringConvertibleArray(let values): return values.map(\.description).joined(separator: ", ")
        default: return String(describing: attribute)
        }
    }
}

extension ServiceContext {
    /// The Liftoff span the context's code runs in, for spans started in it to nest under.
    var liftoffSpan: LaunchRecorder.OpenSpan? {
        get { self[LiftoffSpanKey.self] }
        set { self[LiftoffSpanKey.self] = newValue }
    }
}

private enum LiftoffSpanKey: ServiceContextKey {
    typealias Value = LaunchRecorder.OpenSpan
}
