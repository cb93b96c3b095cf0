import Foundation
import XCTest

@testable import LogStoreEngine

/// Damage that is not a torn tail is reported, never silently dropped: a flipped byte in a sealed
/// segment, or in the middle of the last one.
final class CorruptionTests: XCTestCase {
    func testFlippedByteInNonTailSegmentIsCorruption() throws {
        try Scenarios.flippedByteInNonTailSegment(.posix(self))
    }

    func testFlippedByteInMiddleOfLastSegmentIsCorruption() throws {
        try Scenarios.flippedByteInMiddleOfLastSegment(.posix(self))
    }

    func testFlippedByteInUnsyncedTailIsCutWithEverythingAfterIt() throws {
        try Scenarios.flippedByteInUnsyncedTailIsCutWithEverythingAfterIt(.posix(self))
    }

    func testUndecodableCommittedFrameIsCorruption() throws { try Scenarios.undecodableCommittedFrameIsCorruption(.posix(self)) }
    // flippedByteAnywhereInLastSegment (every byte) runs on the in-memory file system only, for speed.

    /// Bytes that go bad while the store is open are reported by the read, with file and offset.
    func testDamageAfterOpenIsReportedOnRead() throws {
        let h = StoreHarness.posix(self)
        var o = LogEngineOptions.replayOnly
        o.cacheSize = 0
        o.compression = false
        let dir = h.newStorePath("rot")
        var history = History()
        let e = try h.open(dir, options: o)
        for n in 0..<4 { try writeRecording(e, workloadTransaction(n), into: &history) }
        let target = history.entries[1]
        guard case .put(let type, let k, _) = target.ops[1], let loc = try e.snapshot().location(type: type, key: k) else {
            return XCTFail()
        }
        // A byte in the middle of that put's record.
        try h.fs.flipByte(segmentPath(dir, 1), at: UInt64(loc.offset + loc.length / 2))
        let err = assertThrowsLogStoreError(.corruption) { try e.snapshot().value(type: type, key: k) }
        XCTAssertEqual(err?.path, segmentPath(dir, 1))
        XCTAssertEqual(err?.offset, UInt64(loc.offset), "the damaged record's offset")
        assertThrowsLogStoreError(.corruption, "scan") { try e.snapshot().forEach(ofType: type) { _, _ in true } }
        // Other transactions still read fine.
        guard case .put(let type3, let k3, let v3) = history.entries[3].ops[1] else { return XCTFail() }
        XCTAssertEqual(try e.snapshot().value(type: type3, key: k3).map(Array.init), v3)
        try e.close()
    }
}

extension Scenarios {
    /// A store of several 64 KiB segments.
    static func multiSegmentStore(_ h: StoreHarness, minSegments: Int = 3) throws -> (
        dir: String, history: History, options: LogEngineOptions
    ) {
        var options = LogEngineOptions.replayOnly
        options.segmentSize = 64 << 10
        options.durability = .none
        options.compression = false
        let dir = h.newStorePath("multi")
        var history = History()
        let e = try h.open(dir, options: options)
        var n = 0
        while e.manifestInfo.segments.count < minSegments || n < 10 {
            try writeRecording(e, workloadTransaction(n, puts: 8, valueSize: 400), into: &history)
            n += 1
        }
        // A few more in the last segment.
        for _ in 0..<5 {
            try writeRecording(e, workloadTransaction(n, puts: 8, valueSize: 400), into: &history)
            n += 1
        }
        try e.close()
        return (dir, history, options)
    }

    static func flippedByteInNonTailSegment(_ h: StoreHarness) throws {
        let (dir, history, options) = try multiSegmentStore(h)
        let segments = Set(history.entries.map(\.segment)).sorted()
        XCTAssertGreaterThanOrEqual(segments.count, 3)
        let victim = segments[1]
        let txns = history.entries.filter { $0.segment == victim }
        XCTAssertGreaterThanOrEqual(txns.count, 3)
        let target = txns[txns.count / 2]
        let frameLengthField = target.start + 4
        // Where to flip, and where the engine must say the damage is.
        let cases: [(offset: UInt64, reportedAt: UInt64, what: String)] = [
            (target.start, target.start, "frame checksum"),
            (frameLengthField, target.start, "frame length"),
            (target.start + 8, target.start, "frame kind"),
            (target.start + 12, target.start, "frame sequence"),
            (target.start + UInt64(LogFrame.headerSizeV2) + 3, target.start, "payload start"),
            ((target.start + target.end) / 2, target.start, "payload middle"),
            (target.end - 1, target.start, "payload end"),
            (3, 0, "segment header magic"),
            (UInt64(SegmentHeader.sizeV2) - 1, 0, "segment header checksum"),
        ]
        for c in cases {
            let copy = h.newStorePath("flip")
            try h.fs.copyStore(from: dir, to: copy)
            let path = segmentPath(copy, victim)
            try h.fs.flipByte(path, at: c.offset)
            let e = assertThrowsLogStoreError(.corruption, "\(c.what) on \(h.name)") { try h.open(copy, options: options) }
            XCTAssertEqual(e?.path, path, c.what)
            XCTAssertEqual(e?.offset, c.reportedAt, c.what)

            // Salvage opens, names the damage, and keeps everything outside the damaged range.
            var salvage = options
            salvage.recovery = .salvage
            let s = try h.open(copy, options: salvage)
            XCTAssertEqual(s.recoveryReport.dropped.count, 1, c.what)
            let d = s.recoveryReport.dropped.first
            XCTAssertEqual(d?.path, path, c.what)
            let droppedFrom = c.reportedAt == 0 ? 0 : target.start
            XCTAssertEqual(d?.offset, droppedFrom, c.what)
            XCTAssertNil(s.recoveryReport.truncatedTail, c.what)
            // A bad header loses the segment; a bad frame loses only its transaction (salvage
            // resumes at the next valid frame).
            let expected = history.contents { entry in
                guard entry.segment == victim else { return true }
                if c.reportedAt == 0 { return false }
                return entry.end <= target.start || entry.start >= target.end
            }
            assertSameContents(try dump(s), expected, c.what)
            try s.close()
            // Salvage only reads: the damage is still there for a strict open.
            assertThrowsLogStoreError(.corruption, "after salvage, \(c.what)") { try h.open(copy, options: options) }
            try removeStore(h, copy)
        }
    }

    /// A store of nine workload transactions in one segment, written with `durability`.
    static func nineTransactions(_ h: StoreHarness, _ name: String, durability: Durability) throws -> (String, History, LogEngineOptions) {
        var options = LogEngineOptions.replayOnly
        options.durability = durability
        let dir = h.newStorePath(name)
        var history = History()
        let e = try h.open(dir, options: options)
        for n in 0..<9 { try writeRecording(e, workloadTransaction(n), into: &history) }
        try e.close()
        return (dir, history, options)
    }

    /// Damage before a point a later frame vouches was synced (every commit is synced here) is
    /// corruption, never a torn tail.
    static func flippedByteInMiddleOfLastSegment(_ h: StoreHarness) throws {
        let (dir, history, options) = try nineTransactions(h, "mid", durability: .synchronous)
        let target = history.entries[4]
        var offsets = Array(target.start..<(target.start + UInt64(LogFrame.headerSizeV2)))  // every header byte
        offsets += [target.start + UInt64(LogFrame.headerSizeV2), (target.start + target.end) / 2, target.end - 1]
        for offset in offsets {
            for mask in [0xFF, 0x01, 0x80] as [UInt8] {
                let copy = h.newStorePath("flip")
                try h.fs.copyStore(from: dir, to: copy)
                let path = segmentPath(copy, 1)
                try h.fs.flipByte(path, at: offset, mask: mask)
                let what = "byte \(offset - target.start) of the frame ^ \(mask) on \(h.name)"
                let err = assertThrowsLogStoreError(.corruption, what) { try h.open(copy, options: options) }
                XCTAssertEqual(err?.path, path, what)
                XCTAssertEqual(err?.offset, target.start, what)
                // Nothing was cut.
                XCTAssertEqual(try h.fs.fileSize(path), history.entries.last?.end, what)
                try removeStore(h, copy)
            }
        }
    }

    /// A frame whose checksums are right but whose records are not (a broken or foreign writer)
    /// is corruption even at the very end of the log: it is not a torn write. Salvage drops that
    /// transaction and keeps every other.
    static func undecodableCommittedFrameIsCorruption(_ h: StoreHarness) throws {
        func record(_ body: [UInt8]) -> [UInt8] {
            var r: [UInt8] = []
            r.appendUVarint(UInt64(body.count))
            withUnsafeBytes(of: CRC32C.mask(CRC32C.checksum(body)).littleEndian) { r.append(contentsOf: $0) }
            return r + body
        }
        func put(typeID: UInt32, codec: RecordCodec.Codec, dictionary: UInt32 = 0, stored: [UInt8], rawLength: Int) -> [UInt8] {
            var r: [UInt8] = []
            [UInt8]([0x67]).withUnsafeBytes { k in
                stored.withUnsafeBytes {
                    _ = RecordCodec.appendPut(
                        into: &r, typeID: typeID, key: k, stored: $0, codec: codec, dictionaryID: dictionary, rawLength: rawLength)
                }
            }
            return r
        }
        // (what, records, whether the damage shows only when the value is decompressed: then the
        // frame counts as damaged, cut at the end of an unsynced tail and refused when a later
        // frame vouches it was synced).
        let garbage: [(String, [UInt8], Bool)] = [
            ("unknown record operation", record([0x09, 0x00, 0x01]), false),
            ("a record of a type no define names", put(typeID: 99, codec: .raw, stored: [1, 2], rawLength: 2), false),
            (
                "an LZ4 value that does not decompress to its length",
                put(typeID: 1, codec: .lz4, stored: [0xFF, 0xFF, 0xFF], rawLength: 100), true
            ),
            (
                "a value compressed with a dictionary no define names",
                put(typeID: 1, codec: .lz4Dictionary, dictionary: 77, stored: [0x10, 0x41], rawLength: 1), true
            ),
        ]
        for (what, records, valueDamage) in garbage {
            for atEnd in [true, false] {
                let (dir, history) = try smallStore(h)
                guard let last = history.entries.last else { return XCTFail() }
                let probe = try h.open(dir)
                let meta = try probe.snapshot().index.meta
                try probe.close()
                let bad = testFrame(records: records, count: 1, kind: .commit, sequence: last.sequence + 1)
                try h.fs.appendBytes(segmentPath(dir, 1), bad)
                if !atEnd {
                    let next = testFrame(
                        [.put(type: "After", key: key("a"), value: [1])], kind: .commit, sequence: last.sequence + 2,
                        syncedThrough: UInt32(last.end) + UInt32(bad.count), meta: meta)
                    try h.fs.appendBytes(segmentPath(dir, 1), next)
                }
                let label = "\(what), \(atEnd ? "at the end" : "mid-log") on \(h.name)"
                if valueDamage && atEnd {
                    // Nothing vouches that the frame was synced: a torn tail, cut and reported.
                    let e = try h.open(dir)
                    XCTAssertEqual(e.recoveryReport.truncatedTail?.offset, last.end, label)
                    assertSameContents(try dump(e), history.model, label)
                    try e.close()
                    continue
                }
                let e = assertThrowsLogStoreError(.corruption, label) { try h.open(dir) }
                XCTAssertEqual(e?.path, segmentPath(dir, 1), label)
                XCTAssertNotNil(e?.offset, label)
                var salvage = LogEngineOptions.replayOnly
                salvage.recovery = .salvage
                let s = try h.open(dir, options: salvage)
                // Salvage drops a record whose value is damaged alone (its offset: after the
                // frame's header), and a frame that does not decode whole.
                let droppedAt = valueDamage ? last.end + UInt64(LogFrame.headerSizeV4) : last.end
                XCTAssertEqual(s.recoveryReport.dropped.first?.offset, droppedAt, label)
                var expected = history.model
                if !atEnd { apply([.put(type: "After", key: key("a"), value: [1])], to: &expected) }
                if what.contains("no define names") && !valueDamage {
                    // Salvage keeps a record whose type's define is lost, under a reserved name.
                    XCTAssertEqual(s.recoveryReport.dropped.first?.bytes, 0, label)
                    apply([.put(type: "\(LogEngine.salvagedTypePrefix)99", key: RecordKey([0x67]), value: [1, 2])], to: &expected)
                }
                assertSameContents(try dump(s), expected, label)
                try s.close()
            }
        }
    }

    /// Every byte of a small last segment whose commits were each synced, flipped in turn: damage
    /// before the last transaction is always reported as corruption (a later frame vouches it was
    /// synced), damage inside it is always a torn tail, salvage always
    /// opens, and nothing traps.
    static func flippedByteAnywhereInLastSegment(_ h: StoreHarness) throws {
        var o = LogEngineOptions.replayOnly
        o.durability = .synchronous
        let (dir, history) = try smallStore(h, count: 3, options: o)
        guard let last = history.entries.last else { return XCTFail() }
        let original = try h.fs.readAll(segmentPath(dir, 1))
        let copy = h.newStorePath("every")
        try h.fs.copyStore(from: dir, to: copy)
        let path = segmentPath(copy, 1)
        var salvage = o
        salvage.recovery = .salvage
        for offset in original.indices {
            var bytes = original
            bytes[offset] ^= 0x55
            let what = "byte \(offset) (last transaction at \(last.start)..<\(last.end)) on \(h.name)"
            try h.fs.writeAll(path, bytes)
            let s = try h.open(copy, options: salvage)
            // One damaged range; a define lost with it adds a note of 0 bytes for each type whose
            // later records salvage keeps under a reserved name.
            let damaged = s.recoveryReport.dropped.filter { $0.bytes > 0 }
            XCTAssertEqual(damaged.count + (s.recoveryReport.truncatedTail == nil ? 0 : 1), 1, what)
            XCTAssertTrue(s.recoveryReport.dropped.allSatisfy { $0.bytes > 0 || $0.reason.contains("is lost") }, what)
            _ = try dump(s)
            try s.close()
            if UInt64(offset) < last.start {
                let err = assertThrowsLogStoreError(.corruption, what) { try h.open(copy, options: o) }
                XCTAssertEqual(err?.path, path, what)
            } else {
                let e = try h.open(copy, options: o)
                assertSameContents(try dump(e), history.contents { $0.sequence != last.sequence }, what)
                XCTAssertEqual(e.recoveryReport.truncatedTail?.offset, last.start, what)
                try e.close()
            }
        }
    }

    /// Format v2: with `.none` nothing after the open is known durable, so damage in the
    /// middle of the tail is an unsynced tail: the store opens, cut at the damage, with every later
    /// (never synced) transaction, and the report says how many were cut.
    static func flippedByteInUnsyncedTailIsCutWithEverythingAfterIt(_ h: StoreHarness) throws {
        let (dir, history, options) = try nineTransactions(h, "unsynced", durability: .none)
        let target = history.entries[4]
        try h.fs.flipByte(segmentPath(dir, 1), at: (target.start + target.end) / 2, mask: 0x01)
        let r = try h.open(dir, options: options)
        assertSameContents(try dump(r), history.contents { $0.sequence < target.sequence }, "unsynced tail on \(h.name)")
        XCTAssertEqual(r.recoveryReport.truncatedTail?.offset, target.start)
        // The four whole transactions after it, plus the damaged one if it had frames before the damage.
        XCTAssertTrue((4...5).contains(r.recoveryReport.transactionsCut), "\(r.recoveryReport.transactionsCut) cut")
        try r.close()
    }
}
