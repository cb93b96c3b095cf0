import Foundation
import LogStore
import LogStoreEngine
import LogStoreSQL
import PostgresNIO

/// The PostgreSQL store's schema (Docs/SQLBackends.md, "PostgreSQL"), all in one
/// PostgreSQL schema (`Configuration.schema`, default `logstore`) that the store owns:
///
///     logstore_meta(key text PRIMARY KEY, value text)        'format' '1', 'storeID' a UUID
///     logstore_sequence(id int PRIMARY KEY CHECK (id = 1),   the number of the last commit:
///                       sequence bigint)                     every changing write bumps it
///     logstore_types(name text PRIMARY KEY,                  item type -> its table and the
///                    table_name text UNIQUE, id_kind text)   SQL type of its id column
///     logstore_commits(sequence bigint PRIMARY KEY,          what each commit changed, for the
///                      committed_at timestamptz,             observers of every server (kept
///                      changes bytea)                        for Configuration.commitLogRetention)
///     "<table>"(id <kind> PRIMARY KEY,                       one per item type; kind: see
///               version bigint NOT NULL,                     PostgresIDKind; version: the commit
///               data jsonb NOT NULL)                         that last wrote the row
///
/// `data` is the item in LogStore JSON's PostgreSQL dialect (`LogStoreJSON`), which `jsonb` keeps
/// exactly. DDL runs in transactions of its own, never inside a data transaction (CockroachDB and
/// YugabyteDB restrict mixing them): at `setup()`, and before the first write of a new item type
/// or of new index declarations.
enum PostgresSchema {
    static let formatVersion = 1
    static let meta = "logstore_meta"
    static let sequence = "logstore_sequence"
    static let types = "logstore_types"
    static let commits = "logstore_commits"
    /// PostgreSQL's identifier limit (NAMEDATALEN - 1): longer names are cut silently.
    static let maxIdentifier = 63

    /// What a store's schema holds at open.
    struct Opened {
        var storeID: String
        var sequence: UInt64
        var tables: [String: PostgresTable]
    }

    /// `"schema"."name"`.
    static func qualified(_ schema: String, _ name: String) -> String { schema.sqlIdentifier + "." + name.sqlIdentifier }

    /// Checks (or, in an empty or missing schema, creates) the store's own tables. Idempotent and
    /// safe when several servers set up the same store at once. Throws `.notAStore` for a schema
    /// holding another application's tables, `.unsupportedFormatVersion` for a newer format,
    /// `.corruption` when the store's own tables are damaged, and the mapped server errors.
    static func open(_ s: PostgresStatements, schema: String, create: Bool = true) throws -> Opened {
        for attempt in 1...3 {
            do {
                return try openOnce(s, schema: schema, create: create)
            } catch let e as LogStoreError where attempt < 3 && isCreationRace(e) {
                continue
            }
        }
        return try openOnce(s, schema: schema, create: create)
    }

    /// Two servers creating the same table or schema at once: one of them fails with a unique
    /// violation of the catalog, or "already exists"; running the (idempotent) DDL again passes.
    static func isCreationRace(_ e: LogStoreError) -> Bool {
        let state = e.underlyingError.flatMap(PostgresErrors.sqlState)
        return state == "23505" || state == "42P07" || state == "42P06" || state == "40001"
    }

    static func openOnce(_ s: PostgresStatements, schema: String, create: Bool) throws -> Opened {
        let existing = try s.run(
            SQLFragment("SELECT table_name::text FROM information_schema.tables WHERE table_schema = ?", [.text(Array(schema.utf8))])
        )
        .rows.compactMap { try? $0.decode(String.self) }
        if !existing.contains(meta) {
            guard existing.isEmpty else {
                let shown = existing.sorted().prefix(5).joined(separator: ", ") + (existing.count > 5 ? ", ..." : "")
                throw LogStoreError(
                    .notAStore,
                    "The PostgreSQL schema \(schema) holds tables of another application (\(shown)), not a LogStore store. Give the store a schema of its own (Configuration.schema, or ?schema= in the URL).",
                    path: schema)
            }
            guard create else {
                throw LogStoreError(
                    .notAStore, "There is no LogStore store in the PostgreSQL schema \(schema). Check the URL's database and ?schema=.",
                    path: schema)
            }
            try self.create(s, schema: schema)
        }
        let q = { (name: String) in qualified(schema, name) }
        var format: Int? = nil
        var storeID: String? = nil
        for row in try s.run("SELECT key, value FROM \(q(meta))").rows {
            let (key, value) = try row.decode((String, String).self)
            if key == "format" { format = Int(value) }
            if key == "storeID" { storeID = value }
        }
        guard let format, let storeID else {
            throw LogStoreError(
                .corruption, "The store's own table \(schema).\(meta) is missing its format or storeID. Restore the schema from a backup.",
                path: schema)
        }
        guard format <= formatVersion else {
            throw LogStoreError(
                .unsupportedFormatVersion,
                "The PostgreSQL store has format version \(format); this build reads up to \(formatVersion). Use a newer LogStore.",
                path: schema)
        }
        guard let seq = try s.integers(SQLFragment("SELECT sequence FROM \(q(sequence)) WHERE id = 1")).first, seq >= 0 else {
            throw LogStoreError(
                .corruption, "The store's own table \(schema).\(sequence) has no row. Restore the schema from a backup.", path: schema)
        }
        return Opened(storeID: storeID, sequence: UInt64(seq), tables: try registeredTables(s, schema: schema))
    }

    static func create(_ s: PostgresStatements, schema: String) throws {
        let q = { (name: String) in qualified(schema, name) }
        try s.run("CREATE SCHEMA IF NOT EXISTS \(schema.sqlIdentifier)")
        try s.run("BEGIN")
        do {
            try s.run("CREATE TABLE IF NOT EXISTS \(q(meta)) (key text PRIMARY KEY, value text NOT NULL)")
            try s.run("CREATE TABLE IF NOT EXISTS \(q(sequence)) (id int PRIMARY KEY CHECK (id = 1), sequence bigint NOT NULL)")
            try s.run(
                "CREATE TABLE IF NOT EXISTS \(q(types)) (name text PRIMARY KEY, table_name text NOT NULL UNIQUE, id_kind text NOT NULL)")
            try s.run(
                "CREATE TABLE IF NOT EXISTS \(q(commits)) (sequence bigint PRIMARY KEY, committed_at timestamptz NOT NULL DEFAULT now(), changes bytea NOT NULL)"
            )
            try s.run(
                SQLFragment(
                    "INSERT INTO \(q(meta)) (key, value) VALUES ('format', ?), ('storeID', ?) ON CONFLICT (key) DO NOTHING",
                    [.text(Array(String(formatVersion).utf8)), .text(Array(UUID().uuidString.utf8))]))
            try s.run("INSERT INTO \(q(sequence)) (id, sequence) VALUES (1, 0) ON CONFLICT (id) DO NOTHING")
            try s.run("COMMIT")
        } catch {
            _ = try? s.run("ROLLBACK")
            throw error
        }
    }

    /// Item type -> table, as the registry says in the connection's current snapshot.
    static func registeredTables(_ s: PostgresStatements, schema: String) throws -> [String: PostgresTable] {
        var out: [String: PostgresTable] = [:]
        for row in try s.run("SELECT name, table_name, id_kind FROM \(qualified(schema, types))").rows {
            let (name, table, kind) = try row.decode((String, String, String).self)
            guard let k = PostgresIDKind(rawValue: kind) else {
                throw LogStoreError(
                    .corruption,
                    "The item type \(name) has an unknown id kind '\(kind)' in \(schema).\(types). Restore the schema from a backup.",
                    path: schema)
            }
            out[name] = PostgresTable(schema: schema, name: table, kind: k)
        }
        return out
    }

    /// The table name for item type `type` (its `attempt`-th choice): the type's own name when it
    /// fits an identifier (`items:` in front of one that starts with `logstore_`), else its first
    /// bytes and a hash of the whole; `#2`, `#3`... appended for later attempts (another type took
    /// the name). Deterministic, so that servers creating the same type agree.
    static func tableName(for type: String, attempt: Int) -> String {
        var base = type.lowercased().hasPrefix("logstore_") ? "items:" + type : type
        let suffix = attempt > 1 ? "#\(attempt)" : ""
        if base.utf8.count + suffix.utf8.count > maxIdentifier {
            let hash = "~" + String(stableHash(type), radix: 16)
            base = prefix(base, bytes: maxIdentifier - hash.utf8.count - suffix.utf8.count) + hash
        }
        return base + suffix
    }

    /// The longest prefix of `s` of at most `bytes` UTF-8 bytes that ends on a character boundary.
    static func prefix(_ s: String, bytes: Int) -> String {
        var out = ""
        var n = 0
        for c in s {
            n += c.utf8.count
            if n > bytes { break }
            out.append(c)
        }
        return out
    }

    /// FNV-1a of `s`'s UTF-8: stable across runs and machines (Swift's `Hasher` is seeded).
    static func stableHash(_ s: String) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in s.utf8 {
            h ^= UInt64(b)
            h = h &* 0x100_0000_01b3
        }
        return h
    }

    /// Creates the table of item type `type` if it has none (in its own transaction, on a
    /// connection outside any data transaction) and registers it; returns the table the registry
    /// holds for the type then (another server's, if it was first). Idempotent; safe against
    /// servers doing the same at once.
    static func ensureTable(_ s: PostgresStatements, schema: String, type: String, kind: PostgresIDKind) throws -> PostgresTable {
        for attempt in 1...20 {
            if let t = try registeredTable(s, schema: schema, type: type) {
                try createItemTable(s, t)
                return t
            }
            let table = PostgresTable(schema: schema, name: tableName(for: type, attempt: attempt), kind: kind)
            do {
                try createItemTable(s, table)
                try s.run(
                    SQLFragment(
                        "INSERT INTO \(qualified(schema, types)) (name, table_name, id_kind) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING",
                        [.text(Array(type.utf8)), .text(Array(table.name.utf8)), .text(Array(kind.rawValue.utf8))]))
            } catch let e as LogStoreError where isCreationRace(e) {
                // Another server created the table or registered a type under this name: look again.
                continue
            }
            if let t = try registeredTable(s, schema: schema, type: type) { return t }
        }
        throw LogStoreError(.io, "Could not register a table for item type \(type) in \(schema).\(types) (20 names taken).", path: schema)
    }

    static func registeredTable(_ s: PostgresStatements, schema: String, type: String) throws -> PostgresTable? {
        let rows = try s.run(
            SQLFragment("SELECT table_name, id_kind FROM \(qualified(schema, types)) WHERE name = ?", [.text(Array(type.utf8))])
        ).rows
        guard let row = rows.first else { return nil }
        let (table, kind) = try row.decode((String, String).self)
        guard let k = PostgresIDKind(rawValue: kind) else {
            throw LogStoreError(.corruption, "The item type \(type) has an unknown id kind '\(kind)' in \(schema).\(types).", path: schema)
        }
        return PostgresTable(schema: schema, name: table, kind: k)
    }

    static func createItemTable(_ s: PostgresStatements, _ t: PostgresTable) throws {
        try s.run("CREATE TABLE IF NOT EXISTS \(t.sql) (id \(t.kind.columnType) PRIMARY KEY, version bigint NOT NULL, data jsonb NOT NULL)")
    }
}

/// An item type's table: where it is and the type of its id column, and the SQL of its hot
/// statements (made once: quoting identifiers costs more than running the statement's client side).
struct PostgresTable: Sendable, Hashable {
    let schema: String
    let name: String
    let kind: PostgresIDKind
    /// The table as SQL: `"schema"."name"`.
    let sql: String
    /// `SELECT data FROM <table> WHERE id = $1`: a point read.
    let selectData: String

    init(schema: String, name: String, kind: PostgresIDKind) {
        self.schema = schema
        self.name = name
        self.kind = kind
        sql = PostgresSchema.qualified(schema, name)
        selectData = "SELECT data FROM \(sql) WHERE id = $1"
    }

    static func == (a: PostgresTable, b: PostgresTable) -> Bool { a.schema == b.schema && a.name == b.name && a.kind == b.kind }
    func hash(into h: inout Hasher) {
        h.combine(schema)
        h.combine(name)
    }
}
