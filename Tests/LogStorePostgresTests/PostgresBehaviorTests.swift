import Foundation
import LogStore
import LogStoreEngine
import LogStoreSQL
import PostgresNIO
import Synchronization
import Testing

@testable import LogStorePostgres

/// What PostgreSQL adds to the contract: several stores (servers) on one schema, retries, the
/// commit log read by another store's observers, jsonb keeping LogStore JSON exactly, and typed
/// errors when the server refuses or goes away.
@Suite(.serialized, .enabled(if: PostgresTestServer.isAvailable, Comment(rawValue: PostgresTestServer.skipReason)))
final class PostgresBehaviorTests {
    let scope = PostgresTestScope()

    func store(_ schema: String? = nil, configure: (inout PostgresDataStore.Configuration) -> Void = { _ in }) throws -> PostgresDataStore {
        let name =
            schema
            ?? scope.schema("b")
        var c = try PostgresTestServer.configuration(schema: name)
        configure(&c)
        let s = try scope.open(c)
        return s
    }

    @Test func twoStoresOnOneSchemaSeeEachOthersCommits() throws {
        let a = try store()
        let b = try store(a.configuration.schema)
        try a.writeSync { try $0.insert(Note(id: "n1", text: "from a", count: 1)) }
        #expect(try b.read { try $0.item(ofType: Note.self, id: "n1") }?.text == "from a")
        try b.writeSync { try $0.insert(Note(id: "n2", text: "from b", count: 2)) }
        #expect(try a.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Note.self)) } == 2)
    }

    @Test func conflictingWritesOfTwoStoresAreRunAgainAndLoseNothing() throws {
        let a = try store()
        let b = try store(a.configuration.schema)
        try a.writeSync { try $0.insert(Note(id: "c", text: "", count: 0)) }
        let runs = Atomic<Int>(0)
        let group = DispatchGroup()
        for s in [a, b, a, b] {
            DispatchQueue.global().async(group: group) {
                for _ in 0..<20 {
                    try? s.writeSync { acc in
                        runs.add(1, ordering: .relaxed)
                        let n = try acc.item(ofType: Note.self, id: "c")?.count ?? 0
                        try acc.insert(Note(id: "c", text: "", count: n + 1))
                    }
                }
            }
        }
        group.wait()
        #expect(try a.read { try $0.item(ofType: Note.self, id: "c") }?.count == 80)
        #expect(runs.load(ordering: .relaxed) >= 80)
    }

    @Test func aWriteThatKeepsConflictingFailsWithWriteConflict() throws {
        // 2 s: the first attempt opens two more connections, which under load takes up to about
        // 150 ms, so a shorter limit could give up before a second attempt and fail `runs > 1` by
        // chance.
        let a = try store { $0.retry.timeout = .seconds(2) }
        try a.writeSync { try $0.insert(Note(id: "x", text: "", count: 0)) }
        // Another session changes the row after each attempt read it: every attempt conflicts.
        let table = PostgresSchema.qualified(a.configuration.schema, "Note")
        let runs = Atomic<Int>(0)
        #expect {
            try a.writeSync { acc in
                runs.add(1, ordering: .relaxed)
                let n = try acc.item(ofType: Note.self, id: "x")?.count ?? 0
                try PostgresTestServer.execute("UPDATE \(table) SET version = version WHERE id = 'x'")
                try PostgresTestServer.execute(
                    "UPDATE \(a.configuration.schema.sqlIdentifier).logstore_sequence SET sequence = sequence + 1")
                try acc.insert(Note(id: "x", text: "", count: n + 1))
            }
        } throws: { ($0 as? LogStoreError)?.code == .writeConflict }
        #expect(runs.load(ordering: .relaxed) > 1, "the block ran again before giving up")
    }

    @Test func anObserverOfOneStoreSeesCommitsOfAnother() async throws {
        let a = try store()
        let b = try store(a.configuration.schema)
        try a.writeSync { try $0.insert(Note(id: "o1", text: "first", count: 1)) }
        var request = DataStoreRequest(itemType: Note.self)
        request.sortDescriptors = [SortDescriptor(\Note.id)]
        var iterator = b.observe(request).makeAsyncIterator()
        let first = try await iterator.next()
        #expect(first?.items.map(\.id) == ["o1"])
        try a.writeSync { try $0.insert(Note(id: "o2", text: "second", count: 2)) }
        let second = try await iterator.next()
        #expect(second?.items.map(\.id) == ["o1", "o2"], "b polled a's commit from the commit log")
        let changes = try b.changes(since: try #require(first?.token))
        #expect(changes.insertedOrUpdatedKeys["Note"]?.count == 1)
    }

    /// jsonb keeps LogStore JSON's PostgreSQL dialect exactly: every value read back from the
    /// server decodes to the bytes written.
    @Test func jsonbKeepsEveryValueExactly() throws {
        let a = try store()
        var rng = SystemRandomNumberGenerator()
        var values: [AttributeValue] = [
            .double(-0.0), .double(1e300), .double(.leastNonzeroMagnitude), .double(.greatestFiniteMagnitude), .double(.nan),
            .double(Double(bitPattern: 0x7FF0_0000_0000_0001)), .string("a\u{0}b"), .string("cafe\u{301}"), .string("\u{1}\u{2}"),
            .map(["k\u{0}": .int(1), "$date": .int(2), "b": .null, "ab": .bool(true)]), .date(Date(timeIntervalSinceReferenceDate: -0.0)),
            .bytes(Array(0...255)), .uuid(UUID()), .int(.min), .int(.max),
        ]
        for _ in 0..<300 { values.append(Self.randomValue(&rng, depth: 0)) }
        try a.writeSync { acc in
            for (i, v) in values.enumerated() {
                try acc.putRecord(ofType: "Value", key: RecordKey(Array("v\(i)".utf8)), value: AttributeValue.map(["v": v]).encoded())
            }
        }
        try a.read { acc in
            for (i, v) in values.enumerated() {
                let back = try acc.record(ofType: "Value", key: RecordKey(Array("v\(i)".utf8)))
                #expect(back == AttributeValue.map(["v": v]).encoded(), "\(v)")
            }
        }
    }

    static func randomValue(_ rng: inout SystemRandomNumberGenerator, depth: Int) -> AttributeValue {
        let strings = ["", "a", "$x", "$$y", "caf\u{E9}", "cafe\u{301}", "\u{212B}", "\u{0}", "日本", "\"\\", "\u{1}"]
        switch Int.random(in: 0..<(depth > 3 ? 8 : 10), using: &rng) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &rng))
        case 2: return .int(Int64.random(in: .min ... .max, using: &rng))
        case 3: return .double(Double(bitPattern: UInt64.random(in: 0 ... .max, using: &rng)))
        case 4: return .string(strings[Int.random(in: 0..<strings.count, using: &rng)] + String(Int.random(in: 0..<100, using: &rng)))
        case 5: return .bytes((0..<Int.random(in: 0..<20, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
        case 6: return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: UInt64.random(in: 0 ... .max, using: &rng))))
        case 7: return .uuid(UUID())
        case 8: return .array((0..<Int.random(in: 0..<4, using: &rng)).map { _ in randomValue(&rng, depth: depth + 1) })
        default:
            var m: [String: AttributeValue] = [:]
            var seen = Set<String>()
            for _ in 0..<Int.random(in: 0..<4, using: &rng) {
                let k = strings[Int.random(in: 0..<strings.count, using: &rng)] + String(Int.random(in: 0..<3, using: &rng))
                if seen.insert(k).inserted { m[k] = randomValue(&rng, depth: depth + 1) }
            }
            return .map(m)
        }
    }

    @Test func anUnreachableServerIsServerUnavailable() throws {
        var c = try PostgresTestServer.configuration(schema: "nowhere")
        c.connection = PostgresConnection.Configuration(
            host: "127.0.0.1", port: 1, username: "x", password: nil, database: "x", tls: .disable)
        let s = PostgresDataStore(configuration: c)
        #expect { try s.setup() } throws: { ($0 as? LogStoreError)?.code == .serverUnavailable }
        #expect { try s.read { _ in 1 } } throws: { ($0 as? LogStoreError)?.code == .notOpen }
    }

    @Test func aSchemaOfAnotherApplicationIsNotAStore() throws {
        let schema = scope.schema("f")
        try PostgresTestServer.execute("CREATE SCHEMA \"\(schema)\"")
        try PostgresTestServer.execute("CREATE TABLE \"\(schema)\".users (id int)")
        let s = try PostgresTestServer.store(schema: schema)
        #expect { try s.setup() } throws: { ($0 as? LogStoreError)?.code == .notAStore }
    }

    @Test func aConnectionKilledByTheServerFailsTypedAndTheStoreRecovers() throws {
        let name = "LogStoreKillTest" + UUID().uuidString.prefix(8)
        let a = try store {
            $0.maximumConnections = 2
            $0.connection.options.additionalStartupParameters = [("application_name", name)]
        }
        try a.writeSync { try $0.insert(Note(id: "k", text: "", count: 1)) }
        #expect {
            try a.read { acc in
                _ = try acc.item(ofType: Note.self, id: "k")
                // With a timeout, pg_terminate_backend returns once the backends are gone (PostgreSQL
                // 14+): without it, the store's next statements could race the termination (a
                // write whose COMMIT meets it has an unknown outcome, correctly, and the read's
                // next statement could still succeed).
                try PostgresTestServer.execute(
                    "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE application_name = '\(name)'")
                return try acc.item(ofType: Note.self, id: "k")
            }
        } throws: { ($0 as? LogStoreError)?.code == .serverUnavailable }
        // Broken connections are dropped: the next calls open new ones.
        try a.writeSync { try $0.insert(Note(id: "k2", text: "", count: 2)) }
        #expect(try a.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Note.self)) } == 2)
    }

    @Test func aUniqueIndexRefusesDuplicatesAcrossStores() throws {
        struct Account: DataStoreItem, Codable, Equatable {
            static let itemType = "Account"
            static let indexes: [DataStoreIndex<Account>] = [DataStoreIndex(\.email, unique: true)]
            var id: Int
            var email: String
        }
        let a = try store()
        let b = try store(a.configuration.schema)
        try a.writeSync { try $0.insert(Account(id: 1, email: "x@example.com")) }
        #expect { try b.writeSync { try $0.insert(Account(id: 2, email: "x@example.com")) } } throws: {
            ($0 as? LogStoreError)?.code == .uniqueConstraintViolation
        }
        try b.writeSync { try $0.insert(Account(id: 2, email: "y@example.com")) }
        #expect(try a.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Account.self)) } == 2)
    }

    @Test func configurationFromAURL() throws {
        let c = try PostgresDataStore.Configuration(
            url: "postgresql://app:s%40cret@db.internal:6543/shop?sslmode=disable&schema=store1&max_connections=3")
        #expect(c.connection.host == "db.internal")
        #expect(c.connection.port == 6543)
        #expect(c.connection.username == "app")
        #expect(c.connection.password == "s@cret")
        #expect(c.connection.database == "shop")
        #expect(c.schema == "store1")
        #expect(c.maximumConnections == 3)
        #expect(!c.place.contains("s@cret"))
        #expect { try PostgresDataStore.Configuration(url: "mysql://x") } throws: { ($0 as? LogStoreError)?.code == .invalidArgument }
        #expect { try PostgresDataStore.Configuration(url: "postgres://h/db?sslmode=bogus") } throws: {
            ($0 as? LogStoreError)?.code == .invalidArgument
        }
    }

    @Test func aSyncCallOnAnEventLoopIsRefused() throws {
        let a = try store()
        let result = try MultiThreadedEventLoopGroup.singleton.next().submit { () -> LogStoreError.Code? in
            do {
                _ = try a.read { _ in 1 }
                return nil
            } catch {
                return (error as? LogStoreError)?.code
            }
        }.wait()
        #expect(result == .invalidArgument)
    }
}
