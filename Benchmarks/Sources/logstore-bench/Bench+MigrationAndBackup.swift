import Foundation
import LogStore
import LogStoreEngine
import Synchronization

// Schema migration and backup workloads: a migration of every item in one transaction against
// the bulk insert of the same items; an online backup against the disk's sequential write;
// durable writers while a backup runs against the same writers without one.

extension Bench {
    /// Samples the process's resident set every 10 ms while `body` runs; returns the body's
    /// value, the time it took, the process CPU it used and the largest growth of the resident
    /// set over its start.
    func measured<T>(_ body: () throws -> T) throws -> (T, seconds: Double, cpu: Double, peakGrowth: Double) {
        let start = residentBytes()
        let peak = Atomic<UInt64>(start)
        let stop = Atomic<Bool>(false)
        let sampler = Thread {
            while !stop.load(ordering: .relaxed) {
                let r = residentBytes()
                if r > peak.load(ordering: .relaxed) { peak.store(r, ordering: .relaxed) }
                usleep(10_000)
            }
        }
        sampler.start()
        defer { stop.store(true, ordering: .relaxed) }
        let c0 = processCPUSeconds()
        let (value, seconds) = try timeOnce(body)
        let cpu = processCPUSeconds() - c0
        stop.store(true, ordering: .relaxed)
        usleep(20_000)
        return (value, seconds, cpu, Double(peak.load(ordering: .relaxed)) - Double(start))
    }

    /// A migration that touches every one of `cfg.n` items, applied by `setup()` as one
    /// transaction, next to the bulk insert of the same items into the same store.
    func migration() throws -> WorkloadResult {
        var w = WorkloadResult(
            name: "migration", title: "a migration rewriting every one of \(cfg.n) items in one transaction vs the bulk insert of them",
            op: "the whole migration (setup() applying it) / the whole bulk insert", unit: "item")
        let dir = freshDir("migration")
        let s = try LogStoreDataStore(path: dir, mode: .durable)
        let insert = try load(s, n: cfg.n)
        try s.store.tearDown()
        let n = Double(cfg.n)
        w.rows.append(
            Row(
                key: "logstore-bulk-insert", system: "LogStore", config: "bulk insert, transactions of \(cfg.batch), durable",
                role: .reference,
                run: insert, units: n, extra: ["cpu_us_per_op": insert.cpuSeconds / n * 1e6]))
        let logBefore = Double(apparentBytes(dir))
        let shapes: [(key: String, config: String, name: String, step: @Sendable (MigrationTransaction) throws -> Void)] = [
            (
                "logstore", "renameAttribute text -> body", "v2-rename-text",
                { tx in _ = try tx.renameAttribute("text", to: "body", ofType: BenchItem.itemType) }
            ),
            (
                "logstore-update", "updateItems: rating Int -> Double, new field", "v3-rating-double",
                { tx in
                    _ = try tx.updateItems(ofType: BenchItem.itemType) { item in
                        if case .int(let r)? = item.object(forKey: "rating") { item.setObject(.double(Double(r) / 2), forKey: "rating") }
                        item.setObject(.bool(true), forKey: "migrated")
                    }
                }
            ),
        ]
        var registered: [(String, @Sendable (MigrationTransaction) throws -> Void)] = []
        for shape in shapes {
            registered.append((shape.name, shape.step))
            let store = LogDataStore(directory: URL(fileURLWithPath: dir), options: LogStoreOptions())
            for (name, step) in registered { store.migrations.register(name, step) }
            let (_, seconds, cpu, growth) = try measured { try store.setup() }
            guard store.migrationReport?.applied == [shape.name] else { throw BenchError("the migration \(shape.name) did not run") }
            let count = try store.read { try $0.dynamicItems(ofType: BenchItem.itemType).count }
            guard count == cfg.n else { throw BenchError("after the migration the store holds \(count) items, not \(cfg.n)") }
            try store.tearDown()
            w.rows.append(
                Row(
                    key: shape.key, system: "LogStore", config: shape.config, role: shape.key == "logstore" ? .subject : .variant,
                    run: Run.once(seconds: seconds, cpu: cpu), units: n,
                    extra: [
                        "cpu_us_per_op": cpu / n * 1e6, "peak_rss_growth_bytes": growth, "log_bytes_before": logBefore,
                        "spill_threshold_bytes": Double(LogStoreOptions().transactionSpillThreshold),
                    ]))
        }
        try? FileManager.default.removeItem(atPath: dir)
        // Compare the migration with the bulk insert (computeRatios divides by the subject).
        w.notes.append(
            "One transaction per migration, its values spilled past transactionSpillThreshold (32 MiB) and committed in chunks; peak_rss_growth_bytes is the largest growth of the process's resident set over its size when setup() started (sampled every 10 ms). The ratio on the bulk-insert row is the migration's rate over the bulk insert's (target ≥ 0.5)."
        )
        return w
    }

    /// An online backup of a store of `cfg.n` items next to a sequential write of the same bytes.
    func backup() throws -> WorkloadResult {
        var w = WorkloadResult(
            name: "backup", title: "online backup of a store of \(cfg.n) items vs a sequential write of its bytes",
            op: "one backup (copy, fsync, verify) / one sequential write + fsync", unit: "MB")
        guard let s = try loadedStore("logstore") as? LogStoreDataStore else {
            throw BenchError("the loaded logstore store is not a DataStore")
        }
        try s.store.flush()
        for (key, verification) in [("logstore", BackupVerification.readBack), ("logstore-open", .open), ("logstore-replay", .replay)] {
            let dest = freshDir("backup-\(key)")
            // When the copy phase ended (segments copied, synced and renamed into place; what
            // follows is verification and the checkpoint).
            let started = ContinuousClock.now
            var copied: Duration? = nil
            let (report, seconds, cpu, _) = try measured {
                try s.store.backup(to: URL(fileURLWithPath: dest), verification: verification) { p in
                    if p.phase == .verifying, copied == nil { copied = ContinuousClock.now - started }
                }
            }
            let mb = Double(report.bytesCopied) / 1e6
            let copySeconds = copied.map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 } ?? seconds
            w.rows.append(
                Row(
                    key: key, system: "LogStore", config: "backup(to:), verification \(verification)",
                    role: key == "logstore" ? .subject : .variant,
                    run: Run.once(seconds: seconds, cpu: cpu), units: mb,
                    extra: [
                        "bytes": Double(report.bytesCopied), "mb_per_second": mb / seconds, "segments": Double(report.segments),
                        "copy_phase_mb_per_second": mb / copySeconds, "cpu_us_per_op": cpu / Double(max(1, report.records)) * 1e6,
                    ]))
            if key == "logstore" {
                // Incremental: 1 % more items, then the same destination again.
                _ = try load(s, n: cfg.n / 100, version: 1)
                let (again, secs2, cpu2, _) = try measured { try s.store.backup(to: URL(fileURLWithPath: dest)) }
                w.rows.append(
                    Row(
                        key: "logstore-incremental", system: "LogStore",
                        config: "backup(to:) into the previous backup after 1 % more writes",
                        role: .variant, run: Run.once(seconds: secs2, cpu: cpu2), units: Double(again.bytesCopied) / 1e6,
                        extra: [
                            "bytes_copied": Double(again.bytesCopied), "segments_reused": Double(again.segmentsReused),
                            "segments": Double(again.segments),
                        ]))
            }
            try? FileManager.default.removeItem(atPath: dest)
        }
        let bytes = Int(w.row("logstore")?.extra["bytes"] ?? 0)
        let bare = try Physical.sequentialWrite(path: freshDir("bare"), totalBytes: bytes)
        w.rows.append(
            Row(
                key: "bare-sequential-write", system: "disk: sequential write",
                config: "the backup's \(Fmt.bytes(Double(bytes))) + 1 fsync",
                role: .limit, run: bare, units: Double(bytes) / 1e6, extra: ["mb_per_second": Double(bytes) / bare.seconds / 1e6]))
        w.notes.append(
            "The store is the loaded LogStore store (the bench directory's disk, page cache warm). The ratio on the bare row is the backup's bandwidth over the disk's (target ≥ 0.5), the whole call: copy, fsync, verification, checkpoint. copy_phase_mb_per_second: the bytes over the time until the copies were synced and renamed into place (before verification and the checkpoint). cpu_us_per_op: process CPU per record backed up."
        )
        return w
    }

    /// 16 durable writers on a loaded store, with and without a backup running beside them,
    /// alternating in rounds.
    func backupWriters() throws -> WorkloadResult {
        let threads = cfg.concurrentWriters
        var w = WorkloadResult(
            name: "backup-writers", title: "\(threads) durable writers while backups run vs without",
            op: "one write transaction inserting one item, durable when it returns (throughput over wall time)", unit: "txn")
        guard let s = try loadedStore("logstore") as? LogStoreDataStore else {
            throw BenchError("the loaded logstore store is not a DataStore")
        }
        let rounds = cfg.quick ? 3 : 4
        let seconds = cfg.quick ? 4.0 : 10.0
        var with = Run()
        var without = Run()
        var backups = 0
        let next = Atomic<Int>(cfg.n * 2)
        let store = s.store
        for r in 0..<rounds {
            for backingUp in (r % 2 == 0 ? [false, true] : [true, false]) {
                let stop = Atomic<Bool>(false)
                let done = DispatchSemaphore(value: 0)
                let count = Mutex(0)
                let failure = Mutex<(any Error)?>(nil)
                let root = self.root
                let round = r
                if backingUp {
                    Thread {
                        var k = 0
                        while !stop.load(ordering: .relaxed) {
                            let dest = root + "/backup-writers-\(round)-\(k)"
                            do {
                                try store.backup(to: URL(fileURLWithPath: dest))
                                count.withLock { $0 += 1 }
                            } catch {
                                failure.withLock { $0 = error }
                                break
                            }
                            try? FileManager.default.removeItem(atPath: dest)
                            k += 1
                        }
                        done.signal()
                    }.start()
                }
                let run = try concurrentLoop(threads: threads, maxOps: 10_000_000, maxSeconds: seconds) { _, _ in
                    let id = next.wrappingAdd(1, ordering: .relaxed).oldValue
                    try store.writeSync { try $0.insert(ItemFactory.make(id: id)) }
                }
                if backingUp {
                    stop.store(true, ordering: .relaxed)
                    done.wait()
                    if let e = failure.withLock({ $0 }) { throw e }
                    backups += count.withLock { $0 }
                    with.merge(run)
                } else {
                    without.merge(run)
                }
            }
        }
        w.rows.append(
            Row(
                key: "logstore", system: "LogStore", config: "\(threads) writers, backups running", role: .subject, run: with,
                extra: ["backups_completed": Double(backups)]))
        w.rows.append(
            Row(key: "logstore-no-backup", system: "LogStore", config: "\(threads) writers, no backup", role: .reference, run: without))
        w.notes.append(
            "Alternating \(rounds) rounds of \(Int(seconds)) s with and without a loop of backups (each a full backup of the growing store into a new directory). The ratio on the no-backup row is the throughput with backups over without (target ≥ 0.8)."
        )
        return w
    }
}
