import Foundation
import Liftoff
import LiftoffComparison
import LiftoffReports
import LiftoffTestSupport
import LiftoffTracing
import Synchronization
import Testing
import Tracing

/// CPU work with a name to find in the profile.
@inline(never)
func tracedRouterWork(milliseconds: UInt64, measuredBy work: MeasuredWork? = nil) -> UInt64 {
    var hash: UInt64 = 14_695_981_039_346_656_037
    let spin = {
        let end = MonotonicClock.nowNs + milliseconds * 1_000_000
        while MonotonicClock.nowNs < end {
            for byte in 0..<UInt64(256) { hash = (hash ^ byte) &* 1_099_511_628_211 }
        }
    }
    if let work { work.measure(spin) } else { spin() }
    return hash
}

struct StartFailure: Error, CustomStringConvertible {
    var description: String { "the port is taken" }
}

/// The recorder starts the process-wide sampler: these tests hold the process lock.
@Suite("Tracing backend", .processState(timeLimit: .seconds(120)))
struct TracingBackendTests {
    @Test("spans carry W3C ids: a child keeps its parent's trace, a traceparent extracted from a request is joined, and injected")
    func spansCarryTraceIDs() throws {
        let recorder = try LaunchRecorder.start(configuration: SamplerConfiguration(rateHz: 1000))
        let tracer = LiftoffTracer(recorder: recorder)
        let incoming = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        var context = ServiceContext.topLevel
        tracer.extract(["traceparent": incoming], into: &context, using: DictionaryExtractor())
        var injected: [String: String] = [:]
        tracer.withSpan("start server") { _ in
            tracer.withSpan("build router") { child in
                tracer.inject(child.context, into: &injected, using: DictionaryInjector())
            }
        }
        tracer.withSpan("handle request", context: context) { _ in }
        recorder.ready()
        let profile = recorder.finish(violations: [])

        let ids = { (name: String) in profile.spans.first { $0.name == name }?.attributes ?? [:] }
        let (start, router, request) = (ids("start server"), ids("build router"), ids("handle request"))
        let hex = { (text: String?, count: Int) in text.map { $0.count == count && $0.allSatisfy(\.isHexDigit) } ?? false }
        #expect(hex(start["trace_id"], 32) && hex(start["span_id"], 16), "\(start)")
        #expect(router["trace_id"] == start["trace_id"], "a child span is in its parent's trace")
        #expect(router["span_id"] != start["span_id"])
        #expect(injected["traceparent"] == "00-\(router["trace_id"] ?? "")-\(router["span_id"] ?? "")-01")
        #expect(request["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736", "an extracted trace is joined")
        #expect(hex(request["span_id"], 16) && request["span_id"] != "00f067aa0ba902b7")
        #expect(W3CTraceContext(traceparent: "00-00000000000000000000000000000000-00f067aa0ba902b7-01") == nil)
        #expect(W3CTraceContext(traceparent: "garbage") == nil)
    }

    @Test("withSpan spans land in the profile nested across tasks, with attributes, kind, status and their samples")
    func spansLandNested() async throws {
        let recorder = try LaunchRecorder.start(configuration: SamplerConfiguration(rateHz: 1000))
        let tracer = LiftoffTracer(recorder: recorder)
        let work = MeasuredWork()
        await tracer.withSpan("start server", ofKind: .server) { span in
            span.attributes["http.port"] = 8080
            _ = await tracer.withSpan("build router") { _ in
                await Task.yield()
                return tracedRouterWork(milliseconds: 100, measuredBy: work)
            }
            // A child task inherits the tracing context, so its span nests here too.
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    tracer.withSpan("connect database", ofKind: .client) { span in
                        span.attributes["db.system"] = "postgresql"
                    }
                }
            }
            do {
                try tracer.withSpan("open cache") { _ in throw StartFailure() }
            } catch {}
        }
        recorder.ready()
        let profile = recorder.finish(violations: [])

        let names = profile.spans.map(\.name)
        let start = try #require(names.firstIndex(of: "start server"))
        let router = try #require(profile.spans.first { $0.name == "build router" })
        let database = try #require(profile.spans.first { $0.name == "connect database" })
        let cache = try #require(profile.spans.first { $0.name == "open cache" })
        #expect(router.parent == start && database.parent == start && cache.parent == start, "\(profile.spans.map(\.parent))")
        #expect(profile.spans[start].attributes?["http.port"] == "8080")
        #expect(profile.spans[start].attributes?["span.kind"] == "server")
        #expect(database.attributes?["db.system"] == "postgresql")
        #expect(database.attributes?["span.kind"] == "client")
        #expect(cache.attributes?["error"] == "the port is taken")
        #expect(cache.attributes?["status"] == "error")
        #expect(router.durationNs >= 100_000_000)
        #expect(profile.spans[start].endNs >= router.endNs, "the parent ends after its child")

        // The router's work is its own: sampled in its task, whichever thread ran it.
        let samples = try #require(router.samples)
        let measured = work.work, interval = profile.samplingIntervalNs
        #expect(
            measured.agrees(withRunning: Double(samples), intervalNs: interval),
            "\(samples) running samples for \(measured): \(measured.expectedRunning(intervalNs: interval)) ± \(measured.runningTolerance(intervalNs: interval))")
        let owned = profile.sampleIndices(inSpansNamed: "build router").filter { profile.samples.state[$0] == .running }
        let named = owned.filter { sample in
            profile.frameIndices(ofStack: profile.samples.stack[sample]).contains {
                profile.frames[$0].name.contains("tracedRouterWork")
            }
        }
        #expect(named.count * 2 >= owned.count, "tracedRouterWork leads the span's samples: \(named.count) of \(owned.count)")

        // The attributes are part of profile.json as its schema describes them.
        let file = testScratch.appendingPathComponent("traced-\(UUID().uuidString).json")
        try profile.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(try Profile.load(from: file).spans == profile.spans)
        let check = try JSONSchemaCheck.validate(
            file: file.path, schema: repositoryRoot.appendingPathComponent("Schemas/profile-3.schema.json").path)
        #expect(check.status == 0, "\(check.output)")

        // Each span is a launch metric by its name.
        let runs = RunSet(folder: URL(fileURLWithPath: "/"), profiles: [profile, profile])
        let metrics = Set(runs.metrics([.spans]).map(\.name))
        #expect(metrics.isSuperset(of: ["span: start server", "span: build router", "span: connect database"]))
    }

    @Test("a span that never ends is closed when the profile is finished, and says so")
    func unendedSpan() throws {
        let recorder = try LaunchRecorder.start(configuration: SamplerConfiguration(rateHz: 100))
        let tracer = LiftoffTracer(recorder: recorder)
        let span = tracer.startSpan("warm up")
        span.attributes["items"] = 3
        let profile = recorder.finish(violations: [])
        let recorded = try #require(profile.spans.first { $0.name == "warm up" })
        #expect(recorded.attributes?["liftoff.unended"] == "true")
        #expect(recorded.endNs >= recorded.startNs)
        span.end()  // after the profile: no effect, no trap
    }

    @Test("after the launch, spans record nothing in the profile and go to the tracer it wraps, which propagates contexts")
    func afterTheLaunch() throws {
        let recorder = try LaunchRecorder.start(configuration: SamplerConfiguration(rateHz: 100))
        let spans = StartedSpans()
        let tracer = LiftoffTracer(recorder: recorder, then: ListingTracer(started: spans))
        tracer.withSpan("bind port") { _ in }
        recorder.ready()
        for request in 0..<100 {
            tracer.withSpan("GET /items/\(request)") { span in
                span.attributes["http.status_code"] = 200
                #expect(span.isRecording, "the wrapped tracer's span records")
            }
        }
        let profile = recorder.finish(violations: [])
        #expect(profile.spans.map(\.name) == ["bind port"], "the profile holds the launch alone")
        #expect(spans.names.count == 100 && spans.names.first == "GET /items/0", "each request went to the wrapped tracer")
        #expect(spans.ended.withLock { $0 } == 100 && spans.statusCodes.withLock { $0 } == 100)

        let alone = LiftoffTracer(recorder: recorder)
        let late = alone.startSpan("GET /late")
        late.attributes["ignored"] = 1
        #expect(!late.isRecording && late.attributes.isEmpty, "without a tracer to hand it to, a span after the launch records nothing")
        late.end()
    }
}

/// What a ``ListingTracer`` saw.
final class StartedSpans: Sendable {
    private let started = Mutex<[String]>([])
    let ended = Mutex(0)
    let statusCodes = Mutex(0)
    var names: [String] { started.withLock { $0 } }
    func start(_ name: String) { started.withLock { $0.append(name) } }
}

/// A tracer that lists the spans started through it, as an OpenTelemetry tracer would export them.
struct ListingTracer: Tracer {
    let started: StartedSpans

    func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> ListedSpan {
        started.start(operationName)
        return ListedSpan(operationName: operationName, context: context(), started: started)
    }

    func extract<Carrier, Extract>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
    where Extract: Extractor, Extract.Carrier == Carrier {}

    func inject<Carrier, Inject>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
    where Inject: Injector, Inject.Carrier == Carrier {}

    func forceFlush() {}
}

final class ListedSpan: Tracing.Span {
    private let name: Mutex<String>
    private let values = Mutex(SpanAttributes())
    private let started: StartedSpans
    let context: ServiceContext

    init(operationName: String, context: ServiceContext, started: StartedSpans) {
        name = Mutex(operationName)
        self.context = context
        self.started = started
    }

    var operationName: String {
        get { name.withLock { $0 } }
        set { name.withLock { $0 = newValue } }
    }
    var attributes: SpanAttributes {
        get { values.withLock { $0 } }
        set {
            values.withLock { $0 = newValue }
            if newValue["http.status_code"] != nil { started.statusCodes.withLock { $0 += 1 } }
        }
    }
    var isRecording: Bool { true }
    func setStatus(_ status: SpanStatus) {}
    func addEvent(_ event: SpanEvent) {}
    func recordError<Instant: TracerInstant>(_ error: any Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant) {}
    func addLink(_ link: SpanLink) {}
    func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) { started.ended.withLock { $0 += 1 } }
}

/// A carrier of header fields, read as tracing's extractors read them.
struct DictionaryExtractor: Extractor {
    func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
}

/// A carrier of header fields, written as tracing's injectors write them.
struct DictionaryInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key] = value }
}
