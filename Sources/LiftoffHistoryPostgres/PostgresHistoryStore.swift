import Foundation
import LiftoffHistory

#if canImport(Glibc)
import Glibc
#endif

/// A history kept in PostgreSQL: one row per commit and environment, the entry's JSON as written
/// to a folder store, so both stores give the same analysis. The client is the C library's own,
/// libpq (Debian's `libpq5`), loaded when a store is first opened: a `liftoff` that never talks to
/// a server needs no libpq.
public struct PostgresHistoryStore: HistoryStore {
    /// The connection string: a `postgres://` URL or libpq's `key=value` form.
    public var connection: String
    /// The table the entries are kept in.
    public static let table = "liftoff_history_entries"

    /// A store at `connection`.
    public init(connection: String) { self.connection = connection }

    /// Whether `text` names a PostgreSQL store rather than a folder.
    public static func isConnection(_ text: String) -> Bool {
        text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")
    }

    public func add(_ entry: HistoryEntry, keepingTime: Bool) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        var entry = entry
        try Session.with(connection) { session in
            try session.ensureTable()
            // Added again: it keeps its place among same-time commits, as in a folder.
            let existing = try session.query(
                "SELECT entry FROM \(Self.table) WHERE commit_id = $1 AND environment = $2", [entry.commit, entry.environment.key])
            if let text = existing.first?.first ?? nil, let old = try? HistoryEntry.decode(Data(text.utf8), source: "the database") {
                if old.recorded != nil { entry.recorded = old.recorded }
                if keepingTime { entry.time = old.time }
            }
            let json = String(decoding: try encoder.encode(entry), as: UTF8.self) + "\n"
            _ = try session.query(
                """
                INSERT INTO \(Self.table) (commit_id, environment, entry) VALUES ($1, $2, $3)
                ON CONFLICT (commit_id, environment) DO UPDATE SET entry = EXCLUDED.entry
                """, [entry.commit, entry.environment.key, json])
        }
    }

    public func load() throws -> (entries: [HistoryEntry], skipped: [String]) {
        try Session.with(connection) { session in
            try session.ensureTable()
            var entries: [HistoryEntry] = []
            var skipped: [String] = []
            for row in try session.query("SELECT commit_id, environment, entry FROM \(Self.table) ORDER BY commit_id, environment", []) {
                let source = "the row of commit \(row[0] ?? "?") in \(Self.table)"
                do {
                    entries.append(try HistoryEntry.decode(Data((row[2] ?? "").utf8), source: source))
                } catch let error as HistoryError {
                    skipped.append(error.description)
                }
            }
            return (entries, skipped)
        }
    }
}

/// libpq's functions, found once.
private struct LibPQ: @unchecked Sendable {
    typealias Connect = @convention(c) (UnsafePointer<CChar>) -> OpaquePointer?
    typealias Status = @convention(c) (OpaquePointer?) -> Int32
    typealias Message = @convention(c) (OpaquePointer?) -> UnsafeMutablePointer<CChar>?
    typealias Finish = @convention(c) (OpaquePointer?) -> Void
    typealias ExecParams = @convention(c) (
        OpaquePointer?, UnsafePointer<CChar>, Int32, UnsafePointer<UInt32>?, UnsafePointer<UnsafePointer<CChar>?>?,
        UnsafePointer<Int32>?, UnsafePointer<Int32>?, Int32
    ) -> OpaquePointer?
    typealias Count = @convention(c) (OpaquePointer?) -> Int32
    typealias Value = @convention(c) (OpaquePointer?, Int32, Int32) -> UnsafeMutablePointer<CChar>?
    typealias IsNull = @convention(c) (OpaquePointer?, Int32, Int32) -> Int32

    var connect: Connect
    var status: Status
    var errorMessage: Message
    var finish: Finish
    var execParams: ExecParams
    var resultStatus: Status
    var resultErrorMessage: Message
    var tuples: Count
    var fields: Count
    var value: Value
    var isNull: IsNull
    var clear: Finish

    static let shared: Result<LibPQ, HistoryError> = {
        guard let handle = dlopen("libpq.so.5", RTLD_NOW | RTLD_LOCAL) else {
            return .failure(HistoryError("A PostgreSQL store needs libpq (apt-get install libpq5), which could not be loaded."))
        }
        func find<T>(_ name: String, _ type: T.Type) -> T? { dlsym(handle, name).map { unsafeBitCast($0, to: type) } }
        guard let connect = find("PQconnectdb", Connect.self), let status = find("PQstatus", Status.self),
            let errorMessage = find("PQerrorMessage", Message.self), let finish = find("PQfinish", Finish.self),
            let execParams = find("PQexecParams", ExecParams.self), let resultStatus = find("PQresultStatus", Status.self),
            let resultErrorMessage = find("PQresultErrorMessage", Message.self), let tuples = find("PQntuples", Count.self),
            let fields = find("PQnfields", Count.self), let value = find("PQgetvalue", Value.self),
            let isNull = find("PQgetisnull", IsNull.self), let clear = find("PQclear", Finish.self)
        else { return .failure(HistoryError("The libpq that was loaded lacks a function Liftoff calls.")) }
        return .success(
            LibPQ(
                connect: connect, status: status, errorMessage: errorMessage, finish: finish, execParams: execParams,
                resultStatus: resultStatus, resultErrorMessage: resultErrorMessage, tuples: tuples, fields: fields, value: value,
                isNull: isNull, clear: clear))
    }()
}

/// One connection, for one store operation.
private struct Session {
    let pq: LibPQ
    let connection: OpaquePointer

    static func with<T>(_ target: String, _ body: (Session) throws -> T) throws -> T {
        let pq = try LibPQ.shared.get()
        guard let connection = pq.connect(target) else { throw HistoryError("Could not connect to the PostgreSQL store: out of memory.") }
        defer { pq.finish(connection) }
        // CONNECTION_OK is 0.
        guard pq.status(connection) == 0 else {
            throw HistoryError("Could not connect to the PostgreSQL store: \(Self.oneLine(pq.errorMessage(connection))).")
        }
        return try body(Session(pq: pq, connection: connection))
    }

    static func oneLine(_ message: UnsafeMutablePointer<CChar>?) -> String {
        let text = message.map { String(cString: $0) } ?? "no message"
        return text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
            .trimmingCharacters(in: CharacterSet(charactersIn: ". "))
    }

    func ensureTable() throws {
        // Quiet: "already exists, skipping" is a notice libpq would print.
        _ = try query("SET client_min_messages TO warning", [])
        _ = try query(
            """
            CREATE TABLE IF NOT EXISTS \(PostgresHistoryStore.table) (
                commit_id text NOT NULL, environment text NOT NULL, entry text NOT NULL,
                added timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (commit_id, environment))
            """, [])
    }

    /// The rows of `sql` with `parameters` as $1, $2, … (text), each a list of nullable texts.
    func query(_ sql: String, _ parameters: [String]) throws -> [[String?]] {
        let copies = parameters.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        let values = copies.map { UnsafePointer($0) }
        let result = values.withUnsafeBufferPointer { buffer in
            pq.execParams(connection, sql, Int32(parameters.count), nil, buffer.baseAddress, nil, nil, 0)
        }
        guard let result else { throw HistoryError("The PostgreSQL store did not answer: \(Self.oneLine(pq.errorMessage(connection))).") }
        defer { pq.clear(result) }
        // PGRES_COMMAND_OK is 1, PGRES_TUPLES_OK 2.
        let status = pq.resultStatus(result)
        guard status == 1 || status == 2 else {
            throw HistoryError("The PostgreSQL store refused a query: \(Self.oneLine(pq.resultErrorMessage(result))).")
        }
        let rows = pq.tuples(result), columns = pq.fields(result)
        return (0..<rows).map { row in
            (0..<columns).map { column in
                pq.isNull(result, row, column) != 0 ? nil : pq.value(result, row, column).map { String(cString: $0) }
            }
        }
    }
}
