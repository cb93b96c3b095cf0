// logstore-bench: LogStore side by side with SQLite (GRDB), LMDB and the disk's own limits.
//
//   swift run --manifest-cache none -c release --package-path Benchmarks logstore-bench [--quick] [--json FILE] [--only NAME[,NAME...]]
//
// --quick: N = 100,000 items (a few minutes); default N = 1,000,000 (under 30 minutes).
// Stores live in $LOGSTORE_BENCH_DIR, or ./.bench-tmp, and are removed at the end.
// Docs/Performance.md explains the workloads; tools/bench-report turns the JSON into
// Docs/PerformanceResults.md.

import Foundation

func usage() -> Never {
    let names = Bench.workloadNames.joined(separator: ", ")
    FileHandle.standardError.write(
        Data(
            """
            usage: logstore-bench [--quick] [--n N] [--json FILE] [--only NAME[,NAME...]] [--systems KEY[,KEY...]] [--keep] [--app-dir DIR]
              --quick   N = 100,000 items (default 1,000,000)
              --json    also write the results as JSON to FILE
              --only    run only these workloads: \(names)
              --systems run only these stores: logstore, logstore-engine, logstore-lazy, logstore-engine-lazy (compressOnWrite false), sqlite, lmdb, lmdb-nometasync,
                        logstore-encrypted (AES-256-GCM: in buffered-write, bulk-insert and point-read only when named here;
                        the encryption workload runs it and logstore whatever --systems says)
                        (the disk's limits always run; for profiling one system)
              --n N     N items instead (development runs; the runs of record use the defaults)
              --keep    keep the store directories (default: remove them)
              --app-dir DIR  keep the app workload's data set in DIR and reuse it in later runs (profiling)

            """.utf8))
    exit(2)
}

// The heap workload's child process (HeapWorkload.swift): first, before anything else allocates.
if CommandLine.arguments.dropFirst().first == "--heap-probe" {
    exit(heapProbe(Array(CommandLine.arguments.dropFirst(2))))
}

if CommandLine.arguments.dropFirst().first == "probe-postgres" {
    exit(postgresProbe(Array(CommandLine.arguments.dropFirst(2))))
}

var quick = false
var jsonPath: String?
var only: [String]?
var keep = false
var systems: Set<String>?
var appDirectory: String?
var itemCount: Int?
var args = CommandLine.arguments.dropFirst()
while let a = args.popFirst() {
    switch a {
    case "--quick": quick = true
    case "--keep": keep = true
    case "--n":
        guard let v = args.popFirst(), let n = Int(v), n > 0 else { usage() }
        itemCount = n
    case "--json":
        guard let v = args.popFirst() else { usage() }
        jsonPath = v
    case "--only":
        guard let v = args.popFirst() else { usage() }
        only = v.split(separator: ",").map(String.init)
        for n in only ?? [] where !Bench.workloadNames.contains(n) {
            FileHandle.standardError.write(Data("unknown workload \(n)\n".utf8))
            usage()
        }
    case "--app-dir":
        guard let v = args.popFirst() else { usage() }
        appDirectory = v
    case "--systems":
        guard let v = args.popFirst() else { usage() }
        systems = Set(v.split(separator: ",").map(String.init))
    case "-h", "--help": usage()
    default:
        FileHandle.standardError.write(Data("unknown argument \(a)\n".utf8))
        usage()
    }
}

var cfg = BenchConfig.make(quick: quick)
if let itemCount { cfg.n = itemCount }
let base = ProcessInfo.processInfo.environment["LOGSTORE_BENCH_DIR"] ?? (FileManager.default.currentDirectoryPath + "/.bench-tmp")
let root = base + "/run-\(getpid())"
do {
    try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
} catch {
    FileHandle.standardError.write(Data("cannot create \(root): \(error)\n".utf8))
    exit(1)
}

var features: [String] = []
#if LOGSTORE_HAS_COMPACT
    features.append("compact")
#endif
#if LOGSTORE_HAS_CHECKPOINT
    features.append("checkpoint")
#endif

let sourceRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().path
var commit = commandOutput(["git", "rev-parse", "--short=12", "HEAD"], in: sourceRoot) ?? "unknown"
if let status = commandOutput(["git", "status", "--porcelain", "--untracked-files=no", "--", "Sources", "Package.swift"], in: sourceRoot),
    !status.isEmpty
{
    commit += " (modified)"
}
var command = "swift run --manifest-cache none -c release --package-path Benchmarks logstore-bench"
for a in CommandLine.arguments.dropFirst() { command += " " + a }

let dateFormatter = ISO8601DateFormatter()
let report = BenchReport(
    date: dateFormatter.string(from: Date()), command: command, mode: quick ? "quick" : "full", n: cfg.n,
    gitCommit: commit, engineFeatures: features, machine: machineInfo(benchDir: root))

print(
    "logstore-bench: \(report.mode) run, N = \(cfg.n), LogStore \(commit), \(report.machine.cpus) CPUs, \(report.machine.benchFilesystem) (\(report.machine.benchDevice))"
)
let bench = Bench(cfg: cfg, root: root, report: report)
bench.systems = systems
bench.appDirectory = appDirectory
let started = nowNanos()
var failed = false
for name in Bench.workloadNames where only?.contains(name) ?? true {
    do {
        try bench.run(name)
    } catch {
        failed = true
        FileHandle.standardError.write(Data("[bench] \(name) FAILED: \(error)\n".utf8))
        bench.report.workloads.append(
            WorkloadResult(name: name, title: "failed", op: "-", unit: "-", notes: ["failed: \(error)"], skipped: true))
    }
}
bench.closeAll()
bench.report.seconds = Double(nowNanos() - started) / 1e9
bench.report.machine.loadAverageEnd = loadAverage()
bench.report.targets = evaluateTargets(bench.report)
printTargets(bench.report.targets)
print("\ntotal \(String(format: "%.0f", bench.report.seconds)) s")

if let jsonPath {
    let enc = JSONEncoder()
    enc.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    do {
        let data = try enc.encode(bench.report)
        try data.write(to: URL(fileURLWithPath: jsonPath))
        print("wrote \(jsonPath)")
    } catch {
        FileHandle.standardError.write(Data("cannot write \(jsonPath): \(error)\n".utf8))
        failed = true
    }
}
if !keep { try? FileManager.default.removeItem(atPath: root) }
exit(failed ? 1 : 0)
