import ArgumentParser
import Foundation
import LiftoffComparison
import LiftoffProfile

/// Where and how `push` (and `record --push-…`) sends profiles.
struct PushOptions: ParsableArguments {
    @Option(name: .customLong("otlp"), help: "An OTLP/HTTP receiver (http://localhost:4318): POST /v1development/profiles.")
    var otlp: String?

    @Option(name: .customLong("pyroscope"), help: "A Pyroscope server (http://localhost:4040): POST /ingest, raw pprof.")
    var pyroscope: String?

    @Option(name: .long, help: "For OTLP: the service.name (default: the program's file name).")
    var service: String?

    @Option(name: .long, help: "For Pyroscope: the application name (default: the program's file name).")
    var name: String?

    @Option(name: .customLong("label"), help: "For Pyroscope: a label KEY=VALUE in the application's name (repeatable).")
    var labels: [String] = []

    @Option(name: .customLong("header"), help: "A header NAME=VALUE on every request, such as Authorization=Bearer TOKEN (repeatable).")
    var headers: [String] = []

    @Option(name: .long, help: "Seconds one request may take, connecting included.")
    var timeout: Double = 30

    @Option(name: .long, help: "Tries again this many times after a 429, a 5xx or no answer, waiting longer each time.")
    var retries: Int = 4

    /// Whether any engine was named.
    var isEnabled: Bool { otlp != nil || pyroscope != nil }

    /// The destinations these options name.
    /// - Throws: `CLIError` with one sentence for an address, label, header or limit that cannot be used.
    func destinations() throws -> [PushDestination] {
        try Self.destinations(
            otlp: otlp, pyroscope: pyroscope, service: service, name: name, labels: labels, headers: headers, timeout: timeout,
            retries: retries)
    }

    /// The destinations of these options' values.
    static func destinations(
        otlp: String?, pyroscope: String?, service: String? = nil, name: String? = nil, labels: [String] = [], headers: [String],
        timeout: Double = 30, retries: Int = 4
    ) throws -> [PushDestination] {
        guard timeout.isFinite, timeout > 0, timeout <= 3600 else {
            throw CLIError("--timeout \(timeout) is not a number of seconds between 0 and 3600.")
        }
        guard (0...20).contains(retries) else { throw CLIError("--retries \(retries) is not between 0 and 20.") }
        let parsedLabels = try labels.map { label -> (String, String) in
            let parts = label.split(separator: "=", maxSplits: 1).map(String.init)
            let allowed = { (text: String) in text.allSatisfy { $0.isLetter || $0.isNumber || "_.-/".contains($0) } }
            guard parts.count == 2, !parts[0].isEmpty, allowed(parts[0]), allowed(parts[1]) else {
                throw CLIError("--label '\(label)' is not KEY=VALUE of letters, digits, '_', '.', '-' and '/'.")
            }
            return (parts[0], parts[1])
        }
        let headerLines = try headers.map(PushDestination.headerLine)
        var destinations: [PushDestination] = []
        if let otlp { destinations.append(try PushDestination(.otlp(service: service), address: otlp)) }
        if let pyroscope {
            destinations.append(try PushDestination(.pyroscope(application: name, labels: parsedLabels), address: pyroscope))
        }
        for index in destinations.indices {
            destinations[index].headers = headerLines
            destinations[index].timeoutMs = Int(timeout * 1000)
            destinations[index].retries = retries
        }
        return destinations
    }
}

/// `liftoff push PROFILE|DIR... --otlp URL | --pyroscope URL`: sends saved profiles to the engines fleets run.
struct PushCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Send saved profiles to an OpenTelemetry (OTLP) receiver or to Pyroscope.",
        discussion: """
            Each profile.json, and each run of a folder that `liftoff record` or `liftoff profile` wrote,
            is sent as one request: to an OTLP/HTTP receiver (an OpenTelemetry Collector with
            service.profilesSupport, Pyroscope 2, Parca) as a gzip-compressed ExportProfilesServiceRequest,
            and to Pyroscope's /ingest as raw pprof with format=pprof. A 429, a 5xx or no answer is tried
            again with a growing wait (or the server's Retry-After, up to 30 s); any other refusal is one
            sentence and exit 1.

            Examples:
              liftoff push Reports/demo/profile.json --otlp http://localhost:4318 --service checkout
              liftoff push runs/ --pyroscope https://pyroscope.example.com --name checkout.launch \\
                  --label env=ci --header "Authorization=Bearer $TOKEN"
            """)

    @Argument(help: "profile.json files, or folders of recorded runs.")
    var paths: [String]

    @OptionGroup var push: PushOptions

    func validate() throws {
        guard push.isEnabled else { throw ValidationError("Name where to send: --otlp URL or --pyroscope URL.") }
    }

    func run() throws {
        let destinations = try push.destinations()
        var profiles: [(name: String, profile: Profile)] = []
        for path in paths {
            let runs: RunSet
            do {
                runs = try RunSet.load(path)
            } catch let error as RunSetError {
                throw CLIError(error.description)
            }
            let isFile = !((try? URL(fileURLWithPath: path).resourceValues(forKeys: [.isDirectoryKey]).isDirectory) ?? false)
            for (index, profile) in runs.profiles.enumerated() where profile.samples.count > 0 {
                profiles.append((isFile ? path : "\(path) run \(index + 1)", profile))
            }
        }
        guard !profiles.isEmpty else { throw CLIError("\(paths.joined(separator: ", ")) holds no sampled profile to send.") }
        var failures: [String] = []
        for (name, profile) in profiles {
            for destination in destinations {
                do {
                    let outcome = try Pusher.push(profile, to: destination)
                    let tries = outcome.tries > 1 ? ", after \(outcome.tries) tries" : ""
                    print("Sent \(name) to \(destination.engineName) \(destination.url.absoluteString) (HTTP \(outcome.status), \(outcome.bytes) bytes\(tries)).")
                } catch let error as CLIError {
                    failures.append("\(name): \(error.description)")
                }
            }
        }
        guard failures.isEmpty else {
            throw CLIError(failures.count == 1 ? failures[0] : "\(failures.count) sends failed; the first: \(failures[0])")
        }
    }
}
