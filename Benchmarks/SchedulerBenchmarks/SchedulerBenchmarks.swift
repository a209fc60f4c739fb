import Benchmark
import BenchmarkPairs
import Dispatch
import CLiftoffSampler
import Foundation
import Liftoff
import LiftoffSampler

// The scheduler and the thread rules against raw baselines measured in the same run.
// `Reports/benchmarks/scheduler.md` is written from these results by `make bench`.

let taskCount = 100_000
let fanOutCount = 10_000

/// Nanoseconds a task group takes to run `childTasks` child tasks that each add one number, from a
/// thread outside the concurrency pool (which waits for it).
func fanOut(childTasks: Int) -> UInt64 {
    let done = DispatchSemaphore(value: 0)
    let elapsed = Elapsed()
    Task.detached {
        let start = DispatchTime.now().uptimeNanoseconds
        let total = await withTaskGroup(of: Int.self) { group in
            for value in 0..<childTasks { group.addTask { value } }
            return await group.reduce(0, &+)
        }
        blackHole(total)
        elapsed.nanoseconds = DispatchTime.now().uptimeNanoseconds - start
        done.signal()
    }
    done.wait()
    return elapsed.nanoseconds
}

/// A result handed from a task to the thread waiting for it (the semaphore orders the accesses).
final class Elapsed: @unchecked Sendable {
    var nanoseconds: UInt64 = 0
}

/// A launched app on this thread, for the scheduler to run plans in.
final class Host: ApplicationDelegate {}

let benchmarks: @Sendable () -> Void = {
    // Raw dispatch and the scheduler run in pairs, alternating which goes first, and each pair
    // gives a ratio: separate runs of either drift by tens of percent on a shared machine.
    let ratioMetric = BenchmarkMetric.custom("ratioPPM", polarity: .prefersSmaller, useScalingFactor: false)
    let rawMetric = BenchmarkMetric.custom("rawNs", polarity: .prefersSmaller, useScalingFactor: false)
    let scheduledMetric = BenchmarkMetric.custom("scheduledNs", polarity: .prefersSmaller, useScalingFactor: false)
    let pairs = Benchmark.Configuration(
        metrics: [ratioMetric, rawMetric, scheduledMetric],
        units: [ratioMetric: .count, rawMetric: .count, scheduledMetric: .count], warmupIterations: 1,
        maxDuration: .seconds(40), maxIterations: 40)

    func raw() -> UInt64 {
        let start = DispatchTime.now().uptimeNanoseconds
        let group = DispatchGroup()
        for _ in 0..<taskCount {
            DispatchQueue.global(qos: .userInitiated).async(group: group) {}
        }
        group.wait()
        return DispatchTime.now().uptimeNanoseconds - start
    }

    func scheduled(_ plan: LaunchPlan, _ application: Application, measuresCPU: Bool) -> UInt64 {
        let scheduler = LaunchScheduler(plan: plan, options: LaunchScheduler.Options(measuresCPU: measuresCPU))
        let start = DispatchTime.now().uptimeNanoseconds
        scheduler.start(in: application)
        _ = scheduler.waitUntilFinished()
        return DispatchTime.now().uptimeNanoseconds - start
    }

    // Built once: validating a 100,000-task plan takes longer than running it.
    let plan = try! LaunchPlan((0..<taskCount).map { LaunchTask("task \($0)", lane: .background(qos: .userInitiated)) {} })

    for measuresCPU in [false, true] {
        let name = measuresCPU
            ? "paired: scheduler reading CPU clocks vs raw dispatch, 100000 empty tasks"
            : "paired: scheduler vs raw dispatch, 100000 empty tasks"
        Benchmark(name, configuration: pairs) { benchmark in
            let driver = ApplicationDriver(delegate: Host())
            driver.send(.launch(LaunchOptions()))
            for (round, _) in benchmark.scaledIterations.enumerated() {
                let (rawNs, schedulerNs) = inAlternatingOrder(
                    round: round, baseline: { raw() },
                    treatment: { scheduled(plan, driver.application, measuresCPU: measuresCPU) })
                benchmark.measurement(ratioMetric, Int(schedulerNs * 1_000_000 / max(rawNs, 1)))
                benchmark.measurement(rawMetric, Int(rawNs))
                benchmark.measurement(scheduledMetric, Int(schedulerNs))
            }
            driver.close()
        }
    }

    // A task group fans out 10,000 tiny child tasks, with a launch recording running (the sampler
    // at 1 kHz on every thread, and each task's creation and jobs recorded) and without, in pairs.
    let recordedMetric = BenchmarkMetric.custom("recordedNs", polarity: .prefersSmaller, useScalingFactor: false)
    let fanOutPairs = Benchmark.Configuration(
        metrics: [ratioMetric, rawMetric, recordedMetric],
        units: [ratioMetric: .count, rawMetric: .count, recordedMetric: .count], warmupIterations: 2,
        maxDuration: .seconds(60), maxIterations: 60)
    Benchmark("paired: task group fan-out of 10000 child tasks, recorded vs not", configuration: fanOutPairs) { benchmark in
        for (round, _) in benchmark.scaledIterations.enumerated() {
            let (plainNs, recordedNs) = inAlternatingOrder(
                round: round, baseline: { fanOut(childTasks: fanOutCount) },
                treatment: {
                    let recorder = try! LaunchRecorder.start(configuration: SamplerConfiguration(rateHz: 1000))
                    let elapsed = fanOut(childTasks: fanOutCount)
                    _ = recorder.finish(violations: [])
                    return elapsed
                })
            benchmark.measurement(ratioMetric, Int(recordedNs * 1_000_000 / max(plainNs, 1)))
            benchmark.measurement(rawMetric, Int(plainNs))
            benchmark.measurement(recordedMetric, Int(recordedNs))
        }
    }

    // What the blocking-call rules add to a C library call while they are checked: 100,000
    // one-byte writes to /dev/null (a device, which no rule reports: the check finds its kind in
    // its cache and goes on) through Liftoff's `write`, armed, against the same writes made with
    // the C library's own `write` (the bare call), in pairs: on the rules' UI thread, off it, and
    // off it in a program whose main queue worker threads drain (after `dispatch_main`, as an
    // async `main` does), where each call also asks libdispatch which queue it runs.
    let checkedMetric = BenchmarkMetric.custom("checkedNs", polarity: .prefersSmaller, useScalingFactor: false)
    let blockingPairs = Benchmark.Configuration(
        metrics: [ratioMetric, rawMetric, checkedMetric],
        units: [ratioMetric: .count, rawMetric: .count, checkedMetric: .count], warmupIterations: 2,
        maxDuration: .seconds(30), maxIterations: 60)
    // Each round: the bare calls and the same calls with the checks armed, in alternating order.
    func checkedRounds(_ benchmark: Benchmark, bare: () -> UInt64, checked: () -> UInt64) {
        for (round, _) in benchmark.scaledIterations.enumerated() {
            let (plainNs, checkedNs) = inAlternatingOrder(
                round: round, baseline: bare,
                treatment: {
                    lo_blocking_arm(1)
                    defer { lo_blocking_arm(-1) }
                    return checked()
                })
            benchmark.measurement(ratioMetric, Int(checkedNs * 1_000_000 / max(plainNs, 1)))
            benchmark.measurement(rawMetric, Int(plainNs))
            benchmark.measurement(checkedMetric, Int(checkedNs))
        }
    }
    typealias WriteFunction = @convention(c) (Int32, UnsafeRawPointer?, Int) -> Int
    let bareWrite = unsafeBitCast(dlsym(UnsafeMutableRawPointer(bitPattern: -1), "write")!, to: WriteFunction.self)  // RTLD_NEXT
    func devNullWrites(_ fd: Int32, bare: Bool) -> UInt64 {
        var byte: UInt8 = 0
        let start = DispatchTime.now().uptimeNanoseconds
        if bare {
            for _ in 0..<100_000 { _ = bareWrite(fd, &byte, 1) }
        } else {
            for _ in 0..<100_000 { _ = write(fd, &byte, 1) }
        }
        return DispatchTime.now().uptimeNanoseconds - start
    }
    let places = [
        ("on the UI thread", true, false), ("off the UI thread", false, false),
        ("off the UI thread, main queue on workers", false, true),
    ]
    for (place, onUIThread, mainQueueOnWorkers) in places {
        Benchmark("paired: blocking-call checks \(place), 100000 writes to the null device, checked vs bare", configuration: blockingPairs) {
            benchmark in
            let fd = open("/dev/null", O_WRONLY | O_CLOEXEC)
            defer { close(fd) }
            // The UI thread is this one, or one that is not (pid 1's).
            lo_blocking_set_ui_thread(onUIThread ? Int32(CurrentThread.id) : 1)
            let wasOnWorkers = lo_blocking_main_queue_on_workers()
            lo_blocking_set_main_queue_on_workers(mainQueueOnWorkers ? 1 : 0)
            defer {
                lo_blocking_set_ui_thread(0)
                lo_blocking_set_main_queue_on_workers(wasOnWorkers)
            }
            checkedRounds(benchmark, bare: { devNullWrites(fd, bare: true) }, checked: { devNullWrites(fd, bare: false) })
        }
    }

    // The same for a mutex (lock-wait-on-main): 100,000 locks and unlocks of a free mutex through
    // Liftoff's `pthread_mutex_lock`, armed (on the UI thread it tries the lock first), against
    // the C library's own.
    typealias LockFunction = @convention(c) (UnsafeMutablePointer<pthread_mutex_t>?) -> Int32
    let bareLock = unsafeBitCast(dlsym(UnsafeMutableRawPointer(bitPattern: -1), "pthread_mutex_lock")!, to: LockFunction.self)  // RTLD_NEXT
    func freeLocks(_ mutex: UnsafeMutablePointer<pthread_mutex_t>, bare: Bool) -> UInt64 {
        let start = DispatchTime.now().uptimeNanoseconds
        if bare {
            for _ in 0..<100_000 {
                _ = bareLock(mutex)
                pthread_mutex_unlock(mutex)
            }
        } else {
            for _ in 0..<100_000 {
                pthread_mutex_lock(mutex)
                pthread_mutex_unlock(mutex)
            }
        }
        return DispatchTime.now().uptimeNanoseconds - start
    }
    for (place, onUIThread, _) in places.prefix(2) {
        Benchmark("paired: lock checks \(place), 100000 locks of a free mutex, checked vs bare", configuration: blockingPairs) {
            benchmark in
            let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
            pthread_mutex_init(mutex, nil)
            defer {
                pthread_mutex_destroy(mutex)
                mutex.deallocate()
            }
            lo_blocking_set_ui_thread(onUIThread ? Int32(CurrentThread.id) : 1)
            defer { lo_blocking_set_ui_thread(0) }
            checkedRounds(benchmark, bare: { freeLocks(mutex, bare: true) }, checked: { freeLocks(mutex, bare: false) })
        }
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
