import ArgumentParser
import Foundation

/// How `record` and `profile` watch a launch: the ready line, where it is looked for, and how
/// long the program may run.
struct LaunchWatchOptions: ParsableArguments {
    @Option(
        name: .long,
        help: "A regular expression: a program is ready at its first line on standard output or error matching it (then it is stopped).")
    var ready: String?

    @Option(name: .long, help: "The output --ready watches: both (the default), stdout or stderr.")
    var readyStream: ReadyStreams = .both

    @Option(name: .long, parsing: .unconditional, help: "Seconds a run may take before it is stopped and counted as failed.")
    var timeout: Double = 60

    @Option(
        name: .long, parsing: .unconditional,
        help: "Seconds after which the program is stopped with SIGTERM, given time to write, and counted as done (a server profiled for a while).")
    var duration: Double?

    @Flag(
        name: .long,
        help: "Follow a process that leaves the program's process group (a daemon) like the program itself: to its end, its --ready line, --duration or --timeout. By default it is stopped when the program ends.")
    var followDaemons = false

    func validate() throws {
        guard timeout > 0, timeout.isFinite else {
            throw ValidationError("--timeout must be a positive number of seconds, not \(timeout).")
        }
        if let duration {
            guard duration > 0, duration.isFinite, duration <= 1e6 else {
                throw ValidationError("--duration must be a positive number of seconds, not \(duration).")
            }
            guard duration < timeout else {
                throw ValidationError("--duration \(duration) must be shorter than --timeout \(timeout).")
            }
        }
        if let ready, (try? NSRegularExpression(pattern: ready)) == nil {
            throw ValidationError("--ready '\(ready)' is not a valid regular expression.")
        }
    }

    /// The ready line's expression, if one was given.
    func pattern() throws -> NSRegularExpression? {
        try ready.map { try NSRegularExpression(pattern: $0) }
    }
}

extension ReadyStreams: ExpressibleByArgument {}

/// How `profile` and `record` sample a program without Liftoff through the agent: one set of
/// options, so that both sample alike.
struct AgentOptions: ParsableArguments {
    @Option(name: .long, parsing: .unconditional, help: "Samples per second per thread, for a program the agent samples (1 to 10000).")
    var rate: Int = 1000

    @Flag(
        name: .long,
        help: "Sample only the program itself (and what it runs with exec), not the processes it starts.")
    var noChildren = false

    @Flag(
        name: .long,
        help: "Check the thread rules on each program's main thread: its calls to the C library's file, socket, name-lookup, sleep and wait functions (disk-read-on-main, disk-write-on-main, network-on-main, sleep-on-main), each with its stack, in the profile.")
    var rules = false

    func validate() throws {
        guard (1...10_000).contains(rate) else { throw ValidationError("--rate must be between 1 and 10000 Hz, not \(rate).") }
    }

    /// The launch through `library`, its recordings in `folder`.
    func launch(library: String, folder: URL) -> AgentLaunch {
        AgentLaunch(library: library, folder: folder, rateHz: rate, followsChildren: !noChildren, checksRules: rules)
    }
}
