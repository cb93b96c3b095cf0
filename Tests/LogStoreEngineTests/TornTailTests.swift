import Foundation
import XCTest

@testable import LogStoreEngine

/// An interrupted append leaves a prefix of the last transaction's bytes. Wherever the cut falls,
/// the store opens with exactly the committed prefix, reports and cuts the torn bytes, and keeps
/// working.
final class TornTailTests: XCTestCase {
    func testTornTailAtEveryByteOffsetOfTheLastTransaction() throws {
        try Scenarios.tornTailAtEveryOffset(.posix(self))
    }

    func testTornMultiFrameTransactionIsNeverPartiallyVisible() throws {
        try Scenarios.tornMultiFrameTransaction(.posix(self), everyByte: false)
    }
}

extension Scenarios {
    /// Writes `committed` transactions then `last`, closes, and returns the directory, the history
    /// (the last entry is `last`) and the original bytes of the last segment.
    static func storeEndingWith(_ h: StoreHarness, options: LogEngineOptions, committed: Int, last: [RecordOperation])
        throws -> (dir: String, history: History, segment: [UInt8])
    {
        let dir = h.newStorePath("torn")
        var history = History()
        let e = try h.open(dir, options: options)
        for n in 0..<committed { try writeRecording(e, workloadTransaction(n), into: &history) }
        try writeRecording(e, last, into: &history)
        try e.close()
        let seg = history.entries.last?.segment ?? 1
        return (dir, history, try h.fs.readAll(segmentPath(dir, seg)))
    }

    /// Cuts a copy of the store's last segment at `cut` and checks recovery.
    static func checkCut(
        _ h: StoreHarness, dir: String, history: History, cut: UInt64, options: LogEngineOptions,
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        guard let last = history.entries.last else { return XCTFail("empty history") }
        let copy = h.newStorePath("cut")
        try h.fs.copyStore(from: dir, to: copy)
        let seg = segmentPath(copy, last.segment)
        try h.fs.truncateFile(seg, to: cut)

        let intact = cut == last.end
        let committed = intact ? history.model : history.contents { $0.sequence != last.sequence }
        let e = try h.open(copy, options: options)
        let r = e.recoveryReport
        let at = "cut at \(cut) (txn bytes \(last.start)..<\(last.end)) on \(h.name)"
        assertSameContents(try dump(e), committed, at, file: file, line: line)
        XCTAssertEqual(r.lastSequence, intact ? last.sequence : last.sequence - 1, at, file: file, line: line)
        if cut > last.start && !intact {
            XCTAssertEqual(r.truncatedTail?.path, seg, at, file: file, line: line)
            XCTAssertEqual(r.truncatedTail?.offset, last.start, at, file: file, line: line)
            XCTAssertEqual(r.truncatedTail?.bytes, cut - last.start, at, file: file, line: line)
        } else {
            XCTAssertNil(r.truncatedTail, at, file: file, line: line)
        }
        XCTAssertEqual(r.dropped, [], at, file: file, line: line)
        XCTAssertEqual(try h.fs.fileSize(seg), intact ? last.end : last.start, "torn bytes not cut, \(at)", file: file, line: line)

        // The store keeps working and the new write survives a reopen.
        let extra: [RecordOperation] = [.put(type: "After", key: key("x"), value: sampleValue(Int(cut)))]
        try write(e, extra)
        try e.close()
        var expected = committed
        apply(extra, to: &expected)
        let e2 = try h.open(copy, options: options)
        assertSameContents(try dump(e2), expected, at, file: file, line: line)
        XCTAssertNil(e2.recoveryReport.truncatedTail, at, file: file, line: line)
        XCTAssertEqual(e2.recoveryReport.lastSequence, (intact ? last.sequence : last.sequence - 1) + 1, at, file: file, line: line)
        try e2.close()
        try removeStore(h, copy)
    }

    static func removeStore(_ h: StoreHarness, _ dir: String) throws {
        for name in try h.fs.contentsOfDirectory(atPath: dir) { try h.fs.removeFile(atPath: _joinPath(dir, name)) }
    }

    static func tornTailAtEveryOffset(_ h: StoreHarness) throws {
        var options = LogEngineOptions.replayOnly
        options.durability = .none  // the cuts below stand in for the crash; no need to fsync
        let last: [RecordOperation] = [
            .put(type: "Last", key: key("a"), value: sampleValue(1, size: 60)),
            .put(type: "Last", key: key("b"), value: sampleValue(2, size: 60)),
            .delete(type: "Even", key: key("k0-0")),
        ]
        let (dir, history, _) = try storeEndingWith(h, options: options, committed: 5, last: last)
        guard let tx = history.entries.last else { return XCTFail() }
        XCTAssertGreaterThan(tx.end, tx.start)
        for cut in tx.start...tx.end { try checkCut(h, dir: dir, history: history, cut: cut, options: options) }
    }

    /// A transaction spanning several frames, cut at every frame boundary and inside every frame
    /// (or at every byte).
    static func tornMultiFrameTransaction(_ h: StoreHarness, everyByte: Bool) throws {
        for compression in [false, true] {
            var options = LogEngineOptions.replayOnly
            options.durability = .none
            options.maxFramePayload = 512
            options.compression = compression
            options.compressOnWrite = compression
            var last: [RecordOperation] = []
            for i in 0..<12 { last.append(.put(type: "Big", key: key("big\(i)"), value: sampleValue(i, size: 150))) }
            let (dir, history, segment) = try storeEndingWith(h, options: options, committed: 3, last: last)
            guard let tx = history.entries.last else { return XCTFail() }
            let txFrames = frames(ofSegment: segment).filter { UInt64($0.offset) >= tx.start }
            XCTAssertGreaterThanOrEqual(txFrames.count, 4, "the transaction should span several frames")
            XCTAssertEqual(txFrames.last?.header.kind, .commit)
            XCTAssertTrue(txFrames.dropLast().allSatisfy { $0.header.kind == .data })
            XCTAssertFalse(txFrames.contains { $0.header.compressed }, "format 4 compresses records, never frames")
            var cuts = Set<UInt64>()
            if everyByte {
                cuts.formUnion(tx.start...tx.end)
            } else {
                for f in txFrames {
                    let o = UInt64(f.offset)
                    let end = UInt64(f.end)
                    cuts.formUnion([
                        o, o + 1, o + 4, o + 8, o + UInt64(LogFrame.headerSizeV2) - 1, o + UInt64(LogFrame.headerSizeV2),
                        o + UInt64(LogFrame.headerSizeV2) + 1, (o + end) / 2, end - 1, end,
                    ])
                }
            }
            for cut in cuts.sorted() { try checkCut(h, dir: dir, history: history, cut: cut, options: options) }
        }
    }
}
