import Foundation
import XCTest
import _LogStoreTestSupport

@testable import LogStoreEngine

/// Compaction copies a frame whose records are all live as it is, and re-packs
/// the live records of the others; either way the store reads the same before and after, after a
/// reopen from a checkpoint and after a full replay, and nothing deleted comes back.
final class CompactionCopyTests: XCTestCase {
    static func options() -> LogEngineOptions {
        var o = CT.smallOptions()
        o.maxFramePayload = 1024
        o.checkpointOnClose = false
        return o
    }

    /// Frames of a compacted segment: (offset, header, whole frame bytes).
    static func frames(_ fs: any FileSystem, _ path: String) throws -> [(Int, LogFrame.Header, [UInt8])] {
        let bytes = try CT.readFile(fs, path)
        var out: [(Int, LogFrame.Header, [UInt8])] = []
        try bytes.withUnsafeBytes { buf in
            var at = SegmentHeader.sizeV2
            while at < buf.count {
                guard case .frame(let h, let payload) = LogFrame.parse(buf, at: at, version: 2) else {
                    throw LogStoreError(.corruption, "bad frame in test", path: path, offset: UInt64(at))
                }
                let end = payload + h.storedLength
                out.append((at, h, Array(buf[at..<end])))
                at = end
            }
        }
        return out
    }

    /// Writes `transactions` of `perTransaction` puts (values of about 100 bytes, several frames
    /// each), overwrites every key whose number `overwrite` selects and deletes every one `delete`
    /// selects, each in transactions of their own; returns the expected contents.
    func fill(_ e: LogEngine, transactions: Int, perTransaction: Int, overwrite: (Int) -> Bool, delete: (Int) -> Bool) throws -> CT.Model {
        var model: CT.Model = [:]
        for t in 0..<transactions {
            var ops: [RecordOperation] = []
            for i in 0..<perTransaction {
                let n = t * perTransaction + i
                let v = Array("value \(n) ".utf8) + [UInt8](repeating: UInt8(n % 251), count: 90)
                ops.append(.put(type: "T", key: CT.key(n), value: v))
                model["T", default: [:]][CT.key(n)] = v
            }
            try e.commit(ops)
        }
        let all = transactions * perTransaction
        var ops: [RecordOperation] = []
        for n in 0..<all where overwrite(n) {
            let v = Array("new \(n)".utf8)
            ops.append(.put(type: "T", key: CT.key(n), value: v))
            model["T", default: [:]][CT.key(n)] = v
        }
        for n in 0..<all where delete(n) {
            ops.append(.delete(type: "T", key: CT.key(n)))
            model["T"]?[CT.key(n)] = nil
        }
        if !ops.isEmpty { try e.commit(ops) }
        return model
    }

    func testFramesWhoseRecordsAreAllLiveAreCopiedAsTheyAreAndTheOthersRepacked() throws {
        let fs = InMemoryFileSystem()
        let dir = "/store"
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: Self.options())
        // Keys 0..<40 (the first transaction's frames) are overwritten or deleted in part; the
        // later transactions' frames are all live.
        let model = try fill(
            e, transactions: 6, perTransaction: 40, overwrite: { $0 < 40 && $0 % 3 == 0 }, delete: { $0 < 40 && $0 % 7 == 1 })
        var before: [UInt8] = []
        for n in e.manifestInfo.segments { before += try CT.readFile(fs, segmentPath(dir, n)) }
        let report = try e.compact()
        XCTAssertTrue(report.performed)
        XCTAssertGreaterThan(report.framesCopied, 0, "\(report)")
        XCTAssertGreaterThan(report.framesRepacked, 0, "\(report)")
        XCTAssertEqual(try CT.contents(e), model)
        // A copied frame (syncedThrough not 0) is byte for byte a frame of the old log; a
        // re-packed one (syncedThrough 0) holds putAt records.
        var copied = 0
        for n in report.newSegments {
            for (_, header, bytes) in try Self.frames(fs, segmentPath(dir, n)) where header.syncedThrough != 0 {
                XCTAssertNotNil(before.firstRange(of: bytes), "a copied frame must be unchanged")
                copied += 1
            }
        }
        XCTAssertEqual(copied, report.framesCopied)
        // Reopen from the compaction's checkpoint, then from a full replay.
        try e.close()
        let o = Self.options()
        let fromCheckpoint = try LogEngine.open(directory: dir, fileSystem: fs, options: o)
        XCTAssertTrue(fromCheckpoint.recoveryReport.checkpointUsed)
        XCTAssertEqual(try CT.contents(fromCheckpoint), model)
        try fromCheckpoint.close()
        try fs.removeFile(atPath: _joinPath(dir, LogStoreFormat.checkpointFileName))
        let replayed = try LogEngine.open(directory: dir, fileSystem: fs, options: o)
        XCTAssertFalse(replayed.recoveryReport.checkpointUsed)
        XCTAssertEqual(try CT.contents(replayed), model)
        // Locations survive: a point read of every key agrees with the scan.
        let snap = try replayed.snapshot()
        for (k, v) in model["T"] ?? [:] { XCTAssertEqual(try snap.value(type: "T", key: k).map(Array.init), v) }
        try replayed.close()
    }

    /// A frame holding a delete is never copied as it is (the delete is not live), so a compaction
    /// that drops the delete never brings its key back.
    func testFrameWithADeleteIsRepackedAndTheDeletedKeyStaysDeleted() throws {
        let fs = InMemoryFileSystem()
        let e = try LogEngine.open(directory: "/store", fileSystem: fs, options: Self.options())
        try e.commit([.put(type: "T", key: CT.key(1), value: [1])])
        // One frame: a put that stays live and the delete of key 1.
        try e.commit([.put(type: "T", key: CT.key(2), value: [2]), .delete(type: "T", key: CT.key(1))])
        let report = try e.compact()
        XCTAssertEqual(report.framesCopied, 0, "\(report)")
        try e.close()
        let again = try LogEngine.open(directory: "/store", fileSystem: fs, options: Self.options())
        XCTAssertEqual(try CT.contents(again), ["T": [CT.key(2): [2]]])
        try again.close()
    }

    /// A compacted store compacted again: its copied frames (put records) and re-packed ones
    /// (putAt records) are copied or re-packed in turn, and every sequence number survives.
    func testCompactingCompactedSegmentsAgainKeepsRecordsAndSequences() throws {
        let fs = InMemoryFileSystem()
        let dir = "/store"
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: Self.options())
        var model = try fill(e, transactions: 5, perTransaction: 30, overwrite: { $0 % 4 == 0 && $0 < 60 }, delete: { _ in false })
        try e.compact()
        let sequences = try Dictionary(
            uniqueKeysWithValues: (0..<150).map { n in (n, try XCTUnwrap(e.snapshot().index.location("T", CT.key(n))).sequence) })
        // Nothing changed: a second compaction has nothing dead to drop.
        let second = try e.compact()
        XCTAssertFalse(second.performed, "\(second)")
        // Overwrite a few keys of the copied frames and compact again.
        for n in [61, 95, 140] {
            try e.commit([.put(type: "T", key: CT.key(n), value: [9])])
            model["T"]?[CT.key(n)] = [9]
        }
        let third = try e.compact()
        XCTAssertTrue(third.performed)
        XCTAssertGreaterThan(third.framesCopied, 0, "\(third)")
        XCTAssertEqual(try CT.contents(e), model)
        for n in 0..<150 where ![61, 95, 140].contains(n) {
            XCTAssertEqual(try e.snapshot().index.location("T", CT.key(n))?.sequence, sequences[n], "key \(n) keeps its sequence")
        }
        try e.close()
        try fs.removeFile(atPath: _joinPath(dir, LogStoreFormat.checkpointFileName))
        let replayed = try LogEngine.open(directory: dir, fileSystem: fs, options: Self.options())
        XCTAssertEqual(try CT.contents(replayed), model)
        for n in 0..<150 where ![61, 95, 140].contains(n) {
            XCTAssertEqual(
                try replayed.snapshot().index.location("T", CT.key(n))?.sequence, sequences[n], "key \(n) keeps its sequence after replay")
        }
        try replayed.close()
    }

    /// In a compacted segment a frame's syncedThrough says what it holds (FileFormat.md §7a): a
    /// put in a frame compaction wrote (syncedThrough 0), or a putAt in a copied one, is corruption.
    func testRecordKindThatContradictsTheFrameIsCorruption() throws {
        for copiedFrame in [false, true] {
            let fs = InMemoryFileSystem()
            let dir = "/store"
            var o = Self.options()
            o.compression = false
            let e = try LogEngine.open(directory: dir, fileSystem: fs, options: o)
            // A frame copied (key 3) and one re-packed (key 2 deleted). (A frame that follows a
            // pending re-packed one is re-packed too, rather than leave a runt frame.)
            try e.commit([.put(type: "T", key: CT.key(3), value: [3])])
            try e.commit([.put(type: "T", key: CT.key(1), value: [1]), .put(type: "T", key: CT.key(2), value: [2])])
            try e.commit([.delete(type: "T", key: CT.key(2))])
            let report = try e.compact()
            XCTAssertEqual(report.framesCopied, 1, "\(report)")
            XCTAssertEqual(report.framesRepacked, 1, "\(report)")
            try e.close()
            try fs.removeFile(atPath: _joinPath(dir, LogStoreFormat.checkpointFileName))
            let path = segmentPath(dir, try XCTUnwrap(report.newSegments.first))
            var bytes = try CT.readFile(fs, path)
            let frames = try Self.frames(fs, path)
            let (at, _, _) = try XCTUnwrap(frames.first { ($0.1.syncedThrough != 0) == copiedFrame })
            // Flip the record's op tag between put and putAt, or the frame's syncedThrough
            // between 0 and not 0, and fix the checksum: the frame is intact, its meaning not.
            if copiedFrame {
                bytes[at + LogFrame.headerSizeV2] = RecordOperation.Tag.putAt.rawValue
            } else {
                bytes[at + 24] = 1
            }
            fixFrameChecksum(&bytes, at: at)
            try CT.writeFile(fs, path, bytes)
            XCTAssertThrowsError(try LogEngine.open(directory: dir, fileSystem: fs, options: o)) { error in
                XCTAssertEqual((error as? LogStoreError)?.code, .corruption, "copied frame \(copiedFrame): \(error)")
            }
        }
    }

    func fixFrameChecksum(_ bytes: inout [UInt8], at offset: Int) {
        let stored = Int(bytes[offset + 4]) | Int(bytes[offset + 5]) << 8 | Int(bytes[offset + 6]) << 16 | Int(bytes[offset + 7]) << 24
        let end = offset + LogFrame.headerSizeV2 + stored
        let crc = bytes.withUnsafeBytes { CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[(offset + 4)..<end]))) }
        withUnsafeBytes(of: crc.littleEndian) { for i in 0..<4 { bytes[offset + i] = $0[i] } }
    }
}
