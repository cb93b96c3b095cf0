// logstore-example-service: a Hummingbird service on a DataStore. Which store is the one setting:
//
//   STORE=./example.store                                  a LogDataStore in that directory (default)
//   STORE=postgres://user:password@host/db?schema=shop     a PostgresDataStore: run several of these
//                                                          services against one database
//   PORT=8080                                              where it listens (127.0.0.1)
import Foundation
import Hummingbird
import LogStore
import LogStorePostgres

let environment = ProcessInfo.processInfo.environment
let location = environment["STORE"] ?? "example.store"
let port = Int(environment["PORT"] ?? "") ?? 8080

/// The store `location` names: a PostgreSQL URL, or a LogStore directory.
func openStore(_ location: String) throws -> any DataStore {
    if location.hasPrefix("postgres://") || location.hasPrefix("postgresql://") {
        var configuration = try PostgresDataStore.Configuration(url: location)
        // A request waits a few seconds at most: for a connection of the pool, then for the
        // server (a lock, a restart); it is answered 503 after that (StoreErrorMiddleware).
        configuration.leaseTimeout = .seconds(2)
        configuration.statementTimeout = .seconds(5)
        return PostgresDataStore(configuration: configuration)
    }
    return LogDataStore(directory: URL(fileURLWithPath: location))
}

let store = try openStore(location)
try store.setup()
defer { try? store.tearDown() }

let app = Application(
    router: makeRouter(store: store),
    configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "logstore-example-service"))
print(
    "logstore-example-service on http://127.0.0.1:\(port), store \(location.hasPrefix("postgres") ? "PostgreSQL" : "LogStore at \(location)")"
)
try await app.runService()
