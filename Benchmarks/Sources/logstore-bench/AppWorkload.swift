import Foundation
import GRDB
import LogStore
import LogStoreEngine

// The app workload: the queries of a food-delivery app answered through declared indexes,
// LogStore side by side with SQLite (GRDB) holding the same rows and the matching SQL indexes;
// what two secondary indexes cost a bulk insert, an open from a checkpoint and memory.

/// The app's data set in both stores, loaded once (untimed) by the first query workload.
final class AppStores {
    let logstore: LogDataStore
    let logstorePath: String
    let sqlite: AppSQLite
    /// Kept at the end of the run (`--app-dir`).
    let kept: Bool
    /// Seconds the loads took (shown in the notes, not a target); nil when reused.
    var loadSeconds: (logstore: Double, sqlite: Double)?

    init(logstore: LogDataStore, logstorePath: String, sqlite: AppSQLite, kept: Bool) {
        self.logstore = logstore
        self.logstorePath = logstorePath
        self.sqlite = sqlite
        self.kept = kept
    }
}

extension Bench {
    static let appWorkloadNames = [
        "app-menu", "app-open-cuisine", "app-orders-24h", "app-browse", "app-bulk-insert", "app-open", "app-index-memory",
    ]

    /// Untimed queries each contender runs before a query workload is timed.
    var appWarmUpOps: Int { 2_000 }

    /// Runs one app workload by name; nil for a name that is not one.
    func runApp(_ name: String) throws -> WorkloadResult? {
        switch name {
        case "app-menu": return try appMenu()
        case "app-open-cuisine": return try appOpenCuisine()
        case "app-orders-24h": return try appOrders24h()
        case "app-browse": return try appBrowse()
        case "app-bulk-insert": return try appBulkInsert()
        case "app-open": return try appOpen()
        case "app-index-memory": return try appIndexMemory()
        default: return nil
        }
    }

    /// Inserts `count` rows made by `make` in transactions of `cfg.batch` with `insert`; returns
    /// the seconds it took.
    func appLoad<R>(_ count: Int, _ make: (Int) -> R, _ insert: (ArraySlice<R>) throws -> Void) throws -> Double {
        let t0 = nowNanos()
        var start = 0
        while start < count {
            let end = min(count, start + cfg.batch)
            try insert((start..<end).map(make)[...])
            start = end
        }
        return Double(nowNanos() - t0) / 1e9
    }

    /// The app's stores: 20,000 restaurants, 400,000 menu items and 200,000 orders in a LogStore
    /// whose types declare their indexes and in SQLite with the matching indexes (loaded once).
    /// With `--app-dir DIR` they live in DIR and are kept: a later run (a profile) reuses them.
    func appStores() throws -> AppStores {
        if let s = appData { return s }
        let kept = appDirectory != nil
        let path = appDirectory.map { $0 + "/logstore" } ?? freshDir("app-logstore")
        let sqlitePath = appDirectory.map { $0 + "/sqlite" } ?? freshDir("app-sqlite")
        let reuse = kept && FileManager.default.fileExists(atPath: sqlitePath + "/app.sqlite")
        var o = LogStoreOptions()
        o.durability = .synchronous
        let store = LogDataStore(directory: URL(fileURLWithPath: path), options: o)
        try store.setup()
        let sqlite: AppSQLite = reuse ? try AppSQLite(existing: sqlitePath) : try AppSQLite(path: sqlitePath)
        let stores = AppStores(logstore: store, logstorePath: path, sqlite: sqlite, kept: kept)
        if !reuse {
            log(
                "  loading the app's data set (\(AppData.restaurants) restaurants, \(AppData.menuItems) menu items, \(AppData.orders) orders) into LogStore and SQLite (untimed)"
            )
            func write<R: DataStoreItem>(_ items: ArraySlice<R>) throws { try store.writeSync { a in for i in items { try a.insert(i) } } }
            var ls = try appLoad(AppData.restaurants, AppData.restaurant, write)
            ls += try appLoad(AppData.menuItems, AppData.menuItem, write)
            ls += try appLoad(AppData.orders, AppData.order, write)
            var sq = try appLoad(AppData.restaurants, AppData.restaurant, sqlite.insert)
            sq += try appLoad(AppData.menuItems, AppData.menuItem, sqlite.insert)
            sq += try appLoad(AppData.orders, AppData.order, sqlite.insert)
            stores.loadSeconds = (ls, sq)
        }
        appData = stores
        return stores
    }

    /// Closes the app's stores, and removes them unless `--app-dir` keeps them.
    func closeApp() {
        guard let s = appData else { return }
        try? s.logstore.tearDown()
        try? s.sqlite.close()
        if !s.kept {
            try? FileManager.default.removeItem(atPath: s.logstorePath)
            try? FileManager.default.removeItem(atPath: s.sqlite.path)
        }
        appData = nil
    }

    /// The SQL GRDB's query interface generates for `request`, made once so that the fair peer
    /// runs it as a cached prepared statement (the runner's point reads explain why: building and
    /// preparing the SQL on every call more than doubled a point read's cost).
    func appSQL<R: FetchRequest>(_ sqlite: AppSQLite, _ request: R) throws -> String {
        try sqlite.pool.read { db in try request.makePreparedRequest(db, forSingleResult: false).statement.sql }
    }

    /// One interleaved comparison of a query: LogStore, SQLite with the index through a cached
    /// statement (the peer the ratio is against) and through the query interface on every call
    /// (a reference). `check` compares the three answers for a few parameters first.
    func appQuery(
        _ w: inout WorkloadResult, logstore: @escaping (Int) throws -> [Int], cached: @escaping (Int) throws -> [Int],
        queryInterface: @escaping (Int) throws -> [Int], sql: String, plan: DataStoreQueryPlan
    ) throws {
        let withSQLite = systems?.contains("sqlite") ?? true
        for i in 0..<5 where withSQLite {
            let a = try logstore(i)
            let b = try cached(i)
            let c = try queryInterface(i)
            guard a == b, b == c else {
                throw BenchError(
                    "\(w.name): LogStore and SQLite disagree for parameter \(i): \(a.prefix(5)) vs \(b.prefix(5)) vs \(c.prefix(5))")
            }
        }
        let contenders = [
            Contender(key: "logstore", system: "LogStore", config: "declared DataStoreIndex", role: .subject) { i in _ = try logstore(i) },
            Contender(key: "sqlite-index", system: "SQLite (GRDB)", config: "SQL index, cached statement", role: .peer) { i in
                _ = try cached(i)
            },
            Contender(key: "sqlite-index-qi", system: "SQLite (GRDB)", config: "SQL index, query interface", role: .reference) { i in
                _ = try queryInterface(i)
            },
        ].filter { c in systems.map { $0.contains(c.key.hasPrefix("sqlite") ? "sqlite" : "logstore") } ?? true }
        // Warm up (untimed): caches (LogStore's frame cache, SQLite's page cache) reach the state
        // they keep while queries run.
        for (key, op) in [("logstore", logstore), ("sqlite-index", cached), ("sqlite-index-qi", queryInterface)]
        where contenders.contains(where: { $0.key == key }) {
            for i in 0..<appWarmUpOps { _ = try op(i) }
        }
        w.rows = try interleaved(contenders, maxOps: cfg.readOps / 4, maxSeconds: cfg.readSeconds * 1.5)
        w.notes.append(
            "LogStore plan: \(plan.access), index \(plan.index ?? "-"), ranges \(plan.ranges), sorted by index \(plan.sortedByIndex), residual \(plan.residual ?? "none"), \(plan.itemsVisited) items visited for \(plan.resultCount) results."
        )
        w.notes.append("SQLite: \(sql) (the query interface's SQL; the cached-statement row prepares it once per connection).")
        if let l = appData?.loadSeconds {
            w.notes.append(
                String(
                    format:
                        "Data set loaded once (untimed): LogStore %.1f s, SQLite %.1f s, durable transactions of %d rows. Interleaved in %d rounds.",
                    l.logstore, l.sqlite, cfg.batch, cfg.rounds))
        }
    }

    // MARK: Queries

    /// The menu of one restaurant: `restaurantId == x`, sorted by category, then name.
    func appMenu() throws -> WorkloadResult {
        var w = WorkloadResult(
            name: "app-menu",
            title: "menu of one restaurant (restaurantId == x, sorted by category, name), \(AppData.menuItems) menu items",
            op: "one read transaction returning one restaurant's menu items, decoded (about 20)", unit: "query")
        let s = try appStores()
        var rng = SplitMix64(seed: 13)
        let ids = (0..<4_096).map { _ in Int(rng.next() % UInt64(AppData.restaurants)) }
        func request(_ rid: Int) -> DataStoreRequest<MenuItem> { menuRequest(restaurant: rid, limit: nil) }
        let qi = { (rid: Int) in menuQuery(restaurant: rid) }
        let sql = try appSQL(s.sqlite, qi(0))
        let plan = try s.logstore.read { try $0.explain(request(ids[0])) }
        try appQuery(
            &w,
            logstore: { i in try s.logstore.read { try $0.items(forRequest: request(ids[i % ids.count])) }.map(\.id) },
            cached: { i in
                try s.sqlite.pool.read { db in try MenuItem.fetchAll(try db.cachedStatement(sql: sql), arguments: [ids[i % ids.count]]) }
                    .map(\.id)
            },
            queryInterface: { i in try s.sqlite.pool.read { db in try qi(ids[i % ids.count]).fetchAll(db) }.map(\.id) },
            sql: sql, plan: plan)
        return w
    }

    /// Open restaurants of one cuisine, best first, 20 of them.
    func appOpenCuisine() throws -> WorkloadResult {
        var w = WorkloadResult(
            name: "app-open-cuisine",
            title:
                "open restaurants of one cuisine, best first, limit 20 (cuisine == c && isOpen, rating descending), \(AppData.restaurants) restaurants",
            op: "one read transaction returning 20 restaurants, decoded", unit: "query")
        let s = try appStores()
        func request(_ cuisine: String) -> DataStoreRequest<Restaurant> {
            var r = DataStoreRequest(itemType: Restaurant.self)
            r.predicate = #Predicate<Restaurant> { $0.cuisine == cuisine && $0.isOpen }
            r.sortDescriptors = [SortDescriptor(\.rating, order: .reverse)]
            r.limit = 20
            return r
        }
        let qi = { (cuisine: String) in
            Restaurant.filter(Column("cuisine") == cuisine && Column("isOpen") == true).order(Column("rating").desc, Column("id")).limit(20)
        }
        let sql = try appSQL(s.sqlite, qi(""))
        let cuisines = AppData.cuisines
        let plan = try s.logstore.read { try $0.explain(request(cuisines[0])) }
        try appQuery(
            &w,
            logstore: { i in try s.logstore.read { try $0.items(forRequest: request(cuisines[i % cuisines.count])) }.map(\.id) },
            cached: { i in
                try s.sqlite.pool.read { db in
                    try Restaurant.fetchAll(try db.cachedStatement(sql: sql), arguments: [cuisines[i % cuisines.count], true])
                }.map(\.id)
            },
            queryInterface: { i in try s.sqlite.pool.read { db in try qi(cuisines[i % cuisines.count]).fetchAll(db) }.map(\.id) },
            sql: sql, plan: plan)
        return w
    }

    /// The number of orders placed in the last 24 hours.
    func appOrders24h() throws -> WorkloadResult {
        var w = WorkloadResult(
            name: "app-orders-24h",
            title: "count of orders in the last 24 h (createdAt > now - 24 h), \(AppData.orders) orders over 30 days",
            op: "one read transaction counting the orders (countItems / fetchCount)", unit: "query")
        let s = try appStores()
        // A few "nows" a second apart, so that each query is a different range.
        let since = (0..<64).map { AppData.now.addingTimeInterval(-86_400 + Double($0)) }
        func request(_ t: Date) -> DataStoreRequest<DeliveryOrder> {
            var r = DataStoreRequest(itemType: DeliveryOrder.self)
            r.predicate = #Predicate<DeliveryOrder> { $0.createdAt > t }
            return r
        }
        let qi = { (t: Date) in DeliveryOrder.filter(Column("createdAt") > t) }
        // What the query interface's fetchCount runs for this request.
        let countSQL = "SELECT COUNT(*) FROM \"deliveryOrder\" WHERE \"createdAt\" > ?"
        let plan = try s.logstore.read { try $0.explainCount(request(since[0])) }
        try appQuery(
            &w,
            logstore: { i in [try s.logstore.read { try $0.countItems(forRequest: request(since[i % since.count])) }] },
            cached: { i in
                [
                    try s.sqlite.pool.read { db in
                        try Int.fetchOne(try db.cachedStatement(sql: countSQL), arguments: [since[i % since.count]]) ?? -1
                    }
                ]
            },
            queryInterface: { i in [try s.sqlite.pool.read { db in try qi(since[i % since.count]).fetchCount(db) }] },
            sql: countSQL, plan: plan)
        if let c = try? s.logstore.read({ try $0.countItems(forRequest: request(since[0])) }) {
            w.notes.append("\(c) orders in the window.")
        }
        return w
    }

    /// Browsing restaurants by name: the 11th page of 20.
    func appBrowse() throws -> WorkloadResult {
        var w = WorkloadResult(
            name: "app-browse", title: "browse restaurants by name, offset 200, limit 20, \(AppData.restaurants) restaurants",
            op: "one read transaction returning 20 restaurants in name order from offset 200, decoded", unit: "query")
        let s = try appStores()
        var request = DataStoreRequest(itemType: Restaurant.self)
        request.sortDescriptors = [SortDescriptor(\.name)]
        request.offset = 200
        request.limit = 20
        let r = request
        let qi = Restaurant.order(Column("name"), Column("id")).limit(20, offset: 200)
        let sql = try appSQL(s.sqlite, qi)
        let plan = try s.logstore.read { try $0.explain(r) }
        try appQuery(
            &w,
            logstore: { _ in try s.logstore.read { try $0.items(forRequest: r) }.map(\.id) },
            cached: { _ in try s.sqlite.pool.read { db in try Restaurant.fetchAll(try db.cachedStatement(sql: sql)) }.map(\.id) },
            queryInterface: { _ in try s.sqlite.pool.read { db in try qi.fetchAll(db) }.map(\.id) },
            sql: sql, plan: plan)
        return w
    }

    // MARK: Bulk insert, open, memory

    /// Bulk insert of n menu items into a type with two secondary indexes and into one with none,
    /// LogStore and SQLite, batch by batch in turn.
    func appBulkInsert() throws -> WorkloadResult {
        let n = cfg.n
        var w = WorkloadResult(
            name: "app-bulk-insert", title: "bulk insert of \(n) menu items with 2 secondary indexes vs none, durable",
            op: "one durable transaction of \(cfg.batch) inserts", unit: "item")
        closeAppBulk()
        let indexedPath = freshDir("app-bulk-indexed")
        let plainPath = freshDir("app-bulk-plain")
        var o = LogStoreOptions()
        o.durability = .synchronous
        let indexed = LogDataStore(directory: URL(fileURLWithPath: indexedPath), options: o)
        let plain = LogDataStore(directory: URL(fileURLWithPath: plainPath), options: o)
        try indexed.setup()
        try plain.setup()
        let sqlIndexed = try AppSQLite(path: freshDir("app-bulk-sqlite-indexed"))
        let sqlPlain = try AppSQLite(path: freshDir("app-bulk-sqlite-plain"), withIndexes: false)
        defer {
            try? sqlIndexed.close()
            try? sqlPlain.close()
            try? FileManager.default.removeItem(atPath: sqlIndexed.path)
            try? FileManager.default.removeItem(atPath: sqlPlain.path)
        }
        struct Contestant {
            var key: String, system: String, config: String, role: Row.Role
            var insert: (ArraySlice<MenuItem>) throws -> Void
            var run = Run()
        }
        var cs = [
            Contestant(key: "logstore-indexed", system: "LogStore", config: "2 secondary indexes", role: .subject) { items in
                try indexed.writeSync { a in for i in items { try a.insert(i) } }
            },
            Contestant(key: "logstore-plain", system: "LogStore", config: "no secondary index", role: .variant) { items in
                try plain.writeSync { a in for i in items { try a.insert(PlainMenuItem(i)) } }
            },
            Contestant(key: "sqlite-indexed", system: "SQLite (GRDB)", config: "2 SQL indexes", role: .reference) { items in
                try sqlIndexed.insert(items)
            },
            Contestant(key: "sqlite-plain", system: "SQLite (GRDB)", config: "no index", role: .reference) { items in
                try sqlPlain.insert(items.map(PlainMenuItem.init)[...])
            },
        ].filter { c in systems.map { $0.contains(c.key.hasPrefix("sqlite") ? "sqlite" : "logstore") } ?? true }
        var start = 0
        var b = 0
        while start < n {
            let end = min(n, start + cfg.batch)
            let items = (start..<end).map(AppData.menuItem)[...]
            // A rotating order: outside load hits each contestant alike.
            for j in cs.indices {
                let k = (j + b) % cs.count
                let c0 = processCPUSeconds()
                let t0 = nowNanos()
                try cs[k].insert(items)
                cs[k].run.latencies.append(nowNanos() - t0)
                cs[k].run.cpuSeconds += processCPUSeconds() - c0
            }
            start = end
            b += 1
        }
        for c in cs {
            var run = c.run
            run.seconds = Double(run.latencies.reduce(0, +)) / 1e9
            w.rows.append(
                Row(
                    key: c.key, system: c.system, config: c.config, role: c.role, run: run, units: Double(n),
                    extra: ["cpu_seconds": run.cpuSeconds]))
        }
        appBulk = (indexed, indexedPath, plain, plainPath)
        if let a = w.row("logstore-indexed"), let p = w.row("logstore-plain"), let ca = a.extra["cpu_seconds"],
            let cp = p.extra["cpu_seconds"]
        {
            w.notes.append(
                String(
                    format: "LogStore with 2 indexes takes %.2fx the time and %.2fx the CPU of no index; SQLite %.2fx the time.",
                    a.seconds / p.seconds,
                    ca / cp, (w.row("sqlite-indexed")?.seconds ?? 0) / (w.row("sqlite-plain")?.seconds ?? 1)))
        }
        w.notes.append(
            "Four fresh stores fed the same batches in turn (rotating order). Indexes: MenuItem's (restaurantId, category, name) and (price); the plain type holds the same values and declares none. cpu_seconds: process CPU during the inserts (LogStore's background syncs included)."
        )
        return w
    }

    /// Closes and removes the bulk-insert stores.
    func closeAppBulk() {
        guard let b = appBulk else { return }
        try? b.indexed.tearDown()
        try? b.plain.tearDown()
        try? FileManager.default.removeItem(atPath: b.indexedPath)
        try? FileManager.default.removeItem(atPath: b.plainPath)
        appBulk = nil
    }

    /// The bulk-insert LogStores (made, untimed, if app-bulk-insert did not run), closed: their paths.
    func appBulkPaths() throws -> (indexed: String, plain: String) {
        if appBulk == nil {
            log("  loading \(cfg.n) menu items into two LogStores, with and without indexes (untimed)")
            var o = LogStoreOptions()
            o.durability = .buffered
            let ip = freshDir("app-bulk-indexed")
            let pp = freshDir("app-bulk-plain")
            let i = LogDataStore(directory: URL(fileURLWithPath: ip), options: o)
            let p = LogDataStore(directory: URL(fileURLWithPath: pp), options: o)
            try i.setup()
            try p.setup()
            _ = try appLoad(cfg.n, AppData.menuItem) { items in try i.writeSync { a in for m in items { try a.insert(m) } } }
            _ = try appLoad(cfg.n, AppData.menuItem) { items in try p.writeSync { a in for m in items { try a.insert(PlainMenuItem(m)) } } }
            appBulk = (i, ip, p, pp)
        }
        guard let b = appBulk else { throw BenchError("no bulk stores") }
        // Closed (again, harmlessly, after an earlier call): the open workload reopens them.
        try? b.indexed.tearDown()
        try? b.plain.tearDown()
        return (b.indexedPath, b.plainPath)
    }

    /// Opening a store of n menu items from a checkpoint, with MenuItem's 2 indexes and without.
    func appOpen() throws -> WorkloadResult {
        var w = WorkloadResult(
            name: "app-open", title: "open from a checkpoint: \(cfg.n) menu items with 2 secondary indexes vs none",
            op: "LogEngine.open of a store with a checkpoint, then one read", unit: "open")
        let (ip, pp) = try appBulkPaths()
        var o = LogStoreOptions()
        o.durability = .synchronous
        // Closing writes a checkpoint (LogStoreOptions.checkpointOnClose).
        for dir in [ip, pp] {
            try LogEngine.open(directory: dir, fileSystem: POSIXFileSystem(), options: o.engine).close()
            guard !Self.checkpointFiles(dir).isEmpty else { throw BenchError("app-open: no checkpoint in \(dir) after close") }
        }
        let cases: [(key: String, config: String, role: Row.Role, dir: String, type: String)] = [
            ("logstore-indexed", "2 secondary indexes", .subject, ip, MenuItem.itemType),
            ("logstore-plain", "no secondary index", .variant, pp, PlainMenuItem.itemType),
        ]
        var runs = Array(repeating: Run(), count: cases.count)
        var indexesLoaded = [Int](repeating: 0, count: cases.count)
        let reps = max(cfg.openReps, 5)
        for rep in 0..<reps {
            for j in cases.indices {
                let k = (j + rep) % cases.count
                let c = cases[k]
                let c0 = processCPUSeconds()
                let t0 = nowNanos()
                let e = try LogEngine.open(directory: c.dir, fileSystem: POSIXFileSystem(), options: o.engine)
                _ = try e.snapshot().value(type: c.type, key: try ItemKey.make(0))
                let dt = nowNanos() - t0
                runs[k].cpuSeconds += processCPUSeconds() - c0
                runs[k].latencies.append(dt)
                runs[k].seconds += Double(dt) / 1e9
                guard Self.checkpointUsed(e.recoveryReport) != false else {
                    throw BenchError("app-open: \(c.key) did not open from its checkpoint")
                }
                indexesLoaded[k] = try e.snapshot().secondaryIndexes(ofType: c.type).count
                try e.close()
            }
        }
        guard indexesLoaded[0] == 2, indexesLoaded[1] == 0 else {
            throw BenchError("app-open: the checkpoints hold \(indexesLoaded) secondary indexes, expected [2, 0]")
        }
        for (k, c) in cases.enumerated() {
            w.rows.append(
                Row(
                    key: c.key, system: "LogStore", config: c.config, role: c.role, run: runs[k],
                    extra: ["checkpoint_bytes": Self.checkpointBytes(c.dir)]))
        }
        w.notes.append(
            "Both stores hold the same \(cfg.n) menu items (written by app-bulk-insert), each with a checkpoint written just before; opens alternate, \(reps) each, warm page cache. ratio > 1 would mean the indexed store opens faster; the target is its time ≤ 1.3x the plain store's."
        )
        return w
    }

    static func checkpointBytes(_ dir: String) -> Double {
        checkpointFiles(dir).reduce(0) { total, f in
            let size = (try? FileManager.default.attributesOfItem(atPath: dir + "/" + f)[.size] as? NSNumber)?.doubleValue
            return total + (size ?? 0)
        }
    }

    /// Heap memory of MenuItem's two indexes over n items, built on an open engine.
    func appIndexMemory() throws -> WorkloadResult {
        var w = WorkloadResult(
            name: "app-index-memory", title: "memory of secondary indexes over \(cfg.n) menu items",
            op: "LogEngine.declareIndexes building one index from the records", unit: "build")
        let (_, pp) = try appBulkPaths()
        var o = LogStoreOptions()
        o.cacheSize = 0
        let e = try LogEngine.open(directory: pp, fileSystem: POSIXFileSystem(), options: o.engine)
        defer { try? e.close() }
        let type = PlainMenuItem.itemType
        let compound = IndexDefinition(attributes: [["restaurantId"], ["category"], ["name"]])
        let price = IndexDefinition(attributes: [["price"]])
        var valueBytes = (compound: 0, price: 0)
        for id in 0..<cfg.n {
            let v = AppData.menuValueBytes(AppData.menuItem(id))
            valueBytes.compound += v.compound
            valueBytes.price += v.price
        }
        let heap0 = heapBytesInUse()
        let (_, s1) = try timeOnce { try e.declareIndexes([compound], ofType: type) }
        let heap1 = heapBytesInUse()
        let (_, s2) = try timeOnce { try e.declareIndexes([compound, price], ofType: type) }
        let heap2 = heapBytesInUse()
        let summaries = try e.snapshot().secondaryIndexSummaries.filter { $0.type == type }
        let n = Double(cfg.n)
        for (name, definition, heap, secs, values) in [
            ("compound", compound, Double(heap1) - Double(heap0), s1, valueBytes.compound),
            ("price", price, Double(heap2) - Double(heap1), s2, valueBytes.price),
        ] {
            let summary = summaries.first { $0.definition == definition.description }
            var run = Run()
            run.latencies = [UInt64(secs * 1e9)]
            run.seconds = secs
            let perEntry = heap / n
            let valuePerEntry = Double(values) / n
            w.rows.append(
                Row(
                    key: "logstore-\(name)", system: "LogStore", config: "index \(definition.description)",
                    role: name == "compound" ? .subject : .variant,
                    run: run, units: 1,
                    extra: [
                        "heap_bytes_per_entry": perEntry, "value_bytes_per_entry": valuePerEntry,
                        "overhead_bytes_per_entry": perEntry - valuePerEntry,
                        "encoded_entry_bytes": Double(summary?.entryBytes ?? 0) / n,
                        "estimated_bytes_per_entry": Double(summary?.estimatedMemoryBytes ?? 0) / n,
                    ]))
        }
        w.notes.append(
            "heap_bytes_per_entry: glibc heap in use (mallinfo2, after malloc_trim) after declaring the index minus before, per entry, frame cache off. value_bytes_per_entry: the indexed values' own bytes (8 per number, UTF-8 per string) plus the 8-byte id each entry must hold; overhead_bytes_per_entry is the rest (target ≤ 40). encoded_entry_bytes: the entry's order-preserving encoding (tags, 12-byte numbers, string terminators). estimated_bytes_per_entry: what `logstore-compact stats` reports."
        )
        return w
    }
}

/// The app workload's targets, checked against a run.
func appTargets(_ r: BenchReport) -> [TargetResult] {
    var out: [TargetResult] = []
    func row(_ w: String, _ k: String) -> Row? { r.workload(w)?.row(k) }
    func target(
        _ id: String, _ goal: String, _ value: Double?, met: (Double) -> Bool, text: (Double) -> String = { String(format: "%.2fx", $0) }
    ) {
        out.append(
            TargetResult(
                id: id, goal: goal, measured: value, measuredText: value.map(text) ?? "-", met: value.map(met),
                note: value == nil ? "workload not run" : nil))
    }
    for (w, goal) in [
        ("app-menu", "menu of one restaurant: ≥ 2× SQLite with index"),
        ("app-open-cuisine", "open restaurants of a cuisine, best 20: ≥ 2× SQLite with index"),
        ("app-orders-24h", "count of orders in the last 24 h: ≥ 2× SQLite with index"),
        ("app-browse", "browse by name, offset 200, limit 20: ≥ 2× SQLite with index"),
    ] {
        target(w, goal, row(w, "sqlite-index")?.ratio, met: { $0 >= 2 })
    }
    target("scan-unindexed", "unindexed predicate scan (rating >= 4): ≥ 2× SQLite", row("scan", "sqlite-full")?.ratio, met: { $0 >= 2 })
    target(
        "count-unindexed", "unindexed countItems with a predicate: ≥ 1× SQLite", row("count-predicate", "sqlite-full")?.ratio,
        met: { $0 >= 1 })
    var bulk: Double?
    if let a = row("app-bulk-insert", "logstore-indexed"), let p = row("app-bulk-insert", "logstore-plain"), p.seconds > 0 {
        bulk = a.seconds / p.seconds
    }
    target("app-bulk-insert", "bulk insert with 2 indexes: ≤ 1.5× the time without", bulk, met: { $0 <= 1.5 })
    let memory = ["compound", "price"].compactMap { row("app-index-memory", "logstore-\($0)")?.extra["overhead_bytes_per_entry"] }.max()
    target(
        "app-index-memory", "index memory: ≤ 40 B per entry + the indexed values' bytes", memory, met: { $0 <= 40 },
        text: { String(format: "%.0f B/entry over the values", $0) })
    var open: Double?
    if let a = row("app-open", "logstore-indexed")?.p50Micros, let p = row("app-open", "logstore-plain")?.p50Micros, p > 0 { open = a / p }
    target("app-open", "open from a checkpoint with 2 indexes: ≤ 1.3× without", open, met: { $0 <= 1.3 })
    return out
}
