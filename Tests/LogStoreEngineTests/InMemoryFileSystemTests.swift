import Foundation
import XCTest

@testable import LogStoreEngine

/// The core engine scenarios again, on `InMemoryFileSystem` (what the in-memory store runs on).
/// Raw file surgery goes through the `FileSystem` protocol, so the scenarios are the same code.
final class InMemoryFileSystemTests: XCTestCase {
    var h: StoreHarness { .memory() }

    func testCleanCloseRecoversIdenticalData() throws { try Scenarios.cleanCloseRecovery(h) }
    func testEmptyStoreReopens() throws { try Scenarios.emptyStoreReopens(h) }
    func testTornTailAtEveryByteOffsetOfTheLastTransaction() throws { try Scenarios.tornTailAtEveryOffset(h) }
    func testTornMultiFrameTransactionIsNeverPartiallyVisible() throws { try Scenarios.tornMultiFrameTransaction(h, everyByte: false) }
    func testFlippedByteInNonTailSegmentIsCorruption() throws { try Scenarios.flippedByteInNonTailSegment(h) }
    func testFlippedByteInMiddleOfLastSegmentIsCorruption() throws { try Scenarios.flippedByteInMiddleOfLastSegment(h) }
    func testFlippedByteInUnsyncedTailIsCutWithEverythingAfterIt() throws {
        try Scenarios.flippedByteInUnsyncedTailIsCutWithEverythingAfterIt(h)
    }
    func testUndecodableCommittedFrameIsCorruption() throws { try Scenarios.undecodableCommittedFrameIsCorruption(h) }
    func testFlippedByteAnywhereInLastSegment() throws { try Scenarios.flippedByteAnywhereInLastSegment(h) }
    func testSecondOpenIsLocked() throws { try Scenarios.secondOpenIsLocked(h) }
    func testSegmentsRollOverAndAllDataComesBack() throws { try Scenarios.segmentRollOver(h) }
    func testTransactionLargerThanSegmentSize() throws { try Scenarios.transactionLargerThanSegment(h) }
    func testConcurrentSynchronousWritersAllCommit() throws {
        let counting = CountingFileSystem(InMemoryFileSystem())
        try counting.createDirectory(atPath: "/stores")
        try Scenarios.concurrentSynchronousWriters(StoreHarness(name: "memory+counting", fs: counting, root: "/stores"), counting: counting)
    }

    // LevelDB-style edge cases.
    func testTruncatedTrailingRecordIsIgnored() throws { try Scenarios.truncatedTrailingRecordIsIgnored(h) }
    func testBadLengthAtEndIsTornTail() throws { try Scenarios.badLengthAtEndIsTornTail(h) }
    func testChecksumMismatchInTailIsTruncated() throws { try Scenarios.checksumMismatchInTailIsTruncated(h) }
    func testMissingCommitMarkerDropsTransaction() throws { try Scenarios.missingCommitMarkerDropsTransaction(h) }
    func testFrameOfAnotherTransactionAfterMissingCommitIsCorruption() throws {
        try Scenarios.frameOfAnotherTransactionAfterMissingCommitIsCorruption(h)
    }
    func testFrameOfAnotherTransactionAfterMissingCommitWithoutSyncClaimIsCut() throws {
        try Scenarios.frameOfAnotherTransactionAfterMissingCommitWithoutSyncClaimIsCut(h)
    }
    func testZeroFilledTailIsFreeSpace() throws { try Scenarios.zeroFilledTailIsFreeSpace(h) }
    func testPartialSegmentHeaderOfListedSegmentIsCorruption() throws { try Scenarios.partialSegmentHeaderOfListedSegmentIsCorruption(h) }
    func testListedLastSegmentMissingIsCorruption() throws { try Scenarios.listedLastSegmentMissingIsCorruption(h) }
    func testListedNonTailSegmentMissingIsCorruption() throws { try Scenarios.listedNonTailSegmentMissingIsCorruption(h) }
    func testMissingManifestWithSegmentsIsCorruption() throws { try Scenarios.missingManifestWithSegmentsIsCorruption(h) }
    func testInterruptedCreationIsFinished() throws { try Scenarios.interruptedCreationIsFinished(h) }
    func testDamagedManifestIsCorruption() throws { try Scenarios.damagedManifestIsCorruption(h) }
    func testForeignDirectoryIsNotAStore() throws { try Scenarios.foreignDirectoryIsNotAStore(h) }
    func testNewerFormatVersionIsRefused() throws { try Scenarios.newerFormatVersionIsRefused(h) }
    func testStrayTempFilesAreRemoved() throws { try Scenarios.strayTempFilesAreRemoved(h) }

    func testOversizedItemKeyAndEmptyTypeCommitNothing() throws { try Scenarios.limitsCommitNothing(h) }
    func testThrowingWriteBodyCommitsNothing() throws { try Scenarios.throwingBodyCommitsNothing(h) }
    func testNestedWriteOnSameThreadThrowsReentrantWrite() throws { try Scenarios.nestedWriteIsReentrant(h) }
    func testUseAfterCloseThrowsNotOpen() throws { try Scenarios.useAfterCloseIsNotOpen(h) }
    func testReadsInsideWriteSeeOwnChangesAndSnapshotsAreIsolated() throws { try Scenarios.transactionIsolation(h) }
    func testTransactionUsedAfterItsBlockIsExpired() throws { try Scenarios.transactionExpires(h) }
    func testTextHeavyTransactionIsCompressed() throws { try Scenarios.textHeavyTransactionIsCompressed(h) }
    func testIncompressibleAndSmallFramesAreStoredRaw() throws { try Scenarios.incompressibleFramesAreStoredRaw(h) }
    func testDiskFullDuringAppendCommitsNothing() throws { try Scenarios.diskFullDuringAppend(h) }
    func testDiskFullDuringRollOverCommitsNothing() throws { try Scenarios.diskFullDuringRollOver(h) }
    func testFailedDirectorySyncDuringRollOver() throws { try Scenarios.failedDirectorySyncDuringRollOver(h) }

    /// The in-memory lock is per file system: two file systems never share stores or locks.
    func testSeparateInMemoryFileSystemsAreIndependent() throws {
        let a = try LogEngine.open(directory: "/s", fileSystem: InMemoryFileSystem(), options: .replayOnly)
        let b = try LogEngine.open(directory: "/s", fileSystem: InMemoryFileSystem(), options: .replayOnly)
        try write(a, [.put(type: "A", key: key("a"), value: [1])])
        XCTAssertEqual(try b.snapshot().totalCount, 0)
        try a.close()
        try b.close()
    }
}
