import Foundation

/// One measured line of a workload table.
struct Row: Codable, Sendable {
    enum Role: String, Codable, Sendable {
        /// LogStore through its DataStore API: what the ratios are computed from.
        case subject
        /// Another LogStore configuration (raw engine, checkpoint, LZ4 off, ...).
        case variant
        /// SQLite or LMDB.
        case peer
        /// The disk's own limit (bare system calls).
        case limit
        /// A number from another workload, shown for comparison.
        case reference
    }
    /// Stable id for scripts: "logstore", "logstore-engine", "sqlite-full", "lmdb", "bare-append-fdatasync", ...
    var key: String
    var system: String
    var config: String
    var role: Role
    /// Operations timed (see the workload's `op`).
    var ops: Int
    /// Seconds of timed work (single thread: sum of the operations; concurrent: wall time).
    var seconds: Double
    /// `units` per second (see the workload's `unit`).
    var throughput: Double
    var p50Micros: Double?
    var p99Micros: Double?
    /// The subject's throughput divided by this row's (> 1: LogStore is faster). Nil on the subject.
    var ratio: Double?
    /// Workload-specific numbers (bytes on disk, CPU seconds, ...), named with their unit.
    var extra: [String: Double] = [:]
    var note: String?

    init(
        key: String, system: String, config: String, role: Role, run: Run, units: Double? = nil,
        extra: [String: Double] = [:], note: String? = nil
    ) {
        self.key = key
        self.system = system
        self.config = config
        self.role = role
        ops = run.ops
        seconds = run.seconds
        throughput = run.seconds > 0 ? (units ?? Double(run.ops)) / run.seconds : 0
        p50Micros = run.percentileMicros(0.50)
        p99Micros = run.percentileMicros(0.99)
        self.extra = extra
        if run.cpuSeconds > 0 && run.ops > 0 && self.extra["cpu_us_per_op"] == nil {
            // Process CPU (all threads) per op: unlike latency, barely changed by other load.
            self.extra["cpu_us_per_op"] = run.cpuSeconds / Double(run.ops) * 1e6
        }
        self.note = note
    }

    init(store: any BenchStore, role: Role, run: Run, units: Double? = nil, extra: [String: Double] = [:], note: String? = nil) {
        self.init(key: store.key, system: store.name, config: store.config, role: role, run: run, units: units, extra: extra, note: note)
    }
}

/// One workload's table.
struct WorkloadResult: Codable, Sendable {
    var name: String
    var title: String
    /// What one timed operation is (latencies are per operation).
    var op: String
    /// What throughput counts, per second.
    var unit: String
    var rows: [Row] = []
    var notes: [String] = []
    var skipped = false

    /// Fills in each row's ratio against the subject row.
    mutating func computeRatios() {
        guard let s = rows.first(where: { $0.role == .subject }), s.throughput > 0 else { return }
        for i in rows.indices where rows[i].role != .subject && rows[i].throughput > 0 {
            rows[i].ratio = s.throughput / rows[i].throughput
        }
    }

    func row(_ key: String) -> Row? { rows.first { $0.key == key } }
}

/// A goal from the benchmarks issue, checked against this run.
struct TargetResult: Codable, Sendable {
    var id: String
    /// The goal, e.g. "durable 1 writer ≥ 1.0× SQLite FULL".
    var goal: String
    /// The measured value (a ratio, seconds or bytes, see `measuredText`), nil if not measured.
    var measured: Double?
    var measuredText: String
    /// Nil when not measured.
    var met: Bool?
    var note: String?
}

struct MachineInfo: Codable, Sendable {
    var cpus: Int
    var cpuModel: String
    var memoryBytes: UInt64
    var kernel: String
    var os: String
    var benchFilesystem: String
    var benchDevice: String
    var swiftVersion: String
    /// /proc/loadavg when the run started and when it ended: other work on the machine skews results.
    var loadAverageStart: String
    var loadAverageEnd: String = ""
    /// The runner's nice value (negative: it ran at raised priority to shield it from other load).
    var nice: Int = 0
}

/// The whole run; `--json` writes it.
struct BenchReport: Codable, Sendable {
    var schema = 1
    var date: String
    var command: String
    var mode: String
    var n: Int
    var seconds: Double = 0
    var gitCommit: String
    var engineFeatures: [String]
    var machine: MachineInfo
    var notes: [String] = []
    var workloads: [WorkloadResult] = []
    var targets: [TargetResult] = []

    func workload(_ name: String) -> WorkloadResult? { workloads.first { $0.name == name } }
}

// MARK: - Text output

enum Fmt {
    static func rate(_ v: Double) -> String {
        if v >= 1e9 { return String(format: "%.2f G", v / 1e9) }
        if v >= 1e6 { return String(format: "%.2f M", v / 1e6) }
        if v >= 1e4 { return String(format: "%.1f k", v / 1e3) }
        if v >= 100 { return String(format: "%.0f", v) }
        return String(format: "%.2f", v)
    }
    static func micros(_ v: Double?) -> String {
        guard let v else { return "-" }
        if v >= 1e6 { return String(format: "%.2f s", v / 1e6) }
        if v >= 1e3 { return String(format: "%.2f ms", v / 1e3) }
        if v >= 10 { return String(format: "%.0f µs", v) }
        return String(format: "%.2f µs", v)
    }
    static func ratio(_ v: Double?) -> String {
        guard let v else { return "" }
        return v >= 100 ? String(format: "%.0fx", v) : v >= 10 ? String(format: "%.1fx", v) : String(format: "%.2fx", v)
    }
    static func bytes(_ v: Double) -> String {
        if v >= 1_073_741_824 { return String(format: "%.2f GiB", v / 1_073_741_824) }
        if v >= 1_048_576 { return String(format: "%.1f MiB", v / 1_048_576) }
        if v >= 1024 { return String(format: "%.1f KiB", v / 1024) }
        return String(format: "%.0f B", v)
    }
    static func extra(_ e: [String: Double]) -> String {
        e.sorted { $0.key < $1.key }.map { k, v in
            if k.hasSuffix("bytes") { return "\(k)=\(bytes(v))" }
            if v == v.rounded() && abs(v) < 1e12 { return "\(k)=\(Int(v))" }
            return "\(k)=\(String(format: "%.3g", v))"
        }.joined(separator: " ")
    }
    static func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s : s + String(repeating: " ", count: n - s.count) }
    static func lpad(_ s: String, _ n: Int) -> String { s.count >= n ? s : String(repeating: " ", count: n - s.count) + s }
}

func printTable(_ w: WorkloadResult) {
    print("")
    print("== \(w.name): \(w.title)")
    print("   op = \(w.op); throughput in \(w.unit)/s; ratio = LogStore ÷ row (>1: LogStore faster)")
    if w.rows.isEmpty {
        for n in w.notes { print("   note: \(n)") }
        return
    }
    let header =
        Fmt.pad("system", 28) + Fmt.pad("config", 34) + Fmt.lpad("ops", 8) + Fmt.lpad("\(w.unit)/s", 14)
        + Fmt.lpad("p50", 11) + Fmt.lpad("p99", 11) + Fmt.lpad("ratio", 9) + "  extra"
    print(header)
    for r in w.rows {
        let line =
            Fmt.pad(r.system, 28) + Fmt.pad(r.config, 34) + Fmt.lpad("\(r.ops)", 8) + Fmt.lpad(Fmt.rate(r.throughput), 14)
            + Fmt.lpad(Fmt.micros(r.p50Micros), 11) + Fmt.lpad(Fmt.micros(r.p99Micros), 11)
            + Fmt.lpad(r.role == .subject ? "-" : Fmt.ratio(r.ratio), 9) + "  " + Fmt.extra(r.extra)
            + (r.note.map { "  (\($0))" } ?? "")
        print(line)
    }
    for n in w.notes { print("   note: \(n)") }
}

func printTargets(_ targets: [TargetResult]) {
    print("")
    print("== targets (from the benchmarks issue)")
    for t in targets {
        let verdict = t.met.map { $0 ? "met" : "NOT met" } ?? "not measured"
        print(Fmt.pad(t.goal, 62) + Fmt.pad(t.measuredText, 26) + verdict + (t.note.map { "  (\($0))" } ?? ""))
    }
}
