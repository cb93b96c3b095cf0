import Foundation
import LogStore
import XCTest

/// `LogDataStore.backup(to:)`: the DataStore-level entry to online backup; restore is opening the
/// backup directory.
final class BackupRestoreTests: XCTestCase {
    var directories: [URL] = []

    override func tearDown() {
        for d in directories { try? FileManager.default.removeItem(at: d) }
        directories = []
        super.tearDown()
    }

    func temporaryDirectory(_ label: String) -> URL {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("logstore-backup-\(label)-\(UUID().uuidString)")
        directories.append(d)
        return d
    }

    func testABackupOpensAsTheStoreItWasWithItsHistory() throws {
        let store = LogDataStore(directory: temporaryDirectory("store"))
        store.migrations.register("v2") { tx in try tx.insert(DynamicItem(itemType: "Seeded", id: .int(1))) }
        try store.setup()
        try store.writeSync { a in for i in 0..<200 { try a.insert(r(i, rating: i % 5)) } }
        let backup = temporaryDirectory("backup")
        let report = try store.backup(to: backup)
        XCTAssertEqual(report.records, 202, "200 restaurants, the seeded item and the history record")
        // Writes after the backup are not in it.
        try store.writeSync { a in try a.insert(r(999)) }
        try store.tearDown()

        let restored = LogDataStore(directory: backup)
        restored.migrations.register("v2") { _ in XCTFail("already applied in the backup") }
        try restored.setup()
        XCTAssertEqual(try restored.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)) }, 200)
        XCTAssertNil(try restored.read { try $0.item(ofType: Restaurant.self, id: r(999).id) })
        XCTAssertEqual(try restored.history().map(\.name), ["v2"])
        XCTAssertEqual(restored.recoveryReport?.checkpointUsed, true)
        try restored.tearDown()
    }

    func testAnInMemoryStoreBacksUpToDiskAndTheAsyncTwinWorks() async throws {
        let store = LogDataStore.inMemory()
        try store.setup()
        try store.writeSync { a in for i in 0..<50 { try a.insert(r(i)) } }
        let backup = temporaryDirectory("memory-backup")
        let report = try await store.backup(to: backup, verification: .replay, progress: nil)
        XCTAssertEqual(report.verification, .replay)
        XCTAssertEqual(try Self.restaurants(in: backup), 50)
        try store.tearDown()
    }

    /// How many restaurants the store in `directory` holds (opened and closed again).
    static func restaurants(in directory: URL) throws -> Int {
        let restored = LogDataStore(directory: directory)
        try restored.setup()
        defer { try? restored.tearDown() }
        return try restored.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)) }
    }

    /// (A child store has no `backup(to:)`: it is a ``ChildDataStore``, whose changes are not
    /// committed anywhere.)
    func testAWriteBlockCannotBackUpItsStore() throws {
        let store = LogDataStore.inMemory()
        try store.setup()
        defer { try? store.tearDown() }
        assertThrowsCode(.reentrantWrite) { try store.writeSync { _ in try store.backup(to: temporaryDirectory("inside")) } }
        assertThrowsCode(.notOpen) { try LogDataStore.inMemory().backup(to: temporaryDirectory("closed")) }
    }
}
