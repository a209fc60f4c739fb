import Benchmark
import BenchmarkPairs
import Dispatch
import Foundation
import Liftoff

// The run loop's costs against a raw DispatchQueue.main.async round trip measured in the same
// run. `Reports/benchmarks/runtime.md` is written from these results by `make bench`.

/// A run loop on a thread of its own, waiting for work like the main run loop does.
final class LoopThread: @unchecked Sendable {
    // @unchecked Sendable: `loop` is safe to use from any thread for post/stop.
    let loop = MainRunLoop()
    private let started = DispatchSemaphore(value: 0)

    init() {
        let thread = Thread { [loop, started] in
            loop.post("started") { started.signal() }
            loop.run()
        }
        thread.start()
        started.wait()
    }

    deinit { loop.stop() }
}

/// A delegate whose window holds `count` views in rows of ten.
final class ManyViews: ApplicationDelegate {
    let count: Int
    private(set) var views: [View] = []
    init(count: Int) { self.count = count }

    func didFinishLaunching(_ application: Application, options: LaunchOptions) -> Bool {
        let window = Window(frame: Rect(x: 0, y: 0, width: 400, height: 4000), name: "bench")
        for row in 0..<(count / 10) {
            let rowView = View(frame: Rect(x: 0, y: Double(row) * 40, width: 400, height: 40), name: "row")
            window.addSubview(rowView)
            views.append(rowView)
            for column in 0..<9 {
                let label = Label(text: "item \(row)-\(column)", frame: Rect(x: Double(column) * 40, y: 0, width: 40, height: 40))
                rowView.addSubview(label)
                views.append(label)
            }
        }
        window.makeKeyAndVisible(in: application)
        return true
    }
}

/// A little work per event, as a busy run loop does.
@inline(never)
func eventWork(_ seed: UInt64) -> UInt64 {
    var value = seed
    for _ in 0..<10_000 { value = value &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407 }
    return value
}

/// Queues `count` events on a loop on its own thread while the loop is held, releases it, and
/// times it until the last event has run: the same batch each time, however the threads race.
func busyLoop(_ thread: LoopThread, events count: Int) -> UInt64 {
    let hold = DispatchSemaphore(value: 0)
    let held = DispatchSemaphore(value: 0)
    let done = DispatchSemaphore(value: 0)
    thread.loop.post("hold") {
        held.signal()
        hold.wait()
    }
    held.wait()
    for index in 0..<count {
        thread.loop.post("event") {
            blackHole(eventWork(UInt64(index)))
            if index == count - 1 { done.signal() }
        }
    }
    let start = DispatchTime.now().uptimeNanoseconds
    hold.signal()
    done.wait()
    return DispatchTime.now().uptimeNanoseconds - start
}

let benchmarks: @Sendable () -> Void = {
    let roundTrips = Benchmark.Configuration(
        metrics: [.wallClock], timeUnits: .nanoseconds, warmupIterations: 1000, scalingFactor: .kilo,
        maxDuration: .seconds(5))

    Benchmark("raw DispatchQueue.main.async round trip", configuration: roundTrips) { benchmark in
        let done = DispatchSemaphore(value: 0)
        for _ in benchmark.scaledIterations {
            DispatchQueue.main.async { done.signal() }
            done.wait()
        }
    }

    Benchmark("run loop event round trip", configuration: roundTrips) { benchmark in
        let thread = LoopThread()
        let done = DispatchSemaphore(value: 0)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            thread.loop.post("bench") { done.signal() }
            done.wait()
        }
        benchmark.stopMeasurement()
    }

    Benchmark("empty run loop iteration", configuration: roundTrips) { benchmark in
        let loop = MainRunLoop(clock: ManualClock())
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            loop.runIteration()
        }
        benchmark.stopMeasurement()
    }

    // The hang watcher's bookkeeping and polling on a busy loop, in pairs against the same loop
    // without them, alternating which goes first.
    let ratioMetric = BenchmarkMetric.custom("ratioPPM", polarity: .prefersSmaller, useScalingFactor: false)
    Benchmark(
        "paired: busy run loop with the hang watcher vs without, 4000 events",
        configuration: .init(
            metrics: [ratioMetric], units: [ratioMetric: .count], warmupIterations: 2, maxDuration: .seconds(30),
            maxIterations: 60)
    ) { benchmark in
        let thread = LoopThread()
        let watcher = HangWatcher(runLoop: thread.loop)
        for (round, _) in benchmark.scaledIterations.enumerated() {
            let (plain, watched) = inAlternatingOrder(
                round: round, baseline: { busyLoop(thread, events: 4_000) },
                treatment: {
                    watcher.start()
                    defer { watcher.stop() }
                    return busyLoop(thread, events: 4_000)
                })
            benchmark.measurement(ratioMetric, Int(watched * 1_000_000 / max(plain, 1)))
        }
    }

    Benchmark(
        "draw pass over 1000 views",
        configuration: .init(metrics: [.wallClock], timeUnits: .microseconds, warmupIterations: 5, maxDuration: .seconds(5))
    ) { benchmark in
        let delegate = ManyViews(count: 1000)
        let driver = ApplicationDriver(delegate: delegate)
        driver.send(.launch(LaunchOptions()))
        let views = delegate.views
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            driver.perform("mark all") { for view in views { view.setNeedsDisplay() } }
        }
        benchmark.stopMeasurement()
        driver.close()
    }
}
