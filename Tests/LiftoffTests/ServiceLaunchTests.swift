import Foundation
import Liftoff
import LiftoffServiceLifecycle
import LiftoffTestSupport
import Logging
import ServiceLifecycle
import Testing

/// A server that works 30 ms to start, reports running, then serves until shut down.
struct StartingServer: Service {
    let launch: ServiceLaunch
    /// The start's work, as its thread measured it.
    let work = MeasuredWork()

    func run() async throws {
        work.measure { _ = tracedRouterWork(milliseconds: 30) }
        launch.reportRunning("http")
        try await gracefulShutdown()
    }
}

/// A service with nothing to wait for.
struct IdleService: Service {
    func run() async throws {
        try await gracefulShutdown()
    }
}

@Suite("Service starts", .processState(timeLimit: .seconds(120)))
struct ServiceLaunchTests {
    @Test("each service's start in a ServiceGroup is a span; the launch is ready when every service runs")
    func serviceStarts() async throws {
        let recorder = try LaunchRecorder.start(configuration: SamplerConfiguration(rateHz: 1000))
        let launch = ServiceLaunch(recorder: recorder)
        let server = StartingServer(launch: launch)
        let group = ServiceGroup(
            configuration: .init(
                services: [
                    launch.service(server, named: "http"),
                    launch.service(IdleService(), named: "jobs", running: .immediately),
                ],
                logger: Logger(label: "service-launch-test")))
        #expect(launch.notRunning == ["http", "jobs"])
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            // Bounded: the server starts in about 30 ms.
            for _ in 0..<2000 where !launch.notRunning.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
            #expect(launch.notRunning.isEmpty)
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        let profile = recorder.finish(violations: [])
        let http = try #require(profile.spans.first { $0.name == "http" })
        let jobs = try #require(profile.spans.first { $0.name == "jobs" })
        #expect(http.category == .service && jobs.category == .service)
        #expect(http.durationNs >= 30_000_000, "from run() to reportRunning")
        #expect(http.attributes?["liftoff.unended"] == nil)
        let work = server.work.work
        #expect(
            work.agrees(withRunning: Double(http.samples ?? 0), intervalNs: profile.samplingIntervalNs),
            "the start's work is the span's: \(http.samples ?? 0) running samples for \(work)")
        let ready = try #require(profile.phases.firstFrameNs)
        #expect(ready >= http.endNs && ready >= jobs.endNs, "ready once both run")
        #expect(profile.marks.contains { $0.name == .ready })
    }

    @Test("with manual readiness the program says when it is ready")
    func manualReadiness() async throws {
        let recorder = try LaunchRecorder.start(configuration: SamplerConfiguration(rateHz: 100))
        let launch = ServiceLaunch(recorder: recorder, readiness: .manual)
        let service = launch.service(IdleService(), named: "jobs", running: .immediately)
        let group = ServiceGroup(configuration: .init(services: [service], logger: Logger(label: "manual")))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            for _ in 0..<2000 where !launch.notRunning.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        launch.reportRunning("jobs")  // again: nothing changes
        let profile = recorder.finish(violations: [])
        #expect(profile.phases.firstFrameNs == nil, "no ready mark until the program marks it")
        #expect(profile.spans.filter { $0.name == "jobs" }.count == 1)
    }
}
