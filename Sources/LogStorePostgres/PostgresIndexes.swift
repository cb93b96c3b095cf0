import Foundation
import LogStore
import LogStoreEngine
import LogStoreSQL
import PostgresNIO

/// An item type's declared `DataStoreIndex`es as PostgreSQL expression indexes: one per
/// declaration, on `NULLIF(data -> 'key' -> ..., 'null'::jsonb)` of each attribute (`CREATE
/// UNIQUE INDEX` for a unique one: JSON null becomes SQL NULL, and SQL NULLs are distinct, as
/// LogStore's nil columns never conflict). `jsonb` equality compares numbers by value, strings by
/// their bytes (plain LogStore JSON strings are NFC), `$` objects by their members.
///
/// Index names must fit PostgreSQL's 63 bytes and be unique in the schema:
/// `logstore:<hash of the table name>:<definition hash>:<the index name, cut>`. A changed
/// definition gets a new name and the old index is dropped. The indexes are created outside any
/// data transaction, before the first typed write of the type in a session that finds them
/// missing (the write then runs again).
enum PostgresIndexes {
    struct Wanted {
        var name: String
        var create: String
    }

    /// The prefix of every declared index of `table`.
    static func prefix(_ table: PostgresTable) -> String {
        "logstore:" + String(PostgresSchema.stableHash(table.name), radix: 16) + ":"
    }

    /// The indexes `Item` declares, as names and `CREATE INDEX` statements on `table`. Throws
    /// `.invalidArgument` for an invalid declaration.
    static func wanted<Item: DataStoreItem>(_ type: Item.Type, table: PostgresTable) throws -> [Wanted] {
        try Item.indexes.map { index in
            let definition = try index.definition()
            let columns = definition.attributes.compactMap { SQLDialect.postgres.indexExpression("data", $0) }
            let head = prefix(table) + String(definition.definitionHash, radix: 16) + ":"
            let name = head + PostgresSchema.prefix(definition.name, bytes: PostgresSchema.maxIdentifier - head.utf8.count)
            let create =
                "CREATE \(definition.unique ? "UNIQUE " : "")INDEX IF NOT EXISTS \(name.sqlIdentifier) ON \(table.sql) (\(columns.joined(separator: ", ")))"
            return Wanted(name: name, create: create)
        }
    }

    /// The declared indexes `table` has now (name -> nothing), as `s`'s transaction sees them.
    static func existing(_ s: PostgresStatements, table: PostgresTable) throws -> [String: Bool] {
        let rows = try s.run(
            SQLFragment(
                "SELECT indexname::text FROM pg_indexes WHERE schemaname = ? AND tablename = ?",
                [.text(Array(table.schema.utf8)), .text(Array(table.name.utf8))])
        ).rows
        var out: [String: Bool] = [:]
        let p = prefix(table)
        for row in rows {
            if let name = try? row.decode(String.self), name.hasPrefix(p) { out[name] = true }
        }
        return out
    }

    /// Drops `drops` and runs `creates`, each in its own transaction, outside any data
    /// transaction. Throws `.uniqueConstraintViolation` when stored items already break a unique
    /// index (the declaration is refused), and the mapped server errors.
    static func apply(_ s: PostgresStatements, creates: [String], drops: [String], schema: String, type: String) throws {
        // Each in a transaction of its own, waiting at most 10 s for the table's lock (a long
        // transaction elsewhere): the write then fails instead of hanging.
        func ddl(_ sql: String) throws {
            try s.run("BEGIN")
            do {
                try s.run("SET LOCAL lock_timeout = '10s'")
                try s.run(sql)
                try s.run("COMMIT")
            } catch {
                _ = try? s.run("ROLLBACK")
                throw error
            }
        }
        for name in drops { try ddl("DROP INDEX IF EXISTS \(PostgresSchema.qualified(schema, name))") }
        for create in creates {
            do {
                try ddl(create)
            } catch let e as LogStoreError where e.code == .uniqueConstraintViolation {
                throw LogStoreError(
                    .uniqueConstraintViolation,
                    "The unique index of \(type) cannot be created: stored items already have equal values in its columns. The write was rolled back; change or delete the duplicates first.",
                    underlying: e)
            }
        }
    }
}
