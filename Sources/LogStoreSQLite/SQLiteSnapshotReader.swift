import Foundation
import GRDB
import LogStore
import LogStoreEngine
import LogStoreSQL
import Synchronization

/// A snapshot of a `SQLiteDataStore` as a `RecordReader`: the base of its child stores.
///
/// A read-only connection of its own holds one read transaction open from creation until
/// ``close()`` (or deinit): SQLite's WAL keeps every page that transaction sees, so the child
/// reads the parent's committed state as of its creation however the parent changes (a SAVEPOINT
/// in the parent would show the parent's later writes). While it is open, checkpoints cannot go
/// past it, so the WAL grows until the child is merged (which takes a new snapshot), torn down or
/// released.
///
/// Every read is a query that can fail: it throws the mapped SQLite error (`.parentClosed` once
/// the parent's tearDown closed the snapshot). Thread-safe: the connection serializes its users.
/// Methods never call back into the connection while it is busy (a walk fetches batches and calls
/// its body between them).
final class SQLiteSnapshotReader: RecordReader, Sendable {
    let connection: DatabaseQueue
    let path: String
    /// The number of the last commit the snapshot includes.
    let sequence: UInt64
    /// Item type -> table, as of the snapshot.
    let tables: [String: String]
    let closed = Atomic<Bool>(false)
    static let batch = 512

    /// Opens a snapshot of the store `session` serves, as of now. Throws the mapped SQLite error.
    init(session: SQLiteSession) throws {
        path = session.path
        connection = try session.makeReadOnlyConnection()
        do {
            (sequence, tables) = try connection.inDatabase { db -> (UInt64, [String: String]) in
                try db.execute(sql: "BEGIN DEFERRED TRANSACTION")
                // The first read fixes the snapshot.
                let seq = try Int64.fetchOne(db, sql: "SELECT value FROM \(SQLiteSchema.meta) WHERE key = 'sequence'") ?? 0
                var tables: [String: String] = [:]
                for row in try Row.fetchAll(db, sql: "SELECT name, tableName FROM \(SQLiteSchema.types)") {
                    if let name = row[0] as String?, let table = row[1] as String? { tables[name] = table }
                }
                return (UInt64(max(0, seq)), tables)
            }
        } catch {
            try? connection.close()
            throw SQLiteErrors.map(error, path: path)
        }
    }

    deinit { close() }

    /// Ends the read transaction and closes the connection. Idempotent; later reads fail with
    /// `.parentClosed`.
    func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        try? connection.inDatabase { try $0.execute(sql: "ROLLBACK") }
        try? connection.close()
    }

    /// Runs `body` on the snapshot's connection. Throws `.parentClosed` once closed, and the
    /// mapped SQLite error of the query.
    func query<T>(_ body: (Database) throws -> T) throws -> T {
        if closed.load(ordering: .acquiring) { throw StoreErrors.parentClosed() }
        do {
            return try connection.inDatabase(body)
        } catch {
            throw SQLiteErrors.map(error, path: path)
        }
    }

    func statement(_ db: Database, _ sql: String, _ arguments: [SQLValue] = []) throws -> SQLiteStatement {
        try SQLiteStatement(db, sql, arguments, path: path)
    }

    func table(_ type: String) -> String? { tables[type].map(\.sqlIdentifier) }

    // MARK: RecordReader

    var itemTypes: [String] {
        get throws {
            try query { db in
                try tables.keys.filter { type in try statement(db, "SELECT EXISTS (SELECT 1 FROM \(table(type) ?? ""))").integer() != 0 }
            }
        }
    }

    func count(ofType type: String) throws -> Int {
        guard let t = table(type) else { return 0 }
        return try query { db in Int(try statement(db, "SELECT COUNT(*) FROM \(t)").integer()) }
    }

    func contains(type: String, key: RecordKey) throws -> Bool {
        guard let t = table(type) else { return false }
        return try query { db in try statement(db, "SELECT EXISTS (SELECT 1 FROM \(t) WHERE key = ?)", [.blob(key.bytes)]).integer() != 0 }
    }

    func value(type: String, key: RecordKey) throws -> ArraySlice<UInt8>? {
        guard let t = table(type) else { return nil }
        return try query { db -> ArraySlice<UInt8>? in
            var out: ArraySlice<UInt8>? = nil
            try statement(db, "SELECT data FROM \(t) WHERE key = ?", [.blob(key.bytes)]).forEachRow { row in
                out = try LogStoreJSON.decode(row.bytes(0))[...]
                return false
            }
            return out
        }
    }

    /// Records of `type` in key order after `key`, a batch at a time.
    func batch(_ t: String, after key: RecordKey?) throws -> [(RecordKey, [UInt8])] {
        try query { db in
            var out: [(RecordKey, [UInt8])] = []
            let s =
                try key.map {
                    try statement(db, "SELECT key, data FROM \(t) WHERE key > ? ORDER BY key LIMIT \(Self.batch)", [.blob($0.bytes)])
                }
                ?? statement(db, "SELECT key, data FROM \(t) ORDER BY key LIMIT \(Self.batch)")
            try s.forEachRow { row in
                out.append((row.key(0), try LogStoreJSON.decode(row.bytes(1))))
                return true
            }
            return out
        }
    }

    func forEach(ofType type: String, _ body: (RecordKey, ArraySlice<UInt8>) throws -> Bool) throws {
        try forEachRecordInKeyOrder(ofType: type, after: nil, body)
    }

    /// See `RecordReader.forEachRecordInKeyOrder(ofType:after:_:)`: batches in key order from the
    /// table's primary key.
    func forEachRecordInKeyOrder(ofType type: String, after key: RecordKey?, _ body: (RecordKey, ArraySlice<UInt8>) throws -> Bool) throws {
        guard let t = table(type) else { return }
        var after: RecordKey? = key
        while true {
            let rows = try batch(t, after: after)
            for (k, v) in rows where try !body(k, v[...]) { return }
            guard rows.count == Self.batch, let last = rows.last else { return }
            after = last.0
        }
    }

    func keys(ofType type: String) throws -> [RecordKey] {
        guard let t = table(type) else { return [] }
        return try query { db in
            var out: [RecordKey] = []
            try statement(db, "SELECT key FROM \(t)").forEachRow { row in
                out.append(row.key(0))
                return true
            }
            return out
        }
    }

    func forEachKeyInOrder(ofType type: String, fromOffset offset: Int, _ body: (RecordKey) throws -> Bool) throws {
        guard let t = table(type) else { return }
        var skip = max(0, offset)
        var after: RecordKey? = nil
        while true {
            let keys: [RecordKey] = try query { db in
                var out: [RecordKey] = []
                let s =
                    try after.map {
                        try statement(
                            db, "SELECT key FROM \(t) WHERE key > ? ORDER BY key LIMIT \(Self.batch) OFFSET \(skip)", [.blob($0.bytes)])
                    }
                    ?? statement(db, "SELECT key FROM \(t) ORDER BY key LIMIT \(Self.batch) OFFSET \(skip)")
                try s.forEachRow { row in
                    out.append(row.key(0))
                    return true
                }
                return out
            }
            skip = 0
            for k in keys where try !body(k) { return }
            guard keys.count == Self.batch, let last = keys.last else { return }
            after = last
        }
    }
}
