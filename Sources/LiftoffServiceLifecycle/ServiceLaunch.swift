import Liftoff
import ServiceLifecycle
import Synchronization

/// A `ServiceGroup`'s start as launch spans: each service wrapped with
/// ``service(_:named:running:)`` gets a span (category `service`) from the moment the group runs
/// it until it reports running, and the launch is ready (`recorder.ready()`) once every wrapped
/// service runs.
///
/// ```swift
/// let launch = ServiceLaunch(recorder: recorder)
/// let app = Application(router: router, onServerRunning: { _ in launch.reportRunning("http") })
/// let group = ServiceGroup(configuration: .init(
///     services: [launch.service(app, named: "http"), launch.service(jobs, named: "jobs", running: .immediately)],
///     logger: logger))
/// try await group.run()
/// ```
public final class ServiceLaunch: Sendable {
    /// When a wrapped service counts as running.
    public enum RunningSignal: Sendable {
        /// When something calls ``ServiceLaunch/reportRunning(_:)`` with its name (a server's
        /// "listening" callback), or when its `run()` returns.
        case reported
        /// As soon as the group runs it (a service with nothing to wait for).
        case immediately
    }

    /// When the launch is ready.
    public enum Readiness: Sendable {
        /// Once every wrapped service runs.
        case whenAllRunning
        /// When the program calls `recorder.ready()` itself.
        case manual
    }

    private struct State {
        var spans: [String: LaunchRecorder.OpenSpan] = [:]
        var waiting: Set<String> = []
        var running: Set<String> = []
    }

    /// The recorder the spans go to.
    public let recorder: LaunchRecorder
    private let readiness: Readiness
    private let state = Mutex(State())

    /// Records service starts into `recorder`; `readiness` says when the launch is ready.
    public init(recorder: LaunchRecorder, readiness: Readiness = .whenAllRunning) {
        self.recorder = recorder
        self.readiness = readiness
    }

    /// `service`, with its start recorded as a span named `name`. Names should be unique in
    /// the group: they are how ``reportRunning(_:)`` finds the service.
    public func service(_ service: some Service, named name: String, running: RunningSignal = .reported) -> some Service {
        state.withLock { _ = $0.waiting.insert(name) }
        return RecordedService(base: service, name: name, signal: running, launch: self)
    }

    /// Says that the service named `name` runs: its start span ends and, when every wrapped
    /// service runs, the launch is ready. Any thread; later calls for the same name do nothing.
    public func reportRunning(_ name: String) {
        let (span, allRunning) = state.withLock { state -> (LaunchRecorder.OpenSpan?, Bool) in
            guard state.running.insert(name).inserted else { return (nil, false) }
            state.waiting.remove(name)
            return (state.spans[name], state.waiting.isEmpty)
        }
        if let span { recorder.endSpan(span) }
        if allRunning && readiness == .whenAllRunning { recorder.ready() }
    }

    /// The names of wrapped services that do not run yet.
    public var notRunning: Set<String> { state.withLock { $0.waiting } }

    fileprivate func started(_ name: String) {
        let span = recorder.beginSpan(name, category: .service, parent: nil, attributes: ["service.name": name])
        let alreadyRunning = state.withLock { state -> Bool in
            state.spans[name] = span
            return state.running.contains(name)
        }
        if alreadyRunning { recorder.endSpan(span) }
    }
}

/// A service whose start a ``ServiceLaunch`` records.
struct RecordedService<Base: Service>: Service {
    let base: Base
    let name: String
    let signal: ServiceLaunch.RunningSignal
    let launch: ServiceLaunch

    func run() async throws {
        launch.started(name)
        if signal == .immediately { launch.reportRunning(name) }
        // A service whose run ends without reporting has started as far as it ever will.
        defer { launch.reportRunning(name) }
        try await base.run()
    }
}
