import Foundation
import LogStore
import LogStoreSQLite

// The backends' benchmarks: the SQLite backend's adapter overhead over raw GRDB on the benchmark
// workloads, and the data migrator's throughput against the destination's own bulk insert.

/// `SQLiteDataStore` through the DataStore API (Codable items, `#Predicate`), the same calls as
/// ``LogStoreDataStore``: what the SQLite backend costs over raw GRDB (``SQLiteStore``).
final class SQLiteDataStoreBench: DataStoreBench {
    let key = "logstore-sqlite"
    let name = "SQLiteDataStore"
    let config: String
    let path: String
    let store: SQLiteDataStore

    init(path: String, mode: Mode) throws {
        var o = DataStoreOptions()
        o.durability = mode == .durable ? .synchronous : .buffered
        self.path = path
        config = "DataStore API over GRDB, WAL, synchronous=\(mode == .durable ? "FULL" : "NORMAL"), JSON rows"
        store = SQLiteDataStore(path: path + "/store.sqlite", options: o)
        try store.setup()
    }

    var dataStore: any DataStore { store }
}

/// A benchmark store driven through the DataStore API (Codable items, `#Predicate` requests):
/// LogStore's and the SQLite backend's rows make exactly the same calls.
protocol DataStoreBench: BenchStore {
    var dataStore: any DataStore { get }
}

extension DataStoreBench {
    func insert(_ item: BenchItem) throws { try dataStore.writeSync { try $0.insert(item) } }
    func insertBatch(_ items: ArraySlice<BenchItem>) throws { try dataStore.writeSync { a in for i in items { try a.insert(i) } } }
    func get(_ id: Int) throws -> BenchItem? { try dataStore.read { try $0.item(ofType: BenchItem.self, id: id) } }
    func scan(minRating: Int, limit: Int?) throws -> [BenchItem] {
        var r = DataStoreRequest(itemType: BenchItem.self)
        r.predicate = #Predicate<BenchItem> { $0.rating >= minRating }
        r.limit = limit
        return try dataStore.read { try $0.items(forRequest: r) }
    }
    func page(offset: Int, limit: Int) throws -> [BenchItem] {
        var r = DataStoreRequest(itemType: BenchItem.self)
        r.offset = offset
        r.limit = limit
        return try dataStore.read { try $0.items(forRequest: r) }
    }
    func count() throws -> Int { try dataStore.read { try $0.countItems(forRequest: DataStoreRequest(itemType: BenchItem.self)) } }
    func count(minRating: Int) throws -> Int {
        var r = DataStoreRequest(itemType: BenchItem.self)
        r.predicate = #Predicate<BenchItem> { $0.rating >= minRating }
        return try dataStore.read { try $0.countItems(forRequest: r) }
    }
    func close() throws { try dataStore.tearDown() }
}

extension Bench {
    /// SQLiteDataStore and raw GRDB side by side on the workloads of the other tables: one
    /// durable insert, a bulk insert, point reads, an id-order page, a predicate scan with a
    /// limit, counts. Rows come in pairs; each SQLiteDataStore row carries `vs_raw_grdb`: its
    /// time per operation over raw GRDB's (the adapter's overhead; target ≤ 1.3).
    func sqliteAdapter() throws -> WorkloadResult {
        var w = WorkloadResult(
            name: "sqlite-adapter",
            title: "SQLiteDataStore (DataStore API, JSON rows) vs raw GRDB (columns, Codable records), \(cfg.n) items",
            op: "see each row's config", unit: "op")
        let raw = try makeStore("sqlite")
        let adapter = try SQLiteDataStoreBench(path: freshDir("logstore-sqlite"), mode: .durable)
        defer {
            remove(raw)
            remove(adapter)
        }
        func pair(_ what: String, _ r: Run, _ a: Run, units: Double? = nil) {
            var rawRow = Row(key: "sqlite:\(what)", system: raw.name, config: what, role: .peer, run: r, units: units)
            var adapterRow = Row(key: "logstore-sqlite:\(what)", system: adapter.name, config: what, role: .variant, run: a, units: units)
            if rawRow.throughput > 0 && adapterRow.throughput > 0 {
                adapterRow.extra["vs_raw_grdb"] = rawRow.throughput / adapterRow.throughput
            }
            rawRow.note = nil
            w.rows += [rawRow, adapterRow]
        }
        // Durable single-item commits, in scratch stores of each kind (so the loaded ones stay equal).
        let scratch: [any BenchStore] = [
            try makeStore("sqlite"), try SQLiteDataStoreBench(path: freshDir("logstore-sqlite"), mode: .durable),
        ]
        var rounds = [Run(), Run()]
        for k in 0..<4 {
            for (j, s) in scratch.enumerated() {
                rounds[j].merge(
                    try timedLoop(maxOps: cfg.durableOps / 8, maxSeconds: cfg.durableSeconds / 8) { i in
                        try s.insert(ItemFactory.make(id: k * 1_000_000 + i))
                    })
            }
        }
        for s in scratch { remove(s) }
        pair("durable insert of 1 item", rounds[0], rounds[1])
        pair("bulk insert (transactions of \(cfg.batch))", try load(raw, n: cfg.n), try load(adapter, n: cfg.n), units: Double(cfg.n))
        var rng = SplitMix64(seed: 11)
        let ids = (0..<cfg.readOps).map { _ in Int(rng.next() % UInt64(cfg.n)) }
        var reads = try interleaved(
            [
                Contender(raw, role: .peer) { i in _ = try raw.get(ids[i]) },
                Contender(adapter, role: .variant) { i in _ = try adapter.get(ids[i]) },
            ],
            maxOps: ids.count / 4, maxSeconds: cfg.readSeconds)
        pair("point read by id", Run(rows: reads[0]), Run(rows: reads[1]))
        let offset = cfg.n / 2
        reads = try interleaved(
            [
                Contender(raw, role: .peer) { _ in _ = try raw.page(offset: offset, limit: 20) },
                Contender(adapter, role: .variant) { _ in _ = try adapter.page(offset: offset, limit: 20) },
            ],
            maxOps: 1_000, maxSeconds: cfg.readSeconds)
        pair("page of 20 at offset n/2", Run(rows: reads[0]), Run(rows: reads[1]))
        reads = try interleaved(
            [
                Contender(raw, role: .peer) { _ in _ = try raw.scan(minRating: 4, limit: 100) },
                Contender(adapter, role: .variant) { _ in _ = try adapter.scan(minRating: 4, limit: 100) },
            ],
            maxOps: 5_000, maxSeconds: cfg.readSeconds)
        pair("scan rating >= 4, limit 100", Run(rows: reads[0]), Run(rows: reads[1]))
        let scans = try [raw, adapter as any BenchStore].map { s in
            try timedLoop(maxOps: cfg.scanReps, maxSeconds: cfg.scanSeconds) { _ in _ = try s.scan(minRating: 4, limit: nil) }
        }
        pair("scan rating >= 4, all \(cfg.n) items", scans[0], scans[1], units: nil)
        let counts = try [raw, adapter as any BenchStore].map { s in
            try timedLoop(maxOps: cfg.countReps, maxSeconds: cfg.countSeconds) { _ in _ = try s.count() }
        }
        pair("count all", counts[0], counts[1])
        let predicateCounts = try [raw, adapter as any BenchStore].map { s in
            try timedLoop(maxOps: cfg.scanReps, maxSeconds: cfg.scanSeconds) { _ in _ = try s.count(minRating: 4) }
        }
        pair("count rating >= 4", predicateCounts[0], predicateCounts[1])
        guard try raw.count(minRating: 4) == (try adapter.count(minRating: 4)) else {
            throw BenchError("raw GRDB and SQLiteDataStore count differently")
        }
        w.notes.append(
            "Raw GRDB: table benchItem with one column per property, GRDB Codable records, cached statements (Systems.swift). SQLiteDataStore: one table per item type, key BLOB + seq + data TEXT (LogStore JSON), reads transcode JSON to LogStore's attribute bytes and decode; #Predicate { $0.rating >= 4 } becomes a CASE over json_type/json_extract (Docs/SQLBackends.md, \"SQLite\"). vs_raw_grdb = SQLiteDataStore's time per op / raw GRDB's."
        )
        return w
    }

    /// The data migrator's throughput into each backend, against that backend's own bulk insert
    /// of the same items (typed inserts in transactions of 2,000, what an app's import would do).
    /// Target: migration ≥ 0.7× the destination's bulk-insert rate.
    func migrate() throws -> WorkloadResult {
        var w = WorkloadResult(
            name: "migrate", title: "BackendMigrator copy of \(cfg.n) items vs the destination's own bulk insert",
            op: "one item copied (or inserted)", unit: "item")
        let batch = 2_000
        func open(_ kind: String) throws -> any DataStore {
            let dir = freshDir("migrate-\(kind)")
            let s: any DataStore =
                kind == "sqlite" ? SQLiteDataStore(path: dir + "/store.sqlite") : LogDataStore(directory: URL(fileURLWithPath: dir))
            try s.setup()
            return s
        }
        for (from, to) in [("logstore", "sqlite"), ("sqlite", "logstore")] {
            let source = try open(from)
            _ = try bulkInsertRun(source, batch: batch)
            let own = try open(to)
            let bulkRun = try bulkInsertRun(own, batch: batch)
            try own.tearDown()
            let destination = try open(to)
            let copyRun = try migratorCopyRun(source, destination, batch: batch)
            let verify = try timeOnce { try BackendMigrator(from: source, to: destination).verify() }
            guard verify.0.isEqual else { throw BenchError("the copy \(from) -> \(to) does not verify") }
            try source.tearDown()
            try destination.tearDown()
            let dest = to == "sqlite" ? "SQLiteDataStore" : "LogDataStore"
            let bulkRow = Row(
                key: "bulk-\(to)", system: dest, config: "own bulk insert, transactions of \(batch)", role: .reference, run: bulkRun)
            var copyRow = Row(
                key: "migrate-\(from)-\(to)", system: "BackendMigrator", config: "\(from) -> \(to), batches of \(batch)", role: .variant,
                run: copyRun,
                extra: ["verify_seconds": verify.1, "verify_items_per_second": Double(cfg.n) / verify.1])
            if bulkRow.throughput > 0 { copyRow.extra["vs_bulk_insert"] = copyRow.throughput / bulkRow.throughput }
            w.rows += [bulkRow, copyRow]
        }
        w.notes.append(
            "vs_bulk_insert = migration items/s ÷ the destination's own bulk-insert items/s (target ≥ 0.7). Durable (synchronous) stores; the copy reads one source snapshot and commits each batch with its cursor. verify_seconds: BackendMigrator.verify() over both stores."
        )
        return w
    }
}

extension Run {
    /// A run rebuilt from an interleaved row (ops, time, CPU).
    init(rows row: Row) {
        self.init()
        latencies = Array(repeating: UInt64(row.seconds / Double(max(1, row.ops)) * 1e9), count: row.ops)
        seconds = row.seconds
        cpuSeconds = (row.extra["cpu_us_per_op"] ?? 0) * Double(row.ops) / 1e6
    }
}

extension Bench {
    /// Typed inserts of items 0..<n in transactions of `batch` into `s` (what an app's import
    /// does): the per-item time and this process's CPU.
    func bulkInsertRun(_ s: any DataStore, batch: Int) throws -> Run {
        var run = Run()
        var start = 0
        while start < cfg.n {
            let end = min(cfg.n, start + batch)
            let items = (start..<end).map { ItemFactory.make(id: $0) }
            let c0 = processCPUSeconds()
            let t0 = nowNanos()
            try s.writeSync { a in for i in items { try a.insert(i) } }
            let dt = nowNanos() - t0
            run.cpuSeconds += processCPUSeconds() - c0
            run.seconds += Double(dt) / 1e9
            run.latencies += Array(repeating: dt / UInt64(end - start), count: end - start)
            start = end
        }
        return run
    }

    /// `BackendMigrator.copy()` of the `cfg.n` items of `from` into `to`, in batches of `batch`.
    func migratorCopyRun(_ from: any DataStore, _ to: any DataStore, batch: Int) throws -> Run {
        var m = BackendMigrator(from: from, to: to)
        m.batchSize = batch
        let c0 = processCPUSeconds()
        let t0 = nowNanos()
        let report = try m.copy()
        let dt = nowNanos() - t0
        guard report.items == cfg.n else { throw BenchError("the migrator copied \(report.items) items, expected \(cfg.n)") }
        var run = Run()
        run.seconds = Double(dt) / 1e9
        run.cpuSeconds = processCPUSeconds() - c0
        run.latencies = Array(repeating: dt / UInt64(cfg.n), count: cfg.n)
        return run
    }
}
