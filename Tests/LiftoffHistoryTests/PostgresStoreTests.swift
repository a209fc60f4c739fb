import Foundation
import LiftoffHistoryPostgres
import LiftoffTestSupport
import Testing

@testable import LiftoffHistory

@Suite("Launch history in PostgreSQL", .serialized)
struct PostgresStoreTests {
    @Test("a real server keeps the same entries as a folder, and both give the same analysis; adding again keeps one row")
    func sameAnalysis() throws {
        let server = try PostgresServer()
        defer { server.stop() }
        let database = PostgresHistoryStore(connection: server.url)
        let folder = FolderHistoryStore(folder: temporaryFolder())
        let entries = SyntheticHistory.entries(count: 80, stepAt: 50, stepMs: 6)
        for entry in entries {
            try database.add(entry)
            try folder.add(entry)
        }
        try database.add(entries[0])
        let fromDatabase = try database.load()
        let fromFolder = try folder.load()
        #expect(fromDatabase.entries.count == 80 && fromDatabase.skipped.isEmpty)
        #expect(Set(fromDatabase.entries.map(\.commit)) == Set(fromFolder.entries.map(\.commit)))
        let (a, b) = (HistoryAnalysis(entries: fromDatabase.entries), HistoryAnalysis(entries: fromFolder.entries))
        #expect(a.text() == b.text())
        #expect(a.changes.map(\.commit) == ["c0050"])
    }

    @Test("a server that is not there, and a row that is not an entry, get one sentence each")
    func errors() throws {
        let missing = PostgresHistoryStore(connection: "postgresql:///postgres?host=/nonexistent-socket-folder&user=liftoff")
        #expect {
            try missing.load()
        } throws: { error in
            let text = (error as? HistoryError)?.description ?? ""
            return text.hasPrefix("Could not connect to the PostgreSQL store: ") && !text.contains("\n")
        }
        let server = try PostgresServer()
        defer { server.stop() }
        let database = PostgresHistoryStore(connection: server.url)
        try database.add(SyntheticHistory.entries(count: 1)[0])
        let psql = server.run("psql", [
            "-h", server.folder.appendingPathComponent("socket").path, "-U", "liftoff", "-d", "postgres", "-c",
            "INSERT INTO liftoff_history_entries (commit_id, environment, entry) VALUES ('bad', 'x', '{\"schema\": 2}')",
        ])
        try #require(psql.status == 0, "\(psql.output)")
        let loaded = try database.load()
        #expect(loaded.entries.count == 1 && loaded.skipped.count == 1 && loaded.skipped[0].contains("commit bad"), "\(loaded.skipped)")
    }
}
