import Foundation
import GRDB
import LogStore
import LogStoreSQL

/// The SQLite store's schema (Docs/SQLBackends.md, "SQLite"):
///
///     PRAGMA application_id = 0x4C475351 ('LGSQ'); PRAGMA user_version = 1 (the format version)
///     logstore_meta(key TEXT PRIMARY KEY, value)            'format' 1, 'storeID' a UUID,
///                                                            'sequence' the last commit's number
///     logstore_types(name TEXT PRIMARY KEY,                 item type -> its table
///                    tableName TEXT UNIQUE COLLATE NOCASE)
///     "<table>"(key BLOB PRIMARY KEY, seq INTEGER, data TEXT) WITHOUT ROWID   one per item type
///
/// `key` is LogStore's record key (`ItemKey`): SQLite orders BLOBs by memcmp, which is LogStore's
/// id order, so `ORDER BY key` is the contract's order. `seq` is the number of the commit that
/// last wrote the row (merge conflicts: "changed since the child's base"). `data` is the item in
/// LogStore JSON (see `LogStoreJSON`), which SQLite's JSON functions read.
enum SQLiteSchema {
    static let applicationID: Int32 = 0x4C47_5351
    static let formatVersion = 1
    static let meta = "logstore_meta"
    static let types = "logstore_types"

    /// What a store's schema holds at open: the committed sequence and the item type tables.
    struct Opened {
        var sequence: UInt64
        var tables: [String: String]
        /// The store's identity (`storeID` in the meta table), carried by change tokens.
        var storeID: String?
    }

    /// Checks (or, in an empty database, creates) the schema, in the writer connection. Throws
    /// `.notAStore` for another application's database, `.unsupportedFormatVersion` for a newer
    /// format, `.corruption` when the store's own tables are missing or damaged.
    static func open(_ db: Database, path: String) throws -> Opened {
        let appID = try Int32.fetchOne(db, sql: "PRAGMA application_id") ?? 0
        let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        let tables = try String.fetchAll(
            db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")
        if appID == 0 && tables.isEmpty && version == 0 {
            let storeID = UUID().uuidString
            try db.inTransaction {
                try db.execute(sql: "PRAGMA application_id = \(applicationID)")
                try db.execute(sql: "PRAGMA user_version = \(formatVersion)")
                try db.execute(sql: "CREATE TABLE \(meta) (key TEXT PRIMARY KEY NOT NULL, value) WITHOUT ROWID")
                try db.execute(
                    sql:
                        "CREATE TABLE \(types) (name TEXT PRIMARY KEY NOT NULL, tableName TEXT NOT NULL UNIQUE COLLATE NOCASE) WITHOUT ROWID"
                )
                try db.execute(
                    sql: "INSERT INTO \(meta) (key, value) VALUES ('format', ?), ('storeID', ?), ('sequence', 0)",
                    arguments: [formatVersion, storeID])
                return .commit
            }
            return Opened(sequence: 0, tables: [:], storeID: storeID)
        }
        guard appID == applicationID else {
            let shown = tables.prefix(5).joined(separator: ", ") + (tables.count > 5 ? ", ..." : "")
            throw LogStoreError(
                .notAStore,
                "The file is a SQLite database of another application (application_id \(appID), tables: \(shown.isEmpty ? "none" : shown)), not a LogStore SQLite store. Give the path of a LogStore SQLite store, or a path that does not exist yet.",
                path: path)
        }
        guard version <= formatVersion else {
            throw LogStoreError(
                .unsupportedFormatVersion,
                "The SQLite store has format version \(version); this build reads up to \(formatVersion). Use a newer LogStore.", path: path
            )
        }
        guard tables.contains(meta), tables.contains(types),
            let sequence = try Int64.fetchOne(db, sql: "SELECT value FROM \(meta) WHERE key = 'sequence'"), sequence >= 0
        else {
            throw LogStoreError(
                .corruption, "The SQLite store's own tables (\(meta), \(types)) are missing or damaged. Restore the file from a backup.",
                path: path)
        }
        var registered: [String: String] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT name, tableName FROM \(types)") {
            guard let name = row[0] as String?, let table = row[1] as String? else { continue }
            registered[name] = table
        }
        let storeID = try String.fetchOne(db, sql: "SELECT value FROM \(meta) WHERE key = 'storeID'")
        return Opened(sequence: UInt64(sequence), tables: registered, storeID: storeID)
    }

    /// A table name for item type `type`, not taken by `taken` (lowercased names: SQLite compares
    /// names case-insensitively) nor in SQLite's or LogStore's own namespace: the type's own name
    /// when it is free (`items:` in front of one that starts with `sqlite_` or `logstore_`), else
    /// that name with `#2`, `#3`... appended.
    static func tableName(for type: String, taken: Set<String>) -> String {
        let lower = type.lowercased()
        let base = lower.hasPrefix("sqlite_") || lower.hasPrefix("logstore_") ? "items:" + type : type
        if !taken.contains(base.lowercased()) { return base }
        var n = 2
        while taken.contains("\(base)#\(n)".lowercased()) { n += 1 }
        return "\(base)#\(n)"
    }

    /// Creates the table of item type `type` (inside the caller's write transaction).
    static func createItemTable(_ db: Database, type: String, table: String, path: String) throws {
        // Through GRDB (not a raw statement), so that its schema cache learns of the table.
        do {
            try db.execute(
                sql:
                    "CREATE TABLE \(table.sqlIdentifier) (key BLOB PRIMARY KEY NOT NULL, seq INTEGER NOT NULL, data TEXT NOT NULL) WITHOUT ROWID"
            )
            try db.execute(sql: "INSERT INTO \(types) (name, tableName) VALUES (?, ?)", arguments: [type, table])
        } catch {
            throw SQLiteErrors.map(error, path: path)
        }
    }
}
