import Foundation
import Hummingbird
import Liftoff
import LiftoffServiceLifecycle
import LiftoffTracing
import Logging
import ServerCore
import ServiceLifecycle
import Tracing

// At main entry: the sampler starts, and every tracing span goes to the launch profile.
let recorder = try LaunchRecorder.start()
InstrumentationSystem.bootstrap(LiftoffTracer(recorder: recorder))
let launch = ServiceLaunch(recorder: recorder)   // ready once the HTTP service listens

let environment = ProcessInfo.processInfo.environment
let extra = environment["SERVER_EXTRA_ROUTER_MS"].flatMap { Int($0) }.map { min(max($0, 0), 10_000) } ?? 0
let port = environment["SERVER_PORT"].flatMap { Int($0) }.map { min(max($0, 0), 65_535) } ?? 0
let catalogue = Startup.loadCatalogue()
let router = Startup.buildRouter(catalogue: catalogue, extraMilliseconds: extra)
PprofRoutes.add(to: router)   // GET /debug/pprof/profile and /wall: the running server's profile
let app = Application(
    router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)),
    onServerRunning: { _ in launch.reportRunning("http") })
let logger = Logger(label: "server")
let group = ServiceGroup(
    configuration: .init(
        services: [launch.service(app, named: "http")], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
try await group.run()
try recorder.finishAndWrite()   // after SIGTERM: to $LIFTOFF_PROFILE_OUT, or liftoff-profiles/Server.json
