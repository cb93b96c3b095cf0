import Foundation
import LogStore
import LogStorePostgres
import PostgresNIO

// `logstore-bench probe-postgres OP N [--items K] [--peers P,...]`: one operation of the
// PostgreSQL peers workload, N times per peer, for profiles and A/B runs of the adapter
// (under tools/with-postgres). The items (K, default 20,000) are loaded once into schemas named
// after K and reused by later runs against the same server. Prints per peer the wall time, this
// process's CPU and the server's CPU (every process of the cluster, from /proc; needs
// LOGSTORE_PG_DATA) per operation. Under callgrind, run two values of N and divide the
// difference of the instruction totals by the difference of the N.
//
//   OP: durable-insert, point-read, indexed-query, page (20 at offset K/2)
//   P:  ours (PostgresDataStore), jsonb (postgres-nio by hand, jsonb), typed, fluent

/// The server's CPU seconds so far: the postmaster and its children (backends, WAL writer,
/// checkpointer...), or nil without LOGSTORE_PG_DATA.
func postgresServerCPUSeconds() -> Double? {
    guard let data = ProcessInfo.processInfo.environment["LOGSTORE_PG_DATA"],
        let pidText = try? String(contentsOfFile: data + "/postmaster.pid", encoding: .utf8),
        let postmaster = pidText.split(separator: "\n").first.flatMap({ Int($0) })
    else { return nil }
    let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
    var total = 0.0
    guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return nil }
    for e in entries {
        guard let pid = Int(e), let stat = try? String(contentsOfFile: "/proc/\(e)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { continue }
        // After "pid (comm) ": state ppid ... utime (14th field) stime (15th).
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let ppid = Int(fields[1]), pid == postmaster || ppid == postmaster,
            let u = Double(fields[11]), let s = Double(fields[12])
        else { continue }
        total += (u + s) / ticks
    }
    return total
}

func postgresProbe(_ arguments: [String]) -> Int32 {
    var args = arguments[...]
    guard let op = args.popFirst(), let nText = args.popFirst(), let n = Int(nText), n > 0,
        ["durable-insert", "point-read", "indexed-query", "page"].contains(op)
    else {
        FileHandle.standardError.write(
            Data(
                "usage: logstore-bench probe-postgres durable-insert|point-read|indexed-query|page N [--items K] [--peers ours,jsonb,typed,fluent]\n"
                    .utf8))
        return 2
    }
    var items = 20_000
    var names = ["ours", "jsonb"]
    while let a = args.popFirst() {
        switch a {
        case "--items": items = args.popFirst().flatMap { Int($0) } ?? items
        case "--peers": names = args.popFirst()?.split(separator: ",").map(String.init) ?? names
        default:
            FileHandle.standardError.write(Data("unknown argument \(a)\n".utf8))
            return 2
        }
    }
    guard let url = postgresURL else {
        FileHandle.standardError.write(Data("LOGSTORE_POSTGRES_URL is not set (run under tools/with-postgres)\n".utf8))
        return 2
    }
    do {
        let shared = "probe_peers_\(items)"
        let own = "probe_store_\(items)"
        let db = try RawConnection(url: url)
        let exists = try db.run(PostgresQuery(unsafeSQL: "SELECT 1 FROM pg_namespace WHERE nspname = '\(own)'")).rows.first != nil
        db.close()
        var peers: [String: any PeerStore] = [:]
        if !exists {
            try? dropSchema(url: url, shared)
            let all: [any PeerStore] = [
                try RawTypedPeer(url: url, schema: shared), try RawJSONBPeer(url: url, schema: shared),
                try FluentPeer(url: url, schema: shared), try PostgresDataStorePeer(url: url, schema: own),
            ]
            var start = 0
            while start < items {
                let batch = (start..<min(items, start + 1000)).map { PeerItem.make(id: $0) }
                for p in all { try p.insertBatch(batch) }
                start += 1000
            }
            let vacuum = try RawConnection(url: url)
            try vacuum.run("VACUUM ANALYZE")
            vacuum.close()
            for p in all { try p.close() }
        }
        for name in names {
            switch name {
            case "ours": peers[name] = try PostgresDataStorePeer(url: url, schema: own)
            case "jsonb": peers[name] = try RawJSONBPeer(url: url, schema: shared, create: false)
            case "typed": peers[name] = try RawTypedPeer(url: url, schema: shared, create: false)
            case "fluent": peers[name] = try FluentPeer(url: url, schema: shared, create: false)
            default: throw BenchError("unknown peer \(name)")
            }
        }
        defer { for p in peers.values { try? p.close() } }
        // Fresh ids for durable inserts: past every id a previous run used.
        var next = items + Int(Date().timeIntervalSince1970 * 1000) % 1_000_000_000 * 100
        var rng = SplitMix64(seed: 7)
        for name in names {
            guard let p = peers[name] else { continue }
            func once(_ i: Int) throws {
                switch op {
                case "durable-insert":
                    next += 1
                    try p.insert(PeerItem.make(id: next))
                case "point-read":
                    guard try p.get(Int(rng.next() % UInt64(items))) else { throw BenchError("missing item") }
                case "indexed-query":
                    let g = Int(rng.next() % UInt64(max(1, items / PeerItem.groupSize)))
                    guard try p.group(g) == PeerItem.groupSize else { throw BenchError("short group") }
                default:
                    guard try p.page(offset: items / 2, limit: 20) == 20 else { throw BenchError("short page") }
                }
            }
            for i in 0..<min(n, 50) { try once(i) }
            let c0 = processCPUSeconds()
            let s0 = postgresServerCPUSeconds()
            let t0 = nowNanos()
            for i in 0..<n { try once(i) }
            let wall = Double(nowNanos() - t0) / 1e3 / Double(n)
            let cpu = (processCPUSeconds() - c0) * 1e6 / Double(n)
            let server = s0.flatMap { a in postgresServerCPUSeconds().map { ($0 - a) * 1e6 / Double(n) } }
            print(
                "\(op) \(name): n \(n), wall \(String(format: "%.1f", wall)) µs/op, client CPU \(String(format: "%.1f", cpu)) µs/op, server CPU \(server.map { String(format: "%.1f", $0) } ?? "-") µs/op"
            )
        }
        return 0
    } catch {
        FileHandle.standardError.write(Data("probe-postgres: \(error)\n".utf8))
        return 1
    }
}
