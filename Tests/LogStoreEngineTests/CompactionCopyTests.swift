import Foundation
import XCTest
import _LogStoreTestSupport

@testable import LogStoreEngine

/// Compaction copies every live format 4 record byte for byte (its checksum with it) into
/// compacted frames with sequence tables, and writes each define before its first use; the store
/// reads the same before and after, after a reopen from a checkpoint and after a full replay, and
/// nothing deleted comes back.
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
                guard case .frame(let h, let payload) = LogFrame.parse(buf, at: at, version: 4, compacted: true) else {
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

    /// The bytes of the record at `loc`.
    func recordBytes(_ fs: any FileSystem, _ dir: String, _ loc: RecordLocation) throws -> [UInt8] {
        Array(try CT.readFile(fs, segmentPath(dir, loc.segment))[Int(loc.offset)..<Int(loc.offset + loc.length)])
    }

    func testLiveRecordsAreCopiedByteForByteWithTheirSequences() throws {
        let fs = InMemoryFileSystem()
        let dir = "/store"
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: Self.options())
        let model = try fill(
            e, transactions: 6, perTransaction: 40, overwrite: { $0 < 40 && $0 % 3 == 0 }, delete: { $0 < 40 && $0 % 7 == 1 })
        let before = try e.snapshot()
        var old: [RecordKey: (RecordLocation, [UInt8])] = [:]
        for (k, loc) in try before.locations(ofType: "T") { old[k] = (loc, try recordBytes(fs, dir, loc)) }
        let report = try e.compact()
        XCTAssertTrue(report.performed)
        XCTAssertEqual(report.recordsCopied, old.count)
        XCTAssertEqual(report.recordsReencoded, 0)
        XCTAssertEqual(report.definesWritten, 1, "the one type's define")
        XCTAssertEqual(try CT.contents(e), model)
        let after = try e.snapshot()
        for (k, loc) in try after.locations(ofType: "T") {
            let (oldLoc, bytes) = try XCTUnwrap(old[k])
            XCTAssertTrue(report.newSegments.contains(loc.segment))
            XCTAssertEqual(loc.length, oldLoc.length)
            XCTAssertEqual(loc.sequence, oldLoc.sequence, "a record keeps its sequence")
            XCTAssertEqual(try recordBytes(fs, dir, loc), bytes, "a record moves unchanged")
        }
        // Every frame of the output is a compacted commit frame with a sequence table, and frame
        // sequences never go backwards.
        var last: UInt64 = 0
        for n in report.newSegments {
            for (_, header, _) in try Self.frames(fs, segmentPath(dir, n)) {
                XCTAssertEqual(header.kind, .commit)
                XCTAssertEqual(header.syncedThrough, 0)
                XCTAssertGreaterThanOrEqual(header.sequence, last)
                last = header.sequence
            }
        }
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
        let snap = try replayed.snapshot()
        for (k, v) in model["T"] ?? [:] {
            XCTAssertEqual(try snap.value(type: "T", key: k).map(Array.init), v)
            XCTAssertEqual(try snap.location(type: "T", key: k), try after.location(type: "T", key: k), "replay finds the same locations")
        }
        try replayed.close()
    }

    /// A delete is never live, so a compaction drops it and its key stays deleted.
    func testADroppedDeleteNeverBringsItsKeyBack() throws {
        let fs = InMemoryFileSystem()
        let e = try LogEngine.open(directory: "/store", fileSystem: fs, options: Self.options())
        try e.commit([.put(type: "T", key: CT.key(1), value: [1])])
        try e.commit([.put(type: "T", key: CT.key(2), value: [2]), .delete(type: "T", key: CT.key(1))])
        let report = try e.compact()
        XCTAssertEqual(report.recordsCopied, 1, "\(report)")
        try e.close()
        let again = try LogEngine.open(directory: "/store", fileSystem: fs, options: Self.options())
        XCTAssertEqual(try CT.contents(again), ["T": [CT.key(2): [2]]])
        try again.close()
    }

    /// A compacted store compacted again keeps every record and sequence; with nothing dead it
    /// is left alone.
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
        for n in [61, 95, 140] {
            try e.commit([.put(type: "T", key: CT.key(n), value: [9])])
            model["T"]?[CT.key(n)] = [9]
        }
        let third = try e.compact()
        XCTAssertTrue(third.performed)
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

    /// A compacted frame whose sequence table gives a record a sequence below 1, and a compacted
    /// segment that holds a delete, are corruption (both with valid checksums).
    func testACompactedFrameThatContradictsItsRulesIsCorruption() throws {
        for damage in ["delta", "delete"] {
            let fs = InMemoryFileSystem()
            let dir = "/store"
            let e = try LogEngine.open(directory: dir, fileSystem: fs, options: Self.options())
            try e.commit([.put(type: "T", key: CT.key(3), value: [3])])
            try e.commit([.put(type: "T", key: CT.key(1), value: [1])])
            let report = try e.compact()
            XCTAssertTrue(report.performed)
            try e.close()
            try fs.removeFile(atPath: _joinPath(dir, LogStoreFormat.checkpointFileName))
            let segment = try XCTUnwrap(report.newSegments.first)
            let path = segmentPath(dir, segment)
            var bytes = try CT.readFile(fs, path)
            let (at, header, _) = try XCTUnwrap(Self.frames(fs, path).first)
            XCTAssertEqual(header.recordCount, 3, "a define and two puts")
            // The frame rebuilt: the define, a put, then either a put whose sequence delta reaches
            // 0, or a delete.
            var records: [UInt8] = []
            RecordCodec.appendTypeDefine(into: &records, id: 1, name: "T")
            CT.key(3).withUnsafeBytes { k in
                [UInt8]([3]).withUnsafeBytes { _ = RecordCodec.appendPut(into: &records, typeID: 1, key: k, stored: $0) }
            }
            var deltas: [UInt64] = [0, header.sequence - 1]
            if damage == "delta" {
                CT.key(1).withUnsafeBytes { k in
                    [UInt8]([1]).withUnsafeBytes { _ = RecordCodec.appendPut(into: &records, typeID: 1, key: k, stored: $0) }
                }
                deltas.append(header.sequence)
            } else {
                CT.key(1).withUnsafeBytes { _ = RecordCodec.appendDelete(into: &records, typeID: 1, key: $0) }
                deltas.append(0)
            }
            var frame: [UInt8] = []
            records.withUnsafeBytes {
                _ = LogFrame.appendV4(
                    into: &frame, records: $0, recordCount: 3, kind: .commit, sequence: header.sequence, syncedThrough: 0,
                    sequenceDeltas: deltas)
            }
            bytes.replaceSubrange(at..<(at + 28 + header.storedLength), with: frame)
            try CT.writeFile(fs, path, bytes)
            let length = UInt64(bytes.count)
            try rewriteManifest(fs, dir) { m in m.sealed[segment]?.length = length }
            XCTAssertThrowsError(try LogEngine.open(directory: dir, fileSystem: fs, options: Self.options())) { error in
                XCTAssertEqual((error as? LogStoreError)?.code, .corruption, "\(damage): \(error)")
            }
        }
    }
}
