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
        help: "Check the thread rules on each program's main thread: its calls to the C library's file, socket, name-lookup, sleep and wait functions and its waits for a contended mutex of 10 ms or more (disk-read-on-main, disk-write-on-main, network-on-main, sleep-on-main, lock-wait-on-main), each with its stack, in the profile.")
    var rules = false

    @Option(
        name: .customLong("rule"),
        help: ArgumentHelp(
            "Check one thread rule on each program's main thread, with its policy: record (the default) keeps each call in the profile; log also prints a line on standard error as the call is made; trap also stops the program with SIGTRAP at its first such call. Repeat it for more rules; it replaces --rules.",
            valueName: "rule[=policy]"))
    var ruleSpecs: [String] = []

    /// The blocking-call rules the agent checks by name, and the policies it knows.
    static let agentRules = ["disk-read-on-main", "disk-write-on-main", "network-on-main", "sleep-on-main", "lock-wait-on-main"]
    static let agentPolicies = ["record", "log", "trap"]

    func validate() throws {
        guard (1...10_000).contains(rate) else { throw ValidationError("--rate must be between 1 and 10000 Hz, not \(rate).") }
        _ = try agentRules()
    }

    /// `LIFTOFF_AGENT_RULES` for the agent: `1` for --rules, `rule=policy,…` for --rule, nil for neither.
    func agentRules() throws -> String? {
        guard !ruleSpecs.isEmpty else { return rules ? "1" : nil }
        var policies: [String: String] = [:]
        for spec in ruleSpecs {
            let parts = spec.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            let name = parts[0], policy = parts.count == 2 ? parts[1] : "record"
            guard Self.agentRules.contains(name) else {
                throw ValidationError(
                    "--rule \(String(reflecting: spec)): \(String(reflecting: name)) is not a rule the agent checks; it checks \(Self.agentRules.joined(separator: ", ")).")
            }
            guard Self.agentPolicies.contains(policy) else {
                throw ValidationError(
                    "--rule \(String(reflecting: spec)): the policy must be \(Self.agentPolicies.joined(separator: ", ")), not \(String(reflecting: policy)).")
            }
            policies[name] = policy
        }
        return Self.agentRules.compactMap { name in policies[name].map { "\(name)=\($0)" } }.joined(separator: ",")
    }

    /// The launch through `library`, its recordings in `folder`.
    func launch(library: String, folder: URL) -> AgentLaunch {
        AgentLaunch(library: library, folder: folder, rateHz: rate, followsChildren: !noChildren, rules: try? agentRules())
    }
}
