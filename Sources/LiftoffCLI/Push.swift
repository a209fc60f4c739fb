import CLiftoffHTTP
import Foundation
import LiftoffPprof
import LiftoffProfile

/// Where `liftoff push` sends profiles, and how hard it tries.
struct PushDestination: Sendable {
    /// The engine a profile goes to.
    enum Engine: Sendable {
        /// An OTLP/HTTP receiver: the profile as an `ExportProfilesServiceRequest`, gzip-compressed.
        case otlp(service: String?)
        /// Pyroscope's `/ingest`: the profile as raw pprof, the application (with its labels) in `name`.
        case pyroscope(application: String?, labels: [(String, String)])
    }

    var engine: Engine
    /// The URL a request goes to (its path completed: `/v1development/profiles`, `/ingest`).
    var url: URL
    /// Header lines (`Name: value`) every request carries, such as authorization.
    var headers: [String] = []
    /// How long one request may take, connecting included.
    var timeoutMs: Int = 30_000
    /// How many times a request is tried again after a 429, a 5xx or no answer.
    var retries: Int = 4
    /// The first wait before trying again (doubled each time, at most 8 s; a Retry-After up to 30 s wins).
    var firstBackoffMs: Int = 500

    /// A destination for `engine` at `address` (`http://host:port`, with or without the path).
    /// - Throws: `CLIError` when the address is not an http or https URL.
    init(_ engine: Engine, address: String) throws {
        guard let parsed = URLComponents(string: address), let scheme = parsed.scheme?.lowercased(), ["http", "https"].contains(scheme),
            parsed.host?.isEmpty == false
        else {
            throw CLIError("'\(address)' is not an http:// or https:// address (such as http://localhost:4318).")
        }
        var components = parsed
        let path = components.path.hasSuffix("/") ? String(components.path.dropLast()) : components.path
        switch engine {
        case .otlp: components.path = path.hasSuffix("/v1development/profiles") ? path : path + "/v1development/profiles"
        case .pyroscope: components.path = path.hasSuffix("/ingest") ? path : path + "/ingest"
        }
        guard let url = components.url else { throw CLIError("'\(address)' is not an address liftoff can send to.") }
        self.engine = engine
        self.url = url
    }

    /// A `--header` value, `Name=value` or `Name: value`, as a header line.
    /// - Throws: `CLIError` when it has no name or holds a line break.
    static func headerLine(_ text: String) throws -> String {
        guard let separator = text.firstIndex(where: { $0 == "=" || $0 == ":" }) else {
            throw CLIError("--header '\(text)' has no '=': give NAME=VALUE, such as Authorization=Bearer TOKEN.")
        }
        let name = text[..<separator].trimmingCharacters(in: .whitespaces)
        let value = text[text.index(after: separator)...].trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
            throw CLIError("--header '\(text)' has no header name before its '='.")
        }
        guard !value.contains(where: { $0 == "\r" || $0 == "\n" }) else {
            throw CLIError("--header \(name) holds a line break, which would end the header.")
        }
        return "\(name): \(value)"
    }

    /// The name of the engine, for messages.
    var engineName: String {
        switch engine {
        case .otlp: return "OTLP"
        case .pyroscope: return "Pyroscope"
        }
    }

    /// The request that carries `profile`: its URL, header lines and body.
    func request(for profile: Profile) throws -> (url: URL, headers: [String], body: Data) {
        switch engine {
        case .otlp(let service):
            let body = try PprofExporter.gzip(OTLPExporter.data(profile, service: service))
            return (url, ["Content-Type: application/x-protobuf", "Content-Encoding: gzip"] + headers, body)
        case .pyroscope(let application, let labels):
            let program = profile.metadata.commandLine.first.map { URL(fileURLWithPath: $0).lastPathComponent } ?? ""
            let app = application ?? (program.isEmpty ? "liftoff" : program)
            let name = labels.isEmpty ? app : app + "{" + labels.map { "\($0.0)=\($0.1)" }.joined(separator: ",") + "}"
            let from = OTLPExporter.startTimeNanos(profile.metadata.startTime) / 1_000_000_000
            let until = from + max(1, (profile.phases.endNs + 999_999_999) / 1_000_000_000)
            var components = URLComponents(url: url, resolvingAgainstBaseURL: false)!
            components.queryItems = (components.queryItems ?? []) + [
                URLQueryItem(name: "name", value: name), URLQueryItem(name: "from", value: String(from)),
                URLQueryItem(name: "until", value: String(until)), URLQueryItem(name: "format", value: "pprof"),
                URLQueryItem(name: "spyName", value: "liftoff"),
            ]
            // `+` would read as a space in a query.
            components.percentEncodedQuery = components.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B")
            let body = try PprofExporter.data(profile)
            return (components.url ?? url, ["Content-Type: application/octet-stream"] + headers, body)
        }
    }
}

/// Sends profiles to the engines fleets run, trying again after a 429, a 5xx or no answer.
enum Pusher {
    /// What one push came to.
    struct Outcome: Sendable {
        var status: Int
        var tries: Int
        var bytes: Int
    }

    /// Sends `profile` to `destination`; `wait` sleeps between tries (milliseconds).
    /// - Throws: `CLIError` with one sentence when it was refused, or never answered after every try.
    @discardableResult
    static func push(_ profile: Profile, to destination: PushDestination, wait: (Int) -> Void = { usleep(UInt32(clamping: $0 * 1000)) })
        throws -> Outcome
    {
        let request: (url: URL, headers: [String], body: Data)
        do {
            request = try destination.request(for: profile)
        } catch let error as CLIError {
            throw error
        } catch {
            throw CLIError("The profile could not be encoded for \(destination.engineName): \(error).")
        }
        var backoff = max(destination.firstBackoffMs, 1)
        var lastProblem = ""
        for attempt in 1...(destination.retries + 1) {
            let answer = post(request.url, headers: request.headers, body: request.body, timeoutMs: destination.timeoutMs)
            switch answer {
            case .unavailable(let why):
                throw CLIError("\(why).")
            case .noAnswer(let why):
                lastProblem = "no answer (\(why))"
            case .answer(let status, let retryAfter, let body):
                if (200..<300).contains(status) {
                    try checkPartialSuccess(destination, body: body)
                    return Outcome(status: status, tries: attempt, bytes: request.body.count)
                }
                let said = firstLine(body)
                lastProblem = "HTTP \(status)" + (said.isEmpty ? "" : ": \(said)")
                guard status == 429 || (500..<600).contains(status) else {
                    throw CLIError("\(destination.engineName) at \(destination.url.absoluteString) refused the profile: \(lastProblem).")
                }
                if let retryAfter, attempt <= destination.retries {
                    wait(min(retryAfter, 30) * 1000)
                    continue
                }
            }
            if attempt <= destination.retries {
                wait(backoff)
                backoff = min(backoff * 2, 8_000)
            }
        }
        let tries = destination.retries + 1
        throw CLIError(
            "\(destination.engineName) at \(destination.url.absoluteString) did not take the profile after \(tries) \(tries == 1 ? "try" : "tries"): \(lastProblem).")
    }

    /// An OTLP receiver that answered 200 may still have rejected profiles (partial success).
    private static func checkPartialSuccess(_ destination: PushDestination, body: Data) throws {
        guard case .otlp = destination.engine, !body.isEmpty,
            let response = try? Otlp_ExportProfilesServiceResponse(serializedBytes: body), response.hasPartialSuccess,
            response.partialSuccess.rejectedProfiles > 0
        else { return }
        let said = response.partialSuccess.errorMessage
        throw CLIError(
            "\(destination.engineName) at \(destination.url.absoluteString) rejected \(response.partialSuccess.rejectedProfiles) of the profiles"
                + (said.isEmpty ? "." : ": \(said)."))
    }

    /// The first line of an answer's text, at most 200 characters, for a message.
    static func firstLine(_ body: Data) -> String {
        let text = String(decoding: body.prefix(4096), as: UTF8.self)
        let line = text.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        let printable = line.filter { !$0.isASCII || ($0.asciiValue! >= 0x20 && $0.asciiValue! < 0x7F) }
        return String(printable.prefix(200)).trimmingCharacters(in: .whitespaces)
    }

    /// What one request came to.
    enum Answer {
        case answer(status: Int, retryAfterSeconds: Int?, body: Data)
        case noAnswer(String)
        case unavailable(String)
    }

    /// One POST through libcurl.
    static func post(_ url: URL, headers: [String], body: Data, timeoutMs: Int) -> Answer {
        var response = lo_http_response()
        defer { lo_http_free(&response) }
        let cHeaders = headers.map { strdup($0) }
        defer { cHeaders.forEach { free($0) } }
        let result = cHeaders.map { UnsafePointer($0) }.withUnsafeBufferPointer { lines in
            body.withUnsafeBytes { bytes in
                lo_http_post(url.absoluteString, lines.baseAddress, lines.count, bytes.baseAddress, bytes.count, timeoutMs, &response)
            }
        }
        let error = withUnsafeBytes(of: response.error) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        switch result {
        case 0:
            let answer = response.body.map { Data(bytes: $0, count: response.body_length) } ?? Data()
            return .answer(status: response.status, retryAfterSeconds: response.retry_after >= 0 ? response.retry_after : nil, body: answer)
        case -1: return .unavailable(error)
        default: return .noAnswer(error)
        }
    }
}
