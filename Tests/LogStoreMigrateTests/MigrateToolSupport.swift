import Foundation
import LogStore
import LogStoreMigrateCommands
import LogStoreSQLite
import Synchronization
import XCTest
import _LogStoreTestSupport

/// Captures what a command writes, for in-process runs.
final class CapturedConsole: ConsoleSink {
    private let out = Mutex("")
    private let err = Mutex("")
    let errIsTerminal = false
    func writeOut(_ text: String) { out.withLock { $0 += text } }
    func writeErr(_ text: String) { err.withLock { $0 += text } }
    func flush() {}
    var stdout: String { out.withLock { $0 } }
    var stderr: String { err.withLock { $0 } }
}

/// One run of the tool: exit status and output.
struct ToolRun {
    var code: Int32
    var stdout: String
    var stderr: String

    /// stdout parsed as one JSON object.
    func json(file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(stdout.utf8))
        return try XCTUnwrap(object as? [String: Any], "stdout is not a JSON object: \(stdout)", file: file, line: line)
    }
}

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
