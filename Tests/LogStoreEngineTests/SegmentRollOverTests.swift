import Foundation
import XCTest

@testable import LogStoreEngine

/// Segments roll over at `segmentSize`; the manifest lists them in order and replay reads them all.
final class SegmentRollOverTests: XCTestCase {
    func testSegmentsRollOverAndAllDataComesBack() throws { try Scenarios.segmentRollOver(.posix(self)) }
    func testTransactionLargerThanSegmentSize() throws { try Scenarios.transactionLargerThanSegment(.posix(self)) }
}

extension Scenarios {
    static func segmentRollOver(_ h: StoreHarness) throws {
        let (dir, history, options) = try multiSegmentStore(h, minSegments: 4)
        let used = Set(history.entries.map(\.segment)).sorted()
        XCTAssertGreaterThanOrEqual(used.count, 4)
        for entry in history.entries where entry.end > entry.start + 0 {
            // Every transaction but one larger than a segment fits its segment.
            XCTAssertLessThanOrEqual(entry.end, UInt64(options.segmentSize), "segment \(entry.segment) overfilled")
        }
        let e = try h.open(dir, options: options)
        XCTAssertEqual(e.manifestInfo.segments, used)
        XCTAssertEqual(e.manifestInfo.generation, UInt64(used.count), "one manifest rewrite per roll-over")
        XCTAssertEqual(e.recoveryReport.segmentsScanned, used.count)
        XCTAssertEqual(e.recoveryReport.transactionsReplayed, history.entries.count)
        XCTAssertEqual(
            Set(try h.fs.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".log") }),
            Set(used.map { LogStoreFormat.segmentFileName($0) }))
        assertSameContents(try dump(e), history.model)
        // Each segment's header names it.
        for n in used {
            let bytes = try h.fs.readAll(segmentPath(dir, n))
            guard case .ok(let header) = bytes.withUnsafeBytes({ SegmentHeader.decode($0) }) else { return XCTFail("segment \(n) header") }
            XCTAssertEqual(header.segment, n)
        }
        try e.close()
    }

    static func transactionLargerThanSegment(_ h: StoreHarness) throws {
        var options = LogEngineOptions.replayOnly
        options.segmentSize = 64 << 10
        options.compression = false
        options.durability = .none
        let dir = h.newStorePath("big")
        var history = History()
        let e = try h.open(dir, options: options)
        try writeRecording(e, workloadTransaction(0), into: &history)
        // ~200 KiB in one transaction, spread over many frames; plus one single 100 KiB item.
        var big: [RecordOperation] = []
        for i in 0..<50 { big.append(.put(type: "Big", key: key("b\(i)"), value: Array(repeating: UInt8(i), count: 4000))) }
        big.append(.put(type: "Big", key: key("huge"), value: (0..<(100 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 31) }))
        try writeRecording(e, big, into: &history)
        try writeRecording(e, workloadTransaction(1), into: &history)
        try writeRecording(e, big.reversed(), into: &history)
        try writeRecording(e, workloadTransaction(2), into: &history)
        XCTAssertGreaterThanOrEqual(e.manifestInfo.segments.count, 3)
        XCTAssertGreaterThan(history.entries[1].end - history.entries[1].start, UInt64(options.segmentSize))
        assertSameContents(try dump(e), history.model)
        try e.close()
        let e2 = try h.open(dir, options: options)
        assertSameContents(try dump(e2), history.model)
        XCTAssertEqual(e2.recoveryReport.transactionsReplayed, 5)
        try e2.close()
    }
}
