import Foundation
import GRDB
import LogStore

extension Bench {
    /// Single-item writes before each timed close after writes.
    var closeWrites: Int { 10_000 }

    /// An app's close: the launch workload's stores of N menu items with 2 secondary indexes,
    /// LogStore (`LogDataStore.tearDown()`) against SQLite (`DatabasePool.close()`), interleaved.
    /// Idle: open, the launch query, close. After writes: open with buffered durability (SQLite:
    /// `synchronous = NORMAL`), ``closeWrites`` single-item `writeSync` transactions each
    /// replacing a random menu item with a new price, close. Each LogStore case also runs with
    /// background compaction and recompression off, which separates the close's own cost from
    /// the background work it waits for. Only the close is timed, with the process CPU it used.
    func closeTime() throws -> WorkloadResult {
        let n = cfg.n
        var w = WorkloadResult(
            name: "close",
            title: "close: a store of \(n) menu items with 2 secondary indexes, idle and after \(closeWrites) buffered single-item writes",
            op: "one close (LogDataStore.tearDown(), DatabasePool.close())", unit: "close")
        let (lp, sp) = try sharedLaunchStores()
        var rng = SplitMix64(seed: 23)
        let reps = max(cfg.openReps, 7)
        // The third contender: LogStore with no background compaction or recompression, which
        // open schedules and close waits for; it tells the close's own cost from theirs.
        var quiet = LogStoreOptions()
        quiet.autoCompaction = false
        quiet.autoRecompression = false
        var idle = [Run(), Run(), Run()]
        for rep in 0..<reps {
            let rid = AppData.menuItem(Int(rng.next() % UInt64(n))).restaurantId
            for j in 0..<3 {
                let k = (j + rep) % 3
                let got =
                    k == 1
                    ? try launchSQLite(sp, restaurant: rid)
                    : try launchLogStore(lp, restaurant: rid, options: k == 0 ? LogStoreOptions() : quiet)
                guard got.count > 0 else { throw BenchError("close: restaurant \(rid) has no menu items") }
                try timeClose(&idle[k], got.close)
            }
        }
        let writeReps = max(cfg.openReps, 5)
        var afterWrites = [Run(), Run(), Run()]
        var writeSeconds = [0.0, 0.0, 0.0]
        for rep in 0..<writeReps {
            let items = (0..<closeWrites).map { _ in
                var m = AppData.menuItem(Int(rng.next() % UInt64(n)))
                m.price = 300 + (m.price + 1 + rep) % 3_000
                return m
            }
            for j in 0..<3 {
                let k = (j + rep) % 3
                let t0 = nowNanos()
                let close = k == 1 ? try writeSQLite(sp, items) : try writeLogStore(lp, items, background: k == 0)
                writeSeconds[k] += Double(nowNanos() - t0) / 1e9
                try timeClose(&afterWrites[k], close)
            }
        }
        let atN = "\(n) items"
        w.rows.append(Row(key: "logstore", system: "LogStore", config: "idle, \(atN)", role: .subject, run: idle[0]))
        w.rows.append(Row(key: "sqlite", system: "SQLite (GRDB)", config: "idle, \(atN)", role: .peer, run: idle[1]))
        w.rows.append(
            Row(
                key: "logstore-idle-no-background", system: "LogStore", config: "idle, no background compaction", role: .variant,
                run: idle[2]))
        var extra = ["writes": Double(closeWrites), "writes_seconds": writeSeconds[0] / Double(writeReps)]
        if let l = afterWrites[0].percentileMicros(0.5), let s = afterWrites[1].percentileMicros(0.5), l > 0 { extra["vs_sqlite"] = s / l }
        w.rows.append(
            Row(
                key: "logstore-after-writes", system: "LogStore", config: "after \(closeWrites) writes, buffered", role: .variant,
                run: afterWrites[0], extra: extra))
        w.rows.append(
            Row(
                key: "sqlite-after-writes", system: "SQLite (GRDB)", config: "after \(closeWrites) writes, synchronous NORMAL",
                role: .reference, run: afterWrites[1],
                extra: ["writes": Double(closeWrites), "writes_seconds": writeSeconds[1] / Double(writeReps)]))
        w.rows.append(
            Row(
                key: "logstore-after-writes-no-background", system: "LogStore",
                config: "after \(closeWrites) writes, no background compaction", role: .variant, run: afterWrites[2],
                extra: ["writes": Double(closeWrites), "writes_seconds": writeSeconds[2] / Double(writeReps)]))
        w.notes.append(
            "Idle: \(reps) closes per system, each after an open and the launch query. After writes: \(writeReps) closes per system, each after an open and \(closeWrites) single-item writeSync transactions (LogStore durability .buffered; SQLite WAL, synchronous NORMAL) replacing random menu items with a new price (one index entry changes); writes untimed (writes_seconds: their mean per close). cpu_us_per_op: process CPU during the close. No background compaction: autoCompaction and autoRecompression off (open schedules a background recompression of values stored raw that close waits to stop). The ratio column is against LogStore's idle close; vs_sqlite compares the closes after writes (SQLite p50 ÷ LogStore p50)."
        )
        return w
    }

    /// Times `close()` into `run`: wall time and process CPU.
    private func timeClose(_ run: inout Run, _ close: () throws -> Void) throws {
        let c0 = processCPUSeconds()
        let t0 = nowNanos()
        try close()
        let dt = nowNanos() - t0
        run.cpuSeconds += processCPUSeconds() - c0
        run.latencies.append(dt)
        run.seconds += Double(dt) / 1e9
    }

    /// Opens the LogStore in `dir` with buffered durability (and background compaction and
    /// recompression on or off) and writes `items` one transaction each; returns its close.
    private func writeLogStore(_ dir: String, _ items: [MenuItem], background: Bool) throws -> () throws -> Void {
        var o = LogStoreOptions()
        o.durability = .buffered
        o.autoCompaction = background
        o.autoRecompression = background
        let store = LogDataStore(directory: URL(fileURLWithPath: dir), options: o)
        try store.setup()
        for m in items { try store.writeSync { try $0.insert(m) } }
        return { try store.tearDown() }
    }

    /// Opens the SQLite database in `dir` with `synchronous = NORMAL` and writes `items` one
    /// transaction each; returns its close.
    private func writeSQLite(_ dir: String, _ items: [MenuItem]) throws -> () throws -> Void {
        let sqlite = try AppSQLite(existing: dir)
        try sqlite.pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        for m in items { try sqlite.pool.write { db in try m.save(db) } }
        return { try sqlite.pool.close() }
    }
}

/// The close targets: LogStore's p50 close, idle and after writes.
func closeTargets(_ r: BenchReport) -> [TargetResult] {
    let w = r.workload("close")
    let note = r.n == 1_000_000 ? nil : "measured with N = \(r.n)"
    func target(_ id: String, _ goal: String, _ key: String, _ maxMs: Double) -> TargetResult {
        let ms = w?.row(key)?.p50Micros.map { $0 / 1000 }
        return TargetResult(
            id: id, goal: goal, measured: ms, measuredText: ms.map { String(format: "%.2f ms (p50)", $0) } ?? "-",
            met: ms.map { $0 <= maxMs }, note: ms == nil ? "workload not run" : note)
    }
    return [
        target("close-ms:idle", "close with no writes since open: ≤ 5 ms", "logstore", 5),
        target("close-ms:after-writes", "close after 10,000 writes: ≤ 50 ms", "logstore-after-writes", 50),
    ]
}
