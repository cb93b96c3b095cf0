import GRDB
import GRDBSQLite
import LogStore
import LogStoreSQL

/// Runs a cached statement of a GRDB connection through SQLite's C API: binds ``SQLValue``s,
/// steps the rows handing out columns without copies, and always resets the statement, so that
/// the hot paths (a point read, a scan, a bulk insert) cost what SQLite costs. Used on the
/// thread that owns `db` (inside a GRDB access block); a value only valid in that block.
struct SQLiteStatement {
    let db: Database
    let handle: OpaquePointer
    let path: String

    /// The connection's cached statement for `sql`, bound to `arguments`. Throws the mapped
    /// SQLite error (for example `.corruption` when the schema is damaged).
    init(_ db: Database, _ sql: String, _ arguments: [SQLValue] = [], path: String) throws {
        self.db = db
        self.path = path
        do {
            handle = try db.cachedStatement(sql: sql).sqliteStatement
        } catch {
            throw SQLiteErrors.map(error, path: path)
        }
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        for (i, v) in arguments.enumerated() { try bind(v, at: Int32(i + 1)) }
    }

    /// Binds `value` to parameter `index` (1-based). Text and blobs are copied by SQLite.
    func bind(_ value: SQLValue, at index: Int32) throws {
        let rc: Int32
        switch value {
        case .null: rc = sqlite3_bind_null(handle, index)
        case .integer(let i): rc = sqlite3_bind_int64(handle, index, i)
        case .real(let d): rc = sqlite3_bind_double(handle, index, d)
        case .text(let t):
            try t.withUnsafeBytes { try bindText($0, at: index) }
            return
        case .blob(let b):
            try b.withUnsafeBytes { try bindBlob($0, at: index) }
            return
        }
        try check(rc)
    }

    /// SQLite copies what it is given (`SQLITE_TRANSIENT`, a C macro Swift does not import).
    nonisolated(unsafe) static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
    /// A valid pointer for empty text and blobs (SQLite takes a null pointer for NULL).
    nonisolated(unsafe) static let empty: UnsafeMutableRawPointer = {
        let p = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)
        p.storeBytes(of: 0, as: UInt8.self)
        return p
    }()

    /// Binds raw bytes as a blob (a record key) without building an array first.
    func bindBlob(_ bytes: UnsafeRawBufferPointer, at index: Int32) throws {
        try check(sqlite3_bind_blob(handle, index, bytes.baseAddress ?? UnsafeRawPointer(Self.empty), Int32(bytes.count), Self.transient))
    }

    /// Binds raw UTF-8 bytes as text.
    func bindText(_ bytes: UnsafeRawBufferPointer, at index: Int32) throws {
        let base = UnsafeRawPointer(bytes.baseAddress ?? UnsafeRawPointer(Self.empty)).assumingMemoryBound(to: CChar.self)
        try check(sqlite3_bind_text(handle, index, base, Int32(bytes.count), Self.transient))
    }

    func check(_ rc: Int32) throws {
        guard rc == SQLITE_OK else { throw error(rc) }
    }

    func error(_ rc: Int32) -> LogStoreError {
        let message = db.sqliteConnection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) } ?? "result code \(rc)"
        return SQLiteErrors.map(code: rc & 0xFF, message: message, path: path)
    }

    /// Steps every row, calling `body` until it returns false; resets the statement afterwards.
    /// Throws the mapped SQLite error or `body`'s.
    func forEachRow(_ body: (Row) throws -> Bool) throws {
        defer { sqlite3_reset(handle) }
        while true {
            let rc = sqlite3_step(handle)
            if rc == SQLITE_DONE { return }
            guard rc == SQLITE_ROW else { throw error(rc) }
            if try !body(Row(handle: handle)) { return }
        }
    }

    /// Runs a statement that returns no rows (or ignores them); returns the rows it changed.
    @discardableResult
    func execute() throws -> Int {
        defer { sqlite3_reset(handle) }
        while true {
            let rc = sqlite3_step(handle)
            if rc == SQLITE_DONE { break }
            guard rc == SQLITE_ROW else { throw error(rc) }
        }
        return Int(sqlite3_changes(db.sqliteConnection))
    }

    /// The first column of the first row as an integer (0 when there is no row or it is NULL).
    func integer() throws -> Int64 {
        var v: Int64 = 0
        try forEachRow { row in
            v = row.integer(0)
            return false
        }
        return v
    }

    /// One result row: columns by index, valid until the next step.
    struct Row {
        let handle: OpaquePointer
        func isNull(_ i: Int32) -> Bool { sqlite3_column_type(handle, i) == SQLITE_NULL }
        func integer(_ i: Int32) -> Int64 { sqlite3_column_int64(handle, i) }
        /// A text or blob column's bytes, without a copy.
        func bytes(_ i: Int32) -> UnsafeRawBufferPointer {
            let base =
                sqlite3_column_type(handle, i) == SQLITE_BLOB
                ? sqlite3_column_blob(handle, i) : UnsafeRawPointer(sqlite3_column_text(handle, i))
            let n = Int(sqlite3_column_bytes(handle, i))
            return UnsafeRawBufferPointer(start: base, count: base == nil ? 0 : n)
        }
        /// A blob column as a record key.
        func key(_ i: Int32) -> RecordKey { RecordKey(bytes(i)) }
    }
}
