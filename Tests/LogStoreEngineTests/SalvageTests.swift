import Foundation
import XCTest

@testable import LogStoreEngine

/// Salvage mode keeps every valid transaction, including those after a damaged frame.
final class SalvageTests: XCTestCase {
    func testSalvageKeepsTransactionsAfterADamagedFrameInASealedSegment() throws {
        let h = StoreHarness.memory()
        let dir = h.newStorePath()
        var o = LogEngineOptions.replayOnly
        o.segmentSize = 64 << 10
        o.compression = false
        var expected = Contents()
        let e = try h.open(dir, options: o)
        for n in 0..<60 {
            let ops = workloadTransaction(n, puts: 2, valueSize: 1500)
            _ = try write(e, ops)
            if n != 2 { apply(ops, to: &expected) }  // transaction 2 (frame 2) will be damaged
        }
        XCTAssertGreaterThan(e.manifestInfo.segments.count, 1)
        try e.close()
        // Damage the payload of the third frame of segment 1: only that transaction is lost.
        let seg1 = segmentPath(dir, 1)
        let fr = frames(ofSegment: try h.fs.readAll(seg1))
        XCTAssertGreaterThan(fr.count, 5)
        try h.fs.flipByte(seg1, at: UInt64(fr[2].offset + LogFrame.headerSizeV2 + 10))
        assertThrowsLogStoreError(.corruption) { try h.open(dir, options: o) }

        var salvage = o
        salvage.recovery = .salvage
        let s = try h.open(dir, options: salvage)
        XCTAssertEqual(s.recoveryReport.dropped.count, 1, "\(s.recoveryReport.dropped)")
        let got = try dump(s)
        assertSameContents(got, expected, "salvage must keep every transaction but the damaged one")
        try s.close()
    }
}
