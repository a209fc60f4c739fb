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
/// until the launch ends (`LaunchRecorder.LaunchEnd`): spans started later, a server's
/// requests, record nothing and cost next to nothing (`isRecording` is false).
/// It nests under the span of the context it was started in, across tasks, as tracing's own
/// `ServiceContext` propagates; the samples of the Swift task that started it belong to it
/// while it lasts. `liftoff compare --metrics spans` and `liftoff check --max-phase` then treat
/// each span as a launch metric by its name.
///
/// Given another tracer (OpenTelemetry's, say), it hands every span started after the launch to
/// that one, and propagates contexts through it, so the service's own tracing goes on as before:
///
/// ```swift
/// InstrumentationSystem.bootstrap(LiftoffTracer(recorder: recorder, then: otelTracer))
/// ```
public struct LiftoffTracer: Tracer {
    /// The recorder the spans go to.
    public let recorder: LaunchRecorder
    /// The tracer spans go to once the launch has ended, and contexts propagate through.
    public let next: (any Tracer)?

    /// A tracer recording into `recorder` until the launch ends, then handing spans to `next`
    /// (when given; else they record nothing).
    public init(recorder: LaunchRecorder, then next: (any Tracer)? = nil) {
        self.recorder = recorder
        self.next = next
    }

    /// Starts a span under the Liftoff span of `context`, or else under the recorder's current
    /// span; after the launch, a span of `next`.
    public func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> LiftoffSpan {
        if recorder.launchEnded {
            guard let next else {
                // A server's request after its launch: nothing is built, timed or locked.
                recorder.noteSpanAfterLaunch()
                return LiftoffSpan(recorder: recorder, open: .unrecorded, operationName: "", context: context())
            }
            let span = LiftoffTracer.start(
                next, operationName, context: context(), kind: kind, at: instant(), function: function, file: fileID, line: line)
            return LiftoffSpan(forwarding: span, recorder: recorder)
        }
        var context = context()
        let parent = context.liftoffSpan ?? recorder.currentSpan
        // W3C ids: the trace of the context (a parent span's, or one extracted from a request), else a new one.
        let trace = W3CTraceContext(traceID: context.w3cTrace?.traceID ?? W3CTraceContext.newTraceID(), spanID: W3CTraceContext.newSpanID())
        let open = recorder.beginSpan(
            operationName, category: .span, parent: parent, startNs: LiftoffTracer.recorderNs(instant(), recorder),
            attributes: [
                "span.kind": "\(kind)", "code.function": function, "code.file": "\(fileID):\(line)", "trace_id": trace.traceID,
                "span_id": trace.spanID,
            ])
        context.liftoffSpan = open
        context.w3cTrace = trace
        return LiftoffSpan(recorder: recorder, open: open, operationName: operationName, context: context)
    }

    /// Reads a W3C `traceparent` from `carrier`, so that spans started in `context` join that
    /// trace; `next`, when given, extracts its own instead.
    public func extract<Carrier, Extract>(
        _ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract
    ) where Extract: Extractor, Extract.Carrier == Carrier {
        if let next { return next.extract(carrier, into: &context, using: extractor) }
        if let value = extractor.extract(key: "traceparent", from: carrier), let trace = W3CTraceContext(traceparent: value) {
            context.w3cTrace = trace
        }
    }

    /// Writes the W3C `traceparent` of the context's span into `carrier`; `next`, when given,
    /// injects its own instead.
    public func inject<Carrier, Inject>(
        _ context: ServiceContext, into carrier: inout Carrier, using injector: Inject
    ) where Inject: Injector, Inject.Carrier == Carrier {
        if let next { return next.inject(context, into: &carrier, using: injector) }
        if let trace = context.w3cTrace { injector.inject(trace.traceparent, forKey: "traceparent", into: &carrier) }
    }

    /// Spans are in the recorder as soon as they end; `next` is flushed. Deprecated as the
    /// protocol's requirement is.
    @available(*, deprecated)
    public func forceFlush() { next?.forceFlush() }

    /// A span of `tracer` (an existential opened here).
    static func start<T: Tracer, Instant: TracerInstant>(
        _ tracer: T, _ operationName: String, context: ServiceContext, kind: SpanKind, at instant: Instant,
        function: String, file fileID: String, line: UInt
    ) -> any Tracing.Span {
        tracer.startSpan(operationName, context: context, ofKind: kind, at: instant, function: function, file: fileID, line: line)
    }

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

/// A span of a ``LiftoffTracer``: a span of the profile, ended when the tracing span ends; or,
/// after the launch, the span of the tracer it hands spans to, which it passes everything on to.
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
    private let ownContext: ServiceContext
    /// The next tracer's span, after the launch.
    private let forwarded: (any Tracing.Span)?

    /// The span's context: its parent's, with this span as the Liftoff parent of spans started in
    /// it (the next tracer's span's own, after the launch).
    public var context: ServiceContext { forwarded?.context ?? ownContext }

    init(recorder: LaunchRecorder, open: LaunchRecorder.OpenSpan, operationName: String, context: ServiceContext) {
        self.recorder = recorder
        self.open = open
        self.ownContext = context
        self.forwarded = nil
        state = Mutex(State(name: operationName))
    }

    init(forwarding span: any Tracing.Span, recorder: LaunchRecorder) {
        self.recorder = recorder
        self.open = .unrecorded
        self.ownContext = span.context
        self.forwarded = span
        state = Mutex(State(name: ""))
    }

    /// The span's name; renaming it renames the profile's span.
    public var operationName: String {
        get { forwarded?.operationName ?? state.withLock { $0.name } }
        set {
            if let forwarded { return forwarded.operationName = newValue }
            state.withLock { $0.name = newValue }
            recorder.update(open, name: newValue, attributes: [:])
        }
    }

    /// Its attributes; they are written to the profile as text when the span ends.
    public var attributes: SpanAttributes {
        get { forwarded?.attributes ?? state.withLock { $0.attributes } }
        set {
            if let forwarded { return forwarded.attributes = newValue }
            guard open.isRecorded else { return }
            state.withLock { $0.attributes = newValue }
        }
    }

    /// Whether it records: a span of the launch, until it ends. One started after the launch
    /// ended records nothing, so libraries can skip building its attributes.
    public var isRecording: Bool { forwarded?.isRecording ?? (open.isRecorded && state.withLock { !$0.ended }) }

    /// Keeps the status, written as `status` (and `status.message`) when the span ends.
    public func setStatus(_ status: SpanStatus) {
        if let forwarded { return forwarded.setStatus(status) }
        guard open.isRecorded else { return }
        state.withLock { $0.status = status }
    }

    /// Records the event as a mark on the timeline, named `SPAN: EVENT`.
    public func addEvent(_ event: SpanEvent) {
        if let forwarded { return forwarded.addEvent(event) }
        guard open.isRecorded else { return }
        recorder.mark("\(operationName): \(event.name)")
    }

    /// Records the error as the attribute `error` and the status as an error.
    public func recordError<Instant: TracerInstant>(
        _ error: any Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant
    ) {
        if let forwarded { return forwarded.recordError(error, attributes: attributes, at: instant()) }
        state.withLock { state in
            state.attributes["error"] = String(describing: error)
            if state.status == nil { state.status = SpanStatus(code: .error) }
        }
    }

    /// Links are not drawn; the timeline has no place for them.
    public func addLink(_ link: SpanLink) { forwarded?.addLink(link) }

    /// Ends the profile's span at `instant`, with the attributes and status as text.
    public func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) {
        if let forwarded { return forwarded.end(at: instant()) }
        guard open.isRecorded else { return }
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

/// A W3C trace context: the trace a span belongs to and the span's own id, in lowercase hex. The
/// profile keeps them as the span's `trace_id` and `span_id` attributes, and pprof and OTLP put
/// them on the span's samples, where continuous profilers link traces to profiles.
public struct W3CTraceContext: Sendable, Equatable {
    /// 32 hexadecimal digits, not all zero.
    public var traceID: String
    /// 16 hexadecimal digits, not all zero.
    public var spanID: String

    /// A context of `traceID` and `spanID`.
    public init(traceID: String, spanID: String) {
        self.traceID = traceID
        self.spanID = spanID
    }

    /// The context of a `traceparent` header (`00-TRACE-SPAN-FLAGS`), or nil when it is not one.
    public init?(traceparent: String) {
        let parts = traceparent.trimmingCharacters(in: .whitespaces).split(separator: "-", omittingEmptySubsequences: false)
        func isHex(_ part: Substring, _ count: Int) -> Bool {
            part.utf8.count == count && part.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
        }
        guard parts.count >= 4, isHex(parts[0], 2), parts[0] != "ff", isHex(parts[1], 32), isHex(parts[2], 16), isHex(parts[3], 2),
            parts[1].contains(where: { $0 != "0" }), parts[2].contains(where: { $0 != "0" })
        else { return nil }
        self.init(traceID: String(parts[1]), spanID: String(parts[2]))
    }

    /// The `traceparent` header of this context, sampled.
    public var traceparent: String { "00-\(traceID)-\(spanID)-01" }

    static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// A new random trace id.
    static func newTraceID() -> String {
        let high = UInt64.random(in: 1...UInt64.max)
        return hex(high) + hex(UInt64.random(in: 0...UInt64.max))
    }

    /// A new random span id.
    static func newSpanID() -> String { hex(UInt64.random(in: 1...UInt64.max)) }
}

extension ServiceContext {
    /// The W3C trace context of the context's span, or of the request it was extracted from.
    public var w3cTrace: W3CTraceContext? {
        get { self[W3CTraceKey.self] }
        set { self[W3CTraceKey.self] = newValue }
    }

    /// The Liftoff span the context's code runs in, for spans started in it to nest under.
    var liftoffSpan: LaunchRecorder.OpenSpan? {
        get { self[LiftoffSpanKey.self] }
        set { self[LiftoffSpanKey.self] = newValue }
    }
}

private enum LiftoffSpanKey: ServiceContextKey {
    typealias Value = LaunchRecorder.OpenSpan
}

private enum W3CTraceKey: ServiceContextKey {
    typealias Value = W3CTraceContext
}
