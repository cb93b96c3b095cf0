import Foundation
import LogStore
import LogStoreMigrateCommands
import LogStoreSQLite
import Synchronization
import XCTest
import _LogStoreTestSupport

/// Runs `logstore-migrate` in-process (same parsing, error mapping and exit codes as the binary).
func migrate(_ arguments: [String]) -> ToolRun {
    let console = CapturedConsole()
    let code = LogStoreMigrateCLI.main(arguments, console: console)
    return ToolRun(code: code, stdout: console.stdout, stderr: console.stderr)
}

/// The directory of the built products (where `logstore-migrate` is).
var productsDirectory: URL { buildProductsDirectory }

/// A test case with a temporary directory and seeded stores.
class MigrateTestCase: XCTestCase {
    struct Restaurant: DataStoreItem, Equatable {
        var id: UUID
        var name: String
        var rating: Int
    }
    struct Dish: DataStoreItem, Equatable {
        var id: Int
        var name: String
        var price: Double
    }

    var dir: URL!

    override func setUp() {
        super.setUp()
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("logstore-migrate-tests-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: dir)
        super.tearDown()
    }

    func path(_ name: String) -> String { dir.appendingPathComponent(name).path }

    /// A store with `n` restaurants and `n` dishes.
    @discardableResult
    func seed(_ store: any DataStore, _ n: Int) throws -> any DataStore {
        try store.setup()
        try store.writeSync { a in
            for i in 0..<n {
                try a.insert(Restaurant(id: UUID(), name: "R\(i)", rating: i % 5))
                try a.insert(Dish(id: i, name: "dish \(i)", price: Double(i) / 4))
            }
        }
        try store.tearDown()
        return store
    }

    func seedLogStore(_ name: String, _ n: Int) throws -> String {
        try seed(LogDataStore(directory: dir.appendingPathComponent(name)), n)
        return path(name)
    }

    func seedSQLite(_ name: String, _ n: Int) throws -> String {
        try seed(SQLiteDataStore(path: path(name)), n)
        return path(name)
    }
}
