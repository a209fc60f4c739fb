import Benchmark
import Dispatch
import Foundation
import Liftoff

// The scheduler and the thread rules against raw baselines measured in the same run.
// `Reports/benchmarks/scheduler.md` is written from these results by `make bench`.

let taskCount = 100_000

/// A launched app on this thread, for the scheduler to run plans in.
final class Host: ApplicationDelegate {}

let benchmarks: @Sendable () -> Void = {
    let bulk = Benchmark.Configuration(
        metrics: [.wallClock], timeUnits: .milliseconds, warmupIterations: 1, maxDuration: .seconds(20), maxIterations: 15)

    Benchmark("raw: 100000 empty tasks on DispatchQueue.global with a DispatchGroup", configuration: bulk) { benchmark in
        for _ in benchmark.scaledIterations {
            let group = DispatchGroup()
            for _ in 0..<taskCount {
                DispatchQueue.global(qos: .userInitiated).async(group: group) {}
            }
            group.wait()
        }
    }

    Benchmark("scheduler: 100000 empty background tasks", configuration: bulk) { benchmark in
        let driver = ApplicationDriver(delegate: Host())
        driver.send(.launch(LaunchOptions()))
        let tasks = (0..<taskCount).map { LaunchTask("task \($0)", lane: .background(qos: .userInitiated)) {} }
        let plan = try! LaunchPlan(tasks)
        for _ in benchmark.scaledIterations {
            let scheduler = LaunchScheduler(plan: plan)
            benchmark.startMeasurement()
            scheduler.start(in: driver.application)
            _ = scheduler.waitUntilFinished()
            benchmark.stopMeasurement()
        }
        driver.close()
    }

    Benchmark("scheduler: 100000 empty background tasks, no CPU clock", configuration: bulk) { benchmark in
        let driver = ApplicationDriver(delegate: Host())
        driver.send(.launch(LaunchOptions()))
        let tasks = (0..<taskCount).map { LaunchTask("task \($0)", lane: .background(qos: .userInitiated)) {} }
        let plan = try! LaunchPlan(tasks)
        for _ in benchmark.scaledIterations {
            let scheduler = LaunchScheduler(plan: plan, options: LaunchScheduler.Options(measuresCPU: false))
            benchmark.startMeasurement()
            scheduler.start(in: driver.application)
            _ = scheduler.waitUntilFinished()
            benchmark.stopMeasurement()
        }
        driver.close()
    }

    let checks = Benchmark.Configuration(
        metrics: [.wallClock], timeUnits: .nanoseconds, warmupIterations: 10, scalingFactor: .mega, maxDuration: .seconds(5))

    Benchmark("Thread.isMainThread, 1000000 calls", configuration: checks) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(Thread.isMainThread)
        }
    }

    Benchmark("ThreadRules.isMainThread, 1000000 calls", configuration: checks) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(ThreadRules.isMainThread)
        }
    }

    Benchmark(
        "record a violation (capture, dedupe by call site)",
        configuration: .init(metrics: [.wallClock], timeUnits: .nanoseconds, warmupIterations: 100, scalingFactor: .kilo, maxDuration: .seconds(5))
    ) { benchmark in
        ThreadRules.clearViolations()
        for _ in benchmark.scaledIterations {
            ThreadRules.report(rule: "benchmark", operation: "repeat")
        }
        ThreadRules.clearViolations()
    }
}
