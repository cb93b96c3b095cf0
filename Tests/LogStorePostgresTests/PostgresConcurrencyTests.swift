import Foundation
import LogStore
import LogStorePostgres
import Testing
import _LogStoreTestSupport

/// Several processes write to one store at once: SERIALIZABLE transactions and their retries
/// lose no update.
@Suite(.serialized, .enabled(if: PostgresTestServer.isAvailable, Comment(rawValue: PostgresTestServer.skipReason)))
struct PostgresConcurrencyTests {
    struct Counter: DataStoreItem, Codable, Equatable {
        static let itemType = "Counter"
        var id: Int
        var value: Int
    }

    /// 4 processes x 8 writer threads, each incrementing shared counters (read, then write the
    /// value + 1) through writeSync: every increment is counted.
    @Test func fourProcessesOfEightWritersLoseNoIncrement() throws {
        let url = try #require(PostgresTestServer.url)
        let schema = PostgresTestServer.freshSchema("k")
        defer { PostgresTestServer.drop(schema: schema) }
        let (processes, writers, increments, counters) = (4, 8, 25, 3)
        // The schema exists before the workers race to create it (they also may: setup is idempotent).
        let store = try PostgresTestServer.store(schema: schema)
        try store.setup()
        try store.writeSync { a in for c in 0..<counters { try a.insert(Counter(id: c, value: 0)) } }

        var running: [(Process, Pipe)] = []
        for _ in 0..<processes {
            let p = Process()
            p.executableURL = buildProductsDirectory.appendingPathComponent("logstore-postgres-worker")
            p.arguments = [url, schema, String(writers), String(increments), String(counters)]
            let out = Pipe()
            p.standardOutput = out
            p.standardError = out
            try p.run()
            running.append((p, out))
        }
        var attempts = 0
        for (p, out) in running {
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            #expect(p.terminationStatus == 0, "worker: \(text)")
            if let n = text.split(separator: " ").last.flatMap({ Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }) {
                attempts += n
            }
        }
        let values = try store.read { a in try (0..<counters).map { try a.item(ofType: Counter.self, id: $0)?.value ?? -1 } }
        #expect(
            values.reduce(0, +) == processes * writers * increments,
            "counters \(values); \(attempts) block runs for \(processes * writers * increments) increments")
        try store.tearDown()
    }
}
