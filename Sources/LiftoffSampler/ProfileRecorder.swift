import CLiftoffSampler
import Foundation
import LiftoffProfile

#if canImport(Glibc)
import Glibc
#endif

/// Records one profile: starts the sampler with the calling thread registered, and on
/// ``finish()`` stops it and builds the ``Profile`` with phases and metadata.
///
/// ```swift
/// let recorder = try ProfileRecorder.start()
/// runLaunchWork()
/// let profile = recorder.finish()
/// try profile.write(to: URL(fileURLWithPath: "profile.json"))
/// ```
public final class ProfileRecorder: Sendable {
    /// Environment variable a launcher sets to the `CLOCK_MONOTONIC` nanoseconds of the spawn.
    public static let launchTimeVariable = "LIFTOFF_LAUNCH_NS"

    private let configuration: SamplerConfiguration
    private let commandLine: [String]
    private let startTime: Date
    private let processStartNs: UInt64
    private let mainEntryNs: UInt64
    private let registeredThread: Int

    private init(configuration: SamplerConfiguration, commandLine: [String], mainEntryNs: UInt64) {
        self.configuration = configuration
        self.commandLine = commandLine
        self.startTime = Date()
        self.mainEntryNs = mainEntryNs
        self.processStartNs = ProfileRecorder.processStart(now: mainEntryNs)
        self.registeredThread = Sampler.currentThreadID
    }

    /// Starts sampling and registers the calling thread (as `main` when it is the main thread).
    /// - Throws: ``SamplerError`` when the sampler cannot start.
    public static func start(
        configuration: SamplerConfiguration = SamplerConfiguration(),
        commandLine: [String] = CommandLine.arguments
    ) throws -> ProfileRecorder {
        let now = lo_monotonic_ns()
        Sampler.resetThreadNames()
        try Sampler.start(configuration)
        try Sampler.registerCurrentThread()
        return ProfileRecorder(configuration: configuration, commandLine: commandLine, mainEntryNs: now)
    }

    /// Stops sampling and builds the profile, symbolizing with `symbolizer` (by default an
    /// ``ELFSymbolizer`` made after sampling stopped, so its work is not in the profile).
    public func finish(symbolizer: (any Symbolizer)? = nil) -> Profile {
        finish(symbolizer: symbolizer, extraStacks: []).profile
    }

    /// Stops sampling and builds the profile, adding `extraStacks` (captured stacks, leaf first,
    /// such as those of thread-rule violations) to its stack table.
    /// - Returns: the profile, and the stack index of each extra stack (nil for an empty one).
    /// - Parameter exactLeaf: for each extra stack, whether its first address is an exact program
    ///   counter (captured from another thread); return addresses when absent.
    public func finish(
        symbolizer: (any Symbolizer)?, extraStacks: [[UInt]], exactLeaf: [Bool] = []
    ) -> (profile: Profile, stacks: [Int?]) {
        let endNs = lo_monotonic_ns()
        try? Sampler.unregisterThread(registeredThread)
        let recording = Sampler.stop()
        var builder = ProfileBuilder(symbolizer: symbolizer ?? ELFSymbolizer(), timeOriginNs: processStartNs)
        for sample in recording.samples { builder.add(sample) }
        let extra = extraStacks.enumerated().map { index, stack in
            builder.addStack(stack, leafIsExact: index < exactLeaf.count && exactLeaf[index])
        }
        let premain = lo_premain_ns()
        let phases = Profile.Phases(
            processStartNs: 0,
            preMainNs: premain > processStartNs ? premain - processStartNs : 0,
            mainEntryNs: mainEntryNs - processStartNs,
            endNs: endNs - processStartNs)
        let profile = builder.build(
            metadata: ProfileRecorder.metadata(
                commandLine: commandLine, startTime: startTime, rateHz: configuration.rateHz),
            phases: phases, threadNames: recording.threadNames, mainThreadID: Sampler.mainThreadID,
            counts: recording.counts)
        return (profile, extra)
    }

    /// `CLOCK_MONOTONIC` nanoseconds of the process start: every profile time is relative to it.
    public var timeOriginNs: UInt64 { processStartNs }

    /// The process start: the launcher's `LIFTOFF_LAUNCH_NS` when it is set, plausible and
    /// not after `now`, else the pre-main timestamp.
    static func processStart(now: UInt64) -> UInt64 {
        let premain = lo_premain_ns()
        if let text = ProcessInfo.processInfo.environment[launchTimeVariable], let spawn = UInt64(text),
            spawn <= premain, premain - spawn < 60_000_000_000
        {
            return spawn
        }
        return min(premain, now)
    }

    /// Metadata describing this process and machine.
    public static func metadata(commandLine: [String], startTime: Date, rateHz: Int) -> Profile.Metadata {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return Profile.Metadata(
            liftoffVersion: LiftoffVersion.current, commandLine: commandLine, host: host(),
            startTime: formatter.string(from: startTime), buildConfiguration: buildConfiguration,
            samplingRateHz: rateHz)
    }

    /// `debug` or `release`, as this code was compiled.
    public static var buildConfiguration: String {
        #if DEBUG
        return "debug"
        #else
        return "release"
        #endif
    }

    package static func host() -> Profile.Host {
        var names = utsname()
        uname(&names)
        func text<T>(_ field: T) -> String {
            withUnsafeBytes(of: field) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
        }
        return Profile.Host(
            name: text(names.nodename), os: "\(text(names.sysname)) \(text(names.release))",
            architecture: text(names.machine), cpuCount: ProcessInfo.processInfo.activeProcessorCount)
    }
}
