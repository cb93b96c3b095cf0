import Foundation
import GRDBSQLite
import LogStore
import LogStoreEngine
import LogStoreSQL

/// A read accessor as the source of LogStoreSQL's shared query runner (`SQLItemQuery`: the plans,
/// the SQL/Swift split of predicates, sorting): SQLite statements of the accessor's connection,
/// rows read without copies. Used on the accessor's thread.
struct SQLiteRows: SQLRowSource {
    let accessor: SQLiteReadAccessor

    var dialect: SQLDialect { .sqlite }

    func forEachRow(_ query: SQLFragment, _ body: (SQLiteStatement.Row) throws -> Bool) throws {
        try accessor.statement(query.sql, query.arguments).forEachRow(body)
    }

    func integers(_ query: SQLFragment) throws -> [Int64] {
        var out: [Int64] = []
        try accessor.statement(query.sql, query.arguments).forEachRow { row in
            out = (0..<row.columnCount).map { row.integer($0) }
            return false
        }
        return out
    }
}

extension SQLiteStatement.Row: SQLResultRow {
    var columnCount: Int32 { sqlite3_column_count(handle) }

    func withJSON<T>(_ column: Int32, _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T { try body(bytes(column)) }

    func verdict(_ column: Int32) -> Bool? { isNull(column) ? nil : integer(column) == 1 }
}

extension SQLiteReadAccessor {
    /// The shared query runner over `type`'s table in this accessor's snapshot.
    func query(_ type: String) throws -> SQLItemQuery<SQLiteRows> {
        SQLItemQuery(source: SQLiteRows(accessor: self), table: try table(for: type)?.sqlIdentifier, keyColumn: "key")
    }
}
