import Foundation
import LogStoreEngine
import XCTest

/// A MANIFEST that is empty or garbled beside intact segments is a damaged store: strict open
/// refuses it naming the next step, salvage rebuilds the segment list and keeps every item. A
/// directory LogStore never wrote is `.notAStore`, and a foreign file named like a segment is
/// never overwritten.
final class ManifestDamageTests: XCTestCase {
    /// A real temporary directory for this test (removed when it ends).
    lazy var root = StoreHarness.posix(self).root

    static var options: LogEngineOptions {
        var o = LogEngineOptions()
        o.segmentSize = 64 << 10
        o.autoCompaction = false
        return o
    }

    /// A closed store of 200 items over several segments.
    func storeOf200Items() throws -> String {
        let dir = root + "/store-\(UUID().uuidString)"
        let e = try LogEngine.open(directory: dir, options: Self.options)
        for t in 0..<20 {
            try e.commit(
                (0..<10).map { i in
                    let n = t * 10 + i
                    // Not compressible: 800 bytes of a multiplicative hash.
                    let text = String(
                        (0..<800).map { k -> Character in
                            var x = UInt64(n * 1000 + k) &* 0x9E37_79B9_7F4A_7C15
                            x ^= x >> 29
                            return Character(Unicode.Scalar(UInt8(33 + x % 90)))
                        })
                    return .put(type: "Item", key: RecordKey(Array("item-\(n)".utf8)), value: AttributeValue.string(text).encoded())
                })
        }
        XCTAssertGreaterThan(e.manifestInfo.segments.count, 1)
        try e.close()
        return dir
    }

    func count(_ dir: String, _ options: LogEngineOptions = options) throws -> Int {
        let e = try LogEngine.open(directory: dir, options: options)
        defer { try? e.close() }
        return try e.snapshot().count(ofType: "Item")
    }

    var salvage: LogEngineOptions {
        var o = Self.options
        o.recovery = .salvage
        return o
    }

    func assertDamagedManifest(_ bytes: [UInt8], _ what: String) throws {
        let dir = try storeOf200Items()
        try Data(bytes).write(to: URL(fileURLWithPath: dir + "/MANIFEST"))
        do {
            _ = try count(dir)
            XCTFail("\(what): strict open must refuse")
        } catch let e as LogStoreError {
            XCTAssertEqual(e.code, .corruption, "\(what): a damaged store, not a foreign directory: \(e)")
            XCTAssertTrue(e.message.contains("salvage"), "\(what): the message names the next step: \(e.message)")
            XCTAssertEqual(e.path, dir + "/MANIFEST")
        }
        let e = try LogEngine.open(directory: dir, options: salvage)
        defer { try? e.close() }
        XCTAssertEqual(try e.snapshot().count(ofType: "Item"), 200, "\(what): salvage keeps every item")
        XCTAssertEqual(e.recoveryReport.dropped.first?.path, dir + "/MANIFEST")
    }

    func testEmptyManifestBesideIntactSegmentsIsADamagedStoreAndSalvageKeepsEveryItem() throws {
        try assertDamagedManifest([], "empty MANIFEST")
    }

    func testGarbledManifestBesideIntactSegmentsIsADamagedStoreAndSalvageKeepsEveryItem() throws {
        try assertDamagedManifest(Array("this is not a manifest at all, just text".utf8), "text MANIFEST")
        try assertDamagedManifest((0..<40).map { UInt8(truncatingIfNeeded: $0 &* 97 &+ 13) }, "random MANIFEST")
    }

    func testMissingManifestRefusalNamesVerifyAndSalvage() throws {
        let dir = try storeOf200Items()
        try FileManager.default.removeItem(atPath: dir + "/MANIFEST")
        XCTAssertThrowsError(try count(dir)) { error in
            let e = error as? LogStoreError
            XCTAssertEqual(e?.code, .corruption)
            XCTAssertTrue(e?.message.contains("verify") == true && e?.message.contains("salvage") == true, "\(error)")
        }
        XCTAssertEqual(try count(dir, salvage), 200)
    }

    func testPictureNamedLikeASegmentWithoutManifestIsNotAStore() throws {
        let dir = root + "/photos"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10] + Array("JFIF".utf8) + [UInt8](repeating: 0x42, count: 4000)
        try Data(jpeg).write(to: URL(fileURLWithPath: dir + "/000001.log"))
        for options in [Self.options, salvage] {
            XCTAssertThrowsError(try count(dir, options)) { error in
                XCTAssertEqual((error as? LogStoreError)?.code, .notAStore, "\(error)")
            }
        }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: dir + "/000001.log")), Data(jpeg), "never written to")
    }

    func testSmallForeignFileNamedLikeASegmentIsNeverOverwrittenAsAnInterruptedCreation() throws {
        let dir = root + "/small"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let foreign = Array("twenty foreign bytes".utf8)
        try Data(foreign).write(to: URL(fileURLWithPath: dir + "/000001.log"))
        XCTAssertThrowsError(try count(dir)) { error in
            XCTAssertEqual((error as? LogStoreError)?.code, .notAStore, "\(error)")
        }
        XCTAssertEqual([UInt8](try Data(contentsOf: URL(fileURLWithPath: dir + "/000001.log"))), foreign)
    }

    func testNewStoreNeverShowsSegmentOneWithATornHeader() throws {
        // Segment 1 of a new store appears under its name only once its header is synced (it is
        // written as 000001.log.tmp and renamed), so a short 000001.log is never ours to guess at.
        let dir = root + "/new"
        let e = try LogEngine.open(directory: dir, options: Self.options)
        try e.close()
        let names = try FileManager.default.contentsOfDirectory(atPath: dir)
        XCTAssertFalse(names.contains { $0.hasSuffix(".tmp") }, "\(names)")
        let size = try FileManager.default.attributesOfItem(atPath: dir + "/000001.log")[.size] as? Int
        XCTAssertGreaterThanOrEqual(size ?? 0, 32)
    }

    func testCreationStoppedBeforeSegmentOneWasRenamedIntoPlaceIsFinished() throws {
        // A power loss between writing 000001.log.tmp and renaming it can leave only that file.
        let dir = root + "/stopped"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try Data([0x89, 0x4C, 0x53]).write(to: URL(fileURLWithPath: dir + "/000001.log.tmp"))
        let e = try LogEngine.open(directory: dir, options: Self.options)
        XCTAssertTrue(e.recoveryReport.created)
        try e.close()
        XCTAssertEqual(
            Set(try FileManager.default.contentsOfDirectory(atPath: dir)).subtracting(["LOCK", "CHECKPOINT"]), ["000001.log", "MANIFEST"])
    }

    func testCorruptionFoundWhileReadingNamesVerifyAndSalvage() throws {
        let dir = try storeOf200Items()
        var o = Self.options
        o.cacheSize = 0
        let e = try LogEngine.open(directory: dir, options: o)
        defer { try? e.close() }
        let snapshot = try e.snapshot()
        let key = RecordKey(Array("item-0".utf8))
        let loc = try XCTUnwrap(snapshot.location(type: "Item", key: key))
        let path = dir + "/" + LogStoreFormat.segmentFileName(loc.segment)
        let h = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        try h.seek(toOffset: UInt64(loc.offset) + 40)
        let byte = try XCTUnwrap(try h.read(upToCount: 1)).first ?? 0
        try h.seek(toOffset: UInt64(loc.offset) + 40)
        try h.write(contentsOf: Data([byte ^ 0x01]))
        try h.close()
        XCTAssertThrowsError(try snapshot.value(type: "Item", key: key)) { error in
            let e = error as? LogStoreError
            XCTAssertEqual(e?.code, .corruption)
            XCTAssertTrue(e?.message.contains("verify") == true && e?.message.contains("salvage") == true, "\(error)")
        }
    }
}
