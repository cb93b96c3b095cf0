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
}

extension Scenarios {
    /// A store of several 64 KiB segments.
    static func multiSegmentStore(_ h: StoreHarness, minSegments: Int = 3) throws -> (dir: String, history: History, options: LogStoreOptions) {
        var options = LogStoreOptions()
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
            (target.start + UInt64(_Frame.headerSize) + 3, target.start, "payload start"),
            ((target.start + target.end) / 2, target.start, "payload middle"),
            (target.end - 1, target.start, "payload end"),
            (3, 0, "segment header magic"),
            (UInt64(_SegmentHeader.size) - 1, 0, "segment header checksum"),
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
            let expected = history.contents { $0.segment != victim || $0.end <= droppedFrom }
            assertSameContents(try dump(s), expected, c.what)
            try s.close()
            // Salvage only reads: the damage is still there for a strict open.
            assertThrowsLogStoreError(.corruption, "after salvage, \(c.what)") { try h.open(copy, options: options) }
            try removeStore(h, copy)
        }
    }

    static func flippedByteInMiddleOfLastSegment(_ h: StoreHarness) throws {
        var options = LogStoreOptions()
        options.durability = .none
        let dir = h.newStorePath("mid")
        var history = History()
        let e = try h.open(dir, options: options)
        for n in 0..<9 { try writeRecording(e, workloadTransaction(n), into: &history) }
        try e.close()
        let target = history.entries[4]
        var offsets = Array(target.start..<(target.start + UInt64(_Frame.headerSize)))  // every header byte
        offsets += [target.start + UInt64(_Frame.headerSize), (target.start + target.end) / 2, target.end - 1]
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
}
