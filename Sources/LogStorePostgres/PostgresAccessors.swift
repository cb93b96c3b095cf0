import Foundation
import LogStore
import LogStoreEngine
import LogStoreSQL
import PostgresNIO

/// The read accessor of `PostgresDataStore.read`: one connection inside a read-only REPEATABLE
/// READ transaction (one snapshot). Valid only inside its block, on the block's thread (see
/// `DataStoreReadAccessor`).
class PostgresReadAccessor: DataStoreReadAccessor {
    let statements: PostgresStatements
    let session: PostgresSession
    var isValid = true

    init(statements: PostgresStatements, session: PostgresSession) {
        self.statements = statements
        self.session = session
    }

    func checkValid() throws {
        guard isValid else {
            throw LogStoreError(
                .accessorExpired,
                "A read accessor was used after its block returned. Use accessors only inside the block that received them; copy the items you need out of the block."
            )
        }
    }

    /// Runs a read: checks the accessor, then `body`. The write accessor adds its bookkeeping
    /// (pending writes flushed first, failures remembered).
    func reading<T>(_ body: () throws -> T) throws -> T {
        try checkValid()
        return try body()
    }

    /// The table of item type `type` in this transaction, or nil when it has none.
    func table(for type: String) throws -> PostgresTable? { try session.table(for: type, statements) }

    func query(_ table: PostgresTable?) -> SQLItemQuery<PostgresRows> {
        SQLItemQuery(source: PostgresRows(statements: statements, kind: table?.kind ?? .bytea), table: table?.sql, keyColumn: "id")
    }

    /// A query of `Item`'s table that narrows its rows to what `Item`'s declared indexes find.
    func query<Item: DataStoreItem>(of type: Item.Type) throws -> SQLItemQuery<PostgresRows> {
        var q = query(try table(for: Item.itemType))
        if !Item.indexes.isEmpty {
            let leads = session.indexLeads(Item.self)
            q.narrowing = { PostgresIndexes.narrowing($0, leading: leads) }
        }
        return q
    }

    /// Runs `request` and describes the server's plan: the declared index it used (by its
    /// name), id order, or a scan; the server's `EXPLAIN` lines are the plan's residual.
    func explain<Item: DataStoreItem>(_ request: DataStoreRequest<Item>) throws -> DataStoreQueryPlan {
        try reading {
            guard let t = try table(for: Item.itemType) else { return DataStoreQueryPlan(access: .scan) }
            var q = try query(of: Item.self)
            let plans = PostgresPlans()
            q.source.plans = plans
            let found = try q.items(request)
            let (access, index) = plans.access(t)
            return DataStoreQueryPlan(
                access: access, index: index, residual: plans.lines.joined(separator: "\n"), itemsDecoded: found.count,
                resultCount: found.count)
        }
    }

    func items<Item: DataStoreItem>(forRequest request: DataStoreRequest<Item>) throws -> [Item] {
        try reading { try query(of: Item.self).items(request) }
    }

    func firstItem<Item: DataStoreItem>(forRequest request: DataStoreRequest<Item>) throws -> Item? {
        var r = request
        r.limit = 1
        return try items(forRequest: r).first
    }

    func countItems<Item: DataStoreItem>(forRequest request: DataStoreRequest<Item>) throws -> Int {
        try reading { try query(of: Item.self).count(request) }
    }

    func item<Item: DataStoreItem>(ofType type: Item.Type, id: Item.ID) throws -> Item? {
        let key = try ItemKey.make(id)
        guard let bytes = try record(ofType: Item.itemType, key: key) else { return nil }
        return try QueryExecutor.decode(Item.self, bytes[...])
    }

    /// Every item type with a table in this transaction.
    func allTables() throws -> [String: PostgresTable] { try session.allTables(statements) }

    func itemTypeNames() throws -> [String] {
        try reading {
            var names: [String] = []
            for (type, t) in try allTables()
            where try !StoreHistory.isReserved(type)
                && (statements.integers(SQLFragment("SELECT count(*) FROM (SELECT 1 FROM \(t.sql) LIMIT 1) AS logstore_any")).first ?? 0)
                    > 0
            {
                names.append(type)
            }
            return names.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        }
    }

    /// The records of `t` after `key` in key order, `limit` at most.
    func page(_ t: PostgresTable, after key: RecordKey?, limit: Int) throws -> [(RecordKey, [UInt8])] {
        var binds = PostgresBindings()
        var sql = "SELECT id, data FROM \(t.sql)"
        if let key {
            try t.kind.bind(key, into: &binds)
            sql += " WHERE id > $1"
        }
        sql += " ORDER BY id LIMIT \(limit)"
        return try statements.run(PostgresQuery(unsafeSQL: sql, binds: binds)).rows.map { row in
            let r = row.makeRandomAccess()
            return (try t.kind.key(from: r[0]), try PostgresJSONB.withText(r[1]) { try LogStoreJSON.decode($0) })
        }
    }

    static let pageSize = 1000

    func forEachRecord(ofType itemType: String, after key: RecordKey?, _ body: (RecordKey, ArraySlice<UInt8>) throws -> Bool) throws {
        guard let t = try reading({ try table(for: itemType) }) else { return }
        var after = key
        while true {
            let rows = try reading { try page(t, after: after, limit: Self.pageSize) }
            for (k, v) in rows {
                try checkValid()
                if try !body(k, v[...]) { return }
            }
            guard rows.count == Self.pageSize, let last = rows.last else { return }
            after = last.0
        }
    }

    func recordCount(ofType itemType: String) throws -> Int {
        try reading {
            guard let t = try table(for: itemType) else { return 0 }
            return Int(try statements.integers(SQLFragment("SELECT count(*) FROM \(t.sql)")).first ?? 0)
        }
    }

    func record(ofType itemType: String, key: RecordKey) throws -> [UInt8]? {
        try reading {
            guard let t = try table(for: itemType) else { return nil }
            var binds = PostgresBindings()
            try t.kind.bind(key, into: &binds)
            let rows = try statements.run(PostgresQuery(unsafeSQL: t.selectData, binds: binds)).rows
            guard let row = rows.first else { return nil }
            return try PostgresJSONB.withText(row.makeRandomAccess()[0]) { try LogStoreJSON.decode($0) }
        }
    }
}
