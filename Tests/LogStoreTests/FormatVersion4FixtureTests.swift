import Foundation
import LogStore
import LogStoreEngine
import XCTest

// A store written by store format 4 (MANIFEST 4, segments 4, CHECKPOINT 4 with run files),
// committed under Tests/Fixtures/format-v4, must open with every committed item and index entry
// in every later version. It holds the items of the version 3 fixture, written as format 4
// records: a compacted segment whose records were copied verbatim, records a recompression pass
// compressed against a trained dictionary (so the log holds a dictionary define), raw records,
// deletes and a delete-all, a CHECKPOINT 4 naming base runs of the primary and secondary indexes,
// and transactions after that checkpoint in a tail that still has its preallocated zeros
// (copied while the store was open: what a crash leaves).
//
// To regenerate it (only ever with a format 4 build):
//   LOGSTORE_WRITE_FIXTURE=1 swift test --filter FormatVersion4FixtureTests/testWriteFixture

/// The version 4 fixture: the version 3 fixture's contents, written by this format.
enum FormatVersion4Fixture {
    static var directory: URL { FormatVersion1Fixture.directory(version: 4) }

    /// Writing options: small dictionaries train from the fixture's few kilobytes of dishes.
    static var writeOptions: LogStoreOptions {
        var o = FormatVersion3Fixture.options
        o.engine.autoRecompression = false
        o.engine.autoCompaction = false
        o.engine.dictionaryTrainingMinimumBytes = 1 << 10
        return o
    }

    /// Writes the fixture's store into `dir` with this build. Only for regenerating the committed
    /// fixture (`LOGSTORE_WRITE_FIXTURE=1`).
    static func write(to dir: URL) throws {
        let fm = FileManager.default
        try? fm.removeItem(at: dir)
        let work = fm.temporaryDirectory.appendingPathComponent("logstore-v4-fixture-\(UUID().uuidString)")
        defer { try? fm.removeItem(at: work) }
        var f = FormatVersion3Fixture()
        let store = LogDataStore(directory: work, options: writeOptions)
        try store.setup()
        try f.phase1(store)
        try f.phase2(store)
        try store.tearDown()
        let engine = try LogEngine.open(directory: work.path, options: writeOptions.engine)
        let compacted = try engine.compact(includingTail: false)
        XCTAssertTrue(compacted.performed)
        XCTAssertGreaterThan(compacted.recordsCopied, 0, "records copied verbatim")
        let recompressed = try engine.recompress(includingTail: true)
        XCTAssertGreaterThan(recompressed.dictionariesTrained, 0, "a dictionary trained")
        XCTAssertGreaterThan(recompressed.recordsRecompressed, 0, "records compressed against it")
        try engine.close()
        // Phase 3 after the checkpoint that close wrote; the files are copied while the store is
        // open, so the tail keeps its preallocated zeros and the log goes on after the checkpoint.
        let third = LogDataStore(directory: work, options: writeOptions)
        try third.setup()
        try f.phase3(third)
        try FormatVersion3Fixture.copyStoreFiles(of: work, to: dir)
        try third.tearDown()
    }
}

final class FormatVersion4FixtureTests: XCTestCase {
    func copyOfFixture(removing: [String] = []) throws -> URL {
        try FormatVersion1Fixture.copy(version: 4, removing: removing, for: self)
    }

    func testWriteFixture() throws {
        guard ProcessInfo.processInfo.environment["LOGSTORE_WRITE_FIXTURE"] == "1" else {
            throw XCTSkip("set LOGSTORE_WRITE_FIXTURE=1 to regenerate Tests/Fixtures/format-v4 (format 4 builds only)")
        }
        try FormatVersion4Fixture.write(to: FormatVersion4Fixture.directory)
    }

    /// The version of a store file's header (a u16 after the 8 magic bytes).
    func headerVersion(_ url: URL) throws -> UInt16 {
        let bytes = [UInt8](try Data(contentsOf: url).prefix(10))
        return UInt16(bytes[8]) | UInt16(bytes[9]) << 8
    }

    func testTheFixtureHoldsFormat4FilesOnly() throws {
        let dir = FormatVersion4Fixture.directory
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        XCTAssertTrue(names.contains(LogStoreFormat.checkpointFileName))
        XCTAssertTrue(names.contains { $0.hasSuffix(".run") }, "CHECKPOINT 4 names run files")
        for name in names
        where name == LogStoreFormat.manifestFileName || name == LogStoreFormat.checkpointFileName
            || name.hasSuffix(".log") || name.hasSuffix(".run")
        {
            XCTAssertEqual(try headerVersion(dir.appendingPathComponent(name)), 4, name)
        }
    }

    func testFormatVersion4StoreOpensFromItsCheckpointAndRuns() throws {
        let expected = try FormatVersion3Fixture.expected()
        let store = LogDataStore(directory: try copyOfFixture(), options: FormatVersion3Fixture.options)
        try store.setup()
        XCTAssertTrue(store.recoveryReport?.checkpointUsed ?? false, "CHECKPOINT 4 and its runs are used")
        XCTAssertNil(store.recoveryReport?.upgradedFromVersion)
        try expected.check(store)
        try store.tearDown()
    }

    func testFormatVersion4StoreOpensByReplayingTheWholeLog() throws {
        let expected = try FormatVersion3Fixture.expected()
        let store = LogDataStore(directory: try copyOfFixture(removing: ["CHECKPOINT"]), options: FormatVersion3Fixture.options)
        try store.setup()
        XCTAssertFalse(store.recoveryReport?.checkpointUsed ?? true)
        try expected.check(store)
        try store.tearDown()
    }

    func testFormatVersion4StoreWhoseRunFilesAreMissingReplaysTheLog() throws {
        let expected = try FormatVersion3Fixture.expected()
        let runs = try FileManager.default.contentsOfDirectory(atPath: FormatVersion4Fixture.directory.path).filter {
            $0.hasSuffix(".run")
        }
        let store = LogDataStore(directory: try copyOfFixture(removing: runs), options: FormatVersion3Fixture.options)
        try store.setup()
        XCTAssertFalse(store.recoveryReport?.checkpointUsed ?? true)
        XCTAssertNotNil(store.recoveryReport?.checkpointRejectedReason)
        try expected.check(store)
        try store.tearDown()
    }
}
