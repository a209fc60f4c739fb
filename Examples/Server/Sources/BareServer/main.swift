import Foundation
import Hummingbird
import Logging
import ServerCore
import ServiceLifecycle

// Server's main.swift without Liftoff: no recorder, no tracer (tracing spans go to the no-op
// tracer), the same routes and the same graceful shutdown.
let environment = ProcessInfo.processInfo.environment
let port = environment["SERVER_PORT"].flatMap { Int($0) }.map { min(max($0, 0), 65_535) } ?? 0
let app = Application(
    router: Startup.buildRouter(catalogue: Startup.loadCatalogue()),
    configuration: .init(address: .hostname("127.0.0.1", port: port)))
let group = ServiceGroup(
    configuration: .init(services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: Logger(label: "server")))
try await group.run()
