import Foundation
import LogStore
import LogStoreEngine
import LogStoreSQL
import PostgresNIO
import Synchronization

/// A snapshot of a `PostgresDataStore` as a `RecordReader`: the base of its child stores.
///
/// A connection of its own (outside the pool) holds one read-only REPEATABLE READ transaction open
/// from creation until ``close()`` (or deinit), so the child reads the store's committed state as
/// of its creation however the store changes, whichever server changes it. While it is open,
/// PostgreSQL's vacuum cannot remove row versions newer than it: merge or release child stores
/// rather than keeping them for hours.
///
/// Every read is a query that can fail: it throws the mapped error (`.parentClosed` once the
/// store's tearDown closed the snapshot). Thread-safe: one lock serializes the users of the
/// connection.
final class PostgresSnapshotReader: RecordReader, Sendable {
    let statements: PostgresStatements
    let place: String
    /// The number of the last commit the snapshot includes.
    let sequence: UInt64
    /// Item type -> table, as of the snapshot.
    let tables: [String: PostgresTable]
    let closed = Atomic<Bool>(false)
    /// Held while a query runs on the connection.
    let busy = Mutex(())
    static let batch = 1000

    /// Opens a snapshot of the store `session` serves, as of now. Throws the mapped error.
    init(session: PostgresSession) throws {
        place = session.place
        statements = try session.dedicatedConnection()
        do {
            try statements.run("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            // The first query fixes the snapshot.
            sequence = UInt64(
                max(
                    0,
                    try statements.integers(SQLFragment("SELECT sequence FROM \(session.own(PostgresSchema.sequence)) WHERE id = 1")).first
                        ?? 0))
            tables = try PostgresSchema.registeredTables(statements, schema: session.schema)
        } catch {
            statements.connection.closeInBackground()
            throw error
        }
    }

    deinit { close() }

    /// Ends the transaction and closes the connection. Idempotent; later reads fail with
    /// `.parentClosed`. Never blocks.
    func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        statements.connection.closeInBackground()
    }

    /// Runs `body` on the snapshot's connection. Throws `.parentClosed` once closed, and the
    /// mapped error of the query.
    func query<T>(_ body: (PostgresStatements) throws -> T) throws -> T {
        if closed.load(ordering: .acquiring) { throw StoreErrors.parentClosed() }
        do {
            return try busy.withLock { _ in try body(statements) }
        } catch {
            throw PostgresErrors.map(error, place: place)
        }
    }

    // MARK: RecordReader

    var itemTypes: [String] {
        get throws {
            try query { s in
                try tables.filter { _, t in
                    try s.integers(SQLFragment("SELECT count(*) FROM (SELECT 1 FROM \(t.sql) LIMIT 1) AS logstore_any")).first ?? 0 > 0
                }.map(\.key)
            }
        }
    }

    func count(ofType type: String) throws -> Int {
        guard let t = tables[type] else { return 0 }
        return try query { s in Int(try s.integers(SQLFragment("SELECT count(*) FROM \(t.sql)")).first ?? 0) }
    }

    func contains(type: String, key: RecordKey) throws -> Bool {
        guard let t = tables[type] else { return false }
        var binds = PostgresBindings()
        guard (try? t.kind.bind(key, into: &binds)) != nil else { return false }
        return try query { s in try s.run(PostgresQuery(unsafeSQL: "SELECT 1 FROM \(t.sql) WHERE id = $1", binds: binds)).rows.first != nil
        }
    }

    func value(type: String, key: RecordKey) throws -> ArraySlice<UInt8>? {
        guard let t = tables[type] else { return nil }
        var binds = PostgresBindings()
        guard (try? t.kind.bind(key, into: &binds)) != nil else { return nil }
        return try query { s -> ArraySlice<UInt8>? in
            guard let row = try s.run(PostgresQuery(unsafeSQL: t.selectData, binds: binds)).rows.first else {
                return nil
            }
            return try PostgresJSONB.withText(row.makeRandomAccess()[0]) { try LogStoreJSON.decode($0) }[...]
        }
    }

    /// Keys (and values, when `values`) of `t` in key order after `key`, a batch at a time,
    /// skipping `offset` first.
    func batch(_ t: PostgresTable, after key: RecordKey?, offset: Int = 0, values: Bool) throws -> [(RecordKey, [UInt8])] {
        var binds = PostgresBindings()
        var sql = "SELECT id\(values ? ", data" : "") FROM \(t.sql)"
        if let key {
            try t.kind.bind(key, into: &binds)
            sql += " WHERE id > $1"
        }
        sql += " ORDER BY id LIMIT \(Self.batch) OFFSET \(offset)"
        return try query { s in
            try s.run(PostgresQuery(unsafeSQL: sql, binds: binds)).rows.map { row in
                let r = row.makeRandomAccess()
                return (try t.kind.key(from: r[0]), values ? try PostgresJSONB.withText(r[1]) { try LogStoreJSON.decode($0) } : [])
            }
        }
    }

    func forEach(ofType type: String, _ body: (RecordKey, ArraySlice<UInt8>) throws -> Bool) throws {
        guard let t = tables[type] else { return }
        var after: RecordKey? = nil
        while true {
            let rows = try batch(t, after: after, values: true)
            for (k, v) in rows where try !body(k, v[...]) { return }
            guard rows.count == Self.batch, let last = rows.last else { return }
            after = last.0
        }
    }

    func keys(ofType type: String) throws -> [RecordKey] {
        guard let t = tables[type] else { return [] }
        return try query { s in
            try s.run("SELECT id FROM \(t.sql)").rows.map { try t.kind.key(from: $0.makeRandomAccess()[0]) }
        }
    }

    func forEachKeyInOrder(ofType type: String, fromOffset offset: Int, _ body: (RecordKey) throws -> Bool) throws {
        guard let t = tables[type] else { return }
        var skip = max(0, offset)
        var after: RecordKey? = nil
        while true {
            let keys = try batch(t, after: after, offset: skip, values: false).map(\.0)
            skip = 0
            for k in keys where try !body(k) { return }
            guard keys.count == Self.batch, let last = keys.last else { return }
            after = last
        }
    }
}
