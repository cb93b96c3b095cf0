import Foundation
import GRDB
import LogStore
import XCTest
import _LogStoreTestSupport

@testable import LogStoreSQLite

/// Bad input gets a typed error and loses nothing committed: a second store or process on the
/// file, a file that is not a store, a newer format, damage, a full disk, a read-only file system.
final class SQLiteFailureTests: XCTestCase {
    struct Item: DataStoreItem, Equatable {
        var id: Int
        var text: String
    }

    /// A tmpfs of `size` for this test (skips the test where mounting is not allowed).
    func tmpfs(_ size: String) throws -> TemporaryMount {
        guard let mount = TemporaryMount.tmpfs(size: size) else { throw XCTSkip("cannot mount a tmpfs here (needs root and mount(8))") }
        addTeardownBlock { mount.unmount() }
        return mount
    }

    func makeDirectory() -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("logstore-sqlite-failure-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        return dir
    }

    func assertThrowsCode<T>(
        _ code: LogStoreError.Code, _ message: String = "", file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> T
    ) {
        do {
            _ = try body()
            XCTFail("expected \(code), nothing thrown \(message)", file: file, line: line)
        } catch let e as LogStoreError {
            XCTAssertEqual(e.code, code, "\(e) \(message)", file: file, line: line)
        } catch {
            XCTFail("expected LogStoreError \(code), got \(error) \(message)", file: file, line: line)
        }
    }

    func testAnotherProcessHoldingTheStoreIsLocked() throws {
        let path = makeDirectory().appendingPathComponent("s.sqlite").path
        let flock = "/usr/bin/flock"
        guard FileManager.default.isExecutableFile(atPath: flock) else { throw XCTSkip("flock(1) is not installed") }
        // flock(1) holds flock(2) on the lock file in another process, as a second app would, until
        // its stdin closes; it prints a line once it holds the lock (however slow the machine).
        _ = FileManager.default.createFile(atPath: path + "-lock", contents: nil)
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: flock)
        holder.arguments = ["-n", path + "-lock", "-c", "echo held; cat"]
        let stdin = Pipe()
        let stdout = Pipe()
        holder.standardInput = stdin
        holder.standardOutput = stdout
        try holder.run()
        let held = stdout.fileHandleForReading.availableData
        XCTAssertEqual(String(decoding: held, as: UTF8.self), "held\n", "flock(1) did not take the lock")
        let store = SQLiteDataStore(path: path)
        assertThrowsCode(.locked) { try store.setup() }
        try stdin.fileHandleForWriting.close()
        holder.waitUntilExit()
        try store.setup()
        try store.tearDown()
    }

    func testAFileThatIsNotSQLiteIsNotAStore() throws {
        let path = makeDirectory().appendingPathComponent("s.sqlite").path
        try Data(repeating: 0x41, count: 8192).write(to: URL(fileURLWithPath: path))
        let store = SQLiteDataStore(path: path)
        assertThrowsCode(.notAStore) { try store.setup() }
        // The file is untouched, and the lock was released.
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), Data(repeating: 0x41, count: 8192))
        assertThrowsCode(.notAStore) { try SQLiteDataStore(path: path).setup() }
    }

    func testAnotherApplicationsDatabaseIsNotAStore() throws {
        let path = makeDirectory().appendingPathComponent("other.sqlite").path
        let queue = try DatabaseQueue(path: path)
        try queue.write { try $0.execute(sql: "CREATE TABLE players (id INTEGER PRIMARY KEY, name TEXT)") }
        try queue.close()
        let store = SQLiteDataStore(path: path)
        do {
            try store.setup()
            XCTFail("opened another application's database")
        } catch let e as LogStoreError {
            XCTAssertEqual(e.code, .notAStore)
            XCTAssertTrue(e.message.contains("players"), e.message)
        }
    }

    func testANewerFormatVersionIsRefused() throws {
        let path = makeDirectory().appendingPathComponent("s.sqlite").path
        let store = SQLiteDataStore(path: path)
        try store.setup()
        try store.writeSync { try $0.insert(Item(id: 1, text: "a")) }
        try store.tearDown()
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { try $0.execute(sql: "PRAGMA user_version = 99") }
        try queue.close()
        assertThrowsCode(.unsupportedFormatVersion) { try SQLiteDataStore(path: path).setup() }
    }

    func testMissingOwnTablesAreCorruption() throws {
        let path = makeDirectory().appendingPathComponent("s.sqlite").path
        let store = SQLiteDataStore(path: path)
        try store.setup()
        try store.tearDown()
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { try $0.execute(sql: "DROP TABLE logstore_meta") }
        try queue.close()
        assertThrowsCode(.corruption) { try SQLiteDataStore(path: path).setup() }
    }

    func testDamagedPagesAreCorruptionNotACrash() throws {
        let path = makeDirectory().appendingPathComponent("s.sqlite").path
        let store = SQLiteDataStore(path: path)
        try store.setup()
        try store.writeSync { a in for i in 0..<2000 { try a.insert(Item(id: i, text: String(repeating: "x", count: 200))) } }
        try store.tearDown()
        // tearDown() checkpointed everything into the file: no WAL is left, or an empty one.
        let wal = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
        XCTAssertEqual(wal, 0, "the WAL after tearDown()")
        // Overwrite the middle half of the file (most of it the items' b-tree, whatever else the
        // store keeps around it), keeping the header.
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        let size = try handle.seekToEnd()
        try handle.seek(toOffset: size / 4)
        try handle.write(contentsOf: Data(repeating: 0xA5, count: Int(size / 2)))
        try handle.close()
        let damaged = SQLiteDataStore(path: path)
        do {
            try damaged.setup()
            _ = try damaged.read { try $0.items(forRequest: DataStoreRequest(itemType: Item.self)) }
            XCTFail("read damaged pages without an error")
        } catch let e as LogStoreError {
            XCTAssertTrue([.corruption, .notAStore].contains(e.code), "\(e)")
        }
        try? damaged.tearDown()
    }

    func testAFullDiskFailsTheWriteAndLosesNothingCommitted() throws {
        let mount = try tmpfs("2m")
        let path = mount.path + "/s.sqlite"
        let store = SQLiteDataStore(path: path)
        try store.setup()
        var committed = 0
        var sawFull = false
        for batch in 0..<400 {
            do {
                try store.writeSync { a in
                    for i in 0..<50 { try a.insert(Item(id: batch * 50 + i, text: String(repeating: "f", count: 500))) }
                }
                committed = (batch + 1) * 50
            } catch let e as LogStoreError {
                XCTAssertEqual(e.code, .diskFull, "\(e)")
                sawFull = true
                break
            }
        }
        XCTAssertTrue(sawFull, "2 MiB never filled")
        // Every committed item is readable, the failed batch is not there, and the store still works.
        XCTAssertEqual(try store.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Item.self)) }, committed)
        try? store.writeSync { _ = try $0.deleteAllItems(ofType: Item.self) }
        try store.tearDown()
        let again = SQLiteDataStore(path: path)
        try again.setup()
        let n = try again.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Item.self)) }
        XCTAssertTrue(n == committed || n == 0, "after reopening: \(n) items, committed \(committed) (or 0 if the delete-all got in)")
        try again.tearDown()
    }

    func testAReadOnlyFileSystemIsPermissionDenied() throws {
        let mount = try tmpfs("8m")
        let path = mount.path + "/s.sqlite"
        let store = SQLiteDataStore(path: path)
        try store.setup()
        try store.writeSync { try $0.insert(Item(id: 1, text: "kept")) }
        try store.tearDown()
        guard mount.remount(readOnly: true) else { throw XCTSkip("cannot remount \(mount.path) read-only") }
        assertThrowsCode(.permissionDenied) { try SQLiteDataStore(path: path).setup() }
        XCTAssertTrue(mount.remount(readOnly: false))
        let again = SQLiteDataStore(path: path)
        try again.setup()
        XCTAssertEqual(try again.read { try $0.item(ofType: Item.self, id: 1) }?.text, "kept")
        try again.tearDown()
    }

    func testAnItemLargerThanTheLimitIsRefused() throws {
        var options = DataStoreOptions()
        options.maxItemSize = 1000
        let store = SQLiteDataStore(path: makeDirectory().appendingPathComponent("s.sqlite").path, options: options)
        try store.setup()
        assertThrowsCode(.itemTooLarge) { try store.writeSync { try $0.insert(Item(id: 1, text: String(repeating: "x", count: 2000))) } }
        XCTAssertEqual(try store.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Item.self)) }, 0)
        try store.tearDown()
    }

    func testItemTypesThatDifferOnlyInCaseGetTheirOwnTables() throws {
        struct Lower: DataStoreItem {
            static let itemType = "thing"
            var id: Int
        }
        struct Upper: DataStoreItem {
            static let itemType = "Thing"
            var id: Int
        }
        struct Reserved: DataStoreItem {
            static let itemType = "logstore_meta"
            var id: Int
        }
        let store = SQLiteDataStore(path: makeDirectory().appendingPathComponent("s.sqlite").path)
        try store.setup()
        try store.writeSync { a in
            try a.insert(Lower(id: 1))
            try a.insert(Upper(id: 2))
            try a.insert(Upper(id: 3))
            try a.insert(Reserved(id: 4))
        }
        XCTAssertEqual(try store.read { try $0.items(forRequest: DataStoreRequest(itemType: Lower.self)) }.map(\.id), [1])
        XCTAssertEqual(try store.read { try $0.items(forRequest: DataStoreRequest(itemType: Upper.self)) }.map(\.id), [2, 3])
        XCTAssertEqual(try store.read { try $0.items(forRequest: DataStoreRequest(itemType: Reserved.self)) }.map(\.id), [4])
        XCTAssertEqual(try store.read { try $0.itemTypeNames() }, ["Thing", "logstore_meta", "thing"])
        try store.tearDown()
    }
}
