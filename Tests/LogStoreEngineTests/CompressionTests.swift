import Foundation
import XCTest

@testable import LogStoreEngine

/// Per-record LZ4 compression: used when it pays, invisible to readers. By default writes store
/// values raw (compression is deferred to the recompression pass); with `compressOnWrite` a commit
/// compresses each value alone.
final class CompressionTests: XCTestCase {
    func testTextHeavyTransactionIsCompressed() throws { try Scenarios.textHeavyTransactionIsCompressed(.posix(self)) }
    func testIncompressibleAndSmallFramesAreStoredRaw() throws { try Scenarios.incompressibleFramesAreStoredRaw(.posix(self)) }

    func testWritesStoreValuesRawByDefaultAndCompactionCopiesThemAsTheyAre() throws {
        let h = StoreHarness.posix(self)
        let o = LogEngineOptions.replayOnly
        XCTAssertTrue(o.compression)
        XCTAssertFalse(o.compressOnWrite, "compression is on, deferred to recompression")
        let dir = h.newStorePath()
        let e = try h.open(dir, options: o)
        defer { try? e.close() }
        let ops = Scenarios.textHeavyOps()
        var model = Contents()
        apply(ops, to: &model)
        try write(e, ops)
        let written = putRecords(ofSegment: try h.fs.readAll(segmentPath(dir, 1)))
        XCTAssertEqual(written.count, ops.count)
        XCTAssertTrue(written.allSatisfy { $0.codec == .raw }, "a write left its values raw")
        assertSameContents(try dump(e), model)
        let report = try e.compact()
        let copied = try report.newSegments.flatMap { putRecords(ofSegment: try h.fs.readAll(segmentPath(dir, $0))) }
        XCTAssertEqual(copied.count, ops.count)
        XCTAssertTrue(copied.allSatisfy { $0.codec == .raw }, "compaction copies records as they are")
        assertSameContents(try dump(e), model)
    }
}

/// The put records of a well-formed format 4 segment, in log order.
func putRecords(ofSegment bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) -> [RecordCodec.Fields] {
    var out: [RecordCodec.Fields] = []
    bytes.withUnsafeBytes { buf in
        for f in frames(ofSegment: bytes, file: file, line: line) {
            let payload = UnsafeRawBufferPointer(rebasing: buf[(f.offset + LogFrame.headerSizeV4)..<f.end])
            do {
                try LogFrame.forEachRecord(payload, f.header) { fields, _, _ in if fields.op == .put { out.append(fields) } }
            } catch {
                XCTFail("undecodable record: \(error)", file: file, line: line)
            }
        }
    }
    return out
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
            o.compressOnWrite = true
            let dir = h.newStorePath(compression ? "lz4" : "raw")
            let e = try h.open(dir, options: o)
            try write(e, ops)
            assertSameContents(try dump(e), model)
            try e.close()
            let bytes = try h.fs.readAll(segmentPath(dir, 1))
            sizes[compression] = UInt64(bytes.count)
            let records = putRecords(ofSegment: bytes)
            XCTAssertEqual(records.count, ops.count)
            if compression {
                XCTAssertTrue(records.allSatisfy { $0.codec == .lz4 }, "every text value is stored LZ4-compressed")
                XCTAssertTrue(records.allSatisfy { $0.rawLength > $0.content.count })
            } else {
                XCTAssertTrue(records.allSatisfy { $0.codec == .raw })
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
        var o = LogEngineOptions.replayOnly
        o.compressOnWrite = true
        let e = try h.open(dir, options: o)
        try write(e, noise)
        // A value under compressionThreshold stays raw even if it would compress.
        try write(e, [.put(type: "Tiny", key: key("t"), value: [UInt8](repeating: 0x41, count: 100))])
        try e.close()
        let records = putRecords(ofSegment: try h.fs.readAll(segmentPath(dir, 1)))
        XCTAssertEqual(records.count, 2)
        XCTAssertTrue(records.allSatisfy { $0.codec == .raw })
        var model = Contents()
        apply(noise, to: &model)
        apply([.put(type: "Tiny", key: key("t"), value: [UInt8](repeating: 0x41, count: 100))], to: &model)
        let e2 = try h.open(dir)
        assertSameContents(try dump(e2), model)
        try e2.close()
    }
}
