import Foundation
import LogStoreCompactCommands
import LogStoreEngine
import XCTest

/// The inspection code behind verify, stats and compact --dry-run (Sources/LogStoreCompactCommands/Inspection) on its own.
final class StoreScannerTests: XCTestCase {
    func testScanReplaysToTheSameIndexAsTheEngine() throws {
        let store = try makeStore()
        let scan = try StoreScanner(directory: store.dir).scan()
        XCTAssertFalse(scan.hasDamage, "\(scan.issues)")
        XCTAssertEqual(scan.lastSequence, store.lastSequence)
        XCTAssertEqual(scan.liveRecords, 310)
        let e = try LogEngine.open(directory: store.dir, options: StoreFixture.options())
        defer { try? e.close() }
        XCTAssertEqual(scan.compareIndex(with: try e.snapshot()), [])
        XCTAssertEqual(scan.segments.map(\.number), e.manifestInfo.segments)
    }

    /// Zeros after the tail's last transaction (a preallocated tail a crash left) are free space:
    /// no issue, not dead bytes (FileFormat.md §10, rule 5a), as recovery reads them.
    func testZerosAfterTheTailsLastTransactionArePreallocatedNotDamage() throws {
        let store = try makeStore()
        let before = try StoreScanner(directory: store.dir).scan()
        let tail = try XCTUnwrap(before.segments.last)
        let f = try POSIXFileSystem().open(tail.path, mode: .readWrite)
        try f.write([UInt8](repeating: 0, count: 10_000), at: try f.size())
        try f.close()
        let scan = try StoreScanner(directory: store.dir).scan()
        XCTAssertEqual(scan.issues.count, before.issues.count, "\(scan.issues)")
        XCTAssertEqual(scan.preallocatedBytes, 10_000)
        XCTAssertEqual(scan.deadBytes, before.deadBytes)
        XCTAssertEqual(scan.lastSequence, store.lastSequence)
    }

    func testCompareIndexReportsEveryDisagreementWithAnotherLog() throws {
        let a = try makeStore()
        let b = temporaryPath("other")
        let e = try LogEngine.open(directory: b, options: StoreFixture.options())
        defer { try? e.close() }
        try e.commit([.put(type: "User", key: StoreFixture.userKey(299), value: AttributeValue.int(1).encoded())])
        let issues = try StoreScanner(directory: a.dir).scan().compareIndex(with: try e.snapshot(), limit: 5)
        XCTAssertEqual(issues.count, 6, "5 listed and one that counts the rest")
        XCTAssertTrue(issues.allSatisfy { $0.kind == .index && $0.severity == .damage })
        XCTAssertTrue(issues.last?.message.contains("more index disagreements") ?? false)
    }

    func testScanKeepsLookingAfterDamageAndReportsEveryDamagedFrame() throws {
        let store = try makeStore()
        let first = try StoreScanner(directory: store.dir).scan()
        let segment = try XCTUnwrap(first.segments.dropLast().first { $0.frames >= 3 })
        // Damage the first and the last frame of the segment.
        let frames = try frameOffsets(segment.path)
        XCTAssertGreaterThanOrEqual(frames.count, 3)
        try flipByte(segment.path, at: frames[0] + 30)
        try flipByte(segment.path, at: frames[frames.count - 1] + 30)

        let scan = try StoreScanner(directory: store.dir).scan()
        let damage = scan.issues.filter { $0.severity == .damage }
        XCTAssertEqual(damage.map(\.offset), [UInt64(frames[0]), UInt64(frames[frames.count - 1])])
        XCTAssertEqual(scan.transactionsAfterDamage, frames.count - 2, "the intact transactions between the two")
    }

    func testScanOfAStoreWithAStraySegmentWarnsButIsNotDamaged() throws {
        let store = try makeStore()
        let files = try segmentFiles(store.dir)
        try FileManager.default.copyItem(atPath: store.dir + "/" + files[0], toPath: store.dir + "/999999.log")
        let scan = try StoreScanner(directory: store.dir).scan()
        XCTAssertFalse(scan.hasDamage)
        XCTAssertEqual(scan.issues.map(\.kind), [.strayFile])
        XCTAssertGreaterThan(scan.strayBytes, 0)
    }

    /// Frame offsets of a segment, walked by their length fields (each fixture transaction is one
    /// frame).
    func frameOffsets(_ path: String) throws -> [Int] {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var offsets: [Int] = []
        // Format v2: a 48-byte segment header, 28-byte frame headers.
        var o = SegmentHeader.sizeV2
        while o + LogFrame.headerSizeV2 <= bytes.count {
            offsets.append(o)
            let length = Int(bytes[o + 4]) | Int(bytes[o + 5]) << 8 | Int(bytes[o + 6]) << 16 | Int(bytes[o + 7]) << 24
            o += LogFrame.headerSizeV2 + length
        }
        return offsets
    }
}

/// Compaction copies the frames of a transaction whose records are all live as they are (data
/// frames and the commit frame, one sequence number), or re-packs them into several commit frames
/// with one sequence; recovery accepts both, and so must every tool that reads the log.
final class CompactedMultiFrameTransactionTests: XCTestCase {
    func testVerifyAcceptsACompactedTransactionSpreadOverSeveralFrames() throws {
        let dir = temporaryPath("compacted-multiframe")
        var options = LogEngineOptions()
        options.maxFramePayload = 512
        options.segmentSize = 64 << 10
        options.autoCompaction = false
        let engine = try LogEngine.open(directory: dir, options: options)
        // One transaction of 40 records of ~100 bytes: ~8 frames, every record stays live; and a
        // record written and deleted, for the compaction to drop.
        let value = AttributeValue.string(String(repeating: "x", count: 100)).encoded()
        try engine.commit([.put(type: "Gone", key: RecordKey([1]), value: value)])
        try engine.commit((0..<40).map { .put(type: "Big", key: RecordKey(Array("k\($0)".utf8)), value: value) })
        try engine.commit([.delete(type: "Gone", key: RecordKey([1]))])
        let report = try engine.compact(includingTail: true)
        XCTAssertTrue(report.performed)
        try engine.close()

        let scan = try StoreScanner(directory: dir).scan()
        XCTAssertFalse(scan.hasDamage, "\(scan.issues)")
        XCTAssertEqual(scan.liveRecords, 40)
        let reopened = try LogEngine.open(directory: dir, options: options)
        defer { try? reopened.close() }
        XCTAssertEqual(scan.compareIndex(with: try reopened.snapshot()), [])
    }
}
