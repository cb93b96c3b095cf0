import Foundation
import LogStore
import XCTest

/// One `LogDataStore` per directory, whatever happens to the `LOCK` file, and lifecycle races
/// of one instance that must not look like a second store.
final class StoreLockTests: XCTestCase {
    func makeDirectory() -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("logstore-lock-tests-\(UUID().uuidString)")
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        return dir
    }

    func testSecondStoreOnSameDirectoryIsLockedAfterLOCKFileWasDeleted() throws {
        let dir = makeDirectory()
        let first = LogDataStore(directory: dir)
        try first.setup()
        try first.writeSync { try $0.insert(r(1)) }
        try FileManager.default.removeItem(at: dir.appendingPathComponent("LOCK"))
        let second = LogDataStore(directory: dir)
        assertThrowsCode(.locked) { try second.setup() }
        // The first store keeps working, and the directory opens again once it is closed.
        try first.writeSync { try $0.insert(r(2)) }
        try first.tearDown()
        try second.setup()
        XCTAssertEqual(try second.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)) }, 2)
        try second.tearDown()
    }
}
