import Foundation
import GRDB
import LogStore
import LogStoreEngine
import LogStoreSQL

/// The read accessor of `SQLiteDataStore.read`: one GRDB connection inside a read transaction.
/// Valid only inside its block, on the block's thread (see `DataStoreReadAccessor`).
class SQLiteReadAccessor: DataStoreReadAccessor {
    let db: Database
    let session: SQLiteSession
    var isValid = true

    init(db: Database, session: SQLiteSession) {
        self.db = db
        self.session = session
    }

    var path: String { session.path }

    func checkValid() throws {
        guard isValid else {
            throw LogStoreError(
                .accessorExpired,
                "A read accessor was used after its block returned. Use accessors only inside the block that received them; copy the items you need out of the block."
            )
        }
    }

    /// The table of item type `type` in this accessor's snapshot, or nil when it has none.
    func table(for type: String) throws -> String? {
        guard let table = session.tables.withLock({ $0[type] }) else { return nil }
        // A table committed after this snapshot was taken is not in it.
        do {
            return try db.tableExists(table) ? table : nil
        } catch {
            throw SQLiteErrors.map(error, path: path)
        }
    }

    /// Every item type with a table in this snapshot.
    func allTables() throws -> [(type: String, table: String)] {
        try session.tables.withLock { $0 }.compactMap { type, _ in try table(for: type).map { (type, $0) } }
    }

    func statement(_ sql: String, _ arguments: [SQLValue] = []) throws -> SQLiteStatement {
        try SQLiteStatement(db, sql, arguments, path: path)
    }

    func items<Item: DataStoreItem>(forRequest request: DataStoreRequest<Item>) throws -> [Item] {
        try checkValid()
        return try query(Item.itemType).items(request)
    }

    func firstItem<Item: DataStoreItem>(forRequest request: DataStoreRequest<Item>) throws -> Item? {
        var r = request
        r.limit = 1
        return try items(forRequest: r).first
    }

    func countItems<Item: DataStoreItem>(forRequest request: DataStoreRequest<Item>) throws -> Int {
        try checkValid()
        return try query(Item.itemType).count(request)
    }

    func item<Item: DataStoreItem>(ofType type: Item.Type, id: Item.ID) throws -> Item? {
        try checkValid()
        let key = try ItemKey.make(id)
        guard let bytes = try record(ofType: Item.itemType, key: key) else { return nil }
        return try QueryExecutor.decode(Item.self, bytes[...])
    }

    func itemTypeNames() throws -> [String] {
        try checkValid()
        var names: [String] = []
        for (type, table) in try allTables()
        where try !StoreHistory.isReserved(type) && statement("SELECT EXISTS (SELECT 1 FROM \(table.sqlIdentifier))").integer() != 0 {
            names.append(type)
        }
        return names.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    func forEachRecord(ofType itemType: String, after key: RecordKey?, _ body: (RecordKey, ArraySlice<UInt8>) throws -> Bool) throws {
        try checkValid()
        guard let table = try table(for: itemType) else { return }
        let s: SQLiteStatement
        if let key {
            s = try statement("SELECT key, data FROM \(table.sqlIdentifier) WHERE key > ? ORDER BY key", [.blob(key.bytes)])
        } else {
            s = try statement("SELECT key, data FROM \(table.sqlIdentifier) ORDER BY key")
        }
        try s.forEachRow { row in
            try checkValid()
            return try body(row.key(0), try LogStoreJSON.decode(row.bytes(1))[...])
        }
    }

    func recordCount(ofType itemType: String) throws -> Int {
        try checkValid()
        guard let table = try table(for: itemType) else { return 0 }
        return Int(try statement("SELECT COUNT(*) FROM \(table.sqlIdentifier)").integer())
    }

    func record(ofType itemType: String, key: RecordKey) throws -> [UInt8]? {
        try checkValid()
        guard let table = try table(for: itemType) else { return nil }
        var out: [UInt8]? = nil
        try key.withUnsafeBytes { k in
            let s = try statement("SELECT data FROM \(table.sqlIdentifier) WHERE key = ?")
            try s.bindBlob(k, at: 1)
            try s.forEachRow { row in
                out = try LogStoreJSON.decode(row.bytes(0))
                return false
            }
        }
        return out
    }
}

/// The write accessor of `SQLiteDataStore`'s write blocks: the writer connection inside a
/// `BEGIN IMMEDIATE` transaction. Reads through it see the block's own changes.
final class SQLiteWriteAccessor: SQLiteReadAccessor, TransactionWriteAccessor {
    /// The number this transaction's commit gets (stamped on the rows it writes).
    let sequence: UInt64
    /// Whether anything changed (then the commit bumps the store's sequence).
    var changed = false
    /// Tables this transaction created: item type -> table.
    var createdTables: [String: String] = [:]
    /// Item types whose declared indexes this transaction created or checked.
    var declaredIndexes: Set<String> = []
    /// What the transaction changed, per item type, for the change feed (``CommitChanges``).
    var changes: [String: CommitChanges.TypeChanges] = [:]

    init(db: Database, session: SQLiteSession, sequence: UInt64) {
        self.sequence = sequence
        super.init(db: db, session: session)
    }

    override func table(for type: String) throws -> String? {
        if let t = createdTables[type] { return t }
        return try super.table(for: type)
    }

    override func allTables() throws -> [(type: String, table: String)] {
        try super.allTables() + createdTables.map { ($0.key, $0.value) }
    }

    /// The table of `type`, created (and registered) in this transaction if it has none yet.
    func ensureTable(for type: String) throws -> String {
        if let t = try table(for: type) { return t }
        let taken = Set(try allTables().map { $0.table.lowercased() })
        let name = SQLiteSchema.tableName(for: type, taken: taken)
        try SQLiteSchema.createItemTable(db, type: type, table: name, path: path)
        createdTables[type] = name
        return name
    }

    /// Stores `value` (attribute bytes) as record `key` of `type`: validated, transcoded to
    /// LogStore JSON, written with this transaction's sequence.
    func put(type: String, key: RecordKey, value: [UInt8]) throws {
        try session.limits.validate(type: type, key: key, valueSize: value.count)
        let json = try LogStoreJSON.encode(value)
        let table = try ensureTable(for: type)
        // An upsert, not INSERT OR REPLACE: a unique index's conflict must fail the write, not
        // delete the other item.
        let s = try statement(
            "INSERT INTO \(table.sqlIdentifier) (key, seq, data) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET seq = excluded.seq, data = excluded.data"
        )
        try key.withUnsafeBytes { try s.bindBlob($0, at: 1) }
        try s.bind(.integer(Int64(sequence)), at: 2)
        try json.withUnsafeBytes { try s.bindText($0, at: 3) }
        try s.execute()
        changed = true
        changes[type, default: CommitChanges.TypeChanges()].written.append(key)
    }

    /// Deletes record `key` of `type`; whether it existed.
    func remove(type: String, key: RecordKey) throws -> Bool {
        guard let table = try table(for: type) else { return false }
        let s = try statement("DELETE FROM \(table.sqlIdentifier) WHERE key = ?")
        try key.withUnsafeBytes { try s.bindBlob($0, at: 1) }
        let n = try s.execute()
        if n > 0 {
            changed = true
            changes[type, default: CommitChanges.TypeChanges()].deleted.append(key)
        }
        return n > 0
    }

    /// Deletes every record of `type`; how many there were.
    func removeAll(type: String) throws -> Int {
        guard let table = try table(for: type) else { return 0 }
        // The keys it removes, in key order, for the change feed (observers and tombstones).
        var keys: [RecordKey] = []
        try statement("SELECT key FROM \(table.sqlIdentifier) ORDER BY key").forEachRow { row in
            keys.append(row.key(0))
            return true
        }
        try statement("DELETE FROM \(table.sqlIdentifier)").execute()
        if !keys.isEmpty {
            changed = true
            // A delete-all comes first in a commit's changes: what the transaction wrote before
            // it never became visible; keys it deleted before it stay deleted. A second delete-all
            // removes only keys this transaction wrote, so the first one's keys stand.
            let removed = keys
            var c = changes[type, default: CommitChanges.TypeChanges()]
            c.written = []
            if c.cleared == nil { c.cleared = CommitChanges.ClearedKeys(count: removed.count, keys: { removed }) }
            changes[type] = c
        }
        return keys.count
    }

    /// Deletes every item of every type (nuke).
    func deleteEverything() throws {
        for (type, _) in try allTables() { _ = try removeAll(type: type) }
    }

    /// The conflict test of a merge into this store: whether record (`type`, `key`) changed
    /// after the child's `base` (a snapshot of this store, ``SQLiteSession/childBase()``):
    /// written by a commit numbered after the base's, or deleted since.
    func changedSince(base: any RecordReader, type: String, key: RecordKey) throws -> Bool {
        var seq: Int64? = nil
        if let table = try table(for: type) {
            try key.withUnsafeBytes { k in
                let s = try statement("SELECT seq FROM \(table.sqlIdentifier) WHERE key = ?")
                try s.bindBlob(k, at: 1)
                try s.forEachRow { row in
                    seq = row.integer(0)
                    return false
                }
            }
        }
        return try ChildMerge.changed(writtenAt: seq.map { UInt64(max(0, $0)) }, since: base, type: type, key: key)
    }

    /// Applies merged operations (a child's changes).
    func apply(_ operations: [RecordOperation]) throws {
        for op in operations {
            switch op {
            case .put(let type, let key, let value): try put(type: type, key: key, value: value)
            case .delete(let type, let key): _ = try remove(type: type, key: key)
            case .deleteAll(let type): _ = try removeAll(type: type)
            }
        }
    }

    /// Declares `Item`'s indexes on its table, once per type and session (see ``SQLiteIndexes``).
    func declareIndexes<Item: DataStoreItem>(_ type: Item.Type) throws {
        guard !declaredIndexes.contains(Item.itemType), !session.declaredIndexes.withLock({ $0.contains(Item.itemType) }) else { return }
        try SQLiteIndexes.declare(Item.self, table: try ensureTable(for: Item.itemType), db: db, path: path)
        declaredIndexes.insert(Item.itemType)
    }

    func insert<Item: DataStoreItem>(_ item: Item) throws {
        try checkValid()
        try declareIndexes(Item.self)
        let key = try ItemKey.make(item.id)
        try put(type: Item.itemType, key: key, value: try AttributeCoding.encodeBytes(item))
    }

    @discardableResult
    func delete<Item: DataStoreItem>(_ item: Item) throws -> Bool {
        try deleteItem(ofType: Item.self, id: item.id)
    }

    @discardableResult
    func deleteItem<Item: DataStoreItem>(ofType type: Item.Type, id: Item.ID) throws -> Bool {
        try checkValid()
        return try remove(type: Item.itemType, key: try ItemKey.make(id))
    }

    @discardableResult
    func deleteAllItems<Item: DataStoreItem>(ofType type: Item.Type) throws -> Int {
        try checkValid()
        return try removeAll(type: Item.itemType)
    }

    func putRecord(ofType itemType: String, key: RecordKey, value: [UInt8]) throws {
        try checkValid()
        try put(type: itemType, key: key, value: value)
    }

    @discardableResult
    func deleteRecord(ofType itemType: String, key: RecordKey) throws -> Bool {
        try checkValid()
        return try remove(type: itemType, key: key)
    }
}
