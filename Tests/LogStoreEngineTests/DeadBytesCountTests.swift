import Foundation
import XCTest

@testable import LogStoreEngine

/// The segments' dead-byte counts that background compaction decides from: kept by commits,
/// replay, checkpoints and compaction switches, they equal what a walk of the index finds.
final class DeadBytesCountTests: XCTestCase {
    let dir = "/store"

    /// Per listed segment: the engine's count and whether it is known.
    func counts(_ e: LogEngine) -> [UInt32: (dead: UInt64, known: Bool)] {
        e.state.withLock { s in
            var out: [UInt32: (UInt64, Bool)] = [:]
            for n in s.log.manifest.segments {
                if let i = s.log.segmentInfo[n] { out[n] = (i.deadBytes, i.deadKnown) }
            }
            return out
        }
    }

    /// Per listed segment: its raw bytes minus those of its live records, by a walk of the index.
    func walked(_ e: LogEngine) throws -> [UInt32: UInt64] {
        let (view, manifest, info) = e.state.withLock { ($0.views.head, $0.log.manifest, $0.log.segmentInfo) }
        var position: [UInt32: Int] = [:]
        for (i, n) in manifest.segments.enumerated() { position[n] = i }
        let compacted = manifest.segments.map { view.segments[$0]?.compacted ?? false }
        let walk = try XCTUnwrap(LogEngine.walkLiveRecords(view.index, position: position, compacted: compacted) { false })
        var out: [UInt32: UInt64] = [:]
        for (i, n) in manifest.segments.enumerated() { out[n] = (info[n]?.rawBytes ?? 0) - walk.liveRaw[i] }
        return out
    }

    func assertCountsMatchAWalk(_ e: LogEngine, _ message: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let c = counts(e)
        let w = try walked(e)
        XCTAssertEqual(Set(c.keys), Set(w.keys), message, file: file, line: line)
        for (n, expected) in w {
            XCTAssertEqual(c[n]?.known, true, "\(message): segment \(n)'s count is not known", file: file, line: line)
            XCTAssertEqual(c[n]?.dead, expected, "\(message): segment \(n)", file: file, line: line)
        }
    }

    /// Overwrites and deletes spread over several segments.
    func churn(_ e: LogEngine, rounds: Int, seed: UInt64) throws {
        var rng = CTRandom(seed: seed)
        for round in 0..<rounds {
            for start in stride(from: 0, to: 300, by: 30) {
                try e.write { t in
                    for i in start..<(start + 30) { try t.put(type: "Item", key: CT.key(i), value: rng.bytes(120 + i % 50)) }
                    try t.put(type: "Other", key: CT.key(round), value: rng.bytes(40))
                }
            }
            try e.write { t in
                for i in stride(from: round, to: 300, by: 11) { try t.delete(type: "Item", key: CT.key(i)) }
            }
        }
    }

    func testCommitsReplayAndCheckpointsKeepTheCountsAWalkFinds() throws {
        let fs = InMemoryFileSystem()
        var o = CT.smallOptions()
        o.checkpointOnClose = true
        var e = try LogEngine.open(directory: dir, fileSystem: fs, options: o)
        try churn(e, rounds: 4, seed: 1)
        XCTAssertGreaterThan(counts(e).count, 3)
        try assertCountsMatchAWalk(e, "after commits")
        try e.close()

        // From the checkpoint written at close: the counts come from it.
        e = try LogEngine.open(directory: dir, fileSystem: fs, options: o)
        XCTAssertTrue(e.recoveryReport.checkpointUsed)
        try assertCountsMatchAWalk(e, "opened from the checkpoint")
        try churn(e, rounds: 2, seed: 2)
        try assertCountsMatchAWalk(e, "after more commits")
        try e.close()

        // A full replay counts them as the commits did.
        try fs.removeFile(atPath: _joinPath(dir, LogStoreFormat.checkpointFileName))
        e = try LogEngine.open(directory: dir, fileSystem: fs, options: o)
        XCTAssertFalse(e.recoveryReport.checkpointUsed)
        try assertCountsMatchAWalk(e, "after a full replay")
        try e.close()
    }

    func testADeleteAllMakesTheCountsUnknownUntilTheCompactionCheckWalksOnce() throws {
        let fs = InMemoryFileSystem()
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: CT.smallOptions())
        try churn(e, rounds: 3, seed: 3)
        try e.write { t in try t.deleteAll(type: "Other") }
        XCTAssertTrue(counts(e).values.contains { !$0.known })
        _ = e.compactionDue()
        try assertCountsMatchAWalk(e, "after the check's walk")
        try churn(e, rounds: 1, seed: 4)
        try assertCountsMatchAWalk(e, "after commits that followed the walk")
        try e.close()
    }

    func testCompactionKeepsTheCountsOfWhatCommitsReplaceDuringTheCopy() throws {
        let fs = InMemoryFileSystem()
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: CT.smallOptions())
        try churn(e, rounds: 3, seed: 5)
        // A writer overwrites copied records while the copy runs (the journal's changes).
        let done = DispatchSemaphore(value: 0)
        let writer = Thread {
            var rng = CTRandom(seed: 6)
            for i in 0..<200 {
                try? e.write { t in try t.put(type: "Item", key: CT.key(i % 300), value: rng.bytes(100)) }
            }
            done.signal()
        }
        writer.start()
        try e.compact(includingTail: false)
        done.wait()
        _ = e.compactionDue()
        try assertCountsMatchAWalk(e, "after a compaction beside a writer")
        try e.compact()
        try assertCountsMatchAWalk(e, "after a compaction of everything")
        try e.close()
    }

    func testACheckpointRecordsTheCountsAndOneWithoutThemIsCountedOnce() throws {
        var s = CheckpointFile.Segment(number: 1, length: 100, rawBytes: 90, refs: DefineRefs(), pendingBytes: 7, deadBytes: 300)
        var w = _ByteWriter(capacity: 16)
        CheckpointFile.encodeRefs(s, into: &w)
        // known 1, two empty id sets, pending 7, dead 300.
        XCTAssertEqual(w.bytes, [0x01, 0x00, 0x00, 0x07, 0xAC, 0x02])
        s.deadBytes = nil
        var without = _ByteWriter(capacity: 16)
        CheckpointFile.encodeRefs(s, into: &without)
        XCTAssertEqual(without.bytes, [0x01, 0x00, 0x00, 0x07])
    }
}
