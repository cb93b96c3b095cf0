import Foundation
import LogStore
import LogStoreEncryption

extension Bench {
    /// The fixed 32-byte key of the encrypted stores (bytes 0, 1, ..., 31): a test key, no secret.
    static let encryptionTestKey: [UInt8] = (0..<32).map { UInt8($0) }

    /// AES-256-GCM encryption at rest under ``encryptionTestKey``, as the `logstore-encrypted`
    /// system and the encryption workload's launches open their stores.
    static func testEncryption() throws -> StoreEncryption { try .aes256GCM(key: encryptionTestKey) }

    /// The stores the encryption workload compares: LogStore in the clear, then encrypted.
    static let encryptionKeys = ["logstore", "logstore-encrypted"]

    /// Encryption at rest: LogStore with AES-256-GCM (`logstore-encrypted`) against the same
    /// store unencrypted (`logstore`), in one run, through the other workloads' own measurements:
    /// buffered single-item writes (``bufferedWriteRows(_:others:)``), a durable bulk insert of
    /// `cfg.n` items (``load(_:ids:version:)``, the two stores taking turns slice by slice), point
    /// reads in the stores it loaded (``pointReadRows(_:)``), and the launch of a closed store of
    /// `cfg.n` menu items with 2 indexes (``timeLaunches(n:_:)``, after ``warmPageCache(_:)``).
    /// Rows are keyed `system:operation`; each encrypted row carries `vs_unencrypted` (its
    /// throughput ÷ the unencrypted row's) and `cpu_vs_unencrypted` (its CPU per operation ÷ the
    /// unencrypted row's), and its ratio is the unencrypted row's throughput ÷ its own. Runs both
    /// stores whatever `--systems` says.
    func encryption() throws -> WorkloadResult {
        var w = WorkloadResult(
            name: "encryption", title: "encryption at rest: LogStore AES-256-GCM vs the same store unencrypted, \(cfg.n) items",
            op: "see each row's config", unit: "op")
        /// Adds an operation's two rows (unencrypted, encrypted), keyed `key:op`.
        func measure(_ op: String, _ what: String, _ measured: [Row]) throws {
            guard measured.count == 2 else { throw BenchError("encryption: \(op) measured \(measured.count) stores, wanted 2") }
            var rows = measured.map { r -> Row in
                var r = r
                r.key = "\(r.key):\(op)"
                r.config = "\(what), \(r.config)"
                r.role = .variant
                r.ratio = nil
                return r
            }
            let (clear, sealed) = (rows[0], rows[1])
            if clear.throughput > 0, sealed.throughput > 0 {
                rows[1].ratio = clear.throughput / sealed.throughput
                rows[1].extra["vs_unencrypted"] = sealed.throughput / clear.throughput
            }
            if let c = clear.extra["cpu_us_per_op"], let s = sealed.extra["cpu_us_per_op"], c > 0 {
                rows[1].extra["cpu_vs_unencrypted"] = s / c
            }
            if let c = clear.p50Micros, let s = sealed.p50Micros, c > 0 { rows[1].extra["p50_vs_unencrypted"] = s / c }
            w.rows += rows
        }

        log("  encryption: buffered single-item writes")
        try measure("buffered-write", "buffered single-item write (txn/s)", bufferedWriteRows(Self.encryptionKeys))

        do {
            log("  encryption: bulk insert of \(cfg.n) items, then point reads")
            let stores = try Self.encryptionKeys.map { try makeStore($0) }
            defer { for s in stores { remove(s) } }
            // The bulk insert in slices of N / rounds items, the stores taking turns in a rotating
            // order, so that a slow stretch of the machine hits both alike.
            var loads = Array(repeating: Run(), count: stores.count)
            let rounds = max(1, cfg.rounds)
            let slice = (cfg.n + rounds - 1) / rounds
            for r in 0..<rounds {
                let ids = min(cfg.n, r * slice)..<min(cfg.n, (r + 1) * slice)
                for j in stores.indices {
                    let k = (j + r) % stores.count
                    loads[k].merge(try load(stores[k], ids: ids))
                }
            }
            try measure(
                "bulk-insert", "bulk insert, durable transactions of \(cfg.batch) (items/s)",
                stores.indices.map { k in
                    let disk = Double(diskBytes(stores[k].path))
                    return Row(
                        store: stores[k], role: role(stores[k].key), run: loads[k], units: Double(cfg.n),
                        extra: ["disk_bytes": disk, "disk_bytes_per_item": disk / Double(cfg.n)])
                })
            log("  encryption: point reads")
            try measure("point-read", "point read by id (reads/s)", pointReadRows(stores))
        }

        log("  encryption: launch, \(cfg.n) menu items")
        var sealedOptions = LogStoreOptions()
        sealedOptions.encryption = try Self.testEncryption()
        let clearDir = freshDir("encryption-launch-logstore")
        let sealedDir = freshDir("encryption-launch-logstore-encrypted")
        defer { for dir in [clearDir, sealedDir] { try? FileManager.default.removeItem(atPath: dir) } }
        try writeLaunchLogStore(clearDir, cfg.n)
        try writeLaunchLogStore(sealedDir, cfg.n, options: sealedOptions)
        sync()
        let resident = warmPageCache([clearDir, sealedDir])
        let launches = try timeLaunches(
            n: cfg.n,
            [
                { try self.launchLogStore(clearDir, restaurant: $0) },
                { try self.launchLogStore(sealedDir, restaurant: $0, options: sealedOptions) },
            ])
        let launchConfigs = ["\(cfg.n) menu items", "\(cfg.n) menu items, AES-256-GCM"]
        try measure(
            "launch", "launch: open + first indexed query (launches/s)",
            Self.encryptionKeys.indices.map { k in
                Row(
                    key: Self.encryptionKeys[k], system: "LogStore", config: launchConfigs[k], role: .variant, run: launches[k],
                    extra: ["resident_before_warming": resident[k]])
            })

        w.notes.append(
            "Both stores in one run, each operation interleaved: buffered-write as the buffered-write workload (durability .buffered, \(cfg.bufferedOps) transactions or \(Int(cfg.bufferedSeconds)) s per store, \(cfg.rounds) rounds); bulk-insert as the bulk-insert workload (durable transactions of \(cfg.batch)) into fresh stores taking turns in \(cfg.rounds) slices; point-read as the point-read workload in those stores; launch as the launch workload at N (written buffered, closed, synced, every file read once; open + the first indexed query, close not timed). Encrypted: LogStoreOptions.encryption = .aes256GCM(key:) under a fixed test key (records, index run files and CHECKPOINT sealed). vs_unencrypted = encrypted throughput ÷ unencrypted (targets: reads ≥ 0.85, buffered writes ≥ 0.85, bulk ≥ 0.8); ratio = unencrypted throughput ÷ encrypted (launch: the mean launch time encrypted ÷ unencrypted, target ≤ 1.2); cpu_vs_unencrypted and p50_vs_unencrypted: the same for CPU per operation and median latency (encrypted ÷ unencrypted). Bulk-insert cpu_us_per_op is per transaction of \(cfg.batch)."
        )
        return w
    }
}

/// The encryption targets (issue 30): encrypted against the same store unencrypted, from the
/// encryption workload.
func encryptionTargets(_ r: BenchReport) -> [TargetResult] {
    let w = r.workload("encryption")
    /// The encrypted row of operation `op`.
    func sealed(_ op: String) -> Row? { w?.row("logstore-encrypted:\(op)") }
    /// A ratio as text.
    func x(_ v: Double) -> String { String(format: "%.2fx", v) }
    let notRun = "workload not run"

    let read = sealed("point-read")?.extra["vs_unencrypted"]
    let write = sealed("buffered-write")?.extra["vs_unencrypted"]
    let bulk = sealed("bulk-insert")?.extra["vs_unencrypted"]
    // Both parts of the write goal; measured is the one with the smaller margin over its goal.
    var writeMeasured: Double?
    var writeText = "-"
    var writeMet: Bool?
    if let write, let bulk {
        writeMeasured = write / 0.85 <= bulk / 0.8 ? write : bulk
        writeText = "buf \(x(write)), bulk \(x(bulk))"
        writeMet = write >= 0.85 && bulk >= 0.8
    }
    // Launch: the mean launch time encrypted ÷ unencrypted (the row's ratio).
    let open = sealed("launch")?.ratio
    return [
        TargetResult(
            id: "encrypted-read", goal: "point reads, encrypted: ≥ 0.85× the same store unencrypted", measured: read,
            measuredText: read.map(x) ?? "-", met: read.map { $0 >= 0.85 }, note: read == nil ? notRun : nil),
        TargetResult(
            id: "encrypted-write", goal: "encrypted writes: buffered ≥ 0.85×, bulk ≥ 0.8× unencrypted",
            measured: writeMeasured, measuredText: writeText, met: writeMet,
            note: writeMeasured == nil ? notRun : "measured: the part with the smaller margin"),
        TargetResult(
            id: "encrypted-open", goal: "launch, encrypted: ≤ 1.2× the unencrypted launch's time", measured: open,
            measuredText: open.map(x) ?? "-", met: open.map { $0 <= 1.2 }, note: open == nil ? notRun : nil),
    ]
}
