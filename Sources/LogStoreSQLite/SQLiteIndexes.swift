import Foundation
import GRDB
import LogStore
import LogStoreEngine
import LogStoreSQL

/// An item type's declared `DataStoreIndex`es as SQL indexes on its table: one expression index
/// per declaration, on `json_extract(data, path)` of each attribute (`CREATE UNIQUE INDEX` for a
/// unique one: SQL's NULLs are distinct, as LogStore's nil columns never conflict). The index name
/// carries the definition's hash, so a changed definition gets a new index and the old one is
/// dropped. Declared on the first typed write of the type in a session, inside that write's
/// transaction, so the write is checked against unique indexes too.
///
/// A unique index compares stored JSON values: numbers by value, strings as their NFC bytes (plain
/// JSON strings are NFC), dates, UUIDs and other `$` objects by their canonical JSON text. Two
/// canonically equivalent strings that are not NFC (both `$string` objects in different forms)
/// are the one case LogStore's own index calls equal and SQLite does not.
enum SQLiteIndexes {
    /// The SQL of `definition`'s index on `table`: its name and its `CREATE` statement.
    static func sql(_ definition: IndexDefinition, table: String) -> (name: String, create: String)? {
        var columns: [String] = []
        for path in definition.attributes {
            guard let column = Subject.columnExpression("data", path) else { return nil }
            columns.append(column)
        }
        let hash = String(definition.definitionHash, radix: 16)
        let name = "\(table).index.\(definition.name).\(hash)"
        return (
            name,
            "CREATE \(definition.unique ? "UNIQUE " : "")INDEX IF NOT EXISTS \(name.sqlIdentifier) ON \(table.sqlIdentifier) (\(columns.joined(separator: ", ")))"
        )
    }

    /// Creates `Item`'s declared indexes on `table` and drops indexes of earlier definitions.
    /// Throws `.invalidArgument` for a key path that cannot be placed, `.uniqueConstraintViolation`
    /// when stored items already break a unique index, and the mapped SQLite errors.
    static func declare<Item: DataStoreItem>(_ type: Item.Type, table: String, db: Database, path: String) throws {
        var wanted: [String: String] = [:]
        for index in Item.indexes {
            let definition = try index.definition()
            guard let (name, create) = sql(definition, table: table) else {
                throw LogStoreError(
                    .invalidArgument,
                    "The index \(definition.name) of \(Item.itemType) names an attribute with a '\"' in its key, which SQLite's JSON paths cannot name. Rename the coding key."
                )
            }
            wanted[name] = create
        }
        do {
            let prefix = "\(table).index."
            let existing = try String.fetchAll(
                db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?", arguments: [table])
            for name in existing where name.hasPrefix(prefix) && wanted[name] == nil {
                try db.execute(sql: "DROP INDEX \(name.sqlIdentifier)")
            }
            for (name, create) in wanted.sorted(by: { $0.key < $1.key }) where !existing.contains(name) {
                try db.execute(sql: create)
            }
        } catch let e as DatabaseError where e.resultCode == .SQLITE_CONSTRAINT {
            throw uniqueViolation(Item.itemType, e)
        } catch {
            throw SQLiteErrors.map(error, path: path)
        }
    }

    /// The error of a write that a unique index refused.
    static func uniqueViolation(_ type: String, _ cause: (any Error)?) -> LogStoreError {
        LogStoreError(
            .uniqueConstraintViolation,
            "A write would give two \(type) items equal values in every column of a unique index. The write block was rolled back; change or delete the other item first.",
            underlying: cause)
    }
}
