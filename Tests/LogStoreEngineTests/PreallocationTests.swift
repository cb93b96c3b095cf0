import Foundation
import Synchronization
import XCTest

@testable import LogStoreEngine

/// The tail is written (zeros) and synced ahead of the appends, so durable
/// commits overwrite allocated blocks; recovery reads zeros after the last transaction as free
/// space, sealing and closing cut them off, and a spare file becomes the next segment.
final class PreallocationTests: XCTestCase {
    /// Inline preallocation of 16 KiB in 64 KiB segments, no checkpoint or compaction.
    static func options(background: Bool = false) -> LogEngineOptions {
        var o = LogEngineOptions.replayOnly
        o.segmentSize = 64 << 10
        o.preallocationSize = 16 << 10
        o.preallocatesInBackground = background
        o.compression = false
        return o
    }

    func tailEnd(_ e: LogEngine) -> UInt64 { e.state.withLock { $0.log.tailOffset } }

    func testCommitsOverwriteZerosWrittenAheadAndCloseCutsThem() throws {
        let h = StoreHarness.posix(self)
        let dir = h.newStorePath()
        let e = try h.open(dir, options: Self.options())
        let seg = segmentPath(dir, 1)
        XCTAssertEqual(try h.fs.fileSize(seg), UInt64(SegmentHeader.sizeV2), "an open writes no zeros")
        var history = History()
        // The first commit grows the file; the zeros written after it take the next ones.
        try writeRecording(e, workloadTransaction(0, puts: 2, valueSize: 100), into: &history)
        let first = tailEnd(e)
        XCTAssertEqual(try h.fs.fileSize(seg), first + (16 << 10), "zeros written ahead after the first commit")
        try writeRecording(e, workloadTransaction(1, puts: 2, valueSize: 100), into: &history)
        XCTAssertEqual(try h.fs.fileSize(seg), first + (16 << 10), "a small commit overwrites zeros")
        for n in 2..<20 { try writeRecording(e, workloadTransaction(n, puts: 2, valueSize: 100), into: &history) }
        let end = tailEnd(e)
        let size = try h.fs.fileSize(seg)
        XCTAssertGreaterThanOrEqual(size, end + (8 << 10), "at least half the window stays ahead")
        XCTAssertLessThanOrEqual(size, end + (16 << 10))
        try e.close()
        XCTAssertEqual(try h.fs.fileSize(seg), end, "a closed store keeps no preallocated space")
        let again = try h.open(dir, options: Self.options())
        assertSameContents(try dump(again), history.model)
        XCTAssertNil(again.recoveryReport.truncatedTail)
        XCTAssertEqual(try h.fs.fileSize(seg), end, "an open to read writes nothing")
        try again.close()
    }

    /// A `kill -9` leaves the zeros; recovery keeps them as free space (no torn tail, no cut) and
    /// commits go on overwriting them.
    func testRecoveryKeepsTheZerosAfterACrash() throws {
        let fs = FaultInjectingFileSystem()
        try fs.createDirectory(atPath: "/s")
        var history = History()
        let e = try LogEngine.open(directory: "/s/store", fileSystem: fs, options: Self.options())
        for n in 0..<5 { try writeRecording(e, workloadTransaction(n, puts: 3, valueSize: 200), into: &history) }
        let end = tailEnd(e)
        fs.crash()
        try? e.close()
        let image = fs.processCrashImage()
        let seg = segmentPath("/s/store", 1)
        let size = try image.fileSize(seg)
        XCTAssertGreaterThan(size, end)
        let r = try LogEngine.open(directory: "/s/store", fileSystem: image, options: Self.options())
        assertSameContents(try dump(r), history.model)
        XCTAssertNil(r.recoveryReport.truncatedTail)
        XCTAssertEqual(tailEnd(r), end)
        XCTAssertEqual(try image.fileSize(seg), size, "the zeros stay")
        try writeRecording(r, workloadTransaction(5, puts: 3, valueSize: 200), into: &history)
        try r.close()
        let reopened = try LogEngine.open(directory: "/s/store", fileSystem: image, options: Self.options())
        assertSameContents(try dump(reopened), history.model)
        try reopened.close()
    }

    /// A frame torn over the zeros (its first bytes written, the rest still zeros) is a torn tail:
    /// cut with the zeros after it, and reported.
    func testTornFrameOverTheZerosIsCut() throws {
        let h = StoreHarness.posix(self)
        let dir = h.newStorePath()
        let e = try h.open(dir, options: Self.options())
        var history = History()
        for n in 0..<4 { try writeRecording(e, workloadTransaction(n, puts: 2, valueSize: 300), into: &history) }
        let end = tailEnd(e)
        let kept = history
        try writeRecording(e, workloadTransaction(4, puts: 2, valueSize: 300), into: &history)
        // Simulate the power loss: the last transaction's bytes after its first 40 revert to zeros.
        let tornEnd = tailEnd(e)
        fileSystemCrash(e)
        let f = try h.fs.open(segmentPath(dir, 1), mode: .readWrite)
        try f.write([UInt8](repeating: 0, count: Int(tornEnd - end - 40)), at: end + 40)
        try f.close()
        let r = try h.open(dir, options: Self.options())
        assertSameContents(try dump(r), kept.model)
        XCTAssertEqual(r.recoveryReport.truncatedTail?.offset, end)
        XCTAssertEqual(tailEnd(r), end)
        try r.close()
    }

    /// The last commit's bytes lost whole (zeros again), a later commit's kept (sector reordering):
    /// the later one never vouches for the lost one, so both are cut.
    func testLostCommitBeforeAKeptOneInTheZerosIsCutWithIt() throws {
        let h = StoreHarness.posix(self)
        let dir = h.newStorePath()
        var o = Self.options()
        o.durability = .none
        let e = try h.open(dir, options: o)
        var history = History()
        for n in 0..<3 { try writeRecording(e, workloadTransaction(n, puts: 2, valueSize: 300), into: &history) }
        try e.flush()
        let kept = history
        let end = tailEnd(e)
        try writeRecording(e, workloadTransaction(3, puts: 2, valueSize: 300), into: &history)
        let lostEnd = tailEnd(e)
        try writeRecording(e, workloadTransaction(4, puts: 2, valueSize: 300), into: &history)
        fileSystemCrash(e)
        // `.none` does not preallocate: add zeros after the log as a preallocated tail would have.
        let f = try h.fs.open(segmentPath(dir, 1), mode: .readWrite)
        try f.write([UInt8](repeating: 0, count: Int(lostEnd - end)), at: end)
        try f.write([UInt8](repeating: 0, count: 4096), at: try f.size())
        try f.close()
        let r = try h.open(dir, options: Self.options())
        assertSameContents(try dump(r), kept.model)
        XCTAssertEqual(r.recoveryReport.truncatedTail?.offset, end)
        XCTAssertEqual(r.recoveryReport.transactionsCut, 1, "the kept later transaction (the lost one left no bytes)")
        try r.close()
    }

    /// Sealing cuts the zeros (MANIFEST records the exact size), and once the tail is written to
    /// the segment size a spare file is made, which the roll-over renames into the next segment.
    func testRollOverSealsAtTheLogsEndAndTurnsTheSpareIntoTheNextSegment() throws {
        let h = StoreHarness.posix(self)
        let dir = h.newStorePath()
        let e = try h.open(dir, options: Self.options())
        var history = History()
        var n = 0
        while e.manifestInfo.segments.count < 3 {
            try writeRecording(e, workloadTransaction(n, puts: 4, valueSize: 500), into: &history)
            n += 1
        }
        let manifest = try ManifestFile.decode(try h.fs.readAll(manifestPath(dir)), path: manifestPath(dir))
        for s in manifest.segments.dropLast() {
            XCTAssertEqual(manifest.sealed[s]?.length, try h.fs.fileSize(segmentPath(dir, s)), "sealed segment \(s) has its exact size")
        }
        // The new tail came from the spare: zeros written before it was listed.
        XCTAssertGreaterThanOrEqual(try h.fs.fileSize(segmentPath(dir, manifest.segments.last!)), UInt64(16 << 10))
        try e.close()
        XCTAssertFalse(try h.fs.contentsOfDirectory(atPath: dir).contains(Preallocator.spareName), "close removes the spare")
        let again = try h.open(dir, options: Self.options())
        assertSameContents(try dump(again), history.model)
        try again.close()
    }

    /// A roll-over that stopped after renaming the spare into place, before MANIFEST listed it,
    /// leaves an unlisted segment of a header and zeros: removed on open like any interrupted
    /// roll-over's, not taken for a newer store's data.
    func testUnlistedSegmentOfHeaderAndZerosIsRemoved() throws {
        let h = StoreHarness.posix(self)
        let dir = h.newStorePath()
        let (history, next) = try storeWithUnlistedSegment(h, dir, after: [])
        let e = try h.open(dir, options: Self.options())
        assertSameContents(try dump(e), history.model)
        XCTAssertEqual(e.recoveryReport.removedFiles, [LogStoreFormat.segmentFileName(next)])
        try e.close()
        // The same segment holding one byte of data is committed data MANIFEST does not know.
        let dir2 = h.newStorePath()
        _ = try storeWithUnlistedSegment(h, dir2, after: [1])
        assertThrowsLogStoreError(.corruption) { try h.open(dir2, options: Self.options()) }
    }

    func storeWithUnlistedSegment(_ h: StoreHarness, _ dir: String, after bytes: [UInt8]) throws -> (History, UInt32) {
        let e = try h.open(dir, options: Self.options())
        var history = History()
        for n in 0..<3 { try writeRecording(e, workloadTransaction(n), into: &history) }
        try e.close()
        let manifest = try ManifestFile.decode(try h.fs.readAll(manifestPath(dir)), path: manifestPath(dir))
        let next = manifest.nextSegment
        let header = SegmentHeader(segment: next, baseSequence: 4, storeId: manifest.storeId).encoded()
        try h.fs.writeAll(segmentPath(dir, next), header + [UInt8](repeating: 0, count: 8 << 10) + bytes)
        return (history, next)
    }

    /// A failed `fdatasync` while preallocating poisons the store: it may have swallowed the
    /// writeback error of a commit's bytes (Linux reports it once). Buffered commits (no sync of
    /// their own) so that the preallocator's sync is the one that fails.
    func testFailedSyncWhilePreallocatingPoisonsTheStore() throws {
        let fs = FailingSyncFileSystem(POSIXFileSystem())
        let h = StoreHarness.posix(self)
        var o = Self.options()
        o.durability = .buffered
        o.syncInterval = .seconds(3600)
        let e = try LogEngine.open(directory: h.newStorePath(), fileSystem: fs, options: o)
        try e.commit([.put(type: "T", key: key("a"), value: [1, 2, 3])])
        fs.failing.withLock { $0 = true }
        var poisoned = false
        for i in 0..<200 where !poisoned {
            do { try e.commit([.put(type: "T", key: key("k\(i)"), value: [UInt8](repeating: 7, count: 900))]) } catch let err
                as LogStoreError
            {
                XCTAssertEqual(err.code, .storePoisoned)
                poisoned = true
            }
        }
        XCTAssertTrue(poisoned, "a commit after the failed preallocation sync must be refused")
        assertThrowsLogStoreError(.storePoisoned) { try e.commit([.put(type: "T", key: key("b"), value: [1])]) }
        fs.failing.withLock { $0 = false }
        try? e.close()
    }

    /// Background preallocation racing 8 writers of random sizes across many roll-overs: every
    /// commit reads back, the zero writes never land on data, and a reopen sees everything.
    func testBackgroundPreallocationRacingWritersLosesNothing() throws {
        let h = StoreHarness.posix(self)
        let dir = h.newStorePath()
        var o = Self.options(background: true)
        o.preallocationSize = 8 << 10
        let e = try h.open(dir, options: o)
        let writers = 8
        let perWriter = 150
        DispatchQueue.concurrentPerform(iterations: writers) { w in
            var rng = SplitMix64(seed: UInt64(w))
            for i in 0..<perWriter {
                let size = rng.int(in: 1...3_000)
                let value = [UInt8](repeating: UInt8(truncatingIfNeeded: w &* 31 &+ i), count: size)
                do { try e.commit([.put(type: "T", key: key("\(w)-\(i)"), value: value)]) } catch { XCTFail("\(error)") }
            }
        }
        func check(_ e: LogEngine) throws {
            let snap = try e.snapshot()
            XCTAssertEqual(snap.count(ofType: "T"), writers * perWriter)
            for w in 0..<writers {
                var rng = SplitMix64(seed: UInt64(w))
                for i in 0..<perWriter {
                    let size = rng.int(in: 1...3_000)
                    let v = try snap.value(type: "T", key: key("\(w)-\(i)")).map(Array.init)
                    XCTAssertEqual(v, [UInt8](repeating: UInt8(truncatingIfNeeded: w &* 31 &+ i), count: size), "\(w)-\(i)")
                }
            }
        }
        try check(e)
        XCTAssertGreaterThan(e.manifestInfo.segments.count, 5, "the run must roll over often")
        try e.close()
        let again = try h.open(dir, options: o)
        XCTAssertNil(again.recoveryReport.truncatedTail)
        try check(again)
        try again.close()
    }
}

/// Stops the engine without a clean close, as a crash would (nothing is cut or checkpointed).
func fileSystemCrash(_ e: LogEngine) {
    e.state.withLock { $0.closed = true }
    e.log.preallocator?.close()
    e.lock.unlock()
}
