import Foundation
import LogStore
import LogStoreEngine
import LogStoreSQL
import PostgresNIO

/// Thrown inside a write block to end the attempt (the transaction loop rolls back and runs the
/// block again): a serialization failure, or schema work that must run outside the transaction.
struct PostgresRestart: Error, CustomStringConvertible {
    var reason: String
    var description: String { "the write transaction must run again: \(reason)" }
}

/// Schema work a write needs before its data transaction, when it cannot be done beside it.
enum PostgresSchemaWork: Hashable {
    /// Create (and drop outdated) declared indexes of an item type.
    case indexes(type: String, creates: [String], drops: [String])
}

/// The write accessor of `PostgresDataStore`'s write blocks: one connection, and a SERIALIZABLE
/// transaction begun at the block's first statement. Inserts are batched: sent as one statement
/// (per table, with the sequence bump and the commit log entry) when a read needs them, when the
/// batch is full (1,000 rows or 4 MiB), or at the end; reads through the accessor see the block's own writes.
///
/// A block that only inserts never begins a transaction: its writes, the bump of
/// `logstore_sequence` and its commit log entry go as ONE autocommitted statement at the end
/// (a single statement is atomic; the bump's row lock orders it after every commit before it,
/// and a concurrent SERIALIZABLE writer that read what it overwrites fails its own bump, so the
/// history stays serializable). Such a write costs one round trip, as a bare `INSERT` does.
final class PostgresWriteAccessor: PostgresReadAccessor, TransactionWriteAccessor {
    /// Whether `BEGIN` was sent.
    var began = false
    /// The commit's sequence number, taken (bumping `logstore_sequence`) by the first statement
    /// that changes something.
    var sequence: UInt64?
    /// Why this attempt must start over (set at most once; every later call throws it).
    var restart: PostgresRestart?
    /// The serialization failure or deadlock that ended the attempt, if that is why (the next
    /// attempt then waits a backoff first).
    var conflict: LogStoreError?
    /// Schema work to do before the next attempt.
    var schemaWork: [PostgresSchemaWork] = []
    /// The first statement failure: the transaction is aborted, so it cannot commit.
    var failure: (any Error)?
    /// Item types whose declared indexes were checked in this attempt.
    var declaredIndexes: Set<String> = []
    /// Tables this transaction's statements wrote to (locks a schema change would wait for).
    var written: Set<PostgresTable> = []
    /// Tables this transaction created (item type -> table): registered after its snapshot was
    /// taken, so its own registry reads do not list them.
    var createdTables: [String: PostgresTable] = [:]
    /// Inserts not sent yet: per table, keys and LogStore JSON, in order.
    var pending: [PostgresTable: [(RecordKey, [UInt8])]] = [:]
    var pendingCount = 0
    var pendingBytes = 0
    /// What the transaction changed, per item type (the commit log's entry).
    var changes = ChangeTracker()
    /// Whether the transaction wrote some key more than once (batches then keep the last value).
    var rewrote = false

    static let batchRows = 1000
    static let batchBytes = 4 << 20

    /// Runs one step of the transaction: refuses to go on after a restart or failure, and records
    /// either from what `body` throws.
    func step<T>(_ body: () throws -> T) throws -> T {
        try checkValid()
        if let restart { throw restart }
        if let failure { throw failure }
        do {
            return try body()
        } catch let r as PostgresRestart {
            restart = r
            throw r
        } catch {
            if PostgresErrors.isRetryable(error) {
                restart = PostgresRestart(reason: "\(error)")
                conflict = error as? LogStoreError
            } else if began, let e = error as? LogStoreError, e.underlyingError is PSQLError {
                // A statement failed: the server aborted the transaction.
                failure = e
            }
            throw error
        }
    }

    /// BEGIN, sent but not waited for: the statement after it goes right behind it on the
    /// connection, so the two cost one wait; its result is checked before the commit.
    var beginning: EventLoopFuture<PostgresQueryResult>?

    /// Begins the transaction if it has not begun.
    func begin() throws {
        guard !began else { return }
        beginning = try statements.start("BEGIN ISOLATION LEVEL SERIALIZABLE")
        began = true
    }

    override func reading<T>(_ body: () throws -> T) throws -> T {
        try step {
            try begin()
            try flush()
            return try body()
        }
    }

    /// The table of `type`, created (outside this transaction, on another connection) when it
    /// has none: a new table holds no lock of this transaction, and is empty in its snapshot.
    func writableTable(for type: String, kind: @autoclosure () -> PostgresIDKind) throws -> PostgresTable {
        if let t = try table(for: type) { return t }
        let t = try session.ensureTable(type: type, kind: kind())
        createdTables[type] = t
        return t
    }

    override func allTables() throws -> [String: PostgresTable] {
        try super.allTables().merging(createdTables) { a, _ in a }
    }

    // MARK: Sending writes

    /// The statement that sends `batches` (inserts, the last value of a key winning), bumps the
    /// sequence unless this transaction has one, and writes `log` (the commit log entry) when
    /// given; it returns the commit's sequence. One statement however many tables: data-modifying
    /// CTEs, each run once.
    func writeStatement(_ batches: [PostgresTable: [(RecordKey, [UInt8])]], log: [UInt8]?) throws -> PostgresQuery {
        var binds = PostgresBindings()
        var sql: String
        if let sequence {
            binds.append(Int64(sequence))
            sql = "WITH logstore_s AS (SELECT $1::bigint AS sequence)"
        } else {
            sql =
                "WITH logstore_s AS (UPDATE \(session.sequenceTable) SET sequence = sequence + 1 WHERE id = 1 RETURNING sequence)"
        }
        let upsert = " ON CONFLICT (id) DO UPDATE SET version = excluded.version, data = excluded.data"
        for (n, (t, rows)) in batches.sorted(by: { $0.key.name < $1.key.name }).enumerated() {
            // ON CONFLICT cannot touch a row twice in one statement: keep each key's last value
            // (only when the transaction wrote some key twice: the change tracker knows).
            var kept = rows
            if rewrote {
                var latest: [RecordKey: Int] = [:]
                for (i, row) in rows.enumerated() { latest[row.0] = i }
                kept = rows.indices.filter { latest[rows[$0].0] == $0 }.map { rows[$0] }
            }
            let k = binds.count + 1
            if kept.count == 1 {
                try t.kind.bind(kept[0].0, into: &binds)
                binds.append(PostgresJSONBParameter(json: kept[0].1))
                sql +=
                    ", logstore_w\(n) AS (INSERT INTO \(t.sql) (id, version, data) SELECT $\(k)::\(t.kind.sqlType), sequence, $\(k + 1)::jsonb FROM logstore_s\(upsert))"
            } else {
                try t.kind.bind(kept.map(\.0), into: &binds)
                binds.append(kept.map { PostgresJSONBParameter(json: $0.1) })
                sql +=
                    ", logstore_w\(n) AS (INSERT INTO \(t.sql) (id, version, data) SELECT logstore_r.k, logstore_s.sequence, logstore_r.d FROM logstore_s, unnest($\(k)::\(t.kind.arrayType), $\(k + 1)::jsonb[]) AS logstore_r(k, d)\(upsert))"
            }
        }
        if let log {
            binds.append(ByteBuffer(bytes: log))
            sql +=
                ", logstore_l AS (INSERT INTO \(session.commitsTable) (sequence, changes) SELECT sequence, $\(binds.count)::bytea FROM logstore_s)"
        }
        return PostgresQuery(unsafeSQL: sql + " SELECT sequence FROM logstore_s", binds: binds)
    }

    /// Runs a write statement and takes the sequence it returns.
    func send(_ query: PostgresQuery, duringCommit: Bool = false) throws {
        try take(try statements.run(query, duringCommit: duringCommit))
    }

    /// Takes the sequence a write statement returned.
    func take(_ result: PostgresQueryResult) throws {
        let rows = result.rows
        guard let row = rows.first, let s = try? row.decode(Int64.self), s > 0 else {
            throw LogStoreError(
                .corruption,
                "The store's sequence row is missing from \(session.schema).\(PostgresSchema.sequence). Restore the schema from a backup.",
                path: session.place)
        }
        sequence = UInt64(s)
    }

    /// Takes the commit's sequence if the transaction has none yet (a delete is its first change).
    func takeSequence() throws {
        guard sequence == nil else { return }
        try send(try writeStatement([:], log: nil))
    }

    /// Sends the pending inserts (in the transaction, begun if need be).
    func flush() throws {
        guard pendingCount > 0 else { return }
        try begin()
        let batches = takePending()
        try send(try writeStatement(batches, log: nil))
    }

    func takePending() -> [PostgresTable: [(RecordKey, [UInt8])]] {
        let batches = pending
        for t in batches.keys { written.insert(t) }
        pending = [:]
        pendingCount = 0
        pendingBytes = 0
        return batches
    }

    /// Stores `value` (attribute bytes) as record `key` of `type` (a table with ids of `kind`
    /// when it needs one): validated, transcoded to LogStore JSON, queued.
    func put(type: String, key: RecordKey, value: [UInt8], kind: @autoclosure () -> PostgresIDKind) throws {
        try session.options.limits.validate(type: type, key: key, valueSize: value.count)
        let json = try LogStoreJSON.encode(value, dialect: .postgres)
        let t = try writableTable(for: type, kind: kind())
        if t.kind != .bytea {
            // Refuse a key the id column cannot hold now, not when the batch is sent.
            var scratch = PostgresBindings()
            try t.kind.bind(key, into: &scratch)
        }
        // A full batch is sent before the next insert joins it, so that a block of exactly one
        // batch still commits as one statement.
        if pendingCount >= Self.batchRows || pendingBytes >= Self.batchBytes { try flush() }
        pending[t, default: []].append((key, json))
        pendingCount += 1
        pendingBytes += json.count + key.count
        if !changes.wrote(type, key) { rewrote = true }
    }

    /// Deletes record `key` of `type`; whether it existed.
    func remove(type: String, key: RecordKey) throws -> Bool {
        try begin()
        try flush()
        guard let t = try table(for: type) else { return false }
        var binds = PostgresBindings()
        do {
            try t.kind.bind(key, into: &binds)
        } catch {
            return false  // a key no row of this table can have
        }
        written.insert(t)
        let deleted = try statements.run(PostgresQuery(unsafeSQL: "DELETE FROM \(t.sql) WHERE id = $1", binds: binds)).metadata.rows ?? 0
        guard deleted > 0 else { return false }
        try takeSequence()
        changes.deleted(type, key)
        return true
    }

    /// Deletes every record of `type`; how many there were.
    func removeAll(type: String) throws -> Int {
        try begin()
        try flush()
        guard let t = try table(for: type) else { return 0 }
        written.insert(t)
        let rows = try statements.run("DELETE FROM \(t.sql) RETURNING id").rows
        guard !rows.isEmpty else { return 0 }
        try takeSequence()
        let keys = try rows.map { try t.kind.key(from: $0.makeRandomAccess()[0]) }
        changes.cleared(type, keys)
        return keys.count
    }

    /// Deletes every item of every type (nuke), as one step of the transaction.
    func deleteEverything() throws {
        try step {
            try begin()
            for type in try allTables().keys { _ = try removeAll(type: type) }
        }
    }

    /// The write version of `PostgresDataStore.merge`'s optimistic check: whether record
    /// (`type`, `key`) changed after the child's `base` (a snapshot of this store): its `version`
    /// now is a commit numbered after the base's, or it was deleted since.
    func changedSince(base: any RecordReader, type: String, key: RecordKey) throws -> Bool {
        try reading {
            var version: Int64? = nil
            if let t = try table(for: type) {
                var binds = PostgresBindings()
                if (try? t.kind.bind(key, into: &binds)) != nil,
                    let row = try statements.run(PostgresQuery(unsafeSQL: "SELECT version FROM \(t.sql) WHERE id = $1", binds: binds)).rows
                        .first
                {
                    version = try row.decode(Int64.self)
                }
            }
            return try ChildMerge.changed(writtenAt: version.map { UInt64(max(0, $0)) }, since: base, type: type, key: key)
        }
    }

    /// Applies merged operations (a child's changes).
    func apply(_ operations: [RecordOperation]) throws {
        for op in operations {
            switch op {
            case .put(let type, let key, let value):
                try step { try put(type: type, key: key, value: value, kind: PostgresIDKind.inferred(key: key, value: value)) }
            case .delete(let type, let key): _ = try step { try remove(type: type, key: key) }
            case .deleteAll(let type): _ = try step { try removeAll(type: type) }
            }
        }
    }

    /// Makes sure `Item`'s declared indexes exist on its table, once per type and session: in
    /// place already, or created now on another connection when this transaction holds no lock
    /// the DDL would wait for; otherwise the attempt ends to create them first.
    func declareIndexes<Item: DataStoreItem>(_ type: Item.Type, table: PostgresTable) throws {
        guard !declaredIndexes.contains(Item.itemType), !session.declaredIndexes.withLock({ $0.contains(Item.itemType) }) else { return }
        let wanted = try PostgresIndexes.wanted(Item.self, table: table)
        let existing = try PostgresIndexes.existing(statements, table: table)
        let creates = wanted.filter { existing[$0.name] == nil }.map(\.create)
        let drops = existing.keys.filter { name in !wanted.contains { $0.name == name } }.sorted()
        if !creates.isEmpty || !drops.isEmpty {
            // CREATE INDEX waits for this transaction's writes to the table; DROP INDEX for its reads.
            guard !written.contains(table), drops.isEmpty || !began else {
                schemaWork.append(.indexes(type: Item.itemType, creates: creates, drops: drops))
                throw PostgresRestart(reason: "the indexes of \(Item.itemType) must be created first")
            }
            try session.withConnection { s in
                try PostgresIndexes.apply(s, creates: creates, drops: drops, schema: session.schema, type: Item.itemType)
            }
        }
        declaredIndexes.insert(Item.itemType)
    }

    func insert<Item: DataStoreItem>(_ item: Item) throws {
        try step {
            let key = try ItemKey.make(item.id)
            let value = try AttributeCoding.encodeBytes(item)
            let t = try writableTable(for: Item.itemType, kind: PostgresIDKind.of(Item.ID.self))
            try declareIndexes(Item.self, table: t)
            try put(type: Item.itemType, key: key, value: value, kind: t.kind)
        }
    }

    @discardableResult
    func delete<Item: DataStoreItem>(_ item: Item) throws -> Bool {
        try deleteItem(ofType: Item.self, id: item.id)
    }

    @discardableResult
    func deleteItem<Item: DataStoreItem>(ofType type: Item.Type, id: Item.ID) throws -> Bool {
        try step { try remove(type: Item.itemType, key: try ItemKey.make(id)) }
    }

    @discardableResult
    func deleteAllItems<Item: DataStoreItem>(ofType type: Item.Type) throws -> Int {
        try step { try removeAll(type: Item.itemType) }
    }

    func putRecord(ofType itemType: String, key: RecordKey, value: [UInt8]) throws {
        try step { try put(type: itemType, key: key, value: value, kind: PostgresIDKind.inferred(key: key, value: value)) }
    }

    @discardableResult
    func deleteRecord(ofType itemType: String, key: RecordKey) throws -> Bool {
        try step { try remove(type: itemType, key: key) }
    }

    // MARK: Committing

    /// Sends what is pending with the commit log entry, and commits: with `COMMIT` when the
    /// transaction began, as one autocommitted statement when it did not. Returns the commit's
    /// changes (nil when nothing changed). Called once the block returned; before the commit,
    /// fixes the snapshots of this process's reads that have not taken one.
    func commit() throws -> CommitChanges? {
        try step {
            let batches = takePending()
            guard !changes.isEmpty else {
                if began {
                    if let beginning { _ = try statements.wait(beginning) }
                    try statements.run("COMMIT", duringCommit: true)
                }
                return nil
            }
            let log = PostgresCommitLog.encode(changes.types)
            let statement = try writeStatement(batches, log: log)
            session.fixPendingReads()
            if began {
                if let beginning { _ = try statements.wait(beginning) }
                // The last writes and COMMIT go together: one wait.
                try take(try statements.runThenCommit(statement))
            } else {
                try send(statement, duringCommit: true)
            }
            guard let sequence else { return nil }
            return CommitChanges(sequence: sequence, types: changes.types)
        }
    }
}
