import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Runs `arguments` with posix_spawn, its output to `log`, and waits for it with waitpid: a
/// program that leaves a server running (pg_ctl) is waited for as any other.
public func spawnAndWait(_ arguments: [String], log: String) -> Int32 {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0o644)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    var argv = arguments.map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    guard posix_spawn(&pid, arguments[0], &actions, nil, &argv, environ) == 0 else { return -1 }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
}

/// A PostgreSQL server of the test's own (Debian's `postgresql`), on a Unix socket in a temporary
/// folder, with no TCP port; stopped by `stop()`. Run as `nobody` when the tests run as root,
/// since the server refuses to.
public final class PostgresServer {
    /// The folder of its data, socket and logs.
    public let folder: URL
    let binaries: URL
    let asRoot = getuid() == 0

    /// Creates a database cluster and starts its server.
    public init() throws {
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        guard let version = versions.compactMap(Int.init).max() else {
            throw ServerError("PostgreSQL is not installed: `make test-deps` installs postgresql")
        }
        binaries = URL(fileURLWithPath: "/usr/lib/postgresql/\(version)/bin")
        folder = URL(fileURLWithPath: "/tmp/liftoff-pg-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("socket"), withIntermediateDirectories: true)
        if asRoot { _ = try runToEnd("/bin/chown", ["-R", "nobody", folder.path]) }
        let output = folder.appendingPathComponent("tools.log").path
        let initdb = spawnAndWait(
            command("initdb", ["-D", "\(folder.path)/data", "-A", "trust", "-U", "liftoff", "--no-sync", "-E", "UTF8"]), log: output)
        guard initdb == 0 else { throw ServerError("initdb: \((try? String(contentsOfFile: output, encoding: .utf8)) ?? "")") }
        let start = spawnAndWait(
            command("pg_ctl", [
                "-D", "\(folder.path)/data", "-l", "\(folder.path)/log", "-w", "-o",
                "-k '\(folder.path)/socket' -c listen_addresses='' -F", "start",
            ]), log: output)
        guard start == 0 else { throw ServerError("pg_ctl start: \((try? String(contentsOfFile: output, encoding: .utf8)) ?? "")") }
    }

    /// Why the server could not start.
    public struct ServerError: Error, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// The command line of a PostgreSQL tool, run as `nobody` when the tests run as root.
    func command(_ tool: String, _ arguments: [String]) -> [String] {
        let path = binaries.appendingPathComponent(tool).path
        return asRoot ? ["/usr/sbin/runuser", "-u", "nobody", "--", path] + arguments : [path] + arguments
    }

    /// The server's connection URL (the socket's folder as the host).
    public var url: String { "postgresql:///postgres?host=\(folder.appendingPathComponent("socket").path)&user=liftoff" }

    /// Runs a PostgreSQL tool; its status and output.
    public func run(_ tool: String, _ arguments: [String]) -> (status: Int32, output: String) {
        let output = folder.appendingPathComponent("run-\(UUID().uuidString.prefix(8)).log").path
        let status = spawnAndWait(command(tool, arguments), log: output)
        return (status, (try? String(contentsOfFile: output, encoding: .utf8)) ?? "")
    }

    /// Stops the server and removes its folder.
    public func stop() {
        _ = spawnAndWait(command("pg_ctl", ["-D", "\(folder.path)/data", "-m", "immediate", "-w", "stop"]), log: "/dev/null")
        try? FileManager.default.removeItem(at: folder)
    }
}

