import Foundation
import LogStore
import LogStoreSQLite
import XCTest

/// BackendMigrator.catchUp(): the app keeps writing to the source while it copies, and the
/// destination catches up from the source's change log before the switch.
final class MigratorCatchUpTests: XCTestCase {
    struct Note: DataStoreItem, Equatable {
        var id: Int
        var text: String
    }
    struct Tag: DataStoreItem, Equatable {
        var id: String
    }

    func makeDirectory() -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("logstore-catchup-\(UUID().uuidString)")
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        return dir
    }

    /// Both directions: writes, updates, deletes and a new item type made after the copy's
    /// snapshot (some of them while the copy runs) reach the destination, which then verifies
    /// equal and finishes.
    func testWritesMadeDuringAndAfterTheCopyAreCaughtUpInBothDirections() throws {
        let dir = makeDirectory()
        for (a, b) in [
            (
                LogDataStore(directory: dir.appendingPathComponent("a.store")) as any DataStore,
                SQLiteDataStore(path: dir.appendingPathComponent("b.sqlite").path) as any DataStore
            ),
            (
                SQLiteDataStore(path: dir.appendingPathComponent("c.sqlite").path),
                LogDataStore(directory: dir.appendingPathComponent("d.store"))
            ),
        ] {
            try a.setup()
            try b.setup()
            defer {
                try? a.tearDown()
                try? b.tearDown()
            }
            try a.writeSync { w in for i in 0..<500 { try w.insert(Note(id: i, text: "n\(i)")) } }
            var m = BackendMigrator(from: a, to: b)
            m.batchSize = 50
            // The app writes while the copy runs (between its batches).
            m.isCancelled = {
                a.writeAsync({ w in try w.insert(Note(id: 1000 + Int.random(in: 0..<10_000), text: "during")) }, completion: nil)
                return false
            }
            try m.copy()
            try a.writeSync { w in
                try w.insert(Note(id: 3, text: "changed"))
                _ = try w.deleteItem(ofType: Note.self, id: 4)
                try w.insert(Tag(id: "new type"))
            }
            XCTAssertFalse(try m.verify().isEqual, "the copy misses the later writes")
            let report = try m.catchUp()
            XCTAssertGreaterThanOrEqual(report.written, 2)
            XCTAssertEqual(report.deleted, 1)
            XCTAssertTrue(try m.verify().isEqual)
            // Nothing changed since: a second catch-up does nothing.
            let again = try m.catchUp()
            XCTAssertEqual(again.written + again.deleted, 0)
            try m.finish()
            XCTAssertEqual(try b.read { try $0.item(ofType: Note.self, id: 3) }?.text, "changed")
            XCTAssertEqual(try b.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Tag.self)) }, 1)
        }
    }

    /// A catch-up needs a complete copy, and a source that still knows what changed.
    func testCatchUpRefusesAnIncompleteCopyAndAReopenedSource() throws {
        let dir = makeDirectory()
        let a = LogDataStore(directory: dir.appendingPathComponent("a.store"))
        let b = SQLiteDataStore(path: dir.appendingPathComponent("b.sqlite").path)
        try a.setup()
        try b.setup()
        defer {
            try? a.tearDown()
            try? b.tearDown()
        }
        try a.writeSync { w in for i in 0..<300 { try w.insert(Note(id: i, text: "n\(i)")) } }
        var m = BackendMigrator(from: a, to: b)
        XCTAssertThrowsError(try m.catchUp()) { XCTAssertEqual(($0 as? LogStoreError)?.code, .invalidArgument) }
        m.batchSize = 100
        m.isCancelled = { true }
        XCTAssertThrowsError(try m.copy()) { XCTAssertTrue($0 is CancellationError) }
        XCTAssertThrowsError(try m.catchUp(), "an unfinished copy") { XCTAssertEqual(($0 as? LogStoreError)?.code, .invalidArgument) }
        m.isCancelled = nil
        try m.copy(resume: true)
        // Reopened with nothing written since the token: the store still answers exactly.
        try a.tearDown()
        try a.setup()
        try a.writeSync { w in try w.insert(Note(id: 7, text: "after reopen")) }
        XCTAssertEqual(try m.catchUp().written, 1)
        // A delete before a reopen is forgotten (tombstones live in memory): refused, not missed.
        try a.writeSync { w in _ = try w.deleteItem(ofType: Note.self, id: 8) }
        try a.tearDown()
        try a.setup()
        XCTAssertThrowsError(try m.catchUp(), "tombstones do not survive a reopen") {
            XCTAssertEqual(($0 as? LogStoreError)?.code, .historyTruncated)
        }
    }
}
