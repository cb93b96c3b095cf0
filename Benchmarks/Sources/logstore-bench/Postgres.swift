import Foundation
import LogStore
import LogStorePostgres
import PostgresNIO

// Issue 17's benchmarks: PostgresDataStore against raw postgres-nio statements on the same server
// (point reads, durable single-item writes, bulk insert: the adapter's overhead, target ≤ 1.3×), and
// the data migrator's throughput into PostgreSQL. They need a server: LOGSTORE_POSTGRES_URL (run
// under tools/with-postgres --durable, a throwaway cluster with fsync on); without it they are
// skipped, saying so.

/// The server the PostgreSQL workloads use, or nil.
let postgresURL = ProcessInfo.processInfo.environment["LOGSTORE_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }

/// Raw postgres-nio: one connection, hand-written statements on a table with one column per
/// property (`tags` as `text[]`), results decoded by postgres-nio's row decoding; each call waits
/// for its future, as a synchronous caller must. What an app writing SQL by hand would send: a
/// bare `INSERT ... ON CONFLICT` per item (autocommit), one `INSERT ... SELECT unnest(...)` per
/// batch, a `SELECT` by primary key.
final class RawPostgresStore: BenchStore, @unchecked Sendable {
    // @unchecked: used from the benchmark's one thread; the connection serializes its statements.
    let key = "postgres-raw"
    let name = "raw postgres-nio"
    let config = "one connection, statements per call, columns"
    let path: String
    let connection: PostgresConnection
    let logger = Logger(label: "bench")
    let table: String

    init(url: String, schema: String) throws {
        let c = try PostgresDataStore.Configuration(url: url)
        path = schema
        table = "\"\(schema)\".bench_item"
        connection = try PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.next(), configuration: c.connection, id: 1, logger: logger
        ).wait()
        try run(PostgresQuery(unsafeSQL: "CREATE SCHEMA IF NOT EXISTS \"\(schema)\""))
        try run(
            PostgresQuery(
                unsafeSQL:
                    "CREATE TABLE IF NOT EXISTS \(table) (id bigint PRIMARY KEY, name text NOT NULL, rating int NOT NULL, date timestamptz NOT NULL, tags text[] NOT NULL, text text NOT NULL)"
            ))
    }

    @discardableResult
    func run(_ q: PostgresQuery) throws -> PostgresQueryResult {
        do {
            return try connection.query(q, logger: logger).wait()
        } catch {
            throw BenchError("raw postgres-nio: \(String(reflecting: error))")
        }
    }

    static let upsert =
        " ON CONFLICT (id) DO UPDATE SET name = excluded.name, rating = excluded.rating, date = excluded.date, tags = excluded.tags, text = excluded.text"

    func insert(_ item: BenchItem) throws {
        var b = PostgresBindings()
        b.append(item.id)
        b.append(item.name)
        b.append(item.rating)
        b.append(item.date)
        b.append(item.tags)
        b.append(item.text)
        try run(
            PostgresQuery(
                unsafeSQL: "INSERT INTO \(table) (id, name, rating, date, tags, text) VALUES ($1, $2, $3, $4, $5, $6)" + Self.upsert,
                binds: b))
    }

    func insertBatch(_ items: ArraySlice<BenchItem>) throws {
        var b = PostgresBindings()
        b.append(items.map(\.id))
        b.append(items.map(\.name))
        b.append(items.map(\.rating))
        b.append(items.map(\.date))
        // A text[] per row does not unnest (arrays of arrays flatten): the tags travel as one
        // text per row, split again in SQL.
        b.append(items.map { $0.tags.joined(separator: "\u{1F}") })
        b.append(items.map(\.text))
        try run(
            PostgresQuery(
                unsafeSQL:
                    "INSERT INTO \(table) (id, name, rating, date, tags, text) SELECT r.id, r.name, r.rating, r.date, string_to_array(r.tags, chr(31)), r.text FROM unnest($1::bigint[], $2::text[], $3::int[], $4::timestamptz[], $5::text[], $6::text[]) AS r(id, name, rating, date, tags, text)"
                    + Self.upsert,
                binds: b))
    }

    func get(_ id: Int) throws -> BenchItem? {
        var b = PostgresBindings()
        b.append(id)
        guard
            let row = try run(PostgresQuery(unsafeSQL: "SELECT id, name, rating, date, tags, text FROM \(table) WHERE id = $1", binds: b))
                .rows.first
        else { return nil }
        let (i, name, rating, date, tags, text) = try row.decode((Int, String, Int, Date, [String], String).self)
        return BenchItem(id: i, name: name, rating: rating, date: date, tags: tags, text: text)
    }

    func scan(minRating: Int, limit: Int?) throws -> [BenchItem] { throw BenchError("not measured") }
    func page(offset: Int, limit: Int) throws -> [BenchItem] { throw BenchError("not measured") }
    func count() throws -> Int { Int(try run(PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table)")).rows.first?.decode(Int.self) ?? 0) }
    func count(minRating: Int) throws -> Int { throw BenchError("not measured") }

    func close() throws {
        _ = try? run(PostgresQuery(unsafeSQL: "DROP SCHEMA IF EXISTS \"\(path)\" CASCADE"))
        let closing: EventLoopFuture<Void> = connection.close()
        try closing.wait()
    }
}

/// Raw postgres-nio on PostgresDataStore's row shape: the same hand-written statements as
/// ``RawPostgresStore`` on a table `(id bigint PRIMARY KEY, data jsonb)`, the item encoded by
/// Foundation's `JSONEncoder` and decoded by `JSONDecoder`. What an app storing its Codable items
/// as documents by hand would send: it separates what the jsonb mapping costs (the issue's
/// mapping) from what the adapter adds on top (snapshots, the commit log, the canonical form).
final class RawPostgresJSONStore: BenchStore, @unchecked Sendable {
    // @unchecked: used from the benchmark's one thread; the connection serializes its statements.
    let key = "postgres-raw-jsonb"
    let name = "raw postgres-nio, jsonb"
    let config = "one connection, statements per call, (id, data jsonb)"
    let path: String
    let raw: RawPostgresStore
    let table: String
    let encoder = JSONEncoder()
    let decoder = JSONDecoder()

    init(url: String, schema: String) throws {
        raw = try RawPostgresStore(url: url, schema: schema)
        path = schema
        table = "\"\(schema)\".bench_document"
        try raw.run(PostgresQuery(unsafeSQL: "CREATE TABLE IF NOT EXISTS \(table) (id bigint PRIMARY KEY, data jsonb NOT NULL)"))
    }

    func json(_ item: BenchItem) throws -> String { String(decoding: try encoder.encode(item), as: UTF8.self) }

    func insert(_ item: BenchItem) throws {
        var b = PostgresBindings()
        b.append(item.id)
        b.append(try json(item))
        try raw.run(
            PostgresQuery(
                unsafeSQL: "INSERT INTO \(table) (id, data) VALUES ($1, $2::jsonb) ON CONFLICT (id) DO UPDATE SET data = excluded.data",
                binds: b))
    }

    func insertBatch(_ items: ArraySlice<BenchItem>) throws {
        var b = PostgresBindings()
        b.append(items.map(\.id))
        b.append(try items.map { try json($0) })
        try raw.run(
            PostgresQuery(
                unsafeSQL:
                    "INSERT INTO \(table) (id, data) SELECT r.id, r.data::jsonb FROM unnest($1::bigint[], $2::text[]) AS r(id, data) ON CONFLICT (id) DO UPDATE SET data = excluded.data",
                binds: b))
    }

    func get(_ id: Int) throws -> BenchItem? {
        var b = PostgresBindings()
        b.append(id)
        guard let row = try raw.run(PostgresQuery(unsafeSQL: "SELECT data::text FROM \(table) WHERE id = $1", binds: b)).rows.first else {
            return nil
        }
        return try decoder.decode(BenchItem.self, from: Data(try row.decode(String.self).utf8))
    }

    func scan(minRating: Int, limit: Int?) throws -> [BenchItem] { throw BenchError("not measured") }
    func page(offset: Int, limit: Int) throws -> [BenchItem] { throw BenchError("not measured") }
    func count() throws -> Int {
        Int(try raw.run(PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table)")).rows.first?.decode(Int.self) ?? 0)
    }
    func count(minRating: Int) throws -> Int { throw BenchError("not measured") }

    func close() throws { try raw.close() }
}

/// `PostgresDataStore` through the DataStore API, the same calls as the other DataStore rows.
final class PostgresDataStoreBench: DataStoreBench, @unchecked Sendable {
    // @unchecked: PostgresDataStore is Sendable; the rest is immutable.
    let key = "logstore-postgres"
    let name = "PostgresDataStore"
    let config = "DataStore API, pool of 4, jsonb rows"
    let path: String
    let store: PostgresDataStore
    let url: String

    init(url: String, schema: String) throws {
        var c = try PostgresDataStore.Configuration(url: url)
        c.schema = schema
        c.maximumConnections = 4
        self.url = url
        path = schema
        store = PostgresDataStore(configuration: c)
        try store.setup()
    }

    var dataStore: any DataStore { store }

    func close() throws {
        try store.tearDown()
        let raw = try RawPostgresStore(url: url, schema: path)
        try raw.close()
    }
}

extension Bench {
    func postgresSkipped(_ name: String, _ title: String) -> WorkloadResult {
        WorkloadResult(
            name: name, title: title, op: "-", unit: "-",
            notes: ["skipped: LOGSTORE_POSTGRES_URL is not set (run under tools/with-postgres --durable)"], skipped: true)
    }

    func schemaName(_ label: String) -> String {
        storeCounter += 1
        return "bench_\(label)_\(getpid())_\(storeCounter)"
    }

    /// PostgresDataStore and raw postgres-nio side by side: durable single-item writes, a bulk
    /// insert in transactions of `cfg.batch`, point reads by id. Each PostgresDataStore row
    /// carries `vs_raw_postgres_nio`: its time per operation over raw postgres-nio's (target ≤ 1.3).
    func postgresAdapter() throws -> WorkloadResult {
        let title =
            "PostgresDataStore (DataStore API, jsonb rows) vs raw postgres-nio statements (columns, and jsonb documents), \(cfg.n) items"
        guard let url = postgresURL else { return postgresSkipped("postgres-adapter", title) }
        var w = WorkloadResult(name: "postgres-adapter", title: title, op: "see each row's config", unit: "op")
        let raw = try RawPostgresStore(url: url, schema: schemaName("raw"))
        let rawJSON = try RawPostgresJSONStore(url: url, schema: schemaName("rawjson"))
        let adapter = try PostgresDataStoreBench(url: url, schema: schemaName("adapter"))
        defer {
            remove(raw)
            remove(rawJSON)
            remove(adapter)
        }
        // The target's ratio is against typed columns (`vs_raw_postgres_nio`); `vs_raw_jsonb`
        // is against the same statements on the adapter's row shape, by hand.
        func triple(_ what: String, _ r: Run, _ j: Run, _ a: Run, units: Double? = nil) {
            var rawRow = Row(key: "postgres-raw:\(what)", system: raw.name, config: what, role: .peer, run: r, units: units)
            var jsonRow = Row(key: "postgres-raw-jsonb:\(what)", system: rawJSON.name, config: what, role: .peer, run: j, units: units)
            var adapterRow = Row(key: "logstore-postgres:\(what)", system: adapter.name, config: what, role: .variant, run: a, units: units)
            for (baseline, name) in [(rawRow, "raw_postgres_nio"), (jsonRow, "raw_jsonb")]
            where baseline.throughput > 0 && adapterRow.throughput > 0 {
                adapterRow.extra["vs_\(name)"] = baseline.throughput / adapterRow.throughput
                if let rc = baseline.extra["cpu_us_per_op"], let ac = adapterRow.extra["cpu_us_per_op"], rc > 0 {
                    adapterRow.extra["cpu_vs_\(name)"] = ac / rc
                }
            }
            rawRow.note = nil
            jsonRow.note = nil
            w.rows += [rawRow, jsonRow, adapterRow]
        }
        // Durable single-item writes, interleaved, on ids beyond the loaded range.
        let n = cfg.n
        let writes = try interleaved(
            [
                Contender(raw, role: .peer) { i in try raw.insert(ItemFactory.make(id: n + i)) },
                Contender(rawJSON, role: .peer) { i in try rawJSON.insert(ItemFactory.make(id: n + i)) },
                Contender(adapter, role: .variant) { i in try adapter.insert(ItemFactory.make(id: n + i)) },
            ],
            maxOps: cfg.durableOps, maxSeconds: cfg.durableSeconds * 3)
        triple("durable insert of 1 item", Run(rows: writes[0]), Run(rows: writes[1]), Run(rows: writes[2]))
        triple(
            "bulk insert (transactions of \(cfg.batch))", try load(raw, n: cfg.n), try load(rawJSON, n: cfg.n), try load(adapter, n: cfg.n),
            units: Double(cfg.n))
        guard try raw.count() >= cfg.n, try rawJSON.count() >= cfg.n, try adapter.count() >= cfg.n else {
            throw BenchError("a PostgreSQL store lost items")
        }
        var rng = SplitMix64(seed: 11)
        let ids = (0..<cfg.readOps).map { _ in Int(rng.next() % UInt64(cfg.n)) }
        let reads = try interleaved(
            [
                Contender(raw, role: .peer) { i in _ = try raw.get(ids[i]) },
                Contender(rawJSON, role: .peer) { i in _ = try rawJSON.get(ids[i]) },
                Contender(adapter, role: .variant) { i in _ = try adapter.get(ids[i]) },
            ],
            maxOps: ids.count / 4, maxSeconds: cfg.readSeconds * 3)
        triple("point read by id", Run(rows: reads[0]), Run(rows: reads[1]), Run(rows: reads[2]))
        w.notes.append(
            "Same server, loopback. Raw postgres-nio: table bench_item with one column per property, one connection, a bare INSERT ... ON CONFLICT per item (autocommit), one INSERT ... SELECT unnest(...) per batch, SELECT by primary key, rows decoded by postgres-nio (Postgres.swift). Raw postgres-nio, jsonb: the same statements on a table (id bigint, data jsonb), items by JSONEncoder/JSONDecoder. PostgresDataStore: one table per item type (id bigint, version, data jsonb), items as LogStore JSON; a write block that only inserts is one autocommitted statement that also bumps logstore_sequence and writes the commit log; a read runs in a read-only REPEATABLE READ transaction begun in the background (Docs/SQLBackends.md, \"PostgreSQL\"). vs_raw_postgres_nio = PostgresDataStore's time per op / raw postgres-nio's (the target's ratio); vs_raw_jsonb the same against the jsonb rows by hand; cpu_vs_... the same for this process's CPU (the server's CPU is not counted)."
        )
        return w
    }

    /// The data migrator's throughput from LogStore into PostgreSQL, against PostgresDataStore's own
    /// bulk insert of the same items (typed inserts in transactions of 2,000).
    func postgresMigrate() throws -> WorkloadResult {
        let title = "BackendMigrator copy of \(cfg.n) items LogStore -> PostgreSQL vs PostgresDataStore's own bulk insert"
        guard let url = postgresURL else { return postgresSkipped("postgres-migrate", title) }
        var w = WorkloadResult(name: "postgres-migrate", title: title, op: "one item copied (or inserted)", unit: "item")
        let batch = 2_000
        let source = LogDataStore(directory: URL(fileURLWithPath: freshDir("migrate-source")))
        try source.setup()
        _ = try bulkInsertRun(source, batch: batch)
        let own = try PostgresDataStoreBench(url: url, schema: schemaName("bulk"))
        let bulkRun = try bulkInsertRun(own.store, batch: batch)
        remove(own)
        let destination = try PostgresDataStoreBench(url: url, schema: schemaName("copy"))
        defer { remove(destination) }
        let copyRun = try migratorCopyRun(source, destination.store, batch: batch)
        let verify = try timeOnce { try BackendMigrator(from: source, to: destination.store).verify() }
        guard verify.0.isEqual else { throw BenchError("the copy LogStore -> PostgreSQL does not verify") }
        try source.tearDown()
        let bulkRow = Row(
            key: "bulk-postgres", system: "PostgresDataStore", config: "own bulk insert, transactions of \(batch)", role: .reference,
            run: bulkRun)
        var copyRow = Row(
            key: "migrate-logstore-postgres", system: "BackendMigrator", config: "logstore -> postgres, batches of \(batch)",
            role: .variant, run: copyRun,
            extra: ["verify_seconds": verify.1, "verify_items_per_second": Double(cfg.n) / verify.1])
        if bulkRow.throughput > 0 { copyRow.extra["vs_bulk_insert"] = copyRow.throughput / bulkRow.throughput }
        w.rows += [bulkRow, copyRow]
        w.notes.append(
            "vs_bulk_insert = migration items/s ÷ PostgresDataStore's own bulk-insert items/s. The copy reads one LogStore snapshot and commits each batch with its cursor (putRecord: records transcoded to jsonb, the table's id kind inferred from the records); verify_seconds: BackendMigrator.verify() over both stores."
        )
        return w
    }
}
