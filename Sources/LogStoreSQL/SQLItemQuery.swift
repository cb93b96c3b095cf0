package import LogStore
package import LogStoreEngine

/// One row of a query's result, columns by index, valid only during the callback that hands it
/// out (a database's row buffers are reused).
package protocol SQLResultRow {
    /// The column's record key (the item table's key column, in whatever type the table gives it).
    func key(_ column: Int32) throws -> RecordKey
    /// Calls `body` with the column's LogStore JSON text, without a copy where the database allows.
    func withJSON<T>(_ column: Int32, _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T
    /// The column's three-valued verdict: true, false, or nil for NULL (undecided).
    func verdict(_ column: Int32) -> Bool?
}

/// Where ``SQLItemQuery`` runs its statements: a connection inside a transaction, in one dialect.
package protocol SQLRowSource {
    associatedtype Row: SQLResultRow
    /// The dialect of the SQL this source runs.
    var dialect: SQLDialect { get }
    /// Runs `query` and calls `body` per row until it returns false. Throws the database's
    /// failure as a `LogStoreError`, or `body`'s error.
    func forEachRow(_ query: SQLFragment, _ body: (Row) throws -> Bool) throws
    /// The integers of `query`'s first row (one per column; 0 for NULL; none without a row).
    func integers(_ query: SQLFragment) throws -> [Int64]
}

/// Runs a `DataStoreRequest` in SQL over an item table (key column, LogStore JSON in `data`): the
/// predicate and attribute filter as far as SQL gives Swift's answer (``SQLCondition``), the rest
/// in Swift on the candidate rows (LogStore's `QueryExecutor.Matcher`), and sorts through
/// LogStore's `SortedResults`, so that answers and their order are LogDataStore's. Written once
/// for every SQL backend.
///
/// Plans:
/// 1. no sort, and a condition SQL decides exactly (or none): `ORDER BY key LIMIT OFFSET` in SQL;
/// 2. no sort, a condition with parts left to Swift: candidates in key order, checked, until
///    `offset + limit` matched;
/// 3. a sort: candidates in any order, checked, kept in the request's order (a bounded heap
///    with a limit).
/// Counts: `COUNT(*)` when SQL decides; otherwise SQL counts the sure rows and Swift checks the
/// undecided ones. Used on the source's thread.
package struct SQLItemQuery<Source: SQLRowSource> {
    package var source: Source
    /// The item table's name as SQL (quoted, qualified); nil: the type has no items.
    let table: String?
    /// The table's key column, whose order is LogStore's id order.
    let keyColumn: String
    /// A condition that every item the request's condition selects meets, given the condition
    /// (nil: none), ANDed to the query's WHERE clause so that the database can use an index on
    /// its expressions; it never changes an answer. Nil: nothing to add.
    package var narrowing: ((QueryCondition?) -> SQLFragment?)? = nil

    package init(source: Source, table: String?, keyColumn: String) {
        self.source = source
        self.table = table
        self.keyColumn = keyColumn
    }

    /// ` WHERE <verdict test> AND <narrowing>`, or as much of it as there is (the verdict
    /// `sql` tested with `test`, nil: true rows only).
    func whereClause(_ sql: SQLCondition?, _ condition: QueryCondition?, test: String?) -> SQLFragment {
        var parts: [SQLFragment] = []
        if let sql { parts.append(test.map { sql.verdict.wrapped("", " \($0)") } ?? sql.verdict) }
        if let narrowed = narrowing?(condition) { parts.append(narrowed) }
        guard var f = parts.first else { return SQLFragment("") }
        f = f.wrapped(" WHERE ", "")
        for p in parts.dropFirst() { f = f + p.wrapped(" AND ", "") }
        return f
    }

    var dialect: SQLDialect { source.dialect }

    func decode<Item: DataStoreItem>(_ type: Item.Type, _ row: Source.Row, _ column: Int32) throws -> Item {
        try QueryExecutor.decode(Item.self, try row.withJSON(column) { try LogStoreJSON.decode($0) }[...])
    }

    func condition<Item: DataStoreItem>(_ request: DataStoreRequest<Item>, _ filter: (String, AttributeValue)?) -> (
        QueryCondition?, SQLCondition?
    ) {
        let condition = request.predicate.map { PredicateAnalysis.condition(of: $0) }
        return (condition, SQLCondition.translate(condition, filter: filter.map { ($0.0, $0.1) }, column: "data", dialect: dialect))
    }

    /// The items `request` selects, in its order. Throws `.invalidArgument` for a bad request,
    /// the source's failures, and decoding errors.
    package func items<Item: DataStoreItem>(_ request: DataStoreRequest<Item>) throws -> [Item] {
        let (filter, needed) = try QueryExecutor.validate(request)
        guard needed != 0, let table else { return [] }
        let (condition, sql) = condition(request, filter)
        var out: [Item] = []

        if !request.isSorted, sql?.isExact ?? true {
            // Plan 1.
            var f = SQLFragment("SELECT data FROM \(table)") + whereClause(sql, condition, test: nil)
            f = f + SQLFragment(" ORDER BY \(keyColumn)") + dialect.limit(needed.map { $0 - request.offset }, offset: request.offset)
            try source.forEachRow(f) { row in
                out.append(try decode(Item.self, row, 0))
                return true
            }
            return out
        }

        let matcher = QueryExecutor.Matcher(filter: filter, predicate: request.predicate, residual: condition ?? .constant(true))
        var f = SQLFragment("SELECT \(keyColumn), data")
        if let sql {
            f = f + sql.verdict.wrapped(", ", "") + SQLFragment(" FROM \(table)") + whereClause(sql, condition, test: dialect.isNotFalse)
        } else {
            f = f + SQLFragment(", \(dialect.trueLiteral) FROM \(table)") + whereClause(nil, condition, test: nil)
        }
        if !request.isSorted { f.sql += " ORDER BY \(keyColumn)" }

        if !request.isSorted {
            // Plan 2.
            var matched = 0
            try source.forEachRow(f) { row in
                let item: Item?
                if row.verdict(2) == true {
                    item = matched >= request.offset ? try decode(Item.self, row, 1) : nil
                } else {
                    let bytes = try row.withJSON(1) { try LogStoreJSON.decode($0) }
                    guard let m = try matcher.match(bytes[...]) else { return true }
                    item = matched >= request.offset ? try m ?? QueryExecutor.decode(Item.self, bytes[...]) : nil
                }
                matched += 1
                if let item { out.append(item) }
                return needed.map { matched < $0 } ?? true
            }
            return out
        }

        // Plan 3: items are decoded only if the sort needs them, or once they are returned.
        var results = SortedResults(request, needed: needed)
        var stats = QueryExecutor.Stats()
        try source.forEachRow(f) { row in
            let bytes = try row.withJSON(1) { try LogStoreJSON.decode($0) }[...]
            var item: Item? = nil
            if row.verdict(2) != true {
                guard let m = try matcher.match(bytes) else { return true }
                item = m
            }
            try results.add(key: try row.key(0), bytes: bytes, item: item, stats: &stats)
            return true
        }
        return try results.items(stats: &stats)
    }

    /// How many items `request` selects (its offset and limit apply). Throws as ``items(_:)``.
    package func count<Item: DataStoreItem>(_ request: DataStoreRequest<Item>) throws -> Int {
        let (filter, _) = try QueryExecutor.validate(request)
        guard let table else { return 0 }
        let (condition, translated) = condition(request, filter)
        guard let sql = translated else {
            return Int(
                try source.integers(SQLFragment("SELECT COUNT(*) FROM \(table)") + whereClause(nil, condition, test: nil)).first ?? 0)
        }
        if sql.isExact {
            return Int(
                try source.integers(SQLFragment("SELECT COUNT(*) FROM \(table)") + whereClause(sql, condition, test: nil)).first ?? 0)
        }
        // The sure rows counted in SQL, the undecided ones checked in Swift (usually none).
        let counts = try source.integers(
            dialect.countByVerdict(sql.verdict, from: SQLFragment(table) + whereClause(nil, condition, test: nil)))
        var sure = Int(counts.first ?? 0)
        guard counts.count > 1, counts[1] > 0 else { return sure }
        let matcher = QueryExecutor.Matcher(filter: filter, predicate: request.predicate, residual: condition ?? .constant(true))
        try source.forEachRow(SQLFragment("SELECT data FROM \(table)") + whereClause(sql, condition, test: "IS NULL")) { row in
            if try matcher.match(try row.withJSON(0) { try LogStoreJSON.decode($0) }[...]) != nil { sure += 1 }
            return true
        }
        return sure
    }
}
