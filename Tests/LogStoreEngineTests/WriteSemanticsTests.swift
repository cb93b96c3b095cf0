import Foundation
import XCTest

@testable import LogStoreEngine

private struct BodyError: Error, Equatable { var n: Int }

/// What a write body may and may not do, and what happens when it fails.
final class WriteSemanticsTests: XCTestCase {
    func testThrowingWriteBodyCommitsNothing() throws { try Scenarios.throwingBodyCommitsNothing(.posix(self)) }
    func testNestedWriteOnSameThreadThrowsReentrantWrite() throws { try Scenarios.nestedWriteIsReentrant(.posix(self)) }
    func testUseAfterCloseThrowsNotOpen() throws { try Scenarios.useAfterCloseIsNotOpen(.posix(self)) }
    func testReadsInsideWriteSeeOwnChangesAndSnapshotsAreIsolated() throws { try Scenarios.transactionIsolation(.posix(self)) }
    func testTransactionUsedAfterItsBlockIsExpired() throws { try Scenarios.transactionExpires(.posix(self)) }
}

extension Scenarios {
    static func throwingBodyCommitsNothing(_ h: StoreHarness) throws {
        let dir = h.newStorePath("throw")
        let e = try h.open(dir)
        try write(e, workloadTransaction(0))
        let before = try dump(e)
        let size = try h.fs.fileSize(segmentPath(dir, 1))
        do {
            try e.write { t in
                try t.put(type: "X", key: key("a"), value: [1])
                try t.deleteAll(type: "Even")
                throw BodyError(n: 42)
            }
            XCTFail("no error")
        } catch let err as BodyError {
            XCTAssertEqual(err, BodyError(n: 42), "the body's error must come back unchanged")
        }
        assertSameContents(try dump(e), before)
        XCTAssertEqual(try e.snapshot().sequence, 1)
        XCTAssertEqual(try h.fs.fileSize(segmentPath(dir, 1)), size, "nothing may be appended")
        // An empty body commits nothing either.
        XCTAssertEqual(try e.write { _ in 5 }, 5)
        XCTAssertEqual(try e.snapshot().sequence, 1)
        XCTAssertEqual(try h.fs.fileSize(segmentPath(dir, 1)), size)
        // And the store keeps working.
        try write(e, workloadTransaction(1))
        XCTAssertEqual(try e.snapshot().sequence, 2)
        try e.close()
        let e2 = try h.open(dir)
        XCTAssertEqual(e2.recoveryReport.transactionsReplayed, 2)
        XCTAssertFalse(try e2.snapshot().contains(type: "X", key: key("a")))
        try e2.close()
    }

    static func nestedWriteIsReentrant(_ h: StoreHarness) throws {
        let e = try h.open(h.newStorePath("nested"))
        // Inner write and inner commit both refuse; the outer body lets the error out.
        assertThrowsLogStoreError(.reentrantWrite, h.name) {
            try e.write { t in
                try t.put(type: "Outer", key: key("o"), value: [1])
                try e.write { t2 in try t2.put(type: "Inner", key: key("i"), value: [2]) }
            }
        }
        assertThrowsLogStoreError(.reentrantWrite, h.name) {
            try e.write { _ in try e.commit([.put(type: "Inner", key: key("i"), value: [2])]) }
        }
        assertThrowsLogStoreError(.reentrantWrite, "close inside a write on \(h.name)") {
            try e.write { _ in try e.close() }
        }
        XCTAssertEqual(try e.snapshot().sequence, 0)
        XCTAssertFalse(e.isClosed)
        // An outer body that catches the inner error commits only its own changes.
        try e.write { t in
            try t.put(type: "Outer", key: key("o"), value: [1])
            XCTAssertThrowsError(try e.write { t2 in try t2.put(type: "Inner", key: key("i"), value: [2]) })
        }
        let s = try e.snapshot()
        XCTAssertEqual(s.sequence, 1)
        XCTAssertTrue(try s.contains(type: "Outer", key: key("o")))
        XCTAssertFalse(try s.contains(type: "Inner", key: key("i")))
        // A write from another thread inside a write body waits rather than failing.
        let done = DispatchSemaphore(value: 0)
        try e.write { t in
            try t.put(type: "Outer", key: key("p"), value: [3])
            Thread {
                do { try e.write { t2 in try t2.put(type: "Other", key: key("q"), value: [4]) } } catch { XCTFail("\(error)") }
                done.signal()
            }.start()
        }
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        XCTAssertEqual(try e.snapshot().sequence, 3)
        try e.close()
    }

    static func useAfterCloseIsNotOpen(_ h: StoreHarness) throws {
        let e = try h.open(h.newStorePath("closed"))
        try write(e, workloadTransaction(0))
        let snap = try e.snapshot()
        try e.close()
        XCTAssertTrue(e.isClosed)
        try e.close()  // idempotent
        assertThrowsLogStoreError(.notOpen, "write") { try e.write { t in try t.put(type: "A", key: key("a"), value: [1]) } }
        assertThrowsLogStoreError(.notOpen, "empty write") { try e.write { _ in } }
        assertThrowsLogStoreError(.notOpen, "commit") { try e.commit([.put(type: "A", key: key("a"), value: [1])]) }
        assertThrowsLogStoreError(.notOpen, "snapshot") { try e.snapshot() }
        assertThrowsLogStoreError(.notOpen, "flush") { try e.flush() }
        // A snapshot taken before close stays readable.
        var expected = Contents()
        apply(workloadTransaction(0), to: &expected)
        assertSameContents(try dump(snap), expected)
    }

    static func transactionIsolation(_ h: StoreHarness) throws {
        let e = try h.open(h.newStorePath("iso"))
        try write(e, [.put(type: "A", key: key("1"), value: [1]), .put(type: "A", key: key("2"), value: [2])])
        let before = try e.snapshot()
        try e.write { t in
            try t.put(type: "A", key: key("3"), value: [3])
            try t.delete(type: "A", key: key("1"))
            XCTAssertEqual(try t.value(type: "A", key: key("3")).map(Array.init), [3])
            XCTAssertNil(try t.value(type: "A", key: key("1")))
            XCTAssertEqual(try t.count(ofType: "A"), 2)
            // Not visible outside until committed.
            XCTAssertFalse(try e.snapshot().contains(type: "A", key: key("3")))
            try t.deleteAll(type: "A")
            XCTAssertEqual(try t.count(ofType: "A"), 0)
            try t.put(type: "A", key: key("4"), value: [4])
            XCTAssertEqual(Set(try t.keys(ofType: "A")), [key("4")])
        }
        // The old snapshot still shows its state; a new one shows the commit.
        assertSameContents(try dump(before), ["A": [key("1"): [1], key("2"): [2]]])
        assertSameContents(try dump(e), ["A": [key("4"): [4]]])
        try e.close()
    }

    static func transactionExpires(_ h: StoreHarness) throws {
        let e = try h.open(h.newStorePath("expired"))
        var escaped: EngineTransaction? = nil
        try e.write { t in escaped = t }
        guard let t = escaped else { return XCTFail() }
        assertThrowsLogStoreError(.accessorExpired) { try t.put(type: "A", key: key("a"), value: [1]) }
        assertThrowsLogStoreError(.accessorExpired) { try t.value(type: "A", key: key("a")) }
        XCTAssertEqual(try e.snapshot().sequence, 0)
        try e.close()
    }
}
