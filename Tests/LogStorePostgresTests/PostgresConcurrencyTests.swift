import Foundation
import LogStore
import LogStorePostgres
import Testing
import _LogStoreTestSupport

/// Several app servers on one database: processes (`logstore-postgres-worker`) of several writer
/// threads each increment shared counters and move amounts between accounts at once. SERIALIZABLE
/// transactions and their retries lose no update, the accounts' total is conserved, and every
/// process publishes every commit to its change feed once, in order.
@Suite(.serialized, .enabled(if: PostgresTestServer.isAvailable, Comment(rawValue: PostgresTestServer.skipReason)))
struct PostgresConcurrencyTests {
    struct Counter: DataStoreItem, Codable, Equatable {
        static let itemType = "Counter"
        var id: Int
        var value: Int
    }

    struct Account: DataStoreItem, Codable, Equatable {
        static let itemType = "Account"
        var id: Int
        var balance: Int
    }

    /// 4 processes x 8 writers (LOGSTORE_PG_PROCESSES, LOGSTORE_PG_WRITERS, LOGSTORE_PG_OPERATIONS
    /// size larger runs).
    @Test func fourProcessesOfEightWritersLoseNothingAndSeeEveryCommitInOrder() throws {
        let url = try #require(PostgresTestServer.url)
        let environment = ProcessInfo.processInfo.environment
        let processes = environment["LOGSTORE_PG_PROCESSES"].flatMap(Int.init) ?? 4
        let writers = environment["LOGSTORE_PG_WRITERS"].flatMap(Int.init) ?? 8
        let operations = environment["LOGSTORE_PG_OPERATIONS"].flatMap(Int.init) ?? 10
        let (counters, accounts, opening) = (3, 6, 1_000)
        let schema = PostgresTestServer.freshSchema("k")
        defer { PostgresTestServer.drop(schema: schema) }
        let store = try PostgresTestServer.store(schema: schema)
        try store.setup()
        defer { try? store.tearDown() }
        try store.writeSync { a in
            for c in 0..<counters { try a.insert(Counter(id: c, value: 0)) }
            for i in 0..<accounts { try a.insert(Account(id: i, balance: opening)) }
        }
        let seeded = try store.changeToken().sequence
        let final = seeded + UInt64(processes * writers * operations)
        let barrier = FileManager.default.temporaryDirectory.appendingPathComponent("logstore-pg-barrier-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: barrier, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: barrier) }

        var running: [(Process, Pipe)] = []
        for _ in 0..<processes {
            let p = Process()
            p.executableURL = buildProductsDirectory.appendingPathComponent("logstore-postgres-worker")
            p.arguments = [
                url, schema, String(writers), String(operations), String(counters), String(accounts), String(final), barrier.path,
            ]
            let out = Pipe()
            p.standardOutput = out
            p.standardError = out
            try p.run()
            running.append((p, out))
        }
        // Every process taps its feed before any writes: each must see commits seeded+1...final.
        let start = ContinuousClock.now
        while (try FileManager.default.contentsOfDirectory(atPath: barrier.path)).count < processes {
            if ContinuousClock.now - start > .seconds(120) || running.contains(where: { !$0.0.isRunning }) { break }
            Thread.sleep(forTimeInterval: 0.01)
        }
        _ = FileManager.default.createFile(atPath: barrier.appendingPathComponent("go").path, contents: nil)
        var increments = 0
        for (p, out) in running {
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            #expect(p.terminationStatus == 0, "worker: \(text)")
            #expect(text.contains("seen=\(seeded + 1)...\(final)"), "worker: \(text)")
            if let field = text.split(separator: " ").first(where: { $0.hasPrefix("increments=") }) {
                increments += Int(field.dropFirst("increments=".count)) ?? 0
            }
        }
        let (values, balances) = try store.read { a in
            (
                try a.items(forRequest: DataStoreRequest(itemType: Counter.self)).map(\.value),
                try a.items(forRequest: DataStoreRequest(itemType: Account.self)).map(\.balance)
            )
        }
        #expect(values.reduce(0, +) == increments, "counters \(values): every acknowledged increment is counted")
        #expect(balances.reduce(0, +) == accounts * opening, "balances \(balances): the total is conserved")
        #expect(balances.allSatisfy { $0 >= 0 })
        #expect(try store.changeToken().sequence == final, "one commit per acknowledged write")
    }
}
