import Foundation
import XCTest

@testable import LogStoreEngine

/// LZ4 frame compression: used when it pays, invisible to readers.
final class CompressionTests: XCTestCase {
    func testTextHeavyTransactionIsCompressed() throws { try Scenarios.textHeavyTransactionIsCompressed(.posix(self)) }
    func testIncompressibleAndSmallFramesAreStoredRaw() throws { try Scenarios.incompressibleFramesAreStoredRaw(.posix(self)) }

    func testWritesLeftUncompressedAreCompressedByCompaction() throws {
        let h = StoreHarness.posix(self)
        var o = LogEngineOptions.replayOnly
        o.compressOnWrite = false
        let dir = h.newStorePath()
        let e = try h.open(dir, options: o)
        defer { try? e.close() }
        let ops = Scenarios.textHeavyOps()
        var model = Contents()
        apply(ops, to: &model)
        try write(e, ops)
        let written = frames(ofSegment: try h.fs.readAll(segmentPath(dir, 1)))
        XCTAssertGreaterThan(written.count, 1)
        XCTAssertFalse(written.contains { $0.header.compressed }, "a write left its frames uncompressed")
        assertSameContents(try dump(e), model)
        let report = try e.compact()
        let copied = try report.newSegments.flatMap { frames(ofSegment: try h.fs.readAll(segmentPath(dir, $0))) }
        XCTAssertTrue(copied.contains { $0.header.compressed }, "compaction compressed what it copied")
        assertSameContents(try dump(e), model)
    }

    func testCompactionWithLZ4HCLevelWritesFramesNoLargerThanFastLZ4() throws {
        let h = StoreHarness.posix(self)
        let ops = Scenarios.textHeavyOps()
        var model = Contents()
        apply(ops, to: &model)
        var stored: [Int: Int] = [:]
        for level in [0, 9] {
            var o = LogEngineOptions.replayOnly
            o.compressOnWrite = false
            o.compactionCompressionLevel = level
            let dir = h.newStorePath("level\(level)")
            let e = try h.open(dir, options: o)
            try write(e, ops)
            let report = try e.compact()
            let copied = try report.newSegments.flatMap { frames(ofSegment: try h.fs.readAll(segmentPath(dir, $0))) }
            XCTAssertTrue(copied.contains { $0.header.compressed }, "level \(level): compaction compressed what it copied")
            stored[level] = copied.reduce(0) { $0 + $1.header.storedLength }
            assertSameContents(try dump(e), model)
            try e.close()
            // LZ4HC output is the same block format: a cold reopen reads it back.
            let e2 = try h.open(dir, options: o)
            assertSameContents(try dump(e2), model)
            try e2.close()
        }
        XCTAssertLessThanOrEqual(stored[9] ?? .max, stored[0] ?? 0, "LZ4HC frames are no larger than fast LZ4's")
    }

    func testSealedSegmentsWrittenUncompressedMakeCompactionDueWhenWritersLeaveCompressionToCompaction() throws {
        let h = StoreHarness.posix(self)
        for compressOnWrite in [false, true] {
            var o = LogEngineOptions.replayOnly
            o.compressOnWrite = compressOnWrite
            o.segmentSize = 64 << 10
            o.compactionMinimumDeadBytes = 0
            let e = try h.open(h.newStorePath(compressOnWrite ? "compressing" : "lazy"), options: o)
            defer { try? e.close() }
            // Only inserts: no dead bytes at all, several sealed segments.
            for round in 0..<8 {
                try write(
                    e,
                    Scenarios.textHeavyOps().enumerated().map { i, op in
                        guard case .put(let t, _, let v) = op else { return op }
                        return .put(type: t, key: key("r\(round)-\(i)"), value: v)
                    })
            }
            let stats = e.storageStats()
            if !compressOnWrite {
                XCTAssertGreaterThan(stats.segments.filter(\.isSealed).count, 1, "several sealed segments, written uncompressed")
            }
            XCTAssertEqual(stats.reclaimableBytes, 0, "nothing was overwritten")
            XCTAssertEqual(e.compactionDue(), !compressOnWrite, "compressOnWrite \(compressOnWrite)")
            if !compressOnWrite {
                _ = try e.compact()
                XCTAssertFalse(e.compactionDue(), "compacted segments are not counted again")
            }
        }
    }
}

extension Scenarios {
    static func textHeavyOps() -> [RecordOperation] {
        let words = ["the", "store", "keeps", "every", "transaction", "in", "an", "append-only", "log", "of", "checksummed", "frames"]
        return (0..<200).map { i in
            let text = (0..<60).map { words[($0 * 7 + i) % words.count] }.joined(separator: " ")
            return .put(
                type: "Note", key: key("note\(i)"),
                value: AttributeValue.map(["title": .string("Note \(i)"), "body": .string(text)]).encoded())
        }
    }

    static func textHeavyTransactionIsCompressed(_ h: StoreHarness) throws {
        let ops = textHeavyOps()
        var model = Contents()
        apply(ops, to: &model)
        var sizes: [Bool: UInt64] = [:]
        for compression in [true, false] {
            var o = LogEngineOptions.replayOnly
            o.compression = compression
            let dir = h.newStorePath(compression ? "lz4" : "raw")
            let e = try h.open(dir, options: o)
            try write(e, ops)
            assertSameContents(try dump(e), model)
            try e.close()
            let bytes = try h.fs.readAll(segmentPath(dir, 1))
            sizes[compression] = UInt64(bytes.count)
            let fs = frames(ofSegment: bytes)
            XCTAssertGreaterThan(fs.count, 1)
            if compression {
                XCTAssertTrue(fs.allSatisfy { $0.header.compressed }, "every text frame should carry the LZ4 flag")
                for f in fs { XCTAssertEqual(bytes[f.offset + 9] & LogFrame.flagLZ4, LogFrame.flagLZ4) }
                XCTAssertTrue(fs.allSatisfy { $0.header.rawLength > $0.header.storedLength })
            } else {
                XCTAssertTrue(fs.allSatisfy { !$0.header.compressed })
            }
            // Reads after reopen (cold cache) return identical bytes.
            let e2 = try h.open(dir, options: o)
            assertSameContents(try dump(e2), model)
            try e2.close()
        }
        let lz4 = sizes[true] ?? 0
        let raw = sizes[false] ?? 0
        XCTAssertLessThan(lz4 * 2, raw, "LZ4 should at least halve repetitive text (\(lz4) vs \(raw) bytes)")
    }

    static func incompressibleFramesAreStoredRaw(_ h: StoreHarness) throws {
        var rng = SystemRandomNumberGenerator()
        // One record of random bytes: LZ4 cannot make the frame smaller, so it is stored raw.
        let noise: [RecordOperation] = [
            .put(
                type: "Noise", key: key("n"),
                value: AttributeValue.bytes((0..<4000).map { _ in UInt8.random(in: 0...255, using: &rng) }).encoded())
        ]
        let dir = h.newStorePath("noise")
        let e = try h.open(dir)
        try write(e, noise)
        // A frame under compressionThreshold stays raw even if it would compress.
        try write(e, [.put(type: "Tiny", key: key("t"), value: [UInt8](repeating: 0x41, count: 100))])
        try e.close()
        let fs = frames(ofSegment: try h.fs.readAll(segmentPath(dir, 1)))
        XCTAssertTrue(fs.allSatisfy { !$0.header.compressed })
        var model = Contents()
        apply(noise, to: &model)
        apply([.put(type: "Tiny", key: key("t"), value: [UInt8](repeating: 0x41, count: 100))], to: &model)
        let e2 = try h.open(dir)
        assertSameContents(try dump(e2), model)
        try e2.close()
    }
}
