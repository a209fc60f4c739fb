import Foundation
import Liftoff

/// Checksums rows as a migration would: CPU work with a name to find in the profile.
@inline(never)
public func checksumRows(_ rows: Int) -> UInt64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for row in 0..<rows {
        for byte in "row \(row)".utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
    }
    return hash
}

/// A stand-in for a database client: connecting waits, migrating computes.
public struct Database: Sendable {
    public init() {}

    /// Waits as a network round trip would.
    public func connect() async throws { try await Task.sleep(for: .milliseconds(30)) }

    /// Computes after an await, so the work runs on whichever pool thread resumes it.
    public func migrate(rows: Int) async -> UInt64 {
        await Task.yield()
        return checksumRows(rows)
    }
}

/// Builds a search index: CPU work in a child task of whoever started it.
@inline(never)
public func buildIndex(rows: Int) async -> UInt64 {
    await Task.yield()
    return checksumRows(rows)
}

/// Warms the caches in parallel: an index in an `async let` and three shards in a task group,
/// each a child task of the span that called it.
@inline(never)
public func warmCaches(rows: Int) async -> UInt64 {
    async let index = buildIndex(rows: rows)
    let shards = await withTaskGroup(of: UInt64.self) { group in
        for shard in 0..<3 { group.addTask { checksumRows(rows / 3 + shard) } }
        return await group.reduce(0, ^)
    }
    return await index ^ shards
}

/// The tool's startup, each step a span: reading the configuration, then opening the database
/// (connect, then migrate) while the caches warm. Returns the migration's checksum.
public func startUp(recorder: LaunchRecorder, rows: Int = 400_000) async throws -> UInt64 {
    _ = recorder.span("load config") { checksumRows(rows / 8) }
    let database = Database()
    let checksum = try await recorder.span("open database") {
        try await database.connect()
        return await recorder.span("migrate") { await database.migrate(rows: rows) }
    }
    let warmed = await recorder.span("warm caches") { await warmCaches(rows: rows / 2) }
    recorder.ready()
    return checksum ^ warmed
}
