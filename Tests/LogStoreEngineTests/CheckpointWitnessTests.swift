import Foundation
import LogStoreEngine
import XCTest

/// A CHECKPOINT is written only after the log it covers is synced, so it proves which
/// transactions were committed: a store never opens with less (the damage matrix's clean-close
/// cells).
final class CheckpointWitnessTests: XCTestCase {
    /// A real temporary directory for this test (removed when it ends).
    lazy var root = StoreHarness.posix(self).root

    static var options: LogEngineOptions {
        var o = LogEngineOptions()
        o.autoCompaction = false
        o.segmentSize = 64 << 10
        return o
    }

    /// A cleanly closed store: 40 durable transactions of 250 items over several segments, and a
    /// checkpoint; `segment` is the tail.
    func closedStore() throws -> (dir: String, segment: String) {
        let dir = root + "/store-\(UUID().uuidString)"
        let e = try LogEngine.open(directory: dir, options: Self.options)
        for t in 0..<40 {
            try e.commit(
                (0..<250).map { i in
                    .put(
                        type: "Item", key: RecordKey(Array("i\(t * 250 + i)".utf8)), value: AttributeValue.int(Int64(t * 250 + i)).encoded()
                    )
                })
        }
        let segment = dir + "/" + LogStoreFormat.segmentFileName(e.manifestInfo.segments.last ?? 1)
        XCTAssertGreaterThan(e.manifestInfo.segments.count, 1)
        try e.close()
        XCTAssertTrue(FileManager.default.fileExists(atPath: dir + "/CHECKPOINT"))
        return (dir, segment)
    }

    func assertRefusedNaming(_ dir: String, _ path: String, _ what: String) {
        XCTAssertThrowsError(try LogEngine.open(directory: dir, options: Self.options)) { error in
            let e = error as? LogStoreError
            XCTAssertEqual(e?.code, .corruption, "\(what): \(error)")
            XCTAssertEqual(e?.path, path, "\(what)")
            XCTAssertTrue(e?.message.contains("salvage") == true, "\(what): \(error)")
        }
    }

    func testDeletedSegmentAfterACleanCloseIsRefusedNotRecreatedEmpty() throws {
        let (dir, segment) = try closedStore()
        try FileManager.default.removeItem(atPath: segment)
        assertRefusedNaming(dir, segment, "deleted segment")
        XCTAssertFalse(FileManager.default.fileExists(atPath: segment), "nothing recreated under the lost file's name")
        var salvage = Self.options
        salvage.recovery = .salvage
        let s = try LogEngine.open(directory: dir, options: salvage)
        XCTAssertFalse(s.recoveryReport.dropped.isEmpty, "salvage reports the loss")
        XCTAssertGreaterThan(try s.snapshot().count(ofType: "Item"), 0, "and keeps what the sealed segments hold")
        try s.close()
    }

    func testSegmentTruncatedTo90And50And0PercentAfterACleanCloseIsRefused() throws {
        for percent in [90, 50, 0] {
            let (dir, segment) = try closedStore()
            let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: segment)[.size] as? Int)
            let h = try FileHandle(forUpdating: URL(fileURLWithPath: segment))
            try h.truncate(atOffset: UInt64(size * percent / 100))
            try h.close()
            assertRefusedNaming(dir, segment, "\(percent) %")
        }
    }

    func testSegmentShortenedByOneByteAfterACleanCloseIsRefused() throws {
        let (dir, segment) = try closedStore()
        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: segment)[.size] as? Int)
        let h = try FileHandle(forUpdating: URL(fileURLWithPath: segment))
        try h.truncate(atOffset: UInt64(size - 1))
        try h.close()
        assertRefusedNaming(dir, segment, "one byte")
    }

    func testCheckpointWithoutManifestOrSegmentsIsRefusedNotOpenedAsANewStore() throws {
        let (dir, _) = try closedStore()
        for name in try FileManager.default.contentsOfDirectory(atPath: dir) where name != "CHECKPOINT" && name != "LOCK" {
            try FileManager.default.removeItem(atPath: dir + "/" + name)
        }
        assertRefusedNaming(dir, dir + "/CHECKPOINT", "only CHECKPOINT left")
        XCTAssertEqual(Set(try FileManager.default.contentsOfDirectory(atPath: dir)), ["CHECKPOINT", "LOCK"], "nothing created")
    }

    /// A store whose MANIFEST was kept as it was after its first commit while 40 more (several
    /// roll-overs) followed and the store was closed; returns the directory and that old MANIFEST.
    func storeAndEarlyManifest(_ name: String) throws -> (dir: String, manifest: Data) {
        let dir = root + "/" + name
        let e = try LogEngine.open(directory: dir, options: Self.options)
        try e.commit([.put(type: "Item", key: RecordKey([1]), value: AttributeValue.int(1).encoded())])
        let oldManifest = try Data(contentsOf: URL(fileURLWithPath: dir + "/MANIFEST"))
        for t in 0..<40 {
            try e.commit(
                (0..<250).map { i in
                    .put(
                        type: "Item", key: RecordKey(Array("i\(t * 250 + i)".utf8)), value: AttributeValue.int(Int64(t * 250 + i)).encoded()
                    )
                })
        }
        XCTAssertGreaterThan(e.manifestInfo.segments.count, 1)
        try e.close()
        return (dir, oldManifest)
    }

    func testOlderCopyOfManifestIsRefusedAndItsUnlistedSegmentsAreNotDeleted() throws {
        // The checkpoint written at close (of the newer generation) contradicts the old MANIFEST.
        let (dir, oldManifest) = try storeAndEarlyManifest("older-manifest")
        let before = Set(try FileManager.default.contentsOfDirectory(atPath: dir))
        try oldManifest.write(to: URL(fileURLWithPath: dir + "/MANIFEST"))
        assertRefusedNaming(dir, dir + "/MANIFEST", "older MANIFEST")
        XCTAssertEqual(Set(try FileManager.default.contentsOfDirectory(atPath: dir)), before, "no segment was deleted as a stray")
    }

    func testOlderCopyOfManifestWithoutAnyCheckpointIsRefusedAndNothingIsDeleted() throws {
        // With CHECKPOINT gone too, the unlisted segments themselves are the evidence (a segment a
        // roll-over left behind never holds a transaction).
        let (dir, oldManifest) = try storeAndEarlyManifest("older-manifest-no-checkpoint")
        try FileManager.default.removeItem(atPath: dir + "/CHECKPOINT")
        let before = Set(try FileManager.default.contentsOfDirectory(atPath: dir))
        try oldManifest.write(to: URL(fileURLWithPath: dir + "/MANIFEST"))
        assertRefusedNaming(dir, dir + "/" + LogStoreFormat.segmentFileName(2), "older MANIFEST, no checkpoint")
        XCTAssertEqual(Set(try FileManager.default.contentsOfDirectory(atPath: dir)), before, "no segment was deleted as a stray")
        var salvage = Self.options
        salvage.recovery = .salvage
        let s = try LogEngine.open(directory: dir, options: salvage)
        XCTAssertEqual(try s.snapshot().count(ofType: "Item"), 10_001, "salvage finds every item in the unlisted segments")
        try s.close()
    }

    func testIntactStoreWithItsCheckpointOpensWithEveryItem() throws {
        let (dir, _) = try closedStore()
        let e = try LogEngine.open(directory: dir, options: Self.options)
        XCTAssertTrue(e.recoveryReport.checkpointUsed)
        XCTAssertEqual(try e.snapshot().count(ofType: "Item"), 10_000)
        try e.close()
    }
}
