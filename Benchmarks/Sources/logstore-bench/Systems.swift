import CLMDB
import Foundation
import GRDB
import LogStore
import LogStoreEngine

/// Whether each write transaction must be on disk when it returns.
enum Mode: String, Sendable {
    /// LogStore `.synchronous`, SQLite WAL `synchronous=FULL`, LMDB default (sync on commit).
    case durable
    /// LogStore `.buffered`, SQLite WAL `synchronous=NORMAL`, LMDB `MDB_NOSYNC`.
    case buffered
}

/// One storage system under test, holding `BenchItem`s. Every method may be called from any
/// thread (the 16-writer workload calls `insert` from 16 threads at once).
protocol BenchStore: AnyObject, Sendable {
    /// Stable key used in JSON and for ratios ("logstore", "sqlite", "lmdb", ...).
    var key: String { get }
    /// Display name.
    var name: String { get }
    /// The settings that matter (durability, sync mode).
    var config: String { get }
    /// Where its files are.
    var path: String { get }
    /// One write transaction that inserts (or replaces) one item.
    func insert(_ item: BenchItem) throws
    /// One write transaction that inserts (or replaces) all `items`.
    func insertBatch(_ items: ArraySlice<BenchItem>) throws
    /// One read transaction that fetches the item with `id`.
    func get(_ id: Int) throws -> BenchItem?
    /// One read transaction that returns the items with `rating >= minRating` (decoded), at most
    /// `limit` of them (nil: all).
    func scan(minRating: Int, limit: Int?) throws -> [BenchItem]
    /// One read transaction that returns `limit` items in id order, starting at the `offset`-th.
    func page(offset: Int, limit: Int) throws -> [BenchItem]
    /// The number of items.
    func count() throws -> Int
    /// The number of items with `rating >= minRating`.
    func count(minRating: Int) throws -> Int
    /// Flushes and closes. Not used afterwards.
    func close() throws
}

// MARK: - LogStore (DataStore API)

/// LogStore through its public DataStore API (`LogDataStore`, Codable items).
final class LogStoreDataStore: DataStoreBench {
    /// "logstore", or a variant's own key (its rows are told apart by it).
    let key: String
    let name = "LogStore"
    let config: String
    let path: String
    let store: LogDataStore

    /// The options it was opened with.
    let options: LogStoreOptions

    init(
        path: String, mode: Mode, compression: Bool = true, durability: Durability? = nil, key: String = "logstore",
        tune: (inout LogStoreOptions) -> String = { _ in "" }
    ) throws {
        self.key = key
        var o = LogStoreOptions()
        o.durability = durability ?? (mode == .durable ? .synchronous : .buffered)
        o.compression = compression
        let tuned = tune(&o)
        options = o
        self.path = path
        config = "\(o.durability)" + (compression ? "" : ", no LZ4") + tuned
        store = LogDataStore(directory: URL(fileURLWithPath: path), options: o)
        try store.setup()
    }

    var dataStore: any DataStore { store }
}

// MARK: - LogStore engine (raw)

/// The LogStore engine alone (`LogEngine`), storing ``BinaryItemCodec`` values under the same
/// keys as the DataStore: what LogStore costs without its Codable layer.
final class LogStoreEngineStore: BenchStore {
    /// "logstore-engine", or a variant's own key (its rows are told apart by it).
    let key: String
    let name = "LogStore engine (raw)"
    let config: String
    let path: String
    let engine: LogEngine
    static let type = "BenchItem"

    /// The options it was opened with.
    let options: LogStoreOptions

    init(
        path: String, mode: Mode, compression: Bool = true, durability: Durability? = nil, cacheSize: Int? = nil,
        key: String = "logstore-engine", tune: (inout LogStoreOptions) -> String = { _ in "" }
    ) throws {
        self.key = key
        var o = LogStoreOptions()
        o.durability = durability ?? (mode == .durable ? .synchronous : .buffered)
        o.compression = compression
        if let cacheSize { o.cacheSize = cacheSize }
        let tuned = tune(&o)
        options = o
        self.path = path
        config = "\(o.durability), binary values" + (compression ? "" : ", no LZ4") + tuned
        engine = try LogEngine.open(directory: path, fileSystem: POSIXFileSystem(), options: o.engine)
    }

    func insert(_ item: BenchItem) throws {
        let key = try ItemKey.make(item.id)
        let value = BinaryItemCodec.encode(item)
        try engine.write { try $0.put(type: Self.type, key: key, value: value) }
    }
    func insertBatch(_ items: ArraySlice<BenchItem>) throws {
        try engine.write { txn in
            for i in items { try txn.put(type: Self.type, key: try ItemKey.make(i.id), value: BinaryItemCodec.encode(i)) }
        }
    }
    func get(_ id: Int) throws -> BenchItem? {
        guard let v = try engine.snapshot().value(type: Self.type, key: try ItemKey.make(id)) else { return nil }
        return try v.withUnsafeBytes { try BinaryItemCodec.decode(id: id, $0) }
    }
    func scan(minRating: Int, limit: Int?) throws -> [BenchItem] {
        var out: [BenchItem] = []
        try engine.snapshot().forEach(ofType: Self.type) { key, v in
            let item = try v.withUnsafeBytes { try BinaryItemCodec.decode(id: Self.id(key), $0) }
            if item.rating >= minRating { out.append(item) }
            return out.count < (limit ?? .max)
        }
        return out
    }
    func page(offset: Int, limit: Int) throws -> [BenchItem] {
        let snap = try engine.snapshot()
        var out: [BenchItem] = []
        try snap.forEachKeyInOrder(ofType: Self.type, fromOffset: offset) { key in
            guard let v = try snap.value(type: Self.type, key: key) else { return true }
            out.append(try v.withUnsafeBytes { try BinaryItemCodec.decode(id: Self.id(key), $0) })
            return out.count < limit
        }
        return out
    }
    func count() throws -> Int { try engine.snapshot().count(ofType: Self.type) }
    func count(minRating: Int) throws -> Int {
        var n = 0
        try engine.snapshot().forEach(ofType: Self.type) { key, v in
            let item = try v.withUnsafeBytes { try BinaryItemCodec.decode(id: Self.id(key), $0) }
            if item.rating >= minRating { n += 1 }
            return true
        }
        return n
    }
    func close() throws { try engine.close() }

    /// Inverse of `ItemKey.make(Int)`: 8 bytes big-endian with the sign bit flipped.
    static func id(_ key: RecordKey) -> Int {
        key.withUnsafeBytes { raw in
            var v: UInt64 = 0
            for b in raw { v = v << 8 | UInt64(b) }
            return Int(Int64(bitPattern: v ^ (1 << 63)))
        }
    }
}

// MARK: - SQLite (GRDB)

/// SQLite through GRDB 7.10.0: a `DatabasePool` (WAL), Codable records, table `benchItem` with
/// `id INTEGER PRIMARY KEY` and no other index.
final class SQLiteStore: BenchStore {
    let key: String
    let name = "SQLite (GRDB)"
    let config: String
    let path: String
    let pool: DatabasePool

    init(path: String, mode: Mode) throws {
        let sync = mode == .durable ? "FULL" : "NORMAL"
        key = "sqlite-" + sync.lowercased()
        config = "WAL, synchronous=\(sync)"
        self.path = path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        pool = try DatabasePool(path: path + "/bench.sqlite")
        // GRDB's DatabasePool sets synchronous=NORMAL on its writer connection when it turns WAL
        // on (after prepareDatabase), so set the mode here, on the writer, and check it.
        let level = try pool.writeWithoutTransaction { db -> Int in
            try db.execute(sql: "PRAGMA synchronous = \(sync)")
            return try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1
        }
        guard level == (mode == .durable ? 2 : 1) else { throw BenchError("SQLite: PRAGMA synchronous is \(level), wanted \(sync)") }
        try pool.write { db in
            try db.create(table: BenchItem.databaseTableName, options: .ifNotExists) { t in
                t.primaryKey("id", .integer)
                t.column("name", .text).notNull()
                t.column("rating", .integer).notNull()
                t.column("date", .datetime).notNull()
                t.column("tags", .text).notNull()
                t.column("text", .text).notNull()
            }
        }
    }

    func insert(_ item: BenchItem) throws {
        try pool.write { db in try item.insert(db, onConflict: .replace) }
    }
    func insertBatch(_ items: ArraySlice<BenchItem>) throws {
        try pool.write { db in for i in items { try i.insert(db, onConflict: .replace) } }
    }
    // Reads use GRDB's cached prepared statements with Codable record decoding: the query
    // interface (`fetchOne(db, key:)`) regenerates and prepares its SQL on every call, which more
    // than doubled the cost of a point read in a profile.
    func get(_ id: Int) throws -> BenchItem? {
        try pool.read { db in
            try BenchItem.fetchOne(try db.cachedStatement(sql: "SELECT * FROM benchItem WHERE id = ?"), arguments: [id])
        }
    }
    func scan(minRating: Int, limit: Int?) throws -> [BenchItem] {
        try pool.read { db in
            let s = try db.cachedStatement(sql: "SELECT * FROM benchItem WHERE rating >= ? LIMIT ?")
            return try BenchItem.fetchAll(s, arguments: [minRating, limit ?? -1])
        }
    }
    func page(offset: Int, limit: Int) throws -> [BenchItem] {
        try pool.read { db in
            let s = try db.cachedStatement(sql: "SELECT * FROM benchItem ORDER BY id LIMIT ? OFFSET ?")
            return try BenchItem.fetchAll(s, arguments: [limit, offset])
        }
    }
    func count() throws -> Int {
        try pool.read { db in try BenchItem.fetchCount(db) }
    }
    func count(minRating: Int) throws -> Int {
        try pool.read { db in
            try Int.fetchOne(try db.cachedStatement(sql: "SELECT COUNT(*) FROM benchItem WHERE rating >= ?"), arguments: [minRating]) ?? 0
        }
    }
    func close() throws { try pool.close() }
}

// MARK: - LMDB

struct LMDBError: Error, CustomStringConvertible {
    var code: Int32
    var call: String
    var description: String { "\(call): \(String(cString: mdb_strerror(code))) (\(code))" }
}

@inline(__always) func mdbCheck(_ rc: Int32, _ call: @autoclosure () -> String) throws {
    if rc != 0 { throw LMDBError(code: rc, call: call()) }
}

/// LMDB (Debian's liblmdb), one unnamed database, 8-byte big-endian id keys, ``BinaryItemCodec``
/// values.
///
/// `@unchecked Sendable`: `env` and `dbi` are set once in `init`, before the object is shared, and
/// never change; an LMDB environment may be used from any thread (each transaction stays on the
/// thread that began it, and LMDB's own writer mutex serializes write transactions).
final class LMDBStore: BenchStore, @unchecked Sendable {
    let key: String
    let name = "LMDB"
    let config: String
    let path: String
    let env: OpaquePointer
    let dbi: MDB_dbi

    /// `flags`: 0 (sync data and meta page on every commit), `MDB_NOSYNC` or `MDB_NOMETASYNC`.
    init(path: String, flags: Int32 = 0) throws {
        self.path = path
        switch flags {
        case 0:
            key = "lmdb"
            config = "sync on commit"
        case MDB_NOSYNC:
            key = "lmdb-nosync"
            config = "MDB_NOSYNC"
        case MDB_NOMETASYNC:
            key = "lmdb-nometasync"
            config = "MDB_NOMETASYNC"
        default:
            key = "lmdb-\(flags)"
            config = "flags \(flags)"
        }
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        var e: OpaquePointer?
        try mdbCheck(mdb_env_create(&e), "mdb_env_create")
        guard let e else { throw LMDBError(code: -1, call: "mdb_env_create") }
        env = e
        try mdbCheck(mdb_env_set_mapsize(e, 64 << 30), "mdb_env_set_mapsize")
        try mdbCheck(mdb_env_set_maxreaders(e, 256), "mdb_env_set_maxreaders")
        // MDB_NOTLS: read transactions are not tied to thread-local slots (we begin and end them
        // on one thread anyway; this only avoids the TLS lookup).
        try mdbCheck(mdb_env_open(e, path, UInt32(flags) | UInt32(MDB_NOTLS), 0o644), "mdb_env_open")
        var txn: OpaquePointer?
        try mdbCheck(mdb_txn_begin(e, nil, 0, &txn), "mdb_txn_begin")
        var d: MDB_dbi = 0
        try mdbCheck(mdb_dbi_open(txn, nil, 0, &d), "mdb_dbi_open")
        try mdbCheck(mdb_txn_commit(txn), "mdb_txn_commit")
        dbi = d
    }

    func put(_ txn: OpaquePointer?, _ item: BenchItem) throws {
        var k = bigEndianKey(item.id)
        var v = BinaryItemCodec.encode(item)
        try k.withUnsafeMutableBytes { kb in
            try v.withUnsafeMutableBytes { vb in
                var key = MDB_val(mv_size: kb.count, mv_data: kb.baseAddress)
                var val = MDB_val(mv_size: vb.count, mv_data: vb.baseAddress)
                try mdbCheck(mdb_put(txn, dbi, &key, &val, 0), "mdb_put")
            }
        }
    }

    func write(_ body: (OpaquePointer?) throws -> Void) throws {
        var txn: OpaquePointer?
        try mdbCheck(mdb_txn_begin(env, nil, 0, &txn), "mdb_txn_begin")
        do {
            try body(txn)
        } catch {
            mdb_txn_abort(txn)
            throw error
        }
        try mdbCheck(mdb_txn_commit(txn), "mdb_txn_commit")
    }

    func read<T>(_ body: (OpaquePointer?) throws -> T) throws -> T {
        var txn: OpaquePointer?
        try mdbCheck(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn), "mdb_txn_begin(RDONLY)")
        defer { mdb_txn_abort(txn) }
        return try body(txn)
    }

    func insert(_ item: BenchItem) throws { try write { try put($0, item) } }
    func insertBatch(_ items: ArraySlice<BenchItem>) throws { try write { txn in for i in items { try put(txn, i) } } }

    func get(_ id: Int) throws -> BenchItem? {
        try read { txn in
            var k = bigEndianKey(id)
            return try k.withUnsafeMutableBytes { kb -> BenchItem? in
                var key = MDB_val(mv_size: kb.count, mv_data: kb.baseAddress)
                var val = MDB_val()
                let rc = mdb_get(txn, dbi, &key, &val)
                if rc == MDB_NOTFOUND { return nil }
                try mdbCheck(rc, "mdb_get")
                return try BinaryItemCodec.decode(id: id, UnsafeRawBufferPointer(start: val.mv_data, count: val.mv_size))
            }
        }
    }

    /// Walks the records in key order while `body` returns true.
    func forEach(_ body: (Int, UnsafeRawBufferPointer) throws -> Bool) throws {
        try read { txn in
            var cursor: OpaquePointer?
            try mdbCheck(mdb_cursor_open(txn, dbi, &cursor), "mdb_cursor_open")
            defer { mdb_cursor_close(cursor) }
            var key = MDB_val()
            var val = MDB_val()
            var op = MDB_FIRST
            while true {
                let rc = mdb_cursor_get(cursor, &key, &val, op)
                if rc == MDB_NOTFOUND { break }
                try mdbCheck(rc, "mdb_cursor_get")
                let kb = UnsafeRawBufferPointer(start: key.mv_data, count: key.mv_size)
                var id: UInt64 = 0
                for b in kb { id = id << 8 | UInt64(b) }
                if try !body(Int(Int64(bitPattern: id)), UnsafeRawBufferPointer(start: val.mv_data, count: val.mv_size)) { break }
                op = MDB_NEXT
            }
        }
    }

    func scan(minRating: Int, limit: Int?) throws -> [BenchItem] {
        var out: [BenchItem] = []
        try forEach { id, v in
            let item = try BinaryItemCodec.decode(id: id, v)
            if item.rating >= minRating { out.append(item) }
            return out.count < (limit ?? .max)
        }
        return out
    }
    /// LMDB has no counts per page: the cursor walks `offset` records first.
    func page(offset: Int, limit: Int) throws -> [BenchItem] {
        var out: [BenchItem] = []
        var skipped = 0
        try forEach { id, v in
            if skipped < offset {
                skipped += 1
                return true
            }
            out.append(try BinaryItemCodec.decode(id: id, v))
            return out.count < limit
        }
        return out
    }
    func count() throws -> Int {
        try read { txn in
            var st = MDB_stat()
            try mdbCheck(mdb_stat(txn, dbi, &st), "mdb_stat")
            return Int(st.ms_entries)
        }
    }
    func count(minRating: Int) throws -> Int {
        var n = 0
        try forEach { id, v in
            let item = try BinaryItemCodec.decode(id: id, v)
            if item.rating >= minRating { n += 1 }
            return true
        }
        return n
    }
    func close() throws {
        mdb_env_sync(env, 1)
        mdb_env_close(env)
    }
}
