import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A server started as a child process, its listening port read from its log.
final class RunningServer {
    let process = Process()
    let port: Int
    private let log = Pipe()

    /// Starts `executable` on a free port with `environment` added, and waits (at most 60 s) for
    /// Hummingbird's "listening on" line.
    init(_ executable: URL, environment: [String: String] = [:]) throws {
        process.executableURL = executable
        process.environment = ProcessInfo.processInfo.environment.merging(environment.merging(["SERVER_PORT": "0"]) { $1 }) { $1 }
        process.standardError = log
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        var text = ""
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            let chunk = log.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
            if let range = text.range(of: "listening on 127.0.0.1:") {
                let digits = text[range.upperBound...].prefix { $0.isNumber }
                if let port = Int(digits), text[range.upperBound...].dropFirst(digits.count).first?.isNewline == true {
                    self.port = port
                    // Whatever it logs later is drained, so the pipe never fills.
                    log.fileHandleForReading.readabilityHandler = { handle in _ = handle.availableData }
                    return
                }
            }
        }
        process.terminate()
        throw ServerError(description: "\(executable.lastPathComponent) did not say where it listens: \(text)")
    }

    /// Its resident memory, in bytes, from `/proc/PID/status`.
    var residentBytes: Int {
        let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }

    /// Sends SIGTERM and waits for the process to end; the time it took, in seconds.
    func stop() -> Double {
        let start = Date()
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        log.fileHandleForReading.readabilityHandler = nil
        return Date().timeIntervalSince(start)
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

struct ServerError: Error, CustomStringConvertible {
    var description: String
}

/// An HTTP/1.1 client on one kept-alive connection: requests one after another, each answer read
/// whole (its `Content-Length`), with no library in between to cost more than the server does.
final class KeepAliveClient {
    private let socket: Int32
    private var buffer = [UInt8]()

    init(port: Int) throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard socket >= 0, connected == 0 else { throw ServerError(description: "cannot connect to port \(port)") }
    }

    deinit { close(socket) }

    /// GETs `path`; the response's status code.
    func get(_ path: String) throws -> Int {
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ send(socket, $0.baseAddress, $0.count, 0) }) == request.count else {
            throw ServerError(description: "send failed")
        }
        let end = Array("\r\n\r\n".utf8)
        while true {
            if let headerEnd = range(of: end) {
                let head = String(decoding: buffer[..<headerEnd], as: UTF8.self)
                let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                let total = headerEnd + end.count + length
                if buffer.count >= total {
                    let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
                    buffer.removeFirst(total)
                    return status
                }
            }
            var chunk = [UInt8](repeating: 0, count: 16_384)
            let count = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { throw ServerError(description: "the server closed the connection") }
            buffer += chunk[..<count]
        }
    }

    private func range(of needle: [UInt8]) -> Int? {
        guard buffer.count >= needle.count else { return nil }
        for start in 0...(buffer.count - needle.count) where buffer[start..<start + needle.count].elementsEqual(needle) {
            return start
        }
        return nil
    }

    /// How many requests it completes in `seconds`.
    func requests(for seconds: Double) throws -> Int {
        let end = Date().addingTimeInterval(seconds)
        var count = 0
        while Date() < end {
            guard try get("/products/\(count % 1_000)") == 200 else { throw ServerError(description: "a request failed") }
            count += 1
        }
        return count
    }
}

@Suite("Server after ready", .serialized)
struct ServerCostTests {
    @Test("after ready the wired server costs what the bare one does: memory, throughput, and SIGTERM to exit; its profile holds the launch")
    func costsWhatBareCostsAfterReady() throws {
        let bareServer = Tools.server.deletingLastPathComponent().appendingPathComponent("BareServer")
        try #require(FileManager.default.isExecutableFile(atPath: bareServer.path), "run swift build here first")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("server-cost-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let profileURL = folder.appendingPathComponent("profile.json")

        let wired = try RunningServer(Tools.server, environment: ["LIFTOFF_PROFILE_OUT": profileURL.path])
        let bare = try RunningServer(bareServer)
        let wiredClient = try KeepAliveClient(port: wired.port)
        let bareClient = try KeepAliveClient(port: bare.port)
        _ = try wiredClient.requests(for: 1)
        _ = try bareClient.requests(for: 1)
        let memoryBefore = wired.residentBytes

        // 25 s of traced requests to each, in half-second windows taken in turn (A B B A …), so
        // that the machine's own drift falls on both alike.
        var ratios: [Double] = []
        var served = (wired: 0, bare: 0)
        for pair in 0..<50 {
            let wiredFirst = pair % 2 == 0
            let first = try (wiredFirst ? wiredClient : bareClient).requests(for: 0.5)
            let second = try (wiredFirst ? bareClient : wiredClient).requests(for: 0.5)
            let (wiredCount, bareCount) = wiredFirst ? (first, second) : (second, first)
            served.wired += wiredCount
            served.bare += bareCount
            if bareCount > 0 { ratios.append(Double(wiredCount) / Double(bareCount)) }
        }
        let growth = wired.residentBytes - memoryBefore
        let ratio = ratios.sorted()[ratios.count / 2]
        print("wired \(served.wired), bare \(served.bare) requests; median window ratio \(ratio); RSS \(memoryBefore / 1_048_576) MB +\(growth / 1_024) kB")
        #expect(served.wired > 1_000, "the client kept the server busy")
        #expect(growth <= 15 * 1_048_576, "resident memory grew by \(growth / 1_024) kB over 25 s of traced requests")
        #expect(ratio >= 0.9, "wired throughput is \(ratio) of bare, window by window")

        let wiredStop = wired.stop()
        let bareStop = bare.stop()
        print("SIGTERM to exit: wired \(wiredStop) s, bare \(bareStop) s")
        #expect(wiredStop <= 2, "\(wiredStop) s from SIGTERM to exit, the profile written")
        #expect(wired.process.terminationStatus == 0)

        let profile = try JSONSerialization.jsonObject(with: Data(contentsOf: profileURL)) as? [String: Any]
        let spans = (profile?["spans"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        #expect(spans.contains("load catalogue") && spans.contains("build router") && spans.contains("http"), "\(spans)")
        #expect(!spans.contains { $0.contains("/products") }, "no request after ready is a span of the launch: \(spans.count) spans")
    }
}
