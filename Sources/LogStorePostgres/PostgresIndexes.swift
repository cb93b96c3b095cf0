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

extension PostgresIndexes {
    /// The coding paths of the first attribute of each index `Item` declares (none when a
    /// declaration is invalid: writes report that).
    static func leadingAttributes<Item: DataStoreItem>(_ type: Item.Type) -> Set<[String]> {
        var out: Set<[String]> = []
        for index in Item.indexes {
            if let first = (try? index.definition())?.attributes.first { out.insert(first) }
        }
        return out
    }

    /// The conjuncts of `condition` that a declared index can answer (an attribute in `leading`
    /// equal to a constant), as conditions on the index's own expression, ANDed: `NULLIF(data ->
    /// 'a', 'null'::jsonb) = (<the constant as LogStore JSON>::jsonb -> 'v')`. Every item the
    /// condition selects meets them: `jsonb` compares numbers by value exactly (LogStore JSON
    /// writes a double's shortest round-trip digits; zero is left out, see ``indexedConstant(_:)``),
    /// dates and UUIDs as the objects LogStore JSON writes for them, Booleans as themselves; a stored value of another kind matches no
    /// Swift comparison with the constant (its item does not decode as the type either), which
    /// is what LogStore's own indexes answer. Strings are left out: a stored string that is not
    /// NFC is an object canonically equal to a plain constant. Nil when no conjunct qualifies.
    static func narrowing(_ condition: QueryCondition?, leading: Set<[String]>) -> SQLFragment? {
        guard let condition, !leading.isEmpty else { return nil }
        let conjuncts: [QueryCondition]
        if case .and(let parts) = condition { conjuncts = parts } else { conjuncts = [condition] }
        var out: SQLFragment? = nil
        for c in conjuncts {
            guard case .comparison(let attribute, .equal, let value) = c, let path = attribute.codingPath, leading.contains(path),
                let expression = SQLDialect.postgres.indexExpression("data", path), let json = indexedConstant(value)
            else { continue }
            let part = SQLFragment("(\(expression) = (?::jsonb -> 'v'))", [.text(json)])
            out = out.map { $0 + part.wrapped(" AND ", "") } ?? part
        }
        return out
    }

    /// `{"v": value}` as LogStore JSON, for the kinds ``narrowing(_:leading:)`` compares; nil for
    /// the others.
    static func indexedConstant(_ value: AttributeValue) -> [UInt8]? {
        // Zero is left out: a stored -0.0 (equal to 0 in Swift) is a `$double` object, PostgreSQL's
        // numeric having no negative zero.
        switch value {
        case .bool, .uuid: break
        case .int(let i): guard i != 0 else { return nil }
        case .double(let d): guard d.isFinite, d != 0 else { return nil }
        case .date(let d):
            let t = d.timeIntervalSinceReferenceDate
            guard t.isFinite, t != 0 else { return nil }
        default: return nil
        }
        return try? LogStoreJSON.encode(AttributeValue.map(["v": value]).encoded(), dialect: .postgres)
    }
}
