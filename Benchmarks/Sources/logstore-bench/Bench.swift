import CLMDB
import Foundation
import LogStore
import LogStoreEngine

/// Sizes and time boxes of one run.
struct BenchConfig {
    var quick: Bool
    /// Items in the loaded stores (bulk insert, reads, scans, open, memory, compaction).
    var n: Int
    var batch = 1_000
    /// Durable single-item writes: at most this many commits and seconds per system.
    var durableOps: Int
    var durableSeconds: Double
    var concurrentWriters = 16
    var concurrentOps: Int
    var concurrentSeconds: Double
    var bufferedOps: Int
    var bufferedSeconds: Double
    var readOps: Int
    var readSeconds: Double
    var scanReps: Int
    var scanSeconds: Double
    var countReps: Int
    var countSeconds: Double
    var openReps: Int
    var openSeconds: Double
    var mergeChanges = 10_000
    var lz4Items: Int
    /// Interleaved workloads run each system this many times, in slices.
    var rounds: Int
    /// A full scan (scan, count-predicate) whose estimated time exceeds this is skipped.
    var scanCapSeconds: Double
    var lz4TextBytes = 2_000

    static func make(quick: Bool) -> BenchConfig {
        if quick {
            return BenchConfig(
                quick: true, n: 100_000, durableOps: 3_000, durableSeconds: 4, concurrentOps: 20_000, concurrentSeconds: 4,
                bufferedOps: 30_000, bufferedSeconds: 3, readOps: 200_000, readSeconds: 2, scanReps: 5, scanSeconds: 4,
                countReps: 2_000, countSeconds: 1, openReps: 3, openSeconds: 5, lz4Items: 10_000, rounds: 12, scanCapSeconds: 15)
        }
        return BenchConfig(
            quick: false, n: 1_000_000, durableOps: 20_000, durableSeconds: 15, concurrentOps: 200_000, concurrentSeconds: 15,
            bufferedOps: 300_000, bufferedSeconds: 10, readOps: 1_000_000, readSeconds: 8, scanReps: 5, scanSeconds: 20,
            countReps: 10_000, countSeconds: 3, openReps: 3, openSeconds: 20, lz4Items: 100_000, rounds: 16, scanCapSeconds: 60)
    }
}

/// Runs the workloads. Stores live in `root` (one fresh directory per store).
final class Bench {
    static let workloadNames =
        [
            "durable-write", "durable-write-16", "buffered-write", "bulk-insert", "point-read", "page", "scan", "count",
            "count-predicate", "open", "memory", "compaction", "child-merge", "lz4", "encryption",
            "observe-latency", "observe-write", "observe-large", "sqlite-adapter", "migrate", "migration", "backup", "backup-writers",
            "postgres-peers", "postgres-migrate", "launch", "heap", "close",
        ] + appWorkloadNames

    let cfg: BenchConfig
    let root: String
    var report: BenchReport
    /// Stores holding `cfg.n` items, by key: made by bulk-insert (timed) or on first need (untimed).
    var loaded: [String: any BenchStore] = [:]
    /// Bytes one durable single-item LogStore commit appends (measured by durable-write).
    var bytesPerCommit: Int?
    var storeCounter = 0
    /// `--systems`: run only these stores (keys as in `makeStore`); nil = all.
    var systems: Set<String>?
    /// The app workload's data set (AppWorkload.swift), loaded by the first app query workload.
    var appData: AppStores?
    /// `--app-dir`: where the app's data set is kept between runs (nil: a fresh one, removed).
    var appDirectory: String?
    /// The app workload's bulk-insert LogStores: MenuItem with 2 indexes, the same items without.
    var appBulk: (indexed: LogDataStore, indexedPath: String, plain: LogDataStore, plainPath: String)?
    /// The launch workload's stores at N that the heap and close workloads share (closed).
    var sharedStores: (logstore: String, sqlite: String)?

    func selected(_ keys: [String]) -> [String] {
        guard let systems else { return keys }
        return keys.filter { systems.contains($0) }
    }

    /// The stores of `keys` that `--systems` names: stores a workload measures only when asked
    /// for by name (`logstore-encrypted` in buffered-write, bulk-insert and point-read, to
    /// profile it alone; the encryption workload compares it with `logstore`).
    func requested(_ keys: [String]) -> [String] {
        keys.filter { systems?.contains($0) ?? false }
    }

    init(cfg: BenchConfig, root: String, report: BenchReport) {
        self.cfg = cfg
        self.root = root
        self.report = report
    }

    func freshDir(_ label: String) -> String {
        storeCounter += 1
        let p = root + "/\(storeCounter)-\(label)"
        try? FileManager.default.removeItem(atPath: p)
        return p
    }

    func remove(_ store: any BenchStore) {
        try? store.close()
        try? FileManager.default.removeItem(atPath: store.path)
    }

    func log(_ s: String) {
        FileHandle.standardError.write(Data(("[bench] " + s + "\n").utf8))
    }

    /// Runs one workload by name and records its table.
    func run(_ name: String) throws {
        log("\(name) ...")
        let (result, secs) = try timeOnce { () throws -> WorkloadResult in
            switch name {
            case "durable-write": return try durableWrite()
            case "durable-write-16": return try durableWriteConcurrent()
            case "buffered-write": return try bufferedWrite()
            case "bulk-insert": return try bulkInsert()
            case "point-read": return try pointRead()
            case "page": return try page()
            case "scan": return try scan()
            case "count": return try count(predicate: false)
            case "count-predicate": return try count(predicate: true)
            case "open": return try openTime()
            case "memory": return try memory()
            case "compaction": return try compaction()
            case "child-merge": return try childMerge()
            case "lz4": return try lz4()
            case "encryption": return try encryption()
            case "observe-latency": return try observeLatency()
            case "observe-write": return try observeWrite()
            case "observe-large": return try observeLarge()
            case "sqlite-adapter": return try sqliteAdapter()
            case "migrate": return try migrate()
            case "migration": return try migration()
            case "backup": return try backup()
            case "backup-writers": return try backupWriters()
            case "postgres-peers": return try postgresPeers()
            case "postgres-migrate": return try postgresMigrate()
            case "launch": return try launch()
            case "heap": return try heapPerItem()
            case "close": return try closeTime()
            default:
                guard let w = try runApp(name) else { throw BenchError("unknown workload \(name)") }
                return w
            }
        }
        var r = result
        r.computeRatios()
        report.workloads.append(r)
        printTable(r)
        log("\(name) done in \(String(format: "%.1f", secs)) s")
    }

    func closeAll() {
        for (_, s) in loaded { remove(s) }
        loaded = [:]
        closeApp()
        closeAppBulk()
        if let s = sharedStores {
            for dir in [s.logstore, s.sqlite] { try? FileManager.default.removeItem(atPath: dir) }
            sharedStores = nil
        }
    }

    // MARK: Stores

    func makeStore(_ key: String, mode: Mode = .durable) throws -> any BenchStore {
        switch key {
        case "logstore": return try LogStoreDataStore(path: freshDir(key), mode: mode)
        case "logstore-engine": return try LogStoreEngineStore(path: freshDir(key), mode: mode)
        // Writers store values raw (the default since store format 4; kept as its own key so
        // that runs before and after the format change compare).
        case "logstore-lazy":
            return try LogStoreDataStore(path: freshDir(key), mode: mode, key: key) { o in
                o.compressOnWrite = false
                return ", compressOnWrite false"
            }
        case "logstore-engine-lazy":
            return try LogStoreEngineStore(path: freshDir(key), mode: mode, key: key) { o in
                o.compressOnWrite = false
                return ", compressOnWrite false"
            }
        // Encryption at rest (AES-256-GCM under the bench's fixed test key): the encryption workload.
        case "logstore-encrypted":
            let encryption = try Self.testEncryption()
            return try LogStoreDataStore(path: freshDir(key), mode: mode, key: key) { o in
                o.encryption = encryption
                return ", AES-256-GCM"
            }
        case "sqlite": return try SQLiteStore(path: freshDir(key), mode: mode)
        case "lmdb": return try LMDBStore(path: freshDir(key), flags: mode == .durable ? 0 : MDB_NOSYNC)
        case "lmdb-nometasync": return try LMDBStore(path: freshDir(key), flags: MDB_NOMETASYNC)
        default: throw BenchError("unknown store \(key)")
        }
    }

    static let loadedKeys = ["logstore", "logstore-engine", "sqlite", "lmdb"]

    /// Inserts items 0..<n in transactions of `cfg.batch`; returns the per-transaction run.
    func load(_ store: any BenchStore, n: Int, version: UInt64 = 0) throws -> Run {
        try load(store, ids: 0..<n, version: version)
    }

    /// Inserts the items of `ids` in transactions of `cfg.batch`; returns the per-transaction run.
    func load(_ store: any BenchStore, ids: Range<Int>, version: UInt64 = 0) throws -> Run {
        var total = Run()
        var start = ids.lowerBound
        let n = ids.upperBound
        while start < n {
            let end = min(n, start + cfg.batch)
            let items = (start..<end).map { ItemFactory.make(id: $0, version: version) }
            let c0 = processCPUSeconds()
            let t0 = nowNanos()
            try store.insertBatch(items[...])
            total.latencies.append(nowNanos() - t0)
            total.cpuSeconds += processCPUSeconds() - c0
            start = end
        }
        total.seconds = Double(total.latencies.reduce(0, +)) / 1e9
        return total
    }

    /// The store of `key` holding `cfg.n` items, loading it (untimed) if bulk-insert did not run.
    func loadedStore(_ key: String) throws -> any BenchStore {
        if let s = loaded[key] { return s }
        log("  loading \(cfg.n) items into \(key) (untimed)")
        let s = try makeStore(key)
        _ = try load(s, n: cfg.n)
        loaded[key] = s
        return s
    }

    func role(_ key: String) -> Row.Role {
        key == "logstore" ? .subject : key.hasPrefix("logstore") ? .variant : .peer
    }

    // MARK: Interleaving

    /// One system in an interleaved comparison.
    struct Contender {
        var key: String
        var system: String
        var config: String
        var role: Row.Role
        /// Single-threaded: operation number `i` (0, 1, 2, ... across rounds).
        var op: ((Int) throws -> Void)?
        /// Concurrent: operation number `n` (unique across threads and rounds) on some thread.
        var concurrentOp: (@Sendable (Int) throws -> Void)?

        init(_ s: any BenchStore, role: Row.Role, op: @escaping (Int) throws -> Void) {
            key = s.key
            system = s.name
            config = s.config
            self.role = role
            self.op = op
        }

        static func concurrent(_ s: any BenchStore, role: Row.Role, op: @escaping @Sendable (Int) throws -> Void) -> Contender {
            var c = Contender(s, role: role) { _ in }
            c.op = nil
            c.concurrentOp = op
            return c
        }

        init(key: String, system: String, config: String, role: Row.Role, op: @escaping (Int) throws -> Void) {
            self.key = key
            self.system = system
            self.config = config
            self.role = role
            self.op = op
        }
    }

    /// Measures the contenders in `cfg.rounds` rounds, each contender getting a slice of
    /// `maxOps / rounds` operations or `maxSeconds / rounds` seconds per round, in a rotating
    /// order. Other load on the machine (and the disk's changing latency) then hits every
    /// contender alike instead of whichever ran at a bad moment.
    func interleaved(_ cs: [Contender], maxOps: Int, maxSeconds: Double, threads: Int = 1) throws -> [Row] {
        let rounds = max(1, cfg.rounds)
        var runs = Array(repeating: Run(), count: cs.count)
        let sliceOps = max(1, (maxOps + rounds - 1) / rounds)
        let sliceSeconds = maxSeconds / Double(rounds)
        for r in 0..<rounds {
            for j in cs.indices {
                let k = (j + r) % cs.count
                let base = runs[k].ops
                let budget = min(sliceOps, maxOps - base)
                if budget <= 0 { continue }
                let slice: Run
                if let op = cs[k].concurrentOp {
                    slice = try concurrentLoop(threads: threads, maxOps: budget, maxSeconds: sliceSeconds) { _, n in try op(base + n) }
                } else if let op = cs[k].op {
                    slice = try timedLoop(maxOps: budget, maxSeconds: sliceSeconds) { i in try op(base + i) }
                } else {
                    continue
                }
                runs[k].merge(slice)
            }
        }
        return cs.indices.map { k in
            Row(key: cs[k].key, system: cs[k].system, config: cs[k].config, role: cs[k].role, run: runs[k])
        }
    }

    /// Bytes one durable single-item LogStore commit appends (measured once on a scratch store).
    func logStoreBytesPerCommit() throws -> Int {
        if let b = bytesPerCommit { return b }
        let s = try LogStoreDataStore(path: freshDir("probe"), mode: .durable, durability: Durability.none)
        defer { remove(s) }
        let before = apparentBytes(s.path)
        let count = 50
        for i in 0..<count { try s.insert(ItemFactory.make(id: i)) }
        let b = Int((Double(apparentBytes(s.path) - before) / Double(count)).rounded())
        bytesPerCommit = b
        return b
    }

    // MARK: Writes

    func durableWrite() throws -> WorkloadResult {
        var w = WorkloadResult(
            name: "durable-write", title: "durable single-item write transactions, 1 writer",
            op: "one write transaction inserting one item, durable when it returns", unit: "txn")
        let size = try logStoreBytesPerCommit()
        let items = (0..<cfg.durableOps).map { ItemFactory.make(id: $0) }
        let stores = try selected(["logstore", "logstore-engine", "logstore-lazy", "logstore-engine-lazy", "sqlite", "lmdb"]).map {
            try makeStore($0)
        }
        let append = try Physical.Log(path: freshDir("bare"), recordSize: size, sync: true)
        let overwrite = try Physical.Log(path: freshDir("bare"), recordSize: size, sync: true, preallocate: size * cfg.durableOps)
        defer {
            for s in stores { remove(s) }
            append.close()
            overwrite.close()
        }
        var cs = stores.map { s in Contender(s, role: role(s.key)) { i in try s.insert(items[i]) } }
        cs.append(
            Contender(
                key: "bare-append-fdatasync", system: "disk: append+fdatasync", config: "\(size) B records, growing file",
                role: .limit
            ) { _ in try append.append() })
        cs.append(
            Contender(
                key: "bare-overwrite-fdatasync", system: "disk: overwrite+fdatasync", config: "\(size) B records, preallocated file",
                role: .limit
            ) { _ in try overwrite.append() })
        w.rows = try interleaved(cs, maxOps: cfg.durableOps, maxSeconds: cfg.durableSeconds)
        if let i = w.rows.firstIndex(where: { $0.key == "logstore" }) { w.rows[i].extra["log_bytes_per_commit"] = Double(size) }
        w.notes.append(
            "Fresh stores; at most \(cfg.durableOps) commits or \(Int(cfg.durableSeconds)) s per system, interleaved in \(cfg.rounds) rounds. The bare loops write records of LogStore's bytes per commit (\(size) B): at the end of a growing file, as LogStore does (each fdatasync then also commits the file-size change to the file system journal), and into a file whose blocks were written and synced beforehand, as SQLite's reused WAL and LMDB's pages are (fdatasync flushes data only)."
        )
        return w
    }

    func durableWriteConcurrent() throws -> WorkloadResult {
        let threads = cfg.concurrentWriters
        var w = WorkloadResult(
            name: "durable-write-16", title: "durable single-item write transactions, \(threads) concurrent writers",
            op: "one write transaction inserting one item, durable when it returns (latency per commit, throughput over wall time)",
            unit: "txn")
        let items = (0..<cfg.concurrentOps).map { ItemFactory.make(id: $0) }
        let stores = try selected(["logstore", "logstore-engine", "logstore-lazy", "logstore-engine-lazy", "sqlite", "lmdb"]).map {
            try makeStore($0)
        }
        defer { for s in stores { remove(s) } }
        let cs = stores.map { s in Contender.concurrent(s, role: role(s.key)) { n in try s.insert(items[n % items.count]) } }
        w.rows = try interleaved(cs, maxOps: cfg.concurrentOps, maxSeconds: cfg.concurrentSeconds, threads: threads)
        if var r = report.workload("durable-write")?.row("logstore") {
            r.key = "logstore-1-writer"
            r.system = "LogStore, 1 writer"
            r.role = .reference
            r.note = "from durable-write"
            w.rows.append(r)
        }
        for key in ["bare-append-fdatasync", "bare-overwrite-fdatasync"] {
            if var r = report.workload("durable-write")?.row(key) {
                r.note = "from durable-write"
                w.rows.append(r)
            }
        }
        w.notes.append(
            "\(threads) threads call the store's synchronous write at once, interleaved in \(cfg.rounds) rounds; LogStore shares one fdatasync among the commits waiting for it (group commit). SQLite (GRDB DatabasePool) and LMDB serialize writers and sync each commit."
        )
        return w
    }

    func bufferedWrite() throws -> WorkloadResult {
        var w = WorkloadResult(
            name: "buffered-write", title: "buffered single-item write transactions, 1 writer",
            op: "one write transaction inserting one item, written to the OS but not synced", unit: "txn")
        let size = try logStoreBytesPerCommit()
        let bare = try Physical.Log(path: freshDir("bare"), recordSize: size, sync: false)
        defer { bare.close() }
        let limit = Contender(key: "bare-append", system: "disk: pwrite", config: "\(size) B records, no sync", role: .limit) { _ in
            try bare.append()
        }
        w.rows = try bufferedWriteRows(
            selected(["logstore", "logstore-engine", "logstore-lazy", "logstore-engine-lazy", "sqlite", "lmdb", "lmdb-nometasync"])
                + requested(["logstore-encrypted"]),
            others: [limit])
        w.notes.append(
            "LogStore .buffered syncs every 100 ms in the background; SQLite synchronous=NORMAL syncs the WAL only at checkpoints; LMDB MDB_NOSYNC never syncs on commit, MDB_NOMETASYNC syncs the data pages but not the meta page."
        )
        return w
    }

    /// The buffered-write measurement: fresh stores of `keys` opened with `Mode.buffered`, one
    /// single-item write transaction per operation, interleaved with `others`; the stores are
    /// removed afterwards.
    func bufferedWriteRows(_ keys: [String], others: [Contender] = []) throws -> [Row] {
        let items = (0..<cfg.bufferedOps).map { ItemFactory.make(id: $0) }
        let stores = try keys.map { try makeStore($0, mode: .buffered) }
        defer { for s in stores { remove(s) } }
        let cs = stores.map { s in Contender(s, role: role(s.key)) { i in try s.insert(items[i]) } }
        return try interleaved(cs + others, maxOps: cfg.bufferedOps, maxSeconds: cfg.bufferedSeconds)
    }

    func bulkInsert() throws -> WorkloadResult {
        var w = WorkloadResult(
            name: "bulk-insert", title: "bulk insert of \(cfg.n) items in transactions of \(cfg.batch), durable",
            op: "one durable transaction of \(cfg.batch) inserts", unit: "item")
        closeAll()
        // And with writers storing values raw (compressOnWrite false, the default in format 4).
        for key in selected(Self.loadedKeys + ["logstore-lazy", "logstore-engine-lazy"]) + requested(["logstore-encrypted"]) {
            let s = try makeStore(key)
            let run = try load(s, n: cfg.n)
            let disk = Double(diskBytes(s.path))
            let extra: [String: Double] = ["disk_bytes": disk, "disk_bytes_per_item": disk / Double(cfg.n)]
            w.rows.append(Row(store: s, role: role(key), run: run, units: Double(cfg.n), extra: extra))
            loaded[key] = s
        }
        // The disk's bandwidth for the bytes LogStore wrote.
        if let ls = loaded["logstore"] {
            let bytes = Int(apparentBytes(ls.path))
            let bare = try Physical.sequentialWrite(path: freshDir("bare"), totalBytes: bytes)
            w.rows.append(
                Row(
                    key: "bare-sequential-write", system: "disk: sequential write",
                    config: "LogStore's \(Fmt.bytes(Double(bytes))) + 1 fsync",
                    role: .limit, run: bare, units: Double(cfg.n), extra: ["mb_per_second": Double(bytes) / bare.seconds / 1e6]))
        }
        w.notes.append("disk_bytes is allocated space right after the load (SQLite: database + WAL; LMDB: data.mdb).")
        return w
    }

    // MARK: Reads

    func pointRead() throws -> WorkloadResult {
        var w = WorkloadResult(
            name: "point-read", title: "random point reads by id in a store of \(cfg.n) items",
            op: "one read transaction fetching one item by id and decoding it", unit: "read")
        // The engine with writers storing values raw (compressOnWrite false, the default in format
        // 4: reads use the record in place), beside the defaults.
        let stores = try (selected(Self.loadedKeys + ["logstore-lazy", "logstore-engine-lazy"]) + requested(["logstore-encrypted"])).map {
            try loadedStore($0)
        }
        w.rows = try pointReadRows(stores)
        w.notes.append("Warm: the stores were just written, so their files are in the page cache. Interleaved in \(cfg.rounds) rounds.")
        return w
    }

    /// The point-read measurement on `stores`, each holding items 0..<`cfg.n`: a few items
    /// checked, then random reads by id (the same ids for every store), interleaved.
    func pointReadRows(_ stores: [any BenchStore]) throws -> [Row] {
        var rng = SplitMix64(seed: 7)
        let ids = (0..<cfg.readOps).map { _ in Int(rng.next() % UInt64(cfg.n)) }
        var cs: [Contender] = []
        for s in stores {
            let key = s.key
            for id in [0, cfg.n / 2, cfg.n - 1] {
                guard try s.get(id) == ItemFactory.make(id: id) else { throw BenchError("\(key) returned a wrong item for id \(id)") }
            }
            cs.append(
                Contender(s, role: role(key)) { i in
                    guard try s.get(ids[i]) != nil else { throw BenchError("\(key): item \(ids[i]) missing") }
                })
        }
        return try interleaved(cs, maxOps: ids.count, maxSeconds: cfg.readSeconds)
    }

    /// A page in id order far into the store (offset n/2) and the first page, as a list
    /// view pages through items.
    func page() throws -> WorkloadResult {
        var w = WorkloadResult(
            name: "page", title: "id-order page of 20 items at offset \(cfg.n / 2) of \(cfg.n)",
            op: "one read transaction returning 20 items in id order from offset n/2 (decoded)", unit: "page")
        var cs: [Contender] = []
        let offset = cfg.n / 2
        for key in selected(Self.loadedKeys) {
            let s = try loadedStore(key)
            let first = try s.page(offset: offset, limit: 20)
            guard first.map(\.id) == Array(offset..<(offset + 20)) else {
                throw BenchError("\(key) returned a wrong page: \(first.prefix(3).map(\.id))")
            }
            cs.append(Contender(s, role: role(key)) { _ in _ = try s.page(offset: offset, limit: 20) })
        }
        w.rows = try interleaved(cs, maxOps: 2_000, maxSeconds: cfg.readSeconds)
        w.notes.append(
            "SQLite: SELECT * ... ORDER BY id LIMIT 20 OFFSET n/2 (it walks the offset in its B-tree); LMDB: a cursor walks the offset; LogStore: the ordered index skips to the offset by subtree counts."
        )
        return w
    }

    /// A row saying the scan was skipped, if one full scan of `s` would take longer than
    /// `cfg.scanCapSeconds`. The cost per item read is estimated from two scans limited to 200
    /// and 1,200 matches (40 % of ratings are >= 4, so they read about 500 and 3,000 items); their
    /// difference cancels fixed costs such as sorting the keys. Each is the fastest of three
    /// tries: one slow try (a cold frame cache, a burst of outside load) once made a 10 µs/item
    /// scan look like 71 µs/item and skipped it.
    func scanTooSlow(_ s: any BenchStore) throws -> Row? {
        func fastest(limit: Int) throws -> Double {
            var best = Double.infinity
            for _ in 0..<3 { best = min(best, try timeOnce { try s.scan(minRating: 4, limit: limit) }.1) }
            return best
        }
        let small = try fastest(limit: 200)
        let large = try fastest(limit: 1_200)
        let perItem = max(0, large - small) / (1_000 / 0.4)
        let estimate = perItem * Double(cfg.n)
        guard estimate > cfg.scanCapSeconds else { return nil }
        var r = Row(store: s, role: role(s.key), run: Run(), extra: ["estimated_scan_seconds": estimate])
        r.note =
            "skipped: one scan would take about \(Int(estimate)) s (\(Int(perItem * 1e6)) µs per item), over the \(Int(cfg.scanCapSeconds)) s cap"
        return r
    }

    func scan() throws -> WorkloadResult {
        var w = WorkloadResult(
            name: "scan", title: "predicate scan over all \(cfg.n) items (rating >= 4)",
            op: "one read transaction returning every item with rating >= 4 (decoded)", unit: "item scanned")
        var matches: Int?
        for key in selected(Self.loadedKeys) {
            let s = try loadedStore(key)
            if let skip = try scanTooSlow(s) {
                w.rows.append(skip)
                continue
            }
            var found = 0
            let run = try timedLoop(maxOps: cfg.scanReps, maxSeconds: cfg.scanSeconds) { _ in
                found = try s.scan(minRating: 4, limit: nil).count
            }
            if let m = matches, m != found { throw BenchError("\(key) found \(found) items, another system \(m)") }
            matches = found
            w.rows.append(Row(store: s, role: role(key), run: run, units: Double(cfg.n * run.ops), extra: ["matches": Double(found)]))
        }
        w.notes.append(
            "LogStore: #Predicate { $0.rating >= 4 } (every item decoded, predicate evaluated); SQLite: WHERE rating >= 4 without an index (LogStore has none either); LMDB and raw engine: cursor over all records, binary decode, filter."
        )
        return w
    }

    func count(predicate: Bool) throws -> WorkloadResult {
        var w = WorkloadResult(
            name: predicate ? "count-predicate" : "count",
            title: predicate ? "count of items with rating >= 4 among \(cfg.n)" : "count of all \(cfg.n) items",
            op: predicate ? "one read transaction counting items with rating >= 4" : "one read transaction counting all items",
            unit: "count")
        for key in selected(Self.loadedKeys) {
            let s = try loadedStore(key)
            if predicate, let skip = try scanTooSlow(s) {
                w.rows.append(skip)
                continue
            }
            var c = 0
            let run = try timedLoop(
                maxOps: predicate ? cfg.scanReps : cfg.countReps, maxSeconds: predicate ? cfg.scanSeconds : cfg.countSeconds
            ) { _ in
                c = predicate ? try s.count(minRating: 4) : try s.count()
            }
            if !predicate && c != cfg.n { throw BenchError("\(key) counted \(c) items, expected \(cfg.n)") }
            w.rows.append(Row(store: s, role: role(key), run: run, extra: ["result": Double(c)]))
        }
        w.notes.append(
            predicate
                ? "LogStore: countItems with #Predicate (decodes every item); SQLite: SELECT COUNT(*) WHERE rating >= 4 (no index); LMDB: cursor + decode."
                : "LogStore answers from its in-memory index; SQLite walks the table b-tree (COUNT(*)); LMDB reads mdb_stat's entry count.")
        return w
    }

    // MARK: Open

    /// `CHECKPOINT*` and the run files a format 4 checkpoint names (`NNNNNN.run`).
    static func checkpointFiles(_ dir: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.hasPrefix("CHECKPOINT") || $0.hasSuffix(".run") }
    }

    static func removeCheckpoints(_ dir: String) {
        for f in checkpointFiles(dir) { try? FileManager.default.removeItem(atPath: dir + "/" + f) }
    }

    /// `checkpointUsed` of a RecoveryReport, found by reflection so that this compiles before
    /// and after the engine gains the field. Nil if the field does not exist.
    static func checkpointUsed(_ r: RecoveryReport) -> Bool? {
        for c in Mirror(reflecting: r).children where c.label == "checkpointUsed" {
            if let b = c.value as? Bool { return b }
            if let o = c.value as? Bool? { return o }
        }
        return nil
    }

    func openTime() throws -> WorkloadResult {
        var w = WorkloadResult(
            name: "open", title: "open time of a store of \(cfg.n) items",
            op: "open the store and read one item (LogStore: LogEngine.open, i.e. recovery + index rebuild)", unit: "open")
        if !selected(["logstore"]).isEmpty { try openLogStore(&w) }
        for key in selected(["sqlite", "lmdb"]) {
            // Close the loaded store, then time opening it again (closing is not timed).
            let old = try loadedStore(key)
            try old.close()
            loaded[key] = nil
            var current: (any BenchStore)?
            let run = try timedLoop(maxOps: cfg.openReps, maxSeconds: cfg.openSeconds) { _ in
                let s: any BenchStore = key == "sqlite" ? try SQLiteStore(path: old.path, mode: .durable) : try LMDBStore(path: old.path)
                _ = try s.get(0)
                current = s
            } between: {
                try current?.close()
                current = nil
            }
            w.rows.append(Row(store: old, role: .peer, run: run))
            loaded[key] = current
        }
        w.notes.append(
            "Warm page cache (the files were just written). SQLite and LMDB read their b-tree lazily, so their open is nearly free; LogStore rebuilds its in-memory index from the log (or a checkpoint)."
        )
        return w
    }

    /// LogStore's open rows: full replay (checkpoint files removed first) and, when the engine
    /// writes checkpoints, open from a checkpoint.
    func openLogStore(_ w: inout WorkloadResult) throws {
        // Close the loaded DataStore, then open its directory with the engine (what setup() does).
        let ls = try loadedStore("logstore")
        try ls.close()
        loaded["logstore"] = nil
        let dir = ls.path
        var o = LogStoreOptions()
        o.durability = .synchronous
        func openEngine(removingCheckpoints: Bool) throws -> (Run, [String: Double]) {
            var last: RecoveryReport?
            var engine: LogEngine?
            let run = try timedLoop(maxOps: cfg.openReps, maxSeconds: cfg.openSeconds) { _ in
                let e = try LogEngine.open(directory: dir, fileSystem: POSIXFileSystem(), options: o.engine)
                _ = try e.snapshot().value(type: BenchItem.itemType, key: try ItemKey.make(0))
                last = e.recoveryReport
                engine = e
            } between: {
                try engine?.close()
                engine = nil
                if removingCheckpoints { Self.removeCheckpoints(dir) }
            }
            var extra: [String: Double] = [:]
            if let last {
                extra = ["transactions_replayed": Double(last.transactionsReplayed), "bytes_replayed": Double(last.bytesReplayed)]
                if let used = Self.checkpointUsed(last) { extra["checkpoint_used"] = used ? 1 : 0 }
            }
            return (run, extra)
        }
        #if LOGSTORE_HAS_CHECKPOINT
            do {
                let e = try LogEngine.open(directory: dir, fileSystem: POSIXFileSystem(), options: o)
                try e.checkpoint()
                try e.close()
            }
        #endif
        var checkpointRow: Row?
        if !Self.checkpointFiles(dir).isEmpty {
            let (run, extra) = try openEngine(removingCheckpoints: false)
            checkpointRow = Row(
                key: "logstore-checkpoint", system: "LogStore", config: "from checkpoint", role: .variant, run: run, extra: extra)
        }
        Self.removeCheckpoints(dir)
        let (full, extra) = try openEngine(removingCheckpoints: true)
        w.rows.append(Row(key: "logstore", system: "LogStore", config: "full log replay", role: .subject, run: full, extra: extra))
        if let checkpointRow {
            w.rows.append(checkpointRow)
        } else {
            w.notes.append("The engine wrote no checkpoint (no CHECKPOINT file after close), so only full replay was measured.")
        }
        loaded["logstore"] = try LogStoreDataStore(path: dir, mode: .durable)
    }

    // MARK: Memory

    func memory() throws -> WorkloadResult {
        var w = WorkloadResult(
            name: "memory", title: "memory held by the index of \(cfg.n) items",
            op: "open a store of \(cfg.n) items with the frame cache off (LogEngine.open, cacheSize 0)", unit: "open")
        let ls = try loadedStore("logstore")
        try ls.close()
        loaded["logstore"] = nil
        var o = LogStoreOptions()
        o.cacheSize = 0
        let heap0 = heapBytesInUse()
        let rss0 = residentBytes()
        let (engine, secs) = try timeOnce { try LogEngine.open(directory: ls.path, fileSystem: POSIXFileSystem(), options: o.engine) }
        let heap1 = heapBytesInUse()
        let rss1 = residentBytes()
        let count = try engine.snapshot().count(ofType: BenchItem.itemType)
        try engine.close()
        withExtendedLifetime(engine) {}
        let n = Double(count)
        let keyBytes = 8.0
        // Integer ids are 8-byte keys, which the index holds as one word.
        let entry = keyBytes + Double(MemoryLayout<RecordLocation>.stride)
        w.rows.append(
            Row(
                key: "logstore", system: "LogStore", config: "index of \(count) items", role: .subject, run: .once(seconds: secs), units: n,
                extra: [
                    "heap_bytes_per_item": (Double(heap1) - Double(heap0)) / n,
                    "rss_bytes_per_item": (Double(rss1) - Double(rss0)) / n,
                    "key_bytes": keyBytes,
                    "entry_layout_bytes": entry,
                ]))
        loaded["logstore"] = try LogStoreDataStore(path: ls.path, mode: .durable)
        w.notes.append(
            "heap_bytes_per_item: glibc heap in use (mallinfo2) after open minus before, per item; rss_bytes_per_item: the same from /proc/self/statm (includes freed-but-kept pages). entry_layout_bytes = the 8-byte key as the index holds it (one word) + MemoryLayout<RecordLocation>.stride, the floor without tree overhead. SQLite and LMDB keep no per-item heap structure (the OS page cache holds their pages)."
        )
        return w
    }

    // MARK: Compaction

    func compaction() throws -> WorkloadResult {
        var w = WorkloadResult(
            name: "compaction", title: "compaction after overwriting 50 % of \(cfg.n) items",
            op: "one LogEngine.compact()", unit: "live item")
        let dir = freshDir("compaction")
        let store = try LogStoreEngineStore(path: dir, mode: .buffered)
        _ = try load(store, n: cfg.n)
        try store.engine.flush()
        let live = Double(apparentBytes(dir))
        // Overwrite every other item, in batches.
        var start = 0
        while start < cfg.n {
            let ids = stride(from: start, to: min(cfg.n, start + 2 * cfg.batch), by: 2)
            try store.insertBatch(ids.map { ItemFactory.make(id: $0, version: 1) }[...])
            start += 2 * cfg.batch
        }
        try store.engine.flush()
        let before = Double(apparentBytes(dir))
        var extra: [String: Double] = ["live_bytes": live, "bytes_before": before, "size_before_vs_live": before / live]
        #if LOGSTORE_HAS_COMPACT
            let cpu0 = processCPUSeconds()
            let (report, secs) = try timeOnce { try store.engine.compact() }
            let cpu = processCPUSeconds() - cpu0
            let after = Double(apparentBytes(dir))
            extra["records_copied"] = Double(report.recordsCopied)
            extra["records_reencoded"] = Double(report.recordsReencoded)
            extra["bytes_after"] = after
            extra["size_after_vs_live"] = after / live
            extra["written_mb_per_second"] = after / secs / 1e6
            extra["read_mb_per_second"] = before / secs / 1e6
            w.rows.append(
                Row(
                    key: "logstore-engine", system: "LogStore engine", config: "compact()", role: .subject,
                    run: .once(seconds: secs, cpu: cpu), units: Double(cfg.n),
                    extra: extra))
            let bare = try Physical.sequentialWrite(path: freshDir("bare"), totalBytes: Int(after))
            w.rows.append(
                Row(
                    key: "bare-sequential-write", system: "disk: sequential write", config: "\(Fmt.bytes(after)) + 1 fsync", role: .limit,
                    run: bare, units: Double(cfg.n), extra: ["mb_per_second": after / bare.seconds / 1e6]))
        #else
            var run = Run()
            run.seconds = 0
            w.rows.append(
                Row(
                    key: "logstore-engine", system: "LogStore engine", config: "no compaction", role: .subject, run: run, extra: extra,
                    note: "size after 50 % overwrite only"))
            w.notes.append(
                "Compaction skipped: LogEngine has no public compact() yet. The manifest turns this workload on (LOGSTORE_HAS_COMPACT) once `public func compact(` appears in Sources/LogStoreEngine."
            )
        #endif
        remove(store)
        return w
    }

    // MARK: Child merge

    func childMerge() throws -> WorkloadResult {
        let changes = cfg.mergeChanges
        var w = WorkloadResult(
            name: "child-merge", title: "\(changes) changes through a child store and merge vs applied directly",
            op: "apply \(changes) item updates to a store of \(2 * changes) items", unit: "change")
        let s = try LogStoreDataStore(path: freshDir("merge"), mode: .durable)
        _ = try load(s, n: 2 * changes)
        var direct = Run()
        var viaChild = Run()
        var childWrite: [Double] = []
        var merge: [Double] = []
        let reps = cfg.quick ? 3 : 5
        for rep in 0..<reps {
            let v1 = UInt64(2 * rep + 1)
            let a = (0..<changes).map { ItemFactory.make(id: $0 * 2, version: v1) }
            let c0 = processCPUSeconds()
            let (_, d) = try timeOnce { try s.store.writeSync { acc in for i in a { try acc.insert(i) } } }
            direct.cpuSeconds += processCPUSeconds() - c0
            direct.latencies.append(UInt64(d * 1e9))
            direct.seconds += d
            let b = (0..<changes).map { ItemFactory.make(id: $0 * 2, version: v1 + 1) }
            let c1 = processCPUSeconds()
            let t0 = nowNanos()
            let child = try s.store.makeChildDataStore()
            try child.writeSync { acc in for i in b { try acc.insert(i) } }
            let t1 = nowNanos()
            try s.store.merge(child)
            let t2 = nowNanos()
            viaChild.cpuSeconds += processCPUSeconds() - c1
            viaChild.latencies.append(t2 - t0)
            viaChild.seconds += Double(t2 - t0) / 1e9
            childWrite.append(Double(t1 - t0) / 1e9)
            merge.append(Double(t2 - t1) / 1e9)
        }
        func median(_ a: [Double]) -> Double { a.sorted()[a.count / 2] }
        let total = Double(changes * reps)
        w.rows.append(
            Row(
                key: "logstore", system: "LogStore", config: "child writeSync + parent.merge", role: .subject, run: viaChild, units: total,
                extra: ["child_write_seconds_median": median(childWrite), "merge_seconds_median": median(merge)]))
        w.rows.append(
            Row(key: "logstore-direct", system: "LogStore", config: "one parent writeSync", role: .reference, run: direct, units: total))
        w.notes.append(
            "Each repetition updates the same \(changes) items (new values) once directly and once through a new child store; durable (.synchronous)."
        )
        remove(s)
        return w
    }

    // MARK: LZ4

    func lz4() throws -> WorkloadResult {
        let n = cfg.lz4Items
        var w = WorkloadResult(
            name: "lz4", title: "LZ4 on text-heavy items (\(cfg.lz4TextBytes)-byte text), \(n) items in transactions of \(cfg.batch)",
            op: "one transaction of \(cfg.batch) inserts (durability .none, so CPU is what is measured)", unit: "item")
        // (key, DataStore or engine, LZ4, options): the defaults (values stored raw, compressed
        // later by the recompression pass at LZ4HC 3), no LZ4, the pass at other levels, and
        // writers compressing each value as they commit (compressOnWrite).
        typealias Tune = (inout LogStoreOptions) -> String
        let lazy: (Int) -> Tune = { level in
            { o in
                o.compressOnWrite = false
                o.recompressionLevel = level
                return ", recompression " + (level == 0 ? "LZ4" : "LZ4HC \(level)")
            }
        }
        let eager: Tune = { o in
            o.compressOnWrite = true
            return ", compressOnWrite true"
        }
        let cases: [(String, Bool, Bool, Tune?)] = [
            ("logstore", true, true, nil), ("logstore-nolz4", true, false, nil),
            ("logstore-lazy", true, true, lazy(0)), ("logstore-lazy-hc9", true, true, lazy(9)), ("logstore-eager", true, true, eager),
            ("logstore-engine", false, true, nil), ("logstore-engine-nolz4", false, false, nil),
            ("logstore-engine-eager", false, true, eager),
        ]
        for (key, dataStore, lz4, tune) in cases where systems?.contains(key) ?? true {
            let path = freshDir(key)
            let store: any BenchStore =
                dataStore
                ? try LogStoreDataStore(
                    path: path, mode: .durable, compression: lz4, durability: Durability.none, tune: tune ?? { _ in "" })
                : try LogStoreEngineStore(
                    path: path, mode: .durable, compression: lz4, durability: Durability.none, tune: tune ?? { _ in "" })
            let options = (store as? LogStoreDataStore)?.options ?? (store as? LogStoreEngineStore)?.options ?? LogStoreOptions()
            var run = Run()
            var start = 0
            var cpu = 0.0
            while start < n {
                let end = min(n, start + cfg.batch)
                let items = (start..<end).map { ItemFactory.make(id: $0, textBytes: cfg.lz4TextBytes) }
                let c0 = processCPUSeconds()
                let t0 = nowNanos()
                try store.insertBatch(items[...])
                run.latencies.append(nowNanos() - t0)
                cpu += processCPUSeconds() - c0
                start = end
            }
            run.seconds = Double(run.latencies.reduce(0, +)) / 1e9
            run.cpuSeconds = cpu
            let bytes = Double(apparentBytes(store.path))
            var extra = ["log_bytes": bytes, "cpu_seconds": cpu, "bytes_per_item": bytes / Double(n)]
            // Then a full compaction (a verbatim copy) and the recompression pass, each timed, as
            // `logstore-compact compact` and `compact --recompress` run them: the size a store
            // settles at.
            try store.close()
            var engineOptions = options.engine
            engineOptions.autoCompaction = false
            engineOptions.autoRecompression = false
            let engine = try LogEngine.open(directory: path, fileSystem: POSIXFileSystem(), options: engineOptions)
            var c0 = processCPUSeconds()
            var t0 = nowNanos()
            _ = try engine.compact()
            extra["compaction_cpu_seconds"] = processCPUSeconds() - c0
            extra["compaction_seconds"] = Double(nowNanos() - t0) / 1e9
            extra["log_bytes_compacted_only"] = Double(apparentBytes(path))
            c0 = processCPUSeconds()
            t0 = nowNanos()
            let recompressed = try engine.recompress()
            extra["recompression_cpu_seconds"] = processCPUSeconds() - c0
            extra["recompression_seconds"] = Double(nowNanos() - t0) / 1e9
            extra["records_recompressed"] = Double(recompressed.recordsRecompressed)
            extra["dictionaries_trained"] = Double(recompressed.dictionariesTrained)
            try engine.close()
            extra["log_bytes_compacted"] = Double(apparentBytes(path))
            w.rows.append(
                Row(
                    key: key, system: store.name, config: store.config, role: key == "logstore" ? .subject : .variant, run: run,
                    units: Double(n), extra: extra))
            try? FileManager.default.removeItem(atPath: path)
        }
        w.notes.append(
            "cpu_seconds: process user+system CPU during the write calls. log_bytes: the store's files after writing; log_bytes_compacted_only: after closing it and running one full LogEngine.compact(), a verbatim copy (compaction_cpu_seconds, compaction_seconds); log_bytes_compacted: after LogEngine.recompress() then ran too (recompression_cpu_seconds, recompression_seconds). Item text: 3 words in 4 from a 75-word vocabulary, 1 in 4 random letters."
        )
        return w
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ s: String) { description = s }
}
