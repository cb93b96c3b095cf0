import DataStoreConformance
import Foundation
import LogStore
import LogStoreEngine
import LogStorePostgres
import PostgresNIO

/// The server the PostgreSQL tests use: `LOGSTORE_POSTGRES_URL` (tools/test and .ci/run start a
/// throwaway one with tools/with-postgres). Without it the tests skip, saying why.
enum PostgresTestServer {
    static let url: String? = ProcessInfo.processInfo.environment["LOGSTORE_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    static var isAvailable: Bool { url != nil }
    static let skipReason =
        "LOGSTORE_POSTGRES_URL is not set: the PostgreSQL tests need a server. Run them with tools/with-postgres swift test --filter Postgres (it starts a throwaway cluster), or set the URL of a test database."

    /// A new, unique schema name for one test's store.
    static func freshSchema(_ label: String = "t") -> String {
        "logstore_test_\(label)_" + UUID().uuidString.prefix(8).lowercased()
    }

    /// A configuration for `schema` on the test server (throws when there is none).
    static func configuration(schema: String) throws -> PostgresDataStore.Configuration {
        guard let url else { throw LogStoreError(.unsupported, skipReason) }
        var c = try PostgresDataStore.Configuration(url: url)
        c.schema = schema
        c.maximumConnections = 6
        c.pollInterval = .milliseconds(50)
        c.statementTimeout = .seconds(30)
        return c
    }

    /// A store on `schema` of the test server.
    static func store(schema: String, options: DataStoreOptions = DataStoreOptions()) throws -> PostgresDataStore {
        PostgresDataStore(configuration: try configuration(schema: schema), options: options)
    }

    /// Runs `sql` on the test server outside any store (administration: dropping schemas).
    static func execute(_ sql: String) throws {
        let c = try configuration(schema: "public")
        let connection = try PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.next(), configuration: c.connection, id: 1, logger: c.logger
        ).wait()
        defer {
            let closing: EventLoopFuture<Void> = connection.close()
            _ = try? closing.wait()
        }
        _ = try connection.query(PostgresQuery(unsafeSQL: sql), logger: c.logger).wait()
    }

    /// Drops `schema` and everything in it.
    static func drop(schema: String) {
        try? execute("DROP SCHEMA IF EXISTS \"\(schema)\" CASCADE")
    }
}

/// Makes `PostgresDataStore`s for the conformance suite: a new schema on the test server, or a
/// child store of a store on one.
struct PostgresDataStoreFactory: DataStoreFactory {
    enum Mode: String, Sendable, CaseIterable {
        case database, child
    }
    let mode: Mode
    var options = DataStoreOptions()

    var name: String { "PostgresDataStore (\(mode.rawValue))" }

    var capabilities: DataStoreCapabilities {
        // No exclusive lock: several stores, in several processes, may open one schema.
        mode == .database
            ? DataStoreCapabilities.durableStore.subtracting(.exclusiveLock) : [.childStores, .recordAccess, .isChildStore, .observation]
    }

    func makeLocation() throws -> any DataStoreLocation {
        let location = SchemaLocation(schema: PostgresTestServer.freshSchema("c"), options: options)
        guard mode == .child else { return location }
        return try ChildStoreLocation(childOf: location)
    }

    final class SchemaLocation: DataStoreLocation {
        let schema: String
        let options: DataStoreOptions
        let stores = SharedBox<[PostgresDataStore]>([])
        init(schema: String, options: DataStoreOptions) {
            self.schema = schema
            self.options = options
        }
        func makeStore() throws -> any DataStore { try makePostgresStore() }
        func makeMigratingStore() throws -> (any MigratingDataStore)? { try makePostgresStore() }
        func makePostgresStore() throws -> PostgresDataStore {
            let s = try PostgresTestServer.store(schema: schema, options: options)
            stores.update { $0.append(s) }
            return s
        }
        func destroy() {
            for s in stores.value { try? s.tearDown() }
            PostgresTestServer.drop(schema: schema)
        }
    }
}

/// The item the behaviour and failure suites write.
struct Note: DataStoreItem, Codable, Equatable {
    static let itemType = "Note"
    var id: String
    var text: String
    var count: Int
}

/// The schemas and stores one suite instance made: its stores torn down and its schemas dropped
/// when the instance ends (Swift Testing makes one instance per test).
final class PostgresTestScope {
    private var schemas: [String] = []
    private var stores: [PostgresDataStore] = []

    /// A new schema name, dropped with the scope.
    func schema(_ label: String) -> String {
        let name = PostgresTestServer.freshSchema(label)
        schemas.append(name)
        return name
    }

    /// A store set up with `configuration`, torn down with the scope.
    func open(_ configuration: PostgresDataStore.Configuration) throws -> PostgresDataStore {
        let store = PostgresDataStore(configuration: configuration)
        try store.setup()
        stores.append(store)
        return store
    }

    deinit {
        for s in stores { try? s.tearDown() }
        for s in schemas { PostgresTestServer.drop(schema: s) }
    }
}
