import Foundation

/// Checks the project's performance goals against a run. A goal whose workload did not run (or
/// could not be measured yet) is reported as not measured.
func evaluateTargets(_ r: BenchReport) -> [TargetResult] {
    var out: [TargetResult] = []
    func row(_ w: String, _ k: String) -> Row? { r.workload(w)?.row(k) }
    func x(_ v: Double) -> String { String(format: "%.2fx", v) }

    /// A "LogStore ÷ peer ≥ goal" target.
    func atLeast(_ id: String, _ goal: String, _ value: Double?, _ min: Double, text: (Double) -> String = x, note: String? = nil) {
        out.append(
            TargetResult(
                id: id, goal: goal, measured: value, measuredText: value.map(text) ?? "-",
                met: value.map { $0 >= min }, note: value == nil ? (note ?? "workload not run") : note))
    }
    func atMost(_ id: String, _ goal: String, _ value: Double?, _ max: Double, text: (Double) -> String = x, note: String? = nil) {
        out.append(
            TargetResult(
                id: id, goal: goal, measured: value, measuredText: value.map(text) ?? "-",
                met: value.map { $0 <= max }, note: value == nil ? (note ?? "workload not run") : note))
    }

    atLeast("durable-1w-vs-sqlite", "durable writes, 1 writer: ≥ 1.0× SQLite FULL", row("durable-write", "sqlite-full")?.ratio, 1.0)
    // Against the loop whose fdatasync has no file-size change to commit, as a preallocated
    // tail's has none.
    atLeast(
        "durable-1w-vs-bare", "durable writes, 1 writer: ≥ 0.9× bare overwrite+fdatasync",
        row("durable-write", "bare-overwrite-fdatasync")?.ratio, 0.9)
    var scaling: Double?
    if let a = row("durable-write-16", "logstore"), let b = row("durable-write", "logstore"), b.throughput > 0 {
        scaling = a.throughput / b.throughput
    }
    atLeast(
        "durable-16w-vs-1w", "durable writes, 16 writers: ≥ 10× the 1-writer rate", scaling, 10,
        note: scaling == nil ? "needs durable-write and durable-write-16" : nil)
    atLeast(
        "durable-16w-vs-sqlite", "durable writes, 16 writers: ≥ 5× SQLite FULL 16 writers",
        row("durable-write-16", "sqlite-full")?.ratio, 5)
    atLeast("buffered-vs-sqlite", "buffered writes: ≥ 5× SQLite NORMAL", row("buffered-write", "sqlite-normal")?.ratio, 5)
    atLeast("buffered-vs-lmdb", "buffered writes: ≥ 1.0× LMDB MDB_NOSYNC", row("buffered-write", "lmdb-nosync")?.ratio, 1.0)
    atLeast("bulk-vs-sqlite", "bulk insert: ≥ 3× SQLite", row("bulk-insert", "sqlite-full")?.ratio, 3)
    atLeast("bulk-vs-lmdb", "bulk insert: ≥ 1× LMDB", row("bulk-insert", "lmdb")?.ratio, 1)
    atLeast("read-vs-sqlite", "point reads: ≥ 6× SQLite", row("point-read", "sqlite-full")?.ratio, 6)
    atLeast("read-vs-lmdb", "point reads: ≥ 1× LMDB", row("point-read", "lmdb")?.ratio, 1)
    atLeast("page-vs-sqlite", "id-order page at offset n/2: ≥ 10× SQLite", row("page", "sqlite-full")?.ratio, 10)

    let scaleNote = r.n == 1_000_000 ? nil : "measured with N = \(r.n); the goal is for 1M items"
    let cp = row("open", "logstore-checkpoint")
    let full = row("open", "logstore")
    let cpSeconds = cp?.p50Micros.map { $0 / 1e6 }
    atMost(
        "open-checkpoint-seconds", "open 1M items from a checkpoint: ≤ 0.2 s", cpSeconds, 0.2,
        text: { String(format: "%.3f s", $0) },
        note: cp == nil ? (full == nil ? "workload not run" : "no checkpoint in the engine yet") : scaleNote)
    var cpRatio: Double?
    if let c = cp?.p50Micros, let f = full?.p50Micros, f > 0 { cpRatio = c / f }
    atMost(
        "open-checkpoint-vs-replay", "open from a checkpoint: ≤ 0.1× full replay", cpRatio, 0.1,
        note: cp == nil ? (full == nil ? "workload not run" : "no checkpoint in the engine yet") : nil)

    if let m = row("memory", "logstore"), let b = m.extra["heap_bytes_per_item"], let k = m.extra["key_bytes"] {
        atMost(
            "index-memory", "index memory: ≤ 48 B/item + key bytes (\(Int(k)) B)", b, 48 + k,
            text: { String(format: "%.0f B/item", $0) })
    } else {
        atMost("index-memory", "index memory: ≤ 48 B/item + key bytes", nil, 0)
    }

    let compact = row("compaction", "logstore-engine")
    var compactBandwidth: Double?
    if let c = compact?.extra["written_mb_per_second"], let b = row("compaction", "bare-sequential-write")?.extra["mb_per_second"], b > 0 {
        compactBandwidth = c / b
    }
    let noCompact = compact != nil && compact?.extra["bytes_after"] == nil ? "no LogEngine.compact() yet" : nil
    atLeast(
        "compaction-bandwidth", "compaction: ≥ 50 % of bare sequential write bandwidth", compactBandwidth, 0.5,
        text: { String(format: "%.1f %%", $0 * 100) }, note: noCompact)
    atMost("compaction-size", "compaction: size ≤ 1.1× live bytes", compact?.extra["size_after_vs_live"], 1.1, note: noCompact)

    var merge: Double?
    if let c = row("child-merge", "logstore"), let d = row("child-merge", "logstore-direct"), d.seconds > 0 {
        merge = c.seconds / d.seconds
    }
    atMost("child-merge", "child merge of 10,000 changes: ≤ 1.2× direct", merge, 1.2)

    var smaller: Double?
    var cpu: Double?
    // "≥ 2× smaller after compaction": the default store's size once compacted and recompressed
    // against the uncompressed store's (as written; compacting it changes nothing but dead bytes).
    if let on = row("lz4", "logstore"), let off = row("lz4", "logstore-nolz4"),
        let bOn = on.extra["log_bytes_compacted"] ?? on.extra["log_bytes"], let bOff = off.extra["log_bytes"],
        let cOn = on.extra["cpu_seconds"],
        let cOff = off.extra["cpu_seconds"],
        bOn > 0, cOff > 0
    {
        smaller = bOff / bOn
        cpu = cOn / cOff - 1
    }
    atLeast("lz4-size", "LZ4 on text-heavy items: ≥ 2× smaller on disk after compaction", smaller, 2)
    var engineNote: String?
    if let on = row("lz4", "logstore-engine"), let off = row("lz4", "logstore-engine-nolz4"),
        let cOn = on.extra["cpu_seconds"], let cOff = off.extra["cpu_seconds"], cOff > 0
    {
        engineNote = String(format: "engine alone (binary values): %+.0f %%", (cOn / cOff - 1) * 100)
    }
    atMost("lz4-cpu", "LZ4: ≤ 15 % more write CPU", cpu, 0.15, text: { String(format: "%+.0f %%", $0 * 100) }, note: engineNote)

    // Observers of other types cost a writer nothing it can measure.
    var observed: Double?
    if let o = row("observe-write", "observers-other-type"), let n = row("observe-write", "no-observers"), n.throughput > 0 {
        observed = o.throughput / n.throughput
    }
    atLeast("observe-write-other-types", "writes with 100 observers of other types: ≥ 0.95× none", observed, 0.95)

    // The backend migrator against the destination's own bulk insert; the SQLite backend
    // against raw GRDB (one target per workload of the adapter table).
    atLeast(
        "migrate-into-sqlite", "migration LogStore -> SQLite: ≥ 0.7× SQLite's own bulk insert",
        row("migrate", "migrate-logstore-sqlite")?.extra["vs_bulk_insert"], 0.7)
    atLeast(
        "migrate-into-logstore", "migration SQLite -> LogStore: ≥ 0.7× LogStore's own bulk insert",
        row("migrate", "migrate-sqlite-logstore")?.extra["vs_bulk_insert"], 0.7)
    for adapterRow in r.workload("sqlite-adapter")?.rows.filter({ $0.key.hasPrefix("logstore-sqlite:") }) ?? [] {
        atMost(
            "sqlite-adapter:\(adapterRow.config)", "SQLiteDataStore \(adapterRow.config): ≤ 1.3× raw GRDB's time",
            adapterRow.extra["vs_raw_grdb"], 1.3)
    }

    // The app workload's goals (AppWorkload.swift), an app's launch (LaunchWorkload.swift), its
    // close (CloseWorkload.swift) and the heap of an open store (HeapWorkload.swift).
    out += appTargets(r)
    out += launchTargets(r)
    out += closeTargets(r)
    out += heapTargets(r)
    // Encryption at rest against the same store unencrypted (EncryptionWorkload.swift).
    out += encryptionTargets(r)

    // Schema migrations and backup.
    atLeast(
        "migration-vs-bulk", "a migration of every item: ≥ 0.5× the bulk-insert rate of the same items",
        row("migration", "logstore-bulk-insert")?.ratio, 0.5, note: scaleNote)
    atLeast(
        "backup-bandwidth", "backup: ≥ 50 % of bare sequential write bandwidth", row("backup", "bare-sequential-write")?.ratio, 0.5,
        text: { String(format: "%.0f %%", $0 * 100) })
    atLeast(
        "backup-writers", "writer throughput during a backup: ≥ 0.8× without", row("backup-writers", "logstore-no-backup")?.ratio, 0.8)

    // The PostgreSQL backend against its peers on one server (postgres-peers): Fluent's
    // throughput, and the time of postgres-nio by hand with typed columns and with jsonb.
    for ours in r.workload("postgres-peers")?.rows.filter({ $0.key.hasPrefix("logstore-postgres:") }) ?? [] {
        let op = String(ours.key.dropFirst("logstore-postgres:".count))
        atLeast("postgres-vs-fluent:\(op)", "PostgresDataStore \(ours.config): ≥ 1.0× Fluent's throughput", ours.extra["vs_fluent"], 1.0)
        atMost(
            "postgres-vs-raw:\(op)", "PostgresDataStore \(ours.config): ≤ 1.2× postgres-nio typed columns' time", ours.extra["vs_raw"], 1.2)
        atMost(
            "postgres-vs-raw-jsonb:\(op)", "PostgresDataStore \(ours.config): ≤ 1.1× postgres-nio jsonb by hand's time",
            ours.extra["vs_raw_jsonb"], 1.1)
    }
    atLeast(
        "migrate-into-postgres", "migration LogStore -> PostgreSQL: ≥ 0.7× PostgresDataStore's own bulk insert",
        row("postgres-migrate", "migrate-logstore-postgres")?.extra["vs_bulk_insert"], 0.7)
    return out
}
