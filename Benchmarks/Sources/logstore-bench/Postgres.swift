import Foundation
import LogStore
import LogStorePostgres
import PostgresNIO

// The PostgreSQL backend's benchmarks: PostgresDataStore beside its peers on the same server
// (PostgresPeers.swift), and the data migrator's throughput into PostgreSQL. They need a server: LOGSTORE_POSTGRES_URL (run
// under tools/with-postgres --durable, a throwaway cluster with fsync on); without it they are
// skipped, saying so.

/// The server the PostgreSQL workloads use, or nil.
let postgresURL = ProcessInfo.processInfo.environment["LOGSTORE_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }

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
        try dropSchema(url: url, path)
    }
}

/// Drops `schema` and everything in it.
func dropSchema(url: String, _ schema: String) throws {
    let db = try RawConnection(url: url)
    defer { db.close() }
    try db.run("DROP SCHEMA IF EXISTS \"\(schema)\" CASCADE")
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

    /// PostgresDataStore beside its peers (PostgresPeers.swift), interleaved on one server: a
    /// durable insert of one item, a bulk insert of `cfg.n` items in transactions of `cfg.batch`,
    /// a point read, the indexed query of one group (20 items) and a page of 20 at offset n/2.
    /// Each PostgresDataStore row carries `vs_raw` and `vs_raw_jsonb` (its time per operation over
    /// the hand-written peer's; targets ≤ 1.2 and ≤ 1.1) and `vs_fluent` (its throughput over
    /// Fluent's; target ≥ 1), and the same ratios of this process's CPU.
    func postgresPeers() throws -> WorkloadResult {
        let title = "PostgresDataStore vs postgres-nio by hand (typed columns; jsonb) and Fluent models, \(cfg.n) items"
        guard let url = postgresURL else { return postgresSkipped("postgres-peers", title) }
        var w = WorkloadResult(name: "postgres-peers", title: title, op: "see each row's config", unit: "op")
        let shared = schemaName("peers")
        let own = schemaName("store")
        let raw = try RawTypedPeer(url: url, schema: shared)
        let json = try RawJSONBPeer(url: url, schema: shared)
        let fluent = try FluentPeer(url: url, schema: shared)
        let adapter = try PostgresDataStorePeer(url: url, schema: own)
        let peers: [any PeerStore] = [raw, json, fluent, adapter]
        defer {
            for p in peers { try? p.close() }
            try? dropSchema(url: url, shared)
            try? dropSchema(url: url, own)
        }
        func measure(_ op: String, _ what: String, _ runs: [Run], units: Double? = nil) {
            var rows = peers.indices.map { k in
                Row(
                    key: "\(peers[k].key):\(op)", system: peers[k].name, config: what, role: k == 3 ? .variant : .peer, run: runs[k],
                    units: units)
            }
            let ours = rows[3]
            for (k, name) in [(0, "raw"), (1, "raw_jsonb")] where rows[k].throughput > 0 && ours.throughput > 0 {
                rows[3].extra["vs_\(name)"] = rows[k].throughput / ours.throughput
                if let c = rows[k].extra["cpu_us_per_op"], let o = ours.extra["cpu_us_per_op"], c > 0 {
                    rows[3].extra["cpu_vs_\(name)"] = o / c
                }
            }
            if rows[2].throughput > 0 {
                rows[3].extra["vs_fluent"] = ours.throughput / rows[2].throughput
                if let c = rows[2].extra["cpu_us_per_op"], let o = ours.extra["cpu_us_per_op"], o > 0 {
                    rows[3].extra["cpu_vs_fluent"] = c / o
                }
            }
            w.rows += rows
        }
        func contenders(_ op: @escaping (any PeerStore, Int) throws -> Void) -> [Contender] {
            peers.indices.map { k in
                Contender(key: peers[k].key, system: peers[k].name, config: peers[k].config, role: k == 3 ? .variant : .peer) { i in
                    try op(peers[k], i)
                }
            }
        }
        let n = cfg.n
        // Durable single-item writes on ids beyond the loaded range, made before the clock runs.
        let fresh = (0..<cfg.durableOps).map { PeerItem.make(id: n + $0) }
        let writes = try interleaved(contenders { p, i in try p.insert(fresh[i]) }, maxOps: fresh.count, maxSeconds: cfg.durableSeconds * 4)
        measure("durable-insert", "durable insert of 1 item", writes.map { Run(rows: $0) })
        // The bulk insert, batch by batch in a rotating order (a slow stretch hits every peer).
        var loads = Array(repeating: Run(), count: peers.count)
        var start = 0
        var turn = 0
        while start < n {
            let end = min(n, start + cfg.batch)
            let items = (start..<end).map { PeerItem.make(id: $0) }
            for j in peers.indices {
                let k = (j + turn) % peers.count
                let c0 = processCPUSeconds()
                let t0 = nowNanos()
                try peers[k].insertBatch(items)
                loads[k].latencies.append(nowNanos() - t0)
                loads[k].cpuSeconds += processCPUSeconds() - c0
            }
            turn += 1
            start = end
        }
        for k in loads.indices { loads[k].seconds = Double(loads[k].latencies.reduce(0, +)) / 1e9 }
        measure("bulk-insert", "bulk insert, transactions of \(cfg.batch) (items/s)", loads, units: Double(n))
        for p in peers where try p.count() < n { throw BenchError("\(p.name) lost items") }
        var rng = SplitMix64(seed: 11)
        let ids = (0..<cfg.readOps / 4).map { _ in Int(rng.next() % UInt64(n)) }
        let reads = try interleaved(
            contenders { p, i in guard try p.get(ids[i]) else { throw BenchError("\(p.name): item \(ids[i]) missing") } },
            maxOps: ids.count, maxSeconds: cfg.readSeconds * 4)
        measure("point-read", "point read by id", reads.map { Run(rows: $0) })
        let groups = (0..<max(1, cfg.readOps / 40)).map { _ in Int(rng.next() % UInt64(max(1, n / PeerItem.groupSize))) }
        let queries = try interleaved(
            contenders { p, i in
                let found = try p.group(groups[i])
                guard found == PeerItem.groupSize else { throw BenchError("\(p.name): group \(groups[i]) has \(found) items") }
            }, maxOps: groups.count, maxSeconds: cfg.readSeconds * 4)
        measure("indexed-query", "indexed query: the 20 items of one group, id order", queries.map { Run(rows: $0) })
        let pages = try interleaved(
            contenders { p, _ in
                guard try p.page(offset: n / 2, limit: 20) == 20 else { throw BenchError("\(p.name): short page") }
            }, maxOps: 2_000, maxSeconds: cfg.readSeconds * 4)
        measure("page", "page of 20 at offset n/2, id order", pages.map { Run(rows: $0) })
        w.notes.append(
            "One server on loopback, durable defaults. Item: BenchItem's properties and group = id / 20 (an index on it everywhere). postgres-nio by hand: one connection, a bare INSERT ... ON CONFLICT per item (autocommit), one INSERT ... SELECT unnest(...) per batch, SELECTs; typed columns decode into tuples, jsonb documents through postgres-nio's Codable support (JSONEncoder/JSONDecoder) with an expression index on data -> 'group'. Fluent: FluentKit models, create/find/query, futures waited for. PostgresDataStore: the DataStore API (writeSync, read, #Predicate { $0.group == g } over a declared index). vs_raw / vs_raw_jsonb = PostgresDataStore's time per op over the peer's (targets <= 1.2 / <= 1.1); vs_fluent = PostgresDataStore's throughput over Fluent's (target >= 1); cpu_vs_* the same for this process's CPU per op (the server's is in the times, not counted)."
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
