import Foundation
import LogStore
import LogStoreEngine
import XCTest

// A store written by format version 2 (MANIFEST and segments version 2, CHECKPOINT version 2,
// before secondary indexes: commit 5c5a984), committed under Tests/Fixtures/format-v2, must open
// with every committed item in every later version. It holds the same writes as the version-1
// fixture (several segments, a compacted prefix, multi-frame and compressed transactions,
// deletes, a delete-all, three id kinds, a checkpoint).
//
// To regenerate it (only ever with a build that writes version-2 checkpoints):
//   LOGSTORE_WRITE_FIXTURE=1 swift test --filter FormatVersion2FixtureTests/testWriteFixture

final class FormatVersion2FixtureTests: XCTestCase {
    func copyOfFixture(removing: [String] = []) throws -> URL {
        try FormatVersion1Fixture.copy(version: 2, removing: removing, for: self)
    }

    func testWriteFixture() throws {
        guard ProcessInfo.processInfo.environment["LOGSTORE_WRITE_FIXTURE"] == "1" else {
            throw XCTSkip("set LOGSTORE_WRITE_FIXTURE=1 to regenerate Tests/Fixtures/format-v2 (version-2 checkpoint builds only)")
        }
        try FormatVersion1Fixture.write(to: FormatVersion1Fixture.directory(version: 2))
    }

    func testFormatVersion2StoreOpensFromItsCheckpoint() throws {
        let expected = try FormatVersion1Fixture.expected()
        let store = LogDataStore(directory: try copyOfFixture(), options: FormatVersion1Fixture.options)
        try store.setup()
        XCTAssertTrue(store.recoveryReport?.checkpointUsed ?? false, "a version-2 checkpoint is still read")
        try expected.check(store)
        try store.tearDown()
    }

    func testFormatVersion2StoreOpensByReplayingTheWholeLog() throws {
        let expected = try FormatVersion1Fixture.expected()
        let store = LogDataStore(directory: try copyOfFixture(removing: ["CHECKPOINT"]), options: FormatVersion1Fixture.options)
        try store.setup()
        try expected.check(store)
        try store.tearDown()
    }

    func testFormatVersion2StoreTakesNewWritesAndKeepsThemAcrossReopen() throws {
        var expected = try FormatVersion1Fixture.expected()
        let dir = try copyOfFixture()
        let store = LogDataStore(directory: dir, options: FormatVersion1Fixture.options)
        try store.setup()
        try store.writeSync { a in try a.insert(FormatVersion1Fixture.item(5000, version: 9)) }
        expected.items[5000] = FormatVersion1Fixture.item(5000, version: 9)
        try store.tearDown()
        let again = LogDataStore(directory: dir, options: FormatVersion1Fixture.options)
        try again.setup()
        XCTAssertTrue(again.recoveryReport?.checkpointUsed ?? false, "the close wrote a checkpoint of this build's version")
        try expected.check(again)
        try again.tearDown()
    }
}
