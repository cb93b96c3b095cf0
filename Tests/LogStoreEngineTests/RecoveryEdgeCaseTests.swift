import Foundation
import XCTest

@testable import LogStoreEngine

/// LevelDB-style recovery edge cases, one test per case.
final class RecoveryEdgeCaseTests: XCTestCase {
    func testTruncatedTrailingRecordIsIgnored() throws { try Scenarios.truncatedTrailingRecordIsIgnored(.posix(self)) }
    func testBadLengthAtEndIsTornTail() throws { try Scenarios.badLengthAtEndIsTornTail(.posix(self)) }
    func testChecksumMismatchInTailIsTruncated() throws { try Scenarios.checksumMismatchInTailIsTruncated(.posix(self)) }
    func testMissingCommitMarkerDropsTransaction() throws { try Scenarios.missingCommitMarkerDropsTransaction(.posix(self)) }
    func testFrameOfAnotherTransactionAfterMissingCommitWithoutSyncClaimIsCut() throws {
        try Scenarios.frameOfAnotherTransactionAfterMissingCommitWithoutSyncClaimIsCut(.posix(self))
    }

    func testFrameOfAnotherTransactionAfterMissingCommitIsCorruption() throws {
        try Scenarios.frameOfAnotherTransactionAfterMissingCommitIsCorruption(.posix(self))
    }
    func testZeroFilledTailIsFreeSpace() throws { try Scenarios.zeroFilledTailIsFreeSpace(.posix(self)) }
    func testPartialSegmentHeaderOfListedSegmentIsCorruption() throws {
        try Scenarios.partialSegmentHeaderOfListedSegmentIsCorruption(.posix(self))
    }
    func testListedLastSegmentMissingIsCorruption() throws { try Scenarios.listedLastSegmentMissingIsCorruption(.posix(self)) }
    func testListedNonTailSegmentMissingIsCorruption() throws { try Scenarios.listedNonTailSegmentMissingIsCorruption(.posix(self)) }
    func testMissingManifestWithSegmentsIsCorruption() throws { try Scenarios.missingManifestWithSegmentsIsCorruption(.posix(self)) }
    func testInterruptedCreationIsFinished() throws { try Scenarios.interruptedCreationIsFinished(.posix(self)) }
    func testDamagedManifestIsCorruption() throws { try Scenarios.damagedManifestIsCorruption(.posix(self)) }
    func testForeignDirectoryIsNotAStore() throws { try Scenarios.foreignDirectoryIsNotAStore(.posix(self)) }
    func testNewerFormatVersionIsRefused() throws { try Scenarios.newerFormatVersionIsRefused(.posix(self)) }
    func testStrayTempFilesAreRemoved() throws { try Scenarios.strayTempFilesAreRemoved(.posix(self)) }
}

extension Scenarios {
    /// A closed single-segment store of `count` committed transactions.
    static func smallStore(_ h: StoreHarness, count: Int = 6, options: LogEngineOptions = LogEngineOptions.replayOnly) throws -> (
        dir: String, history: History
    ) {
        let dir = h.newStorePath("edge")
        var history = History()
        let e = try h.open(dir, options: options)
        for n in 0..<count { try writeRecording(e, workloadTransaction(n), into: &history) }
        try e.close()
        return (dir, history)
    }

    /// Opens `dir` and checks that exactly the transactions before `last` survive, with the bytes
    /// from `last.start` on reported and cut as a torn tail.
    static func expectTornTail(
        _ h: StoreHarness, _ dir: String, _ history: History, droppedBytes: UInt64, _ what: String,
        options: LogEngineOptions = LogEngineOptions.replayOnly, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        guard let last = history.entries.last else { return XCTFail() }
        let e = try h.open(dir, options: options)
        let r = e.recoveryReport
        assertSameContents(try dump(e), history.contents { $0.sequence != last.sequence }, what, file: file, line: line)
        XCTAssertEqual(r.lastSequence, last.sequence - 1, what, file: file, line: line)
        XCTAssertEqual(r.truncatedTail?.offset, last.start, what, file: file, line: line)
        XCTAssertEqual(r.truncatedTail?.bytes, droppedBytes, what, file: file, line: line)
        XCTAssertEqual(r.truncatedTail?.path, segmentPath(dir, last.segment), what, file: file, line: line)
        XCTAssertEqual(try h.fs.fileSize(segmentPath(dir, last.segment)), last.start, what, file: file, line: line)
        // Still writable, and the write lands where the torn bytes were.
        try write(e, [.put(type: "New", key: key("n"), value: [1])])
        try e.close()
        let e2 = try h.open(dir, options: options)
        XCTAssertNil(e2.recoveryReport.truncatedTail, what, file: file, line: line)
        XCTAssertEqual(try e2.snapshot().value(type: "New", key: key("n")).map(Array.init), [1], what, file: file, line: line)
        try e2.close()
    }

    static func truncatedTrailingRecordIsIgnored(_ h: StoreHarness) throws {
        for cutBack in [1, 5, UInt64(LogFrame.headerSizeV2) + 3] {
            let (dir, history) = try smallStore(h)
            guard let last = history.entries.last else { return XCTFail() }
            try h.fs.truncateFile(segmentPath(dir, 1), to: last.end - cutBack)
            try expectTornTail(h, dir, history, droppedBytes: last.end - cutBack - last.start, "cut \(cutBack) bytes short on \(h.name)")
        }
    }

    static func badLengthAtEndIsTornTail(_ h: StoreHarness) throws {
        let cases: [(String, (UInt64) -> UInt32)] = [
            ("implausible length", { _ in 0xFFFF_FFF0 }),
            ("length past end of file", { stored in UInt32(stored) + 100 }),
            ("length shorter than the payload", { _ in 1 }),
            ("zero length", { _ in 0 }),
        ]
        for (what, length) in cases {
            let (dir, history) = try smallStore(h)
            guard let last = history.entries.last else { return XCTFail() }
            let path = segmentPath(dir, 1)
            let f = try h.fs.open(path, mode: .readWrite)
            let stored = last.end - last.start - UInt64(LogFrame.headerSizeV2)
            withUnsafeBytes(of: length(stored).littleEndian) { try? f.write($0, at: last.start + 4) }
            try f.close()
            try expectTornTail(h, dir, history, droppedBytes: last.end - last.start, "\(what) on \(h.name)")
        }
    }

    static func checksumMismatchInTailIsTruncated(_ h: StoreHarness) throws {
        for at in ["checksum", "payload", "sequence"] {
            let (dir, history) = try smallStore(h)
            guard let last = history.entries.last else { return XCTFail() }
            let offset: UInt64 = at == "checksum" ? last.start + 1 : at == "sequence" ? last.start + 12 : last.end - 2
            try h.fs.flipByte(segmentPath(dir, 1), at: offset, mask: 0x10)
            try expectTornTail(h, dir, history, droppedBytes: last.end - last.start, "bad \(at) on \(h.name)")
        }
    }

    static func missingCommitMarkerDropsTransaction(_ h: StoreHarness) throws {
        // (a) A multi-frame transaction whose commit frame never made it to disk.
        var options = LogEngineOptions.replayOnly
        options.maxFramePayload = 512
        options.compression = false
        do {
            let dir = h.newStorePath("nocommit")
            var history = History()
            let e = try h.open(dir, options: options)
            for n in 0..<3 { try writeRecording(e, workloadTransaction(n), into: &history) }
            try writeRecording(
                e, (0..<10).map { .put(type: "Multi", key: key("m\($0)"), value: sampleValue($0, size: 200)) }, into: &history)
            try e.close()
            guard let last = history.entries.last else { return XCTFail() }
            let fs = frames(ofSegment: try h.fs.readAll(segmentPath(dir, 1))).filter { UInt64($0.offset) >= last.start }
            XCTAssertGreaterThanOrEqual(fs.count, 3)
            guard let commit = fs.last, commit.header.kind == .commit else { return XCTFail("no commit frame") }
            try h.fs.truncateFile(segmentPath(dir, 1), to: UInt64(commit.offset))
            try expectTornTail(
                h, dir, history, droppedBytes: UInt64(commit.offset) - last.start, "commit frame missing on \(h.name)", options: options)
        }
        // (b) Hand-made data frames of the next sequence number, never committed.
        do {
            let (dir, history) = try smallStore(h)
            guard let last = history.entries.last else { return XCTFail() }
            let ghost: [RecordOperation] = [.put(type: "Ghost", key: key("g"), value: [1, 2, 3])]
            var bytes: [UInt8] = []
            bytes += testFrame(ghost, kind: .data, sequence: last.sequence + 1)
            bytes += testFrame(ghost, kind: .data, sequence: last.sequence + 1)
            try h.fs.appendBytes(segmentPath(dir, 1), bytes)
            let e = try h.open(dir)
            assertSameContents(try dump(e), history.model)
            XCTAssertEqual(e.recoveryReport.truncatedTail?.offset, last.end)
            XCTAssertEqual(e.recoveryReport.truncatedTail?.bytes, UInt64(bytes.count))
            XCTAssertFalse(try e.snapshot().contains(type: "Ghost", key: key("g")))
            try e.close()
        }
    }

    static func frameOfAnotherTransactionAfterMissingCommitIsCorruption(_ h: StoreHarness) throws {
        let (dir, history) = try smallStore(h)
        guard let last = history.entries.last else { return XCTFail() }
        let ghost: [RecordOperation] = [.put(type: "Ghost", key: key("g"), value: [1])]
        var bytes: [UInt8] = []
        bytes += testFrame(ghost, kind: .data, sequence: last.sequence + 1)
        let second = UInt64(bytes.count)
        // The later frame vouches that the unfinished transaction's bytes were synced (without
        // that, it would be an unsynced tail and cut; see the next test).
        bytes += testFrame(ghost, kind: .commit, sequence: last.sequence + 2, syncedThrough: UInt32(last.end + 1))
        try h.fs.appendBytes(segmentPath(dir, 1), bytes)
        let e = assertThrowsLogStoreError(.corruption, h.name) { try h.open(dir) }
        XCTAssertEqual(e?.path, segmentPath(dir, 1))
        XCTAssertEqual(e?.offset, last.end + second)
        // A commit frame that repeats an old sequence number is not a torn write either.
        let (dir2, history2) = try smallStore(h)
        guard let last2 = history2.entries.last else { return XCTFail() }
        let replay = testFrame(ghost, kind: .commit, sequence: last2.sequence, syncedThrough: UInt32(last2.end + 1))
        try h.fs.appendBytes(segmentPath(dir2, 1), replay)
        let e2 = assertThrowsLogStoreError(.corruption, h.name) { try h.open(dir2) }
        XCTAssertEqual(e2?.offset, last2.end)
    }

    /// Format v2: the same frames without a synced offset that covers the unfinished transaction
    /// are an unsynced tail (a group commit's batch written out of order): cut, and reported.
    static func frameOfAnotherTransactionAfterMissingCommitWithoutSyncClaimIsCut(_ h: StoreHarness) throws {
        let (dir, history) = try smallStore(h)
        guard let last = history.entries.last else { return XCTFail() }
        let ghost: [RecordOperation] = [.put(type: "Ghost", key: key("g"), value: [1])]
        var bytes: [UInt8] = []
        bytes += testFrame(ghost, kind: .data, sequence: last.sequence + 1, syncedThrough: UInt32(last.end))
        bytes += testFrame(ghost, kind: .commit, sequence: last.sequence + 2, syncedThrough: UInt32(last.end))
        try h.fs.appendBytes(segmentPath(dir, 1), bytes)
        let e = try h.open(dir)
        assertSameContents(try dump(e), history.model)
        XCTAssertEqual(e.recoveryReport.truncatedTail?.offset, last.end)
        XCTAssertEqual(e.recoveryReport.transactionsCut, 2)
        try e.close()
    }

    static func zeroFilledTailIsFreeSpace(_ h: StoreHarness) throws {
        // Zeros after the last commit (preallocated space, or a file extended by the OS without
        // its data): free space, neither damage nor a torn tail (SegmentReader rule 6). The next
        // commit overwrites them; close cuts what is left.
        do {
            let (dir, history) = try smallStore(h)
            guard let last = history.entries.last else { return XCTFail() }
            try h.fs.appendBytes(segmentPath(dir, 1), [UInt8](repeating: 0, count: 4096))
            let e = try h.open(dir)
            assertSameContents(try dump(e), history.model)
            XCTAssertNil(e.recoveryReport.truncatedTail)
            XCTAssertEqual(try h.fs.fileSize(segmentPath(dir, 1)), last.end + 4096, "the zeros stay")
            var more = history
            try writeRecording(e, workloadTransaction(99), into: &more)
            XCTAssertEqual(try h.fs.fileSize(segmentPath(dir, 1)), last.end + 4096, "the commit overwrote zeros")
            try e.close()
            XCTAssertLessThan(try h.fs.fileSize(segmentPath(dir, 1)), last.end + 4096, "close cuts the zeros left")
            let again = try h.open(dir)
            assertSameContents(try dump(again), more.model)
            XCTAssertNil(again.recoveryReport.truncatedTail)
            try again.close()
        }
        // Zeros replacing the end of the last transaction.
        do {
            let (dir, history) = try smallStore(h)
            guard let last = history.entries.last else { return XCTFail() }
            let path = segmentPath(dir, 1)
            let keep = last.start + 30
            try h.fs.truncateFile(path, to: keep)
            try h.fs.appendBytes(path, [UInt8](repeating: 0, count: 1000))
            try expectTornTail(h, dir, history, droppedBytes: 30 + 1000, "zeros over the last transaction on \(h.name)")
        }
    }

    /// Lists a new last segment in the manifest, sealing the current tail at its file size, as a
    /// roll-over does once the new segment's file is durable.
    static func listNewSegment(_ h: StoreHarness, _ dir: String, _ history: History) throws -> UInt32 {
        var added: UInt32 = 0
        try rewriteManifest(h.fs, dir) { m in
            if let tail = m.segments.last, let size = try? h.fs.fileSize(segmentPath(dir, tail)) {
                m.sealed[tail] = ManifestFile.Sealed(length: size, lastSequence: history.entries.last?.sequence ?? 0)
            }
            added = m.nextSegment
            m.segments.append(m.nextSegment)
            m.nextSegment += 1
            m.generation += 1
        }
        return added
    }

    /// Format v2: a roll-over lists a segment only once its header is durable, so a listed segment
    /// with a torn header is damage (format v1 recreated it; see the v1 fixture tests).
    static func partialSegmentHeaderOfListedSegmentIsCorruption(_ h: StoreHarness) throws {
        for size in [0, 1, 10, SegmentHeader.sizeV2 - 1, SegmentHeader.sizeV2] {
            let (dir, history) = try smallStore(h)
            let n = try listNewSegment(h, dir, history)
            var header = SegmentHeader(segment: n, baseSequence: 7).encoded()
            if size == SegmentHeader.sizeV2 { header[20] ^= 0xFF }  // full length but torn (bad checksum)
            try h.fs.writeAll(segmentPath(dir, n), Array(header.prefix(size)))
            let e = assertThrowsLogStoreError(.corruption, "header of \(size) bytes on \(h.name)") { try h.open(dir) }
            XCTAssertEqual(e?.path, segmentPath(dir, n))
            XCTAssertEqual(try h.fs.fileSize(segmentPath(dir, n)), UInt64(size), "nothing rewritten")
        }
    }

    /// Format v2: a listed last segment with no file lost its directory entry after it was durable:
    /// damage, never recreated empty under the lost file's name.
    static func listedLastSegmentMissingIsCorruption(_ h: StoreHarness) throws {
        let (dir, history) = try smallStore(h)
        let n = try listNewSegment(h, dir, history)
        let e = assertThrowsLogStoreError(.corruption, h.name) { try h.open(dir) }
        XCTAssertEqual(e?.path, segmentPath(dir, n))
        XCTAssertNil(h.fs.itemKind(atPath: segmentPath(dir, n)), "nothing created")
    }

    static func listedNonTailSegmentMissingIsCorruption(_ h: StoreHarness) throws {
        let (dir, history, options) = try multiSegmentStore(h)
        let segments = Set(history.entries.map(\.segment)).sorted()
        try h.fs.removeFile(atPath: segmentPath(dir, segments[1]))
        let e = assertThrowsLogStoreError(.corruption, h.name) { try h.open(dir, options: options) }
        XCTAssertEqual(e?.path, segmentPath(dir, segments[1]))
        var salvage = options
        salvage.recovery = .salvage
        let s = try h.open(dir, options: salvage)
        XCTAssertEqual(s.recoveryReport.dropped.map(\.path), [segmentPath(dir, segments[1])])
        assertSameContents(try dump(s), history.contents { $0.segment != segments[1] })
        try s.close()
    }

    static func missingManifestWithSegmentsIsCorruption(_ h: StoreHarness) throws {
        let (dir, history) = try smallStore(h)
        try h.fs.removeFile(atPath: manifestPath(dir))
        let e = assertThrowsLogStoreError(.corruption, h.name) { try h.open(dir) }
        XCTAssertEqual(e?.path, manifestPath(dir))
        XCTAssertNil(h.fs.itemKind(atPath: manifestPath(dir)), "a strict open must not invent a manifest")
        var salvage = LogEngineOptions.replayOnly
        salvage.recovery = .salvage
        let s = try h.open(dir, options: salvage)
        XCTAssertEqual(s.recoveryReport.dropped.first?.path, manifestPath(dir))
        assertSameContents(try dump(s), history.model)
        try s.close()
    }

    static func interruptedCreationIsFinished(_ h: StoreHarness) throws {
        // Creation writes segment 1's header, then MANIFEST. A crash in between leaves a segment of
        // at most a header and no manifest: that is a store still being created, not damage.
        // Format v1 builds wrote the header in place (a prefix may be left); this build renames a
        // whole header into place.
        for (version, size) in [(UInt16(1), 0), (1, 10), (1, SegmentHeader.sizeV1), (2, SegmentHeader.sizeV2)] {
            let dir = h.newStorePath("creating")
            try h.fs.createDirectory(atPath: dir)
            let header = SegmentHeader(version: version, segment: 1, baseSequence: 1, storeId: version >= 2 ? StoreID.random() : nil)
            try h.fs.writeAll(segmentPath(dir, 1), Array(header.encoded().prefix(size)))
            let e = try h.open(dir)
            XCTAssertTrue(e.recoveryReport.created)
            try write(e, workloadTransaction(0))
            try e.close()
            let e2 = try h.open(dir)
            XCTAssertEqual(e2.recoveryReport.transactionsReplayed, 1)
            try e2.close()
        }
    }

    static func damagedManifestIsCorruption(_ h: StoreHarness) throws {
        let (dir, _) = try smallStore(h)
        let original = try h.fs.readAll(manifestPath(dir))
        for offset in [8, 12, 20, original.count - 5, original.count - 1] {
            var bytes = original
            bytes[offset] ^= 0x04
            try h.fs.writeAll(manifestPath(dir), bytes)
            let e = assertThrowsLogStoreError(.corruption, "MANIFEST byte \(offset) on \(h.name)") { try h.open(dir) }
            XCTAssertEqual(e?.path, manifestPath(dir))
            XCTAssertNotNil(e?.offset)
        }
        for length in [9, 20, original.count - 1] {
            try h.fs.writeAll(manifestPath(dir), Array(original.prefix(length)))
            assertThrowsLogStoreError(.corruption, "MANIFEST cut to \(length) bytes on \(h.name)") { try h.open(dir) }
        }
        try h.fs.writeAll(manifestPath(dir), original + [0])
        assertThrowsLogStoreError(.corruption, "MANIFEST with a trailing byte on \(h.name)") { try h.open(dir) }
        try h.fs.writeAll(manifestPath(dir), original)
        try h.open(dir).close()
    }

    static func foreignDirectoryIsNotAStore(_ h: StoreHarness) throws {
        let dir = h.newStorePath("foreign")
        try h.fs.createDirectory(atPath: dir)
        try h.fs.writeAll(_joinPath(dir, "notes.txt"), Array("hello".utf8))
        try h.fs.createDirectory(atPath: _joinPath(dir, "photos"))
        let e = assertThrowsLogStoreError(.notAStore, h.name) { try h.open(dir) }
        XCTAssertEqual(e?.path, dir)
        XCTAssertEqual(
            Set(try h.fs.contentsOfDirectory(atPath: dir)), ["notes.txt", "photos"], "open must not write into a foreign directory")

        // A regular file as the store path.
        let file = h.newStorePath("file")
        try h.fs.writeAll(file, [1, 2, 3])
        assertThrowsLogStoreError(.notAStore, h.name) { try h.open(file) }

        // A MANIFEST that is not LogStore's, beside LogStore's segments: a damaged store, which
        // salvage can rebuild, not a foreign directory.
        let (store, _) = try smallStore(h)
        try h.fs.writeAll(manifestPath(store), Array("not a manifest at all".utf8))
        let m = assertThrowsLogStoreError(.corruption, h.name) { try h.open(store) }
        XCTAssertEqual(m?.path, manifestPath(store))
    }

    static func newerFormatVersionIsRefused(_ h: StoreHarness) throws {
        // MANIFEST: patch the version field and recompute the checksum.
        do {
            let (dir, _) = try smallStore(h)
            var bytes = try h.fs.readAll(manifestPath(dir))
            let newer = max(5, ManifestFile.currentVersion + 1)
            bytes[8] = UInt8(newer & 0xFF)
            bytes[9] = UInt8(newer >> 8)
            let crc = CRC32C.mask(CRC32C.checksum(Array(bytes.dropLast(4))))
            withUnsafeBytes(of: crc.littleEndian) { bytes.replaceSubrange((bytes.count - 4)..., with: $0) }
            try h.fs.writeAll(manifestPath(dir), bytes)
            let e = assertThrowsLogStoreError(.unsupportedFormatVersion, h.name) { try h.open(dir) }
            XCTAssertEqual(e?.path, manifestPath(dir))
        }
        // A segment header.
        do {
            let (dir, _) = try smallStore(h)
            var bytes = try h.fs.readAll(segmentPath(dir, 1))
            var header = SegmentHeader(segment: 1, baseSequence: 1)
            header.version = max(5, SegmentHeader.currentVersion + 1)
            bytes.replaceSubrange(0..<SegmentHeader.sizeV2, with: header.encoded())
            try h.fs.writeAll(segmentPath(dir, 1), bytes)
            let e = assertThrowsLogStoreError(.unsupportedFormatVersion, h.name) { try h.open(dir) }
            XCTAssertEqual(e?.path, segmentPath(dir, 1))
        }
    }

    static func strayTempFilesAreRemoved(_ h: StoreHarness) throws {
        let (dir, history) = try smallStore(h)
        let strays = ["MANIFEST.tmp", LogStoreFormat.segmentFileName(99), LogStoreFormat.segmentFileName(0)]
        for s in strays { try h.fs.writeAll(_joinPath(dir, s), [0xAB, 0xCD]) }
        // Salvage never deletes anything.
        var salvage = LogEngineOptions.replayOnly
        salvage.recovery = .salvage
        let s = try h.open(dir, options: salvage)
        XCTAssertEqual(s.recoveryReport.removedFiles, [])
        try s.close()
        XCTAssertEqual(h.fs.itemKind(atPath: _joinPath(dir, "MANIFEST.tmp")), .file)

        let e = try h.open(dir)
        XCTAssertEqual(Set(e.recoveryReport.removedFiles), Set(strays))
        for s in strays { XCTAssertNil(h.fs.itemKind(atPath: _joinPath(dir, s)), s) }
        assertSameContents(try dump(e), history.model)
        XCTAssertNil(e.recoveryReport.truncatedTail)
        try e.close()
    }
}
