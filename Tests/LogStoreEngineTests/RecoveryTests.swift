import Foundation
import XCTest

@testable import LogStoreEngine

/// Reopening after a clean close gives back exactly what was committed.
final class RecoveryTests: XCTestCase {
    func testCleanCloseRecoversIdenticalData() throws { try Scenarios.cleanCloseRecovery(.posix(self)) }
    func testEmptyStoreReopens() throws { try Scenarios.emptyStoreReopens(.posix(self)) }
}

extension Scenarios {
    static func cleanCloseRecovery(_ h: StoreHarness) throws {
        let dir = h.newStorePath()
        var history = History()
        let e = try h.open(dir)
        XCTAssertTrue(e.recoveryReport.created)
        XCTAssertEqual(e.recoveryReport.transactionsReplayed, 0)
        for n in 0..<30 { try writeRecording(e, workloadTransaction(n), into: &history) }
        // A commit() with every operation kind, and a write body that overwrites and deletes.
        let ops: [RecordOperation] = [
            .deleteAll(type: "Odd"), .put(type: "Odd", key: key("again"), value: sampleValue(1)), .delete(type: "Even", key: key("k0-0")),
        ]
        XCTAssertEqual(try e.commit(ops), 31)
        apply(ops, to: &history.model)
        assertSameContents(try dump(e), history.model)
        let size = try h.fs.fileSize(segmentPath(dir, 1))
        try e.close()

        let e2 = try h.open(dir)
        let r = e2.recoveryReport
        XCTAssertFalse(r.created)
        XCTAssertEqual(r.transactionsReplayed, 31)
        XCTAssertEqual(r.lastSequence, 31)
        XCTAssertEqual(r.segmentsScanned, 1)
        XCTAssertEqual(r.bytesReplayed, size)
        XCTAssertNil(r.truncatedTail)
        XCTAssertEqual(r.dropped, [])
        XCTAssertEqual(r.removedFiles, [])
        XCTAssertEqual(try e2.snapshot().sequence, 31)
        assertSameContents(try dump(e2), history.model)

        // Writes after recovery continue the sequence and survive another reopen.
        try write(e2, workloadTransaction(100))
        apply(workloadTransaction(100), to: &history.model)
        try e2.close()
        let e3 = try h.open(dir)
        XCTAssertEqual(e3.recoveryReport.transactionsReplayed, 32)
        XCTAssertEqual(try e3.snapshot().sequence, 32)
        assertSameContents(try dump(e3), history.model)
        try e3.close()
    }

    static func emptyStoreReopens(_ h: StoreHarness) throws {
        let dir = h.newStorePath()
        try h.open(dir).close()
        let e = try h.open(dir)
        XCTAssertFalse(e.recoveryReport.created)
        XCTAssertEqual(e.recoveryReport.transactionsReplayed, 0)
        XCTAssertNil(e.recoveryReport.truncatedTail)
        assertSameContents(try dump(e), [:])
        try e.close()
    }
}
