import Foundation
import LiftoffPprof
import LiftoffProfile
import LiftoffSampler
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A live profiling endpoint, as Go's `net/http/pprof` serves one: `go tool pprof`, Parca, Grafana
/// Alloy and the OpenTelemetry Collector's pprof receiver read a running program's profile from it.
///
/// One line opts a program in, at the start of `main`:
///
/// ```swift
/// try LiftoffEndpoint.startFromEnvironment()
/// ```
///
/// It does nothing unless `LIFTOFF_ENDPOINT` names a loopback address and port (`127.0.0.1:6060`,
/// `[::1]:6060`, `localhost:6060`) or a unix socket's path (`/run/app/pprof.sock`); any other
/// address is refused unless `LIFTOFF_ENDPOINT_ALLOW_REMOTE=1`. It serves
///
/// - `GET /debug/pprof/profile?seconds=N`: the CPU profile of the next N seconds (30 by default),
///   gzip-compressed pprof whose default sample type is `cpu_samples`;
/// - `GET /debug/pprof/wall?seconds=N`: the same samples, waits included, `wall_samples` first.
///
/// Every thread is sampled at 100 Hz while a request asks, and not at all otherwise. One profile is
/// taken at a time: a second request meanwhile, or one while a `LaunchRecorder` still samples the
/// launch, gets 409. Errors are text with `X-Go-Pprof: 1`, as Go's handlers send them.
public final class LiftoffEndpoint: Sendable {
    /// The environment variable naming the address.
    public static let addressVariable = "LIFTOFF_ENDPOINT"
    /// The environment variable that, set to `1`, lets the endpoint listen on a non-loopback address.
    public static let allowRemoteVariable = "LIFTOFF_ENDPOINT_ALLOW_REMOTE"
    /// The longest profile a request may ask for, in seconds.
    public static let longestSeconds = 3600
    /// Samples per second per thread while a profile is taken (Go's rate).
    public static let rateHz = 100

    /// Where it listens: `127.0.0.1:PORT` (the port it was given, or the one the system chose for 0),
    /// `[::1]:PORT`, or the socket's path.
    public let address: String
    private let listener: Int32
    private let socketPath: String?
    private let stopped = Atomic(false)

    /// Starts the endpoint `LIFTOFF_ENDPOINT` names, or does nothing (nil) when it is not set.
    /// - Throws: ``EndpointError`` with one sentence when the address is refused or cannot be listened on.
    @discardableResult
    public static func startFromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws
        -> LiftoffEndpoint?
    {
        guard let address = environment[addressVariable], !address.isEmpty else { return nil }
        return try start(address: address, allowRemote: environment[allowRemoteVariable] == "1")
    }

    /// Starts an endpoint on `address` (see the type's description).
    /// - Throws: ``EndpointError`` with one sentence when the address is refused or cannot be listened on.
    public static func start(address: String, allowRemote: Bool = false) throws -> LiftoffEndpoint {
        let (listener, bound, path) = try Listener.open(address, allowRemote: allowRemote)
        let endpoint = LiftoffEndpoint(listener: listener, address: bound, socketPath: path)
        let thread = Thread { endpoint.acceptLoop() }
        thread.name = "liftoff endpoint"
        thread.start()
        return endpoint
    }

    private init(listener: Int32, address: String, socketPath: String?) {
        self.listener = listener
        self.address = address
        self.socketPath = socketPath
    }

    /// Stops listening (a profile being taken finishes and is sent); a socket file is removed.
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private func acceptLoop() {
        // The endpoint's own threads wait on sockets; they are not the program's to profile.
        try? Sampler.excludeCurrentThread()
        defer {
            try? Sampler.includeCurrentThread()
            close(listener)
            if let socketPath { unlink(socketPath) }
        }
        while !stopped.load(ordering: .acquiring) {
            var poller = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 200) > 0 else { continue }
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { continue }
            _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
            let thread = Thread { [self] in serve(connection) }
            thread.name = "liftoff endpoint request"
            thread.start()
        }
    }

    /// Reads one request on `connection`, answers it and closes it.
    private func serve(_ connection: Int32) {
        defer { close(connection) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard let request = HTTPRequest.read(connection) else {
            return Response.error(400, "The request could not be read.").send(connection)
        }
        let response: Response
        switch (request.method, request.path) {
        case ("GET", "/debug/pprof/profile"), ("GET", "/debug/pprof/wall"):
            response = profile(request, wall: request.path.hasSuffix("/wall"))
        case ("GET", "/debug/pprof/"), ("GET", "/debug/pprof"):
            response = Response(
                status: 200, contentType: "text/plain; charset=utf-8",
                body: Data(
                    """
                    profile: the CPU profile of the next N seconds (?seconds=N, 30 by default)
                    wall: the same samples with waits included, wall_samples first

                    """.utf8))
        case (_, "/debug/pprof/profile"), (_, "/debug/pprof/wall"):
            response = Response.error(405, "Method not allowed: use GET.")
        default:
            response = Response.error(404, "Unknown profile: \(request.path.prefix(200)).")
        }
        response.send(connection)
    }

    /// A profile of the next `seconds=N` seconds, as Go's handler takes one.
    private func profile(_ request: HTTPRequest, wall: Bool) -> Response {
        var seconds = 30
        if let text = request.query["seconds"], let asked = Int(text), asked > 0 { seconds = asked }
        do {
            let data = try Self.takeProfile(seconds: seconds, wall: wall)
            return Response(
                status: 200, contentType: "application/octet-stream",
                headers: ["Content-Disposition: attachment; filename=\"profile\""], body: data)
        } catch {
            return Response.error(error.status, error.description)
        }
    }

    /// Whether a profile is being taken, by any endpoint or route.
    private static let busy = Atomic(false)

    /// The running program's next `seconds` seconds, every thread sampled at ``rateHz``, as
    /// gzip-compressed pprof (`cpu_samples` first, or `wall_samples` when `wall`). Blocks the
    /// calling thread meanwhile; ``profile(seconds:wall:)`` waits without holding one.
    /// - Throws: ``EndpointError`` with the HTTP status to answer: 400 for a duration out of
    ///   range, 409 while another profile is taken or the launch is recorded, 500 when the sampler fails.
    public static func takeProfile(seconds: Int, wall: Bool = false) throws(EndpointError) -> Data {
        guard seconds > 0, seconds <= longestSeconds else {
            throw EndpointError("Profile duration must be between 1 and \(longestSeconds) seconds, not \(seconds).", status: 400)
        }
        guard !busy.exchange(true, ordering: .acquiringAndReleasing) else {
            throw EndpointError("Could not enable profiling: a profile is already being taken.", status: 409)
        }
        defer { busy.store(false, ordering: .releasing) }
        guard !Sampler.isRunning else {
            throw EndpointError("Could not enable profiling: the sampler is recording the launch.", status: 409)
        }
        let recorder: ProfileRecorder
        do {
            recorder = try ProfileRecorder.start(configuration: SamplerConfiguration(rateHz: rateHz))
        } catch {
            throw EndpointError("Could not enable profiling: \(error).", status: 500)
        }
        // This thread only waits for the profile to be taken.
        try? Sampler.excludeCurrentThread()
        defer { try? Sampler.includeCurrentThread() }
        var asked = timespec(tv_sec: seconds, tv_nsec: 0)
        var rest = timespec()
        while nanosleep(&asked, &rest) != 0, errno == EINTR { asked = rest }
        let profile = recorder.finish()
        do {
            return try PprofExporter.data(profile, defaultSampleType: wall ? "wall_samples" : "cpu_samples", launch: false)
        } catch {
            throw EndpointError("Could not write the profile: \(error).", status: 500)
        }
    }

    /// ``takeProfile(seconds:wall:)`` on a thread of its own, so that an async handler (a
    /// Hummingbird route, say) waits for it without holding one of the concurrency pool's threads.
    /// - Throws: ``EndpointError`` as ``takeProfile(seconds:wall:)`` does.
    public static func profile(seconds: Int, wall: Bool = false) async throws -> Data {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                do {
                    continuation.resume(returning: try takeProfile(seconds: seconds, wall: wall))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
            thread.name = "liftoff profile"
            thread.start()
        }
    }
}

/// Why an endpoint did not start, or a profile was not taken, in one sentence.
public struct EndpointError: Error, CustomStringConvertible, Sendable {
    /// The sentence.
    public var description: String
    /// The HTTP status that answers it: 400, 409 or 500 for a profile; 500 for an endpoint that did not start.
    public var status: Int
    init(_ description: String, status: Int = 500) {
        self.description = description
        self.status = status
    }
}

/// A request's method, path and query: all the endpoint reads.
struct HTTPRequest {
    var method: String
    var path: String
    var query: [String: String]

    /// The blank line that ends a request's head.
    private static let endOfHead: [UInt8] = [13, 10, 13, 10]

    /// Reads a request's head (at most 16 KiB); nil when it is not one.
    static func read(_ connection: Int32) -> HTTPRequest? {
        var head = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 4096)
        while head.count < 16 << 10 {
            let count = chunk.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            // While a profile is taken, the sampler's signals interrupt a receive with a timeout.
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return nil }
            head += chunk[0..<count]
            let ended = head.withUnsafeBufferPointer { bytes in endOfHead.withUnsafeBufferPointer { ByteSearch.find($0, in: bytes) } }
            if ended { break }
        }
        return parse(String(decoding: head, as: UTF8.self))
    }

    /// The request of a request head's text; nil when its first line is not `METHOD TARGET HTTP/1.x`.
    static func parse(_ text: String) -> HTTPRequest? {
        guard let line = text.split(separator: "\r\n", maxSplits: 1, omittingEmptySubsequences: false).first else { return nil }
        let parts = line.split(separator: " ")
        guard parts.count == 3, parts[2].hasPrefix("HTTP/1."), parts[1].hasPrefix("/") else { return nil }
        let target = String(parts[1])
        let components = URLComponents(string: target)
        var query: [String: String] = [:]
        for item in components?.queryItems ?? [] where query[item.name] == nil { query[item.name] = item.value ?? "" }
        return HTTPRequest(method: String(parts[0]), path: components?.path ?? target, query: query)
    }
}

/// An answer, written whole, after which the connection closes.
struct Response {
    var status: Int
    var contentType: String
    var headers: [String] = []
    var body: Data

    /// An error as Go's pprof handlers send one: text, with `X-Go-Pprof: 1`.
    static func error(_ status: Int, _ message: String) -> Response {
        Response(
            status: status, contentType: "text/plain; charset=utf-8", headers: ["X-Go-Pprof: 1", "X-Content-Type-Options: nosniff"],
            body: Data((message + "\n").utf8))
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 400: return "Bad Request"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 409: return "Conflict"
        default: return "Internal Server Error"
        }
    }

    /// Writes the answer; a client that went away is no error of the program's.
    func send(_ connection: Int32) {
        var head = "HTTP/1.1 \(status) \(Self.reason(status))\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.count)\r\n"
        head += headers.map { $0 + "\r\n" }.joined() + "Connection: close\r\n\r\n"
        var bytes = Data(head.utf8)
        bytes.append(body)
        bytes.withUnsafeBytes { raw in
            var sent = 0
            while sent < raw.count {
                let count = Glibc.send(connection, raw.baseAddress! + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { return }
                sent += count
            }
        }
    }
}
