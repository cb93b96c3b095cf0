import Foundation
import XCTest

@testable import LogStoreEngine

/// A full disk fails the write that hit it with `.diskFull`, leaves nothing of it behind, and the
/// store carries on (and reopens) with exactly the committed data once space is back.
final class DiskFullTests: XCTestCase {
    func testDiskFullDuringAppendCommitsNothing() throws { try Scenarios.diskFullDuringAppend(.posix(self)) }
    func testDiskFullDuringRollOverCommitsNothing() throws { try Scenarios.diskFullDuringRollOver(.posix(self)) }
    func testFailedDirectorySyncDuringRollOver() throws { try Scenarios.failedDirectorySyncDuringRollOver(.posix(self)) }
    func testFailedSyncPoisonsTheStore() throws { try Scenarios.failedSyncPoisonsTheStore(.posix(self)) }
}

extension Scenarios {
    static func diskFullDuringAppend(_ h: StoreHarness) throws {
        for budget in [0, 1, 23, 24, 100, 3000] {
            let full = DiskFullFileSystem(h.fs)
            let dir = h.newStorePath("full")
            var o = LogEngineOptions.replayOnly
            o.compression = false
            let e = try LogEngine.open(directory: dir, fileSystem: full, options: o)
            var model = Contents()
            for n in 0..<3 {
                try write(e, workloadTransaction(n))
                apply(workloadTransaction(n), to: &model)
            }
            let size = try h.fs.fileSize(segmentPath(dir, 1))
            let big: [RecordOperation] = (0..<10).map { .put(type: "Big", key: key("b\($0)"), value: sampleValue($0, size: 500)) }
            full.budget.withLock { $0 = budget }
            let what = "budget \(budget) on \(h.name)"
            assertThrowsLogStoreError(.diskFull, what) { try write(e, big) }
            assertSameContents(try dump(e), model, what)
            XCTAssertEqual(try e.snapshot().sequence, 3, what)
            XCTAssertEqual(try h.fs.fileSize(segmentPath(dir, 1)), size, "partial append not undone, \(what)")

            // Space is back: the same engine writes again.
            full.budget.withLock { $0 = nil }
            try write(e, big)
            apply(big, to: &model)
            XCTAssertEqual(try e.snapshot().sequence, 4, what)
            try e.close()
            let e2 = try h.open(dir, options: o)
            assertSameContents(try dump(e2), model, what)
            XCTAssertNil(e2.recoveryReport.truncatedTail, what)
            try e2.close()

            // Disk full, then the process stops: reopening finds exactly the committed data.
            let full2 = DiskFullFileSystem(h.fs)
            let e3 = try LogEngine.open(directory: dir, fileSystem: full2, options: o)
            full2.budget.withLock { $0 = budget }
            assertThrowsLogStoreError(.diskFull, what) {
                try write(
                    e3,
                    big.map { op in
                        guard case .put(let t, let k, let v) = op else { return op }
                        return .put(type: t, key: k, value: v.reversed())
                    })
            }
            try e3.close()
            let e4 = try h.open(dir, options: o)
            assertSameContents(try dump(e4), model, what)
            XCTAssertNil(e4.recoveryReport.truncatedTail, what)
            try e4.close()
        }
    }

    /// The disk fills up at every point of a roll-over (new manifest, new segment header, first
    /// append). Afterwards a small write that fits the old segment goes through, and reopening,
    /// also after a torn final append, gives exactly the committed data.
    static func diskFullDuringRollOver(_ h: StoreHarness) throws {
        // Roll-over writes a segment header, then a MANIFEST (through a temporary file), then the
        // transaction. These budgets stop the disk before, inside and after each of them.
        let manifestSize = ManifestFile(generation: 2, nextSegment: 3, segments: [1, 2]).encoded().count
        let header = SegmentHeader.sizeV2
        let budgets: Set<Int> = [
            0, header / 2, header, header + manifestSize / 2, manifestSize, header + manifestSize, header + manifestSize + 100,
        ]
        for budget in budgets.sorted() {
            for tearLastAppend in [false, true] {
                var o = LogEngineOptions.replayOnly
                o.compression = false
                o.segmentSize = 64 << 10
                o.durability = .none
                let full = DiskFullFileSystem(h.fs)
                let dir = h.newStorePath("fullroll")
                let e = try LogEngine.open(directory: dir, fileSystem: full, options: o)
                var model = Contents()
                // Fill segment 1 to within 4-8 KiB of its size.
                var n = 0
                while try h.fs.fileSize(segmentPath(dir, 1)) < UInt64(o.segmentSize - 8 << 10) {
                    let ops: [RecordOperation] = [
                        .put(type: "Fill", key: key("f\(n)"), value: [UInt8](repeating: UInt8(n & 0xFF), count: 4000))
                    ]
                    try write(e, ops)
                    apply(ops, to: &model)
                    n += 1
                }
                let committed = try e.snapshot().sequence
                let what = "budget \(budget), tear \(tearLastAppend) on \(h.name)"
                full.budget.withLock { $0 = budget }
                let big: [RecordOperation] = [.put(type: "Big", key: key("big"), value: [UInt8](repeating: 7, count: 20_000))]
                assertThrowsLogStoreError(.diskFull, what) { try write(e, big) }
                assertSameContents(try dump(e), model, what)
                XCTAssertEqual(try e.snapshot().sequence, committed, what)

                // Space is back. A small write fits the current segment.
                full.budget.withLock { $0 = nil }
                let small: [RecordOperation] = [.put(type: "Small", key: key("s"), value: [1, 2, 3])]
                try write(e, small)
                let withSmall = { () -> Contents in
                    var m = model
                    apply(small, to: &m)
                    return m
                }()
                let tail = e.manifestInfo.segments.last ?? 0
                let tailSize = try h.fs.fileSize(segmentPath(dir, tail))
                try e.close()
                if tearLastAppend {
                    // The machine stopped during the small write: its last bytes never landed.
                    try h.fs.truncateFile(segmentPath(dir, tail), to: tailSize - 2)
                }
                let e2: LogEngine
                do {
                    e2 = try h.open(dir, options: o)
                } catch {
                    XCTFail("reopen failed, \(what): \(error)")
                    continue
                }
                assertSameContents(try dump(e2), tearLastAppend ? model : withSmall, what)
                // And it keeps working: the big write now rolls over.
                try write(e2, big)
                try e2.close()
                let e3 = try h.open(dir, options: o)
                var expected = tearLastAppend ? model : withSmall
                apply(big, to: &expected)
                assertSameContents(try dump(e3), expected, what)
                XCTAssertGreaterThanOrEqual(e3.manifestInfo.segments.count, 2, what)
                try e3.close()
            }
        }
    }

    /// Roll-over syncs the directory twice: after creating the segment (nothing installed yet: a
    /// plain error, the store keeps working) and after renaming the new MANIFEST into place (the
    /// manifest on disk has moved on: the store is poisoned until reopened).
    static func failedDirectorySyncDuringRollOver(_ h: StoreHarness) throws {
        for failing in [1, 2] {
            var o = LogEngineOptions.replayOnly
            o.segmentSize = 64 << 10
            o.durability = .none
            o.compression = false
            let fs = FailingDirectorySyncFileSystem(h.fs)
            let dir = h.newStorePath("dirsync")
            let e = try LogEngine.open(directory: dir, fileSystem: fs, options: o)
            var model = Contents()
            var n = 0
            while try h.fs.fileSize(segmentPath(dir, 1)) < UInt64(o.segmentSize - 8 << 10) {
                let ops: [RecordOperation] = [.put(type: "Fill", key: key("f\(n)"), value: [UInt8](repeating: 1, count: 4000))]
                try write(e, ops)
                apply(ops, to: &model)
                n += 1
            }
            fs.countdown.withLock { $0 = failing }
            let big: [RecordOperation] = [.put(type: "Big", key: key("big"), value: [UInt8](repeating: 7, count: 20_000))]
            let small: [RecordOperation] = [.put(type: "Small", key: key("s"), value: [1])]
            if failing == 1 {
                assertThrowsLogStoreError(.io, "segment creation") { try write(e, big) }
                try write(e, small)
                apply(small, to: &model)
            } else {
                assertThrowsLogStoreError(.storePoisoned, "manifest install") { try write(e, big) }
                assertThrowsLogStoreError(.storePoisoned, "after poisoning") { try write(e, small) }
            }
            assertSameContents(try dump(e), model, "dir sync \(failing)")
            try? e.close()
            let e2 = try h.open(dir, options: o)
            assertSameContents(try dump(e2), model, "dir sync \(failing)")
            try write(e2, big)
            apply(big, to: &model)
            try e2.close()
            let e3 = try h.open(dir, options: o)
            assertSameContents(try dump(e3), model, "dir sync \(failing)")
            try e3.close()
        }
    }

    /// A failed fdatasync: the commit is not acknowledged nor published, every later write is
    /// refused with `.storePoisoned`, and reopening works.
    static func failedSyncPoisonsTheStore(_ h: StoreHarness) throws {
        let fs = FailingSyncFileSystem(h.fs)
        let dir = h.newStorePath("eio")
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: .replayOnly)
        var model = Contents()
        try write(e, workloadTransaction(0))
        apply(workloadTransaction(0), to: &model)
        fs.failing.withLock { $0 = true }
        let err = assertThrowsLogStoreError(.storePoisoned) { try write(e, workloadTransaction(1)) }
        XCTAssertNotNil(err?.underlyingError)
        assertSameContents(try dump(e), model, "an unsynced commit must not be published")
        fs.failing.withLock { $0 = false }
        assertThrowsLogStoreError(.storePoisoned, "writes after a failed sync") { try write(e, workloadTransaction(2)) }
        assertThrowsLogStoreError(.storePoisoned, "flush after a failed sync") { try e.flush() }
        try? e.close()
        // The unacknowledged commit reached the file system, so either state is acceptable.
        let e2 = try h.open(dir)
        var withFailed = model
        apply(workloadTransaction(1), to: &withFailed)
        let after = try dump(e2)
        XCTAssertTrue(after == model || after == withFailed, "reopened state is neither before nor after the failed commit")
        try write(e2, workloadTransaction(3))
        try e2.close()
    }
}
