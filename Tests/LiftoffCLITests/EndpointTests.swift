import Foundation
import LiftoffEndpoint
import LiftoffSampler
import LiftoffTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// CPU work with a name to find in a live profile.
@inline(never)
func endpointSpin(until stop: StopFlag) -> UInt64 {
    var hash: UInt64 = 14_695_981_039_346_656_037
    while !stop.value.load(ordering: .relaxed) {
        for byte in 0..<UInt64(4096) { hash = (hash ^ byte) &* 1_099_511_628_211 }
    }
    return hash
}

/// A flag a test sets to end its worker.
final class StopFlag: Sendable {
    let value = Atomic(false)
}

/// One HTTP/1.1 GET over a TCP or unix socket, read to the server's close: the status line and headers, and the body.
func rawGetWithBody(_ address: String, _ target: String) throws -> (head: String, body: Data) {
    let descriptor: Int32
    if address.hasPrefix("/") {
        descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var socketAddress = sockaddr_un()
        socketAddress.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &socketAddress.sun_path) { bytes in
            for (index, byte) in address.utf8.enumerated() { bytes[index] = byte }
        }
        let status = withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(status == 0, "connect \(address): \(String(cString: strerror(errno)))")
    } else {
        let port = try #require(UInt16(address.split(separator: ":").last ?? ""))
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var socketAddress = sockaddr_in()
        socketAddress.sin_family = sa_family_t(AF_INET)
        socketAddress.sin_port = port.bigEndian
        socketAddress.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let status = withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        try #require(status == 0, "connect \(address): \(String(cString: strerror(errno)))")
    }
    defer { close(descriptor) }
    var timeout = timeval(tv_sec: 60, tv_usec: 0)
    setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    let request = Array("GET \(target) HTTP/1.1\r\nHost: test\r\n\r\n".utf8)
    while request.withUnsafeBytes({ send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) < 0, errno == EINTR {}
    var answer = [UInt8]()
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        // The sampler's signals interrupt a receive with a timeout, whatever SA_RESTART says.
        if count < 0, errno == EINTR { continue }
        guard count > 0 else { break }
        answer += chunk[0..<count]
    }
    let end = (0..<max(0, answer.count - 3)).first { answer[$0..<$0 + 4].elementsEqual([13, 10, 13, 10]) } ?? answer.count
    return (String(decoding: answer[..<end], as: UTF8.self), Data(answer[min(end + 4, answer.count)...]))
}

/// One HTTP/1.1 GET's status line and headers (and, for text, its body).
func rawGet(_ address: String, _ target: String) throws -> String {
    let (head, body) = try rawGetWithBody(address, target)
    return head + "\r\n\r\n" + String(decoding: body, as: UTF8.self)
}

/// The endpoint starts the process-wide sampler while a request asks: these tests hold the process lock.
@Suite("Live /debug/pprof endpoint", .serialized, .processState(timeLimit: .seconds(180)))
struct EndpointTests {
    @Test("without LIFTOFF_ENDPOINT nothing listens; a non-loopback address is refused unless allowed; bad addresses are one sentence")
    func addresses() throws {
        #expect(ProcessInfo.processInfo.environment["LIFTOFF_ENDPOINT"] == nil)
        // The line ProfilingAServer.md shows, in a process without the variable: nothing listens.
        try LiftoffEndpoint.startFromEnvironment()
        #expect(try LiftoffEndpoint.startFromEnvironment([:]) == nil)
        #expect(try LiftoffEndpoint.startFromEnvironment(["LIFTOFF_ENDPOINT": ""]) == nil)
        for (address, words) in [
            ("0.0.0.0:0", "is not a loopback address"), ("10.1.2.3:6060", "is not a loopback address"),
            ("example.com:6060", "does not name an IP address"), ("127.0.0.1", "is not HOST:PORT"),
            ("127.0.0.1:99999", "is not HOST:PORT"),
        ] {
            #expect {
                try LiftoffEndpoint.startFromEnvironment(["LIFTOFF_ENDPOINT": address])
            } throws: { error in
                "\(error)".contains(words)
            }
        }
        let remote = try #require(try LiftoffEndpoint.startFromEnvironment(["LIFTOFF_ENDPOINT": "0.0.0.0:0", "LIFTOFF_ENDPOINT_ALLOW_REMOTE": "1"]))
        remote.stop()
        let file = temporaryFolder().appendingPathComponent("plain")
        try Data("x".utf8).write(to: file)
        #expect(throws: EndpointError.self) { try LiftoffEndpoint.start(address: file.path) }
    }

    @Test("go tool pprof -seconds 2 reads the CPU profile of a running program; sampling runs only while asked")
    func goPprofReadsIt() throws {
        let endpoint = try LiftoffEndpoint.start(address: "127.0.0.1:0")
        defer { endpoint.stop() }
        #expect(!Sampler.isRunning, "nothing is sampled until a request asks")
        let stop = StopFlag()
        let worker = Thread { _ = endpointSpin(until: stop) }
        worker.start()
        defer { stop.value.store(true, ordering: .relaxed) }
        let go = try #require(["/usr/bin/go", "/usr/local/go/bin/go"].first { FileManager.default.isExecutableFile(atPath: $0) })
        let result = try runToEnd(
            "/usr/bin/env", ["PPROF_TMPDIR=\(temporaryFolder().path)", go, "tool", "pprof", "-raw", "-seconds", "2", "http://\(endpoint.address)/debug/pprof/profile"])
        #expect(result.status == 0, "\(result.output.prefix(600))")
        #expect(result.output.contains("cpu_samples/count[dflt]"), "\(result.output.prefix(600))")
        #expect(result.output.contains("endpointSpin"), "the running thread's function is named")
        #expect(!result.output.contains("liftoff endpoin"), "the endpoint's own threads are not sampled")
        #expect(!result.output.contains("pre-main"), "a live profile names no launch phases")
        #expect(!Sampler.isRunning, "sampling stops when the profile is sent")
    }

    @Test("the wall profile shows waits first; one profile at a time (409); unknown paths are Go-style errors; a unix socket serves too")
    func answers() throws {
        let socketPath = temporaryFolder().appendingPathComponent("pprof.sock").path
        let endpoint = try LiftoffEndpoint.start(address: socketPath)
        defer { endpoint.stop() }
        #expect(endpoint.address == socketPath)
        let first = Mutex<(head: String, body: Data)?>(nil)
        let thread = Thread {
            let answer = try? rawGetWithBody(socketPath, "/debug/pprof/wall?seconds=2")
            first.withLock { $0 = answer }
        }
        thread.start()
        usleep(500_000)
        let second = try rawGet(socketPath, "/debug/pprof/profile?seconds=1")
        #expect(second.hasPrefix("HTTP/1.1 409"), "\(second.prefix(200))")
        #expect(second.contains("X-Go-Pprof: 1"))
        let deadline = Date().addingTimeInterval(30)
        while first.withLock({ $0 }) == nil, Date() < deadline { usleep(100_000) }
        let wall = try #require(first.withLock { $0 })
        #expect(wall.head.hasPrefix("HTTP/1.1 200"), "\(wall.head)")
        #expect(wall.head.contains("Content-Type: application/octet-stream"))
        let file = temporaryFolder().appendingPathComponent("wall.pb.gz")
        try wall.body.write(to: file)
        #expect(try goPprof(["-raw", file.path]).contains("wall_samples/count[dflt]"))

        let unknown = try rawGet(socketPath, "/debug/pprof/heap")
        #expect(unknown.hasPrefix("HTTP/1.1 404") && unknown.contains("X-Go-Pprof: 1"), "\(unknown.prefix(200))")
        let tooLong = try rawGet(socketPath, "/debug/pprof/profile?seconds=999999")
        #expect(tooLong.hasPrefix("HTTP/1.1 400"), "\(tooLong.prefix(200))")
    }
}
