import Foundation
import LogStore
import LogStoreEngine
import LogStoreMigrateCommands
import LogStorePostgres
import Testing
import _LogStoreTestSupport

/// BackendMigrator and logstore-migrate with a PostgreSQL store: LogStore -> PostgreSQL ->
/// LogStore, verified equal, on items of three types with edge values (the JSON dialect jsonb
/// keeps, every id kind), resumption, and the CLI's postgres:// stores.
@Suite(.serialized, .enabled(if: PostgresTestServer.isAvailable, Comment(rawValue: PostgresTestServer.skipReason)))
final class PostgresMigrationTests {
    typealias Order = MigrationFixture.Order
    typealias MenuItem = MigrationFixture.MenuItem

    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("logstore-pg-migrate-\(UUID().uuidString)")
    var schemas: [String] = []

    deinit {
        try? FileManager.default.removeItem(at: directory)
        for s in schemas { PostgresTestServer.drop(schema: s) }
    }

    func logStore(_ name: String) throws -> LogDataStore {
        let s = LogDataStore(directory: directory.appendingPathComponent(name))
        try s.setup()
        return s
    }

    func schema() -> String {
        let s = PostgresTestServer.freshSchema("m")
        schemas.append(s)
        return s
    }

    func seed(_ store: any DataStore, _ n: Int) throws { try MigrationFixture.seed(store, n) }

    func records(_ store: any DataStore) throws -> [String: [[UInt8]]] { try MigrationFixture.records(store) }

    @Test func logStoreToPostgresToLogStoreIsVerifiedEqual() throws {
        let source = try logStore("a.store")
        defer { try? source.tearDown() }
        try seed(source, 1500)
        let postgres = try PostgresTestServer.store(schema: schema())
        try postgres.setup()
        defer { try? postgres.tearDown() }
        var there = BackendMigrator(from: source, to: postgres)
        there.batchSize = 700
        let (copy, verification) = try there.migrate()
        #expect(copy.items == 4500)
        #expect(verification.isEqual, "\(verification)")

        let back = try logStore("c.store")
        defer { try? back.tearDown() }
        let (_, again) = try BackendMigrator(from: postgres, to: back).migrate()
        #expect(again.isEqual, "\(again)")
        #expect(try records(back) == records(source), "byte for byte, keys and values")
        // Typed reads of what the migrator wrote (tables it created from records).
        let startingWith1 = try postgres.read { a in
            var r = DataStoreRequest(itemType: Order.self)
            r.predicate = #Predicate { $0.id.starts(with: "o1") }
            return try a.items(forRequest: r)
        }
        #expect(startingWith1.count == 611, "o1, o10-o19, o100-o199, o1000-o1499")
        #expect(try postgres.read { try $0.item(ofType: MenuItem.self, id: -750) }?.name == "dish 0")
    }

    @Test func theCommandCopiesBothWaysWithPostgresURLs() throws {
        let source = try logStore("a.store")
        try seed(source, 300)
        try source.tearDown()
        let url = try #require(PostgresTestServer.url) + "&schema=" + schema()
        // The CLI's PostgreSQL support, as the logstore-migrate executable registers it.
        StoreOpeners.postgres = { url, create in try PostgresDataStore.openForTools(url: url, create: create) }
        let console = CapturedConsole()
        let code = LogStoreMigrateCLI.main([directory.appendingPathComponent("a.store").path, url, "--progress", "none"], console: console)
        #expect(code == 0, "\(console.stderr)")
        #expect(console.stdout.contains("verified: the destination equals the source"), "\(console.stdout)")
        let back = CapturedConsole()
        #expect(
            LogStoreMigrateCLI.main(
                [url, "logstore:" + directory.appendingPathComponent("b.store").path, "--json", "--progress", "none"], console: back) == 0,
            "\(back.stderr)")
        #expect(
            LogStoreMigrateCLI.main(
                ["verify", directory.appendingPathComponent("a.store").path, directory.appendingPathComponent("b.store").path],
                console: CapturedConsole()) == 0)
        let missing = CapturedConsole()
        let noStore = try #require(PostgresTestServer.url) + "&schema=" + schema()
        #expect(
            LogStoreMigrateCLI.main(["types", noStore], console: missing) == 4, "a schema without a store is not a store: \(missing.stderr)"
        )
    }

    @Test func theBinaryTakesPostgresURLs() throws {
        let source = try logStore("a.store")
        try seed(source, 20)
        try source.tearDown()
        let url = try #require(PostgresTestServer.url) + "&schema=" + schema()
        let process = Process()
        process.executableURL = buildProductsDirectory.appendingPathComponent("logstore-migrate")
        process.arguments = [directory.appendingPathComponent("a.store").path, url, "--progress", "none"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        process.waitUntilExit()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 0, "\(text)")
    }
}
