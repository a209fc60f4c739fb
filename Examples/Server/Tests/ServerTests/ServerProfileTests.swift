import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Whether something accepts connections on 127.0.0.1:`port`.
func accepts(_ port: UInt16) -> Bool {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    } == 0
}

@Suite("The running server's profile, read by Go's pprof", .serialized)
struct ServerProfileTests {
    @Test("go tool pprof -seconds 2 reads the CPU profile of the running server from its /debug/pprof/profile route")
    func goPprofReadsTheRoute() throws {
        let go = try #require(["/usr/bin/go", "/usr/local/go/bin/go"].first { FileManager.default.isExecutableFile(atPath: $0) })
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("server-profile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let port = UInt16(20_000 + getpid() % 20_000)
        let server = Process()
        server.executableURL = Tools.server
        server.environment = ProcessInfo.processInfo.environment.merging(
            ["SERVER_PORT": String(port), "LIFTOFF_PROFILE_OUT": folder.appendingPathComponent("launch.json").path]) { $1 }
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        defer {
            kill(server.processIdentifier, SIGKILL)
            var status: Int32 = 0
            while waitpid(server.processIdentifier, &status, 0) < 0, errno == EINTR {}
        }
        let deadline = Date().addingTimeInterval(30)
        while !accepts(port), Date() < deadline, server.isRunning { usleep(100_000) }
        try #require(accepts(port), "the server listens on \(port)")

        let result = try Tools.run(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["PPROF_TMPDIR=\(folder.path)", go, "tool", "pprof", "-raw", "-seconds", "2", "http://127.0.0.1:\(port)/debug/pprof/profile"])
        #expect(result.status == 0)
        #expect(result.output.contains("cpu_samples/count[dflt]"), "\(result.output.prefix(400))")
        #expect(result.output.contains("liftoff profile of"), "a live profile, not a launch's")
    }
}
