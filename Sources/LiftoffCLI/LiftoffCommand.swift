import ArgumentParser
import LiftoffDemo
import LiftoffProfile

/// The `liftoff` command: a launch runtime, scheduler and profiler for Linux.
public struct LiftoffCommand: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "liftoff",
        abstract: "Profile how a program launches: sampled stacks, phases, flame graphs.",
        discussion: """
            Run `liftoff profile -- CMD` to profile any program's launch without changing it \
            (`--cache cold` to launch it with its files out of the page cache), `liftoff explain` \
            to say why a launch was slow, `liftoff report PROFILE` to render a saved \
            profile.json in another format, `liftoff record` to launch a program many times, \
            `liftoff compare` to decide whether a change made launches slower, `liftoff check` to \
            enforce budgets, `liftoff history` to keep every commit's launch and find the commit \
            that changed it, and `liftoff push` to send profiles to OpenTelemetry or Pyroscope. \
            `liftoff demo` records the bundled demo app and `liftoff simulate` drives it through \
            life-cycle events.
            """,
        version: LiftoffVersion.current,
        subcommands: [
            DemoCommand.self, ProfileCommand.self, RecordCommand.self, CompareCommand.self, CheckCommand.self,
            ReportCommand.self, ExplainCommand.self, HistoryCommand.self, PushCommand.self, SimulateCommand.self, ProbeCommand.self,
        ]
    )

    public init() {}

    /// Sets up the process for the command line: a closed output pipe is an error a write
    /// sees (and ends the command quietly), not a signal.
    public static func prepareProcess() {
        StandardOutput.ignoreBrokenPipes()
    }
}

extension DemoAppDelegate.Plan: ExpressibleByArgument {}

/// A failure the CLI reports as one sentence and a non-zero exit.
struct CLIError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
