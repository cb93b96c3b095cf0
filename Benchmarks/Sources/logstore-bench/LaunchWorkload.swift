import Foundation
import GRDB
import LogStore
import LogStoreEngine

extension Bench {
    /// The sizes the launch workload measures: 100,000 items, N and 4,000,000 (N alone in quick
    /// and development runs), so that its growth with the store shows in one run.
    var launchSizes: [Int] { cfg.n == 1_000_000 ? [100_000, 1_000_000, 4_000_000] : [cfg.n] }

    /// An app's launch: open a closed store and run its first indexed query, the first 20 menu
    /// items of one restaurant by category and name (`MenuItem`'s compound index), LogStore
    /// (`LogDataStore.setup()` and one read) against SQLite (a GRDB `DatabasePool` and one read)
    /// with the same index, at each of ``launchSizes``. Each launch is timed from before the open
    /// to the decoded items; closing is not timed. Opens alternate between the systems, 7 of
    /// each, or `LOGSTORE_BENCH_LAUNCH_REPS` (enough samples for a profile of the launches).
    func launch() throws -> WorkloadResult {
        var w = WorkloadResult(
            name: "launch",
            title: "launch: open a closed store + the first indexed query (20 menu items of one restaurant), 2 secondary indexes",
            op: "open + one read transaction returning 20 menu items, decoded", unit: "launch")
        var logstoreP50: [Int: Double] = [:]
        for n in launchSizes {
            let (lp, sp) = try launchStores(n)
            let resident = warmPageCache([lp, sp])
            let runs = try timeLaunches(
                n: n, [{ try self.launchLogStore(lp, restaurant: $0) }, { try self.launchSQLite(sp, restaurant: $0) }])
            let atN = n == cfg.n
            w.rows.append(
                Row(
                    key: atN ? "logstore" : "logstore-\(n)", system: "LogStore", config: "\(n) items",
                    role: atN ? .subject : .reference, run: runs[0],
                    extra: ["items": Double(n), "resident_before_warming": resident[0]]))
            w.rows.append(
                Row(
                    key: atN ? "sqlite" : "sqlite-\(n)", system: "SQLite (GRDB)", config: "\(n) items, synchronous FULL",
                    role: atN ? .peer : .reference, run: runs[1],
                    extra: ["items": Double(n), "resident_before_warming": resident[1]]))
            logstoreP50[n] = runs[0].percentileMicros(0.50)
            if !keepLaunchStores { for dir in [lp, sp] { try? FileManager.default.removeItem(atPath: dir) } }
        }
        if let small = logstoreP50[100_000], let large = logstoreP50[4_000_000], small > 0,
            let i = w.rows.firstIndex(where: { $0.key == "logstore" })
        {
            w.rows[i].extra["growth_4m_vs_100k"] = large / small
        }
        w.notes.append(
            "Each store is written, then closed (LogStore writes its checkpoint); then `sync()` (no writeback in flight), then every file of both stores is read once (this machine's page cache sheds untouched files' pages within minutes; resident_before_warming: the fraction still cached); each launch opens it, reads once and closes it again (close not timed). Rows at other sizes than N are references for launch-growth."
        )
        return w
    }

    /// Times the launches of stores of `n` menu items, one `Run` per launcher: each launcher opens
    /// its store and reads the first 20 menu items of the restaurant it is given (the same
    /// restaurants for every launcher); its close is not timed. The launchers take turns in a
    /// rotating order, 7 launches each, or `LOGSTORE_BENCH_LAUNCH_REPS`.
    func timeLaunches(n: Int, _ launchers: [(Int) throws -> (count: Int, close: () throws -> Void)]) throws -> [Run] {
        var rng = SplitMix64(seed: 21)
        let reps = ProcessInfo.processInfo.environment["LOGSTORE_BENCH_LAUNCH_REPS"].flatMap { Int($0) } ?? max(cfg.openReps, 7)
        var runs = Array(repeating: Run(), count: launchers.count)
        for rep in 0..<reps {
            // A restaurant that has menu items at this size: one of a random item's.
            let rid = AppData.menuItem(Int(rng.next() % UInt64(n))).restaurantId
            for j in launchers.indices {
                let k = (j + rep) % launchers.count
                let c0 = processCPUSeconds()
                let t0 = nowNanos()
                let got = try launchers[k](rid)
                let dt = nowNanos() - t0
                runs[k].cpuSeconds += processCPUSeconds() - c0
                runs[k].latencies.append(dt)
                runs[k].seconds += Double(dt) / 1e9
                try got.close()
                guard got.count > 0 else { throw BenchError("launch: restaurant \(rid) has no menu items at n = \(n)") }
            }
        }
        return runs
    }

    /// Writes `n` menu items into a new LogStore in `dir` opened with `options` (durability
    /// `.buffered`, transactions of `cfg.batch`), then closes it (which writes its checkpoint).
    func writeLaunchLogStore(_ dir: String, _ n: Int, options: LogStoreOptions = LogStoreOptions()) throws {
        var o = options
        o.durability = .buffered
        let store = LogDataStore(directory: URL(fileURLWithPath: dir), options: o)
        try store.setup()
        _ = try appLoad(n, AppData.menuItem) { items in try store.writeSync { a in for m in items { try a.insert(m) } } }
        try store.tearDown()
    }

    /// A LogStore and a SQLite database of `n` menu items with `MenuItem`'s two indexes, both
    /// closed; their directories.
    func launchStores(_ n: Int) throws -> (logstore: String, sqlite: String) {
        if keepLaunchStores {
            // Beside the run's own directory (removed at its end), in the bench directory.
            let kept = (root as NSString).deletingLastPathComponent
            let lp = kept + "/kept-launch-logstore-\(n)"
            let sp = kept + "/kept-launch-sqlite-\(n)"
            if FileManager.default.fileExists(atPath: lp + "/MANIFEST"), FileManager.default.fileExists(atPath: sp) {
                log("  launch: reusing the kept stores of \(n) menu items")
                return (lp, sp)
            }
            try? FileManager.default.removeItem(atPath: lp)
            try? FileManager.default.removeItem(atPath: sp)
            return try loadLaunchStores(n, lp, sp)
        }
        return try loadLaunchStores(n, freshDir("launch-logstore-\(n)"), freshDir("launch-sqlite-\(n)"))
    }

    /// `LOGSTORE_BENCH_LAUNCH_KEEP=1`: the launch stores are kept in the bench directory after the
    /// run and reused by the next one (for comparing builds without reloading 4M items).
    var keepLaunchStores: Bool { ProcessInfo.processInfo.environment["LOGSTORE_BENCH_LAUNCH_KEEP"] == "1" }

    /// Loads `n` menu items into a new LogStore at `lp` and a SQLite database at `sp`, both closed.
    func loadLaunchStores(_ n: Int, _ lp: String, _ sp: String) throws -> (logstore: String, sqlite: String) {
        log("  launch: loading \(n) menu items into LogStore and SQLite (untimed)")
        try writeLaunchLogStore(lp, n)
        let sqlite = try AppSQLite(path: sp)
        _ = try appLoad(n, AppData.menuItem) { items in try sqlite.insert(items) }
        try sqlite.pool.close()
        // Launches are timed on stores at rest: the kernel's writeback of what was just loaded
        // (hundreds of MB at 4M items) would otherwise stall the first launches' page faults.
        sync()
        return (lp, sp)
    }

    /// Reads every file in each of `dirs` once, so that the launches that follow find both
    /// systems' stores in the page cache whichever was written first; returns, per directory,
    /// the fraction of its bytes that were resident before (mincore), or -1 where unknown.
    func warmPageCache(_ dirs: [String]) -> [Double] {
        dirs.map { dir in
            var resident = 0
            var total = 0
            var known = true
            let names = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
            for name in names {
                let fd = open(dir + "/" + name, O_RDONLY)
                guard fd >= 0 else { continue }
                defer { close(fd) }
                var st = stat()
                guard fstat(fd, &st) == 0, st.st_size > 0 else { continue }
                let size = Int(st.st_size)
                total += size
                let r = residentBytes(fd: fd, size: size)
                if r < 0 { known = false } else { resident += r }
                var buffer = [UInt8](repeating: 0, count: 1 << 20)
                while buffer.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 {}
            }
            return total > 0 && known ? Double(resident) / Double(total) : -1
        }
    }

    /// Opens the LogStore in `dir` (with `options`) and reads the first 20 menu items of
    /// `restaurant`.
    func launchLogStore(
        _ dir: String, restaurant rid: Int, options: LogStoreOptions = LogStoreOptions()
    ) throws -> (count: Int, close: () throws -> Void) {
        let store = LogDataStore(directory: URL(fileURLWithPath: dir), options: options)
        try store.setup()
        let items = try store.read { try $0.items(forRequest: menuRequest(restaurant: rid)) }
        return (items.count, { try store.tearDown() })
    }

    /// Opens the SQLite database in `dir` and reads the first 20 menu items of `restaurant`.
    func launchSQLite(_ dir: String, restaurant rid: Int) throws -> (count: Int, close: () throws -> Void) {
        let sqlite = try AppSQLite(existing: dir)
        let items = try sqlite.pool.read { try menuQuery(restaurant: rid).limit(20).fetchAll($0) }
        return (items.count, { try sqlite.pool.close() })
    }
}

/// How many of the first `size` bytes of the open file `fd` are in the page cache (mincore of a
/// read-only mapping; the mapping itself faults nothing in), or -1 where it cannot tell.
private func residentBytes(fd: Int32, size: Int) -> Int {
    guard let p = mmap(nil, size, PROT_READ, MAP_SHARED, fd, 0), p != MAP_FAILED else { return -1 }
    defer { munmap(p, size) }
    let page = Int(sysconf(Int32(_SC_PAGESIZE)))
    var vec = [UInt8](repeating: 0, count: (size + page - 1) / page)
    guard mincore(p, size, &vec) == 0 else { return -1 }
    return vec.reduce(0) { $0 + Int($1 & 1) } * page
}

/// A restaurant's menu items by category and name, the first `limit` of them (nil: all): the
/// app-menu query, and (first 20) the launch query.
func menuRequest(restaurant rid: Int, limit: Int? = 20) -> DataStoreRequest<MenuItem> {
    var r = DataStoreRequest(itemType: MenuItem.self)
    r.predicate = #Predicate<MenuItem> { $0.restaurantId == rid }
    r.sortDescriptors = [SortDescriptor(\.category), SortDescriptor(\.name)]
    r.limit = limit
    return r
}

/// ``menuRequest(restaurant:limit:)`` on SQLite, with the same order (id breaks ties, as
/// LogStore's sort does).
func menuQuery(restaurant rid: Int) -> QueryInterfaceRequest<MenuItem> {
    MenuItem.filter(Column("restaurantId") == rid).order(Column("category"), Column("name"), Column("id"))
}

/// The launch targets: against SQLite at N, and LogStore's own growth from 100,000 to 4,000,000.
func launchTargets(_ r: BenchReport) -> [TargetResult] {
    let launch = r.workload("launch")
    let vsSQLite = launch?.row("sqlite")?.ratio
    let growth = launch?.row("logstore")?.extra["growth_4m_vs_100k"]
    return [
        TargetResult(
            id: "launch-vs-sqlite", goal: "launch (open + first indexed query, 2 indexes, 1M items): ≥ 0.5× SQLite's",
            measured: vsSQLite, measuredText: vsSQLite.map { String(format: "%.2fx", $0) } ?? "-", met: vsSQLite.map { $0 >= 0.5 },
            note: vsSQLite == nil ? "workload not run" : (r.n == 1_000_000 ? nil : "measured with N = \(r.n); the goal is for 1M items")),
        TargetResult(
            id: "launch-growth", goal: "launch at 4M items ÷ at 100k ≤ 1.5", measured: growth,
            measuredText: growth.map { String(format: "%.2f", $0) } ?? "-", met: growth.map { $0 <= 1.5 },
            note: growth == nil ? "needs the full run (sizes 100k and 4M)" : nil),
    ]
}
