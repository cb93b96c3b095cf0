import Foundation
import GRDB
import LogStore

#if canImport(Glibc)
    import CMallocInfo
    import Glibc
#endif

// The heap workload: what an open store costs in malloc'd memory per item, apart from the pages
// it maps, measured in a child process per system (`logstore-bench --heap-probe ...`) so that no
// number carries what another system or an earlier workload left on the heap.

/// A process's memory at one moment.
struct MemorySample: Codable, Sendable {
    /// glibc heap in use: `mallinfo2()` `uordblks` (arena chunks in use, every arena) + `hblkhd`
    /// (chunks malloc mapped on their own). Mapped files are not in it.
    var heapBytes: Double
    /// `hblkhd` alone.
    var heapMmapBytes: Double
    /// /proc/self/status: resident anonymous pages (heap, stacks, anonymous maps).
    var rssAnonBytes: Double
    /// /proc/self/status: resident file-backed pages (the binary, libraries, mapped store files).
    var rssFileBytes: Double
    /// /proc/self/smaps: mappings of files under the store's directory, their size and what of
    /// them is resident.
    var storeMappedBytes: Double
    var storeMappedRSSBytes: Double
    /// How many mappings of the store's files there are.
    var storeMappings: Double
}

/// What one `--heap-probe` child measured: samples by phase ("baseline", "open", "query",
/// "read") and the seconds of the timed phases.
struct HeapProbeResult: Codable, Sendable {
    var system: String
    var items: Int
    /// Items the read phase found (every id 0..<items).
    var found: Int
    var samples: [String: MemorySample]
    var seconds: [String: Double]
    /// LogStore: whether open loaded the indexes from the checkpoint, and the transactions it
    /// replayed.
    var checkpointUsed: Bool?
    var transactionsReplayed: Int?
}

/// The whole of a /proc file, read until end of file (Foundation's `String(contentsOfFile:)`
/// stops after its first read of these files, which report a size of 0); nil if it cannot be
/// opened.
func procFile(_ path: String) -> String? {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let k = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if k <= 0 { break }
        bytes += chunk[..<k]
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// The memory of this process now; `storeDirectory` picks the mappings counted as the store's.
func memorySample(storeDirectory: String?) -> MemorySample {
    var heap = 0.0
    var mmapped = 0.0
    #if canImport(Glibc)
        // Returns freed pages to the system first, so that RssAnon is close to what is in use.
        malloc_trim(0)
        let info = mallinfo2()
        heap = Double(info.uordblks) + Double(info.hblkhd)
        mmapped = Double(info.hblkhd)
    #endif
    var s = MemorySample(
        heapBytes: heap, heapMmapBytes: mmapped, rssAnonBytes: 0, rssFileBytes: 0, storeMappedBytes: 0, storeMappedRSSBytes: 0,
        storeMappings: 0)
    if let status = procFile("/proc/self/status") {
        for line in status.split(separator: "\n") {
            let f = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard f.count >= 2, let kb = Double(f[1]) else { continue }
            if f[0] == "RssAnon:" { s.rssAnonBytes = kb * 1024 }
            if f[0] == "RssFile:" { s.rssFileBytes = kb * 1024 }
        }
    }
    guard let dir = storeDirectory, let smaps = procFile("/proc/self/smaps") else { return s }
    let prefix = URL(fileURLWithPath: dir).resolvingSymlinksInPath().path + "/"
    var inStore = false
    for line in smaps.split(separator: "\n") {
        let f = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard let first = f.first else { continue }
        if !first.hasSuffix(":") {
            // A mapping's header: address range, permissions, offset, device, inode, path.
            inStore = f.count >= 6 && f[5].hasPrefix(prefix)
            if inStore { s.storeMappings += 1 }
        } else if inStore && f.count >= 2, let kb = Double(f[1]) {
            if first == "Size:" { s.storeMappedBytes += kb * 1024 }
            if first == "Rss:" { s.storeMappedRSSBytes += kb * 1024 }
        }
    }
    return s
}

/// The child side of the heap workload: `logstore-bench --heap-probe SYSTEM DIR N`, SYSTEM one of
/// `none` (the process alone), `logstore`, `sqlite`. Samples memory before anything is opened,
/// after the store's open, after the launch query (the first indexed query), and after reading
/// items 0..<N once each by id; prints one line `HEAP-PROBE <json>` on stdout. Returns the exit
/// status.
func heapProbe(_ args: [String]) -> Int32 {
    guard args.count == 3, let n = Int(args[2]), n > 0 else {
        FileHandle.standardError.write(Data("usage: logstore-bench --heap-probe none|logstore|sqlite DIR N\n".utf8))
        return 2
    }
    let system = args[0]
    let dir = args[1]
    var result = HeapProbeResult(system: system, items: n, found: 0, samples: [:], seconds: [:])
    result.samples["baseline"] = memorySample(storeDirectory: dir)
    do {
        switch system {
        case "none": break
        case "logstore": try probeLogStore(dir, n, &result)
        case "sqlite": try probeSQLite(dir, n, &result)
        default: throw BenchError("unknown system \(system)")
        }
        let data = try JSONEncoder().encode(result)
        print("HEAP-PROBE " + String(decoding: data, as: UTF8.self))
        return 0
    } catch {
        FileHandle.standardError.write(Data("heap-probe \(system): \(error)\n".utf8))
        return 1
    }
}

/// Opens the LogStore in `dir` as an app does (default options), runs the launch query, reads
/// every item once by id (1,000 per read transaction, decoded), sampling after each step.
private func probeLogStore(_ dir: String, _ n: Int, _ r: inout HeapProbeResult) throws {
    var t0 = nowNanos()
    let store = LogDataStore(directory: URL(fileURLWithPath: dir), options: LogStoreOptions())
    try store.setup()
    r.seconds["open"] = Double(nowNanos() - t0) / 1e9
    r.samples["open"] = memorySample(storeDirectory: dir)
    r.checkpointUsed = store.recoveryReport?.checkpointUsed
    r.transactionsReplayed = store.recoveryReport?.transactionsReplayed
    t0 = nowNanos()
    let first = try store.read { try $0.items(forRequest: menuRequest(restaurant: AppData.menuItem(n / 2).restaurantId)) }
    r.seconds["query"] = Double(nowNanos() - t0) / 1e9
    guard !first.isEmpty else { throw BenchError("heap-probe: the launch query found nothing") }
    r.samples["query"] = memorySample(storeDirectory: dir)
    t0 = nowNanos()
    let found = try countInBatches(n) { ids in
        try store.read { a in try ids.reduce(0) { try a.item(ofType: MenuItem.self, id: $1) == nil ? $0 : $0 + 1 } }
    }
    r.seconds["read"] = Double(nowNanos() - t0) / 1e9
    r.found = found
    r.samples["read"] = memorySample(storeDirectory: dir)
    try store.tearDown()
}

/// The same steps on the SQLite database in `dir` (a GRDB `DatabasePool`); reads by id through
/// a cached prepared statement.
private func probeSQLite(_ dir: String, _ n: Int, _ r: inout HeapProbeResult) throws {
    var t0 = nowNanos()
    let sqlite = try AppSQLite(existing: dir)
    r.seconds["open"] = Double(nowNanos() - t0) / 1e9
    r.samples["open"] = memorySample(storeDirectory: dir)
    t0 = nowNanos()
    let first = try sqlite.pool.read { try menuQuery(restaurant: AppData.menuItem(n / 2).restaurantId).limit(20).fetchAll($0) }
    r.seconds["query"] = Double(nowNanos() - t0) / 1e9
    guard !first.isEmpty else { throw BenchError("heap-probe: the launch query found nothing") }
    r.samples["query"] = memorySample(storeDirectory: dir)
    t0 = nowNanos()
    let found = try countInBatches(n) { ids in
        try sqlite.pool.read { db in
            let statement = try db.cachedStatement(sql: "SELECT * FROM menuItem WHERE id = ?")
            return try ids.reduce(0) { try MenuItem.fetchOne(statement, arguments: [$1]) == nil ? $0 : $0 + 1 }
        }
    }
    r.seconds["read"] = Double(nowNanos() - t0) / 1e9
    r.found = found
    r.samples["read"] = memorySample(storeDirectory: dir)
    try sqlite.close()
}

/// Calls `body` with ids `0..<n` in batches of 1,000 (one read transaction each), summing the
/// items it says it found.
private func countInBatches(_ n: Int, _ body: (Range<Int>) throws -> Int) rethrows -> Int {
    var found = 0
    for start in stride(from: 0, to: n, by: 1_000) { found += try body(start..<min(n, start + 1_000)) }
    return found
}

extension Bench {
    /// Heap per item of an open store: the launch workload's stores of N menu items with 2
    /// secondary indexes, each measured by a child process of this executable (one per system,
    /// plus one that opens nothing), from its own baseline: after open and the launch query, and
    /// after reading every item once by id. Heap is malloc'd bytes (mallinfo2), apart from
    /// resident anonymous and file-backed pages and the store's mapped files.
    func heapPerItem() throws -> WorkloadResult {
        let n = cfg.n
        var w = WorkloadResult(
            name: "heap",
            title: "heap per item of an open store of \(n) menu items with 2 secondary indexes, each system in its own process",
            op: "open + the launch query (timed); then every item read once by id", unit: "item")
        let (lp, sp) = try sharedLaunchStores()
        let none = try runHeapProbe("none", dir: lp, n: n)
        if let b = none.samples["baseline"] {
            w.rows.append(
                Row(
                    key: "baseline", system: "process", config: "no store opened", role: .reference, run: Run(),
                    extra: ["heap_bytes": b.heapBytes, "rss_anon_bytes": b.rssAnonBytes, "rss_file_bytes": b.rssFileBytes]))
        }
        for (key, system, dir) in [("logstore", "LogStore", lp), ("sqlite", "SQLite (GRDB)", sp)] {
            let p = try runHeapProbe(key, dir: dir, n: n)
            guard p.found == n else { throw BenchError("heap: \(key) found \(p.found) of \(n) items") }
            guard let base = p.samples["baseline"], let open = p.samples["open"], let query = p.samples["query"],
                let read = p.samples["read"]
            else { throw BenchError("heap: \(key) probe returned no samples") }
            func phase(_ name: String, _ s: MemorySample) -> [String: Double] {
                [
                    "\(name)_heap_per_item": (s.heapBytes - base.heapBytes) / Double(n),
                    "\(name)_heap_bytes": s.heapBytes - base.heapBytes,
                    "\(name)_rss_anon_bytes": s.rssAnonBytes - base.rssAnonBytes,
                    "\(name)_rss_file_bytes": s.rssFileBytes - base.rssFileBytes,
                    "\(name)_store_mapped_bytes": s.storeMappedBytes,
                    "\(name)_store_mapped_rss_bytes": s.storeMappedRSSBytes,
                    "\(name)_store_mappings": s.storeMappings,
                ]
            }
            var openExtra = phase("open", query)
            openExtra["setup_only_heap_per_item"] = (open.heapBytes - base.heapBytes) / Double(n)
            if let used = p.checkpointUsed { openExtra["checkpoint_used"] = used ? 1 : 0 }
            if let replayed = p.transactionsReplayed { openExtra["transactions_replayed"] = Double(replayed) }
            let openSeconds = (p.seconds["open"] ?? 0) + (p.seconds["query"] ?? 0)
            w.rows.append(
                Row(
                    key: key, system: system, config: "after open + launch query", role: key == "logstore" ? .subject : .peer,
                    run: .once(seconds: openSeconds), units: Double(n), extra: openExtra))
            var readExtra = phase("read", read)
            readExtra["read_seconds"] = p.seconds["read"] ?? 0
            w.rows.append(
                Row(
                    key: "\(key)-read", system: system, config: "after reading every item by id", role: .reference, run: Run(),
                    extra: readExtra))
        }
        w.notes.append(
            "Each system runs in a fresh child process (logstore-bench --heap-probe SYSTEM DIR N): a baseline, then after open + the launch query, then after reading items 0..<N once each by id (1,000 per read transaction). *_heap_per_item and *_heap_bytes: mallinfo2 uordblks + hblkhd above the child's baseline (malloc'd, not mapped); *_rss_anon_bytes and *_rss_file_bytes: RssAnon and RssFile above the baseline (after malloc_trim); *_store_mapped_bytes: the store's mappings (size, resident). setup_only_heap_per_item: after setup() alone. Default options; SQLite: GRDB DatabasePool defaults. Open rows are timed (open + query); read rows are not (read_seconds)."
        )
        return w
    }

    /// Runs this executable as `--heap-probe SYSTEM DIR N` and decodes what it printed.
    func runHeapProbe(_ system: String, dir: String, n: Int) throws -> HeapProbeResult {
        log("  heap: probing \(system) in a child process")
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let child = Process()
        child.executableURL = URL(fileURLWithPath: exe)
        child.arguments = ["--heap-probe", system, dir, "\(n)"]
        let out = Pipe()
        child.standardOutput = out
        try child.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        child.waitUntilExit()
        guard child.terminationStatus == 0 else { throw BenchError("heap-probe \(system) exited with \(child.terminationStatus)") }
        let text = String(decoding: data, as: UTF8.self)
        guard let line = text.split(separator: "\n").last(where: { $0.hasPrefix("HEAP-PROBE ") }) else {
            throw BenchError("heap-probe \(system) printed no result")
        }
        return try JSONDecoder().decode(HeapProbeResult.self, from: Data(line.dropFirst("HEAP-PROBE ".count).utf8))
    }

    /// The launch workload's stores at N (LogStore and SQLite, closed), made once for the heap and
    /// close workloads (heap only reads them; it runs first) and removed by ``closeAll()``.
    func sharedLaunchStores() throws -> (logstore: String, sqlite: String) {
        if let s = sharedStores { return s }
        let s = try launchStores(cfg.n)
        sharedStores = s
        return s
    }
}

/// The heap target: LogStore's heap per item after open (+ the launch query) and after reading
/// every item once.
func heapTargets(_ r: BenchReport) -> [TargetResult] {
    let w = r.workload("heap")
    let open = w?.row("logstore")?.extra["open_heap_per_item"]
    let read = w?.row("logstore-read")?.extra["read_heap_per_item"]
    var text = "-"
    var met: Bool?
    if let open, let read {
        text = String(format: "open %.1f B, read all %.1f B/item", open, read)
        met = open <= 4 && read <= 48
    }
    return [
        TargetResult(
            id: "heap-per-item", goal: "heap after open ≤ 4 B/item; after reading every item once ≤ 48 B/item", measured: read,
            measuredText: text, met: met,
            note: met == nil ? "workload not run" : (r.n == 1_000_000 ? nil : "measured with N = \(r.n)"))
    ]
}
