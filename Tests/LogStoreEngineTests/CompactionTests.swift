import Foundation
import Synchronization
import XCTest

@testable import LogStoreEngine

final class CompactionTests: XCTestCase {
    let dir = "/store"

    /// Writes `keys` records of `valueSize` random bytes, `rounds` times over (so all but the last
    /// round is dead), deletes every `deleteEvery`-th key; returns the expected contents.
    @discardableResult
    func overwriteHeavily(
        _ e: LogEngine, keys: Int, rounds: Int, valueSize: Int, deleteEvery: Int = 0,
        rng: inout CTRandom
    ) throws -> CT.Model {
        var model: CT.Model = [:]
        for _ in 0..<rounds {
            for start in stride(from: 0, to: keys, by: 50) {
                var batch: [(RecordKey, [UInt8])] = []
                for i in start..<min(keys, start + 50) { batch.append((CT.key(i), rng.bytes(valueSize))) }
                try e.write { t in
                    for (k, v) in batch { try t.put(type: "Item", key: k, value: v) }
                }
                for (k, v) in batch { model["Item", default: [:]][k] = v }
            }
        }
        if deleteEvery > 0 {
            for i in stride(from: 0, to: keys, by: deleteEvery) {
                try e.write { t in try t.delete(type: "Item", key: CT.key(i)) }
                model["Item"]?[CT.key(i)] = nil
            }
        }
        return model
    }

    func testCompactionAfterHeavyOverwriteKeepsDataAndShrinksToLiveBytes() throws {
        let fs = InMemoryFileSystem()
        var rng = CTRandom(seed: 1)
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: CT.smallOptions())
        // 10 rounds over the same keys: 90 % of the log is dead.
        let model = try overwriteHeavily(e, keys: 400, rounds: 10, valueSize: 200, deleteEvery: 7, rng: &rng)
        let before = e.storageStats()
        XCTAssertGreaterThan(before.segments.count, 5)
        XCTAssertGreaterThan(before.deadBytes, 8 * before.liveBytes)
        let sequences = Dictionary(uniqueKeysWithValues: try e.snapshot().locations(ofType: "Item").map { ($0.key, $0.location.sequence) })

        let report = try e.compact()
        XCTAssertTrue(report.performed)
        XCTAssertEqual(report.recordsCopied, model["Item"]?.count)
        XCTAssertEqual(try CT.contents(e), model)
        // The live bytes (estimated before compaction) are what remains on disk, within 10 %.
        let onDisk = try CT.segmentBytes(fs, dir)
        XCTAssertLessThanOrEqual(Double(onDisk), 1.1 * Double(before.liveBytes), "on disk \(onDisk), live \(before.liveBytes)")
        // ... and within 10 % of the bare key + value bytes.
        let bare = model["Item", default: [:]].reduce(0) { $0 + $1.key.count + $1.value.count }
        XCTAssertLessThanOrEqual(Double(onDisk), 1.1 * Double(bare), "on disk \(onDisk), bare \(bare)")
        // Records keep their original sequence numbers.
        for (k, loc) in try e.snapshot().locations(ofType: "Item") { XCTAssertEqual(loc.sequence, sequences[k]) }
        let after = e.storageStats()
        XCTAssertEqual(after.reclaimableBytes, 0)
        XCTAssertEqual(after.totalItems, model["Item"]?.count)
        XCTAssertEqual(after.lastSequence, before.lastSequence)
        try e.close()

        // Replaying the compacted log (no checkpoint) gives the same data and sequences.
        try fs.removeFile(atPath: _joinPath(dir, LogStoreFormat.checkpointFileName))
        let r = try LogEngine.open(directory: dir, fileSystem: fs, options: CT.smallOptions())
        XCTAssertFalse(r.recoveryReport.checkpointUsed)
        XCTAssertEqual(try CT.contents(r), model)
        XCTAssertEqual(r.recoveryReport.lastSequence, before.lastSequence)
        for (k, loc) in try r.snapshot().locations(ofType: "Item") { XCTAssertEqual(loc.sequence, sequences[k]) }
        try r.close()
    }

    func testCompactionOfOnlySealedSegmentsLeavesTheTail() throws {
        let fs = InMemoryFileSystem()
        var rng = CTRandom(seed: 2)
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: CT.smallOptions())
        let model = try overwriteHeavily(e, keys: 200, rounds: 5, valueSize: 300, rng: &rng)
        let (_, segmentsBefore) = e.manifestInfo
        let report = try e.compact(includingTail: false)
        XCTAssertTrue(report.performed)
        XCTAssertEqual(report.replacedSegments, Array(segmentsBefore.dropLast()))
        let (_, segmentsAfter) = e.manifestInfo
        XCTAssertEqual(segmentsAfter.last, segmentsBefore.last, "the tail stays")
        XCTAssertEqual(Array(segmentsAfter.dropLast()), report.newSegments)
        XCTAssertEqual(try CT.contents(e), model)
        // Appending continues in the tail, and a second compaction of the same prefix is skipped
        // only if nothing is dead.
        try e.write { t in try t.put(type: "Item", key: CT.key(0), value: [1, 2, 3]) }
        XCTAssertEqual(try e.snapshot().value(type: "Item", key: CT.key(0)), [1, 2, 3])
        try e.close()
    }

    func testDeletedItemsNeverComeBackAfterCompactionAndReopen() throws {
        let fs = InMemoryFileSystem()
        let options = CT.smallOptions()
        var rng = CTRandom(seed: 3)
        var model: CT.Model = [:]
        var e = try LogEngine.open(directory: dir, fileSystem: fs, options: options)
        func put(_ type: String, _ i: Int) throws {
            let v = rng.bytes(500)
            try e.write { t in try t.put(type: type, key: CT.key(i), value: v) }
            model[type, default: [:]][CT.key(i)] = v
        }
        func delete(_ type: String, _ i: Int) throws {
            try e.write { t in try t.delete(type: type, key: CT.key(i)) }
            model[type]?[CT.key(i)] = nil
            if model[type]?.isEmpty == true { model[type] = nil }
        }
        func check(_ why: String) throws {
            XCTAssertEqual(try CT.contents(e), model, why)
        }
        // Round 1: puts land in early segments, their deletes in later ones.
        for i in 0..<300 { try put("A", i) }
        for i in 0..<300 { try put("B", i) }
        for i in stride(from: 0, to: 300, by: 2) { try delete("A", i) }
        try e.write { t in try t.deleteAll(type: "B") }
        model["B"] = nil
        for i in 0..<10 { try put("B", i) }
        try e.compact()
        try check("after the first compaction")

        // Round 2: the puts now live in a compacted segment, the deletes come after it.
        for i in stride(from: 1, to: 300, by: 4) { try delete("A", i) }
        for i in 300..<400 { try put("A", i) }
        try e.compact(includingTail: false)
        try check("after the second compaction")
        try e.compact()
        try check("after the third compaction")

        // Reopen from the checkpoint, then from a full replay.
        try e.close()
        e = try LogEngine.open(directory: dir, fileSystem: fs, options: options)
        XCTAssertTrue(e.recoveryReport.checkpointUsed)
        try check("after reopening from the checkpoint")
        try e.close()
        try fs.removeFile(atPath: _joinPath(dir, LogStoreFormat.checkpointFileName))
        e = try LogEngine.open(directory: dir, fileSystem: fs, options: options)
        XCTAssertFalse(e.recoveryReport.checkpointUsed)
        try check("after a full replay")
        for i in stride(from: 0, to: 300, by: 2) { XCTAssertNil(try e.snapshot().value(type: "A", key: CT.key(i))) }
        for i in 10..<300 { XCTAssertFalse(try e.snapshot().contains(type: "B", key: CT.key(i))) }
        try e.close()
    }

    func testCompactionOfOnlyDeadRecordsKeepsTheSequence() throws {
        let fs = InMemoryFileSystem()
        var rng = CTRandom(seed: 4)
        var e = try LogEngine.open(directory: dir, fileSystem: fs, options: CT.smallOptions())
        try overwriteHeavily(e, keys: 100, rounds: 4, valueSize: 400, rng: &rng)
        try e.write { t in try t.deleteAll(type: "Item") }
        let sequence = try e.snapshot().sequence
        let report = try e.compact()
        XCTAssertTrue(report.performed)
        XCTAssertEqual(report.recordsCopied, 0)
        XCTAssertLessThan(try CT.segmentBytes(fs, dir), 200)
        try e.close()
        try fs.removeFile(atPath: _joinPath(dir, LogStoreFormat.checkpointFileName))
        e = try LogEngine.open(directory: dir, fileSystem: fs, options: CT.smallOptions())
        XCTAssertEqual(try e.snapshot().sequence, sequence, "an empty compacted log still carries the last sequence")
        XCTAssertEqual(try e.snapshot().totalCount, 0)
        let next = try e.commit([.put(type: "Item", key: CT.key(1), value: [1])])
        XCTAssertEqual(next, sequence + 1)
        try e.close()
    }

    func testSnapshotTakenBeforeCompactionKeepsReadingWhileOldSegmentsAreDeleted() throws {
        let fs = InMemoryFileSystem()
        var rng = CTRandom(seed: 5)
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: CT.smallOptions())
        let oldModel = try overwriteHeavily(e, keys: 300, rounds: 1, valueSize: 300, rng: &rng)
        var old: EngineSnapshot? = try e.snapshot()
        let newModel = try overwriteHeavily(e, keys: 300, rounds: 3, valueSize: 300, deleteEvery: 3, rng: &rng)
        let filesBefore = try CT.segmentFiles(fs, dir)
        let report = try e.compact()
        XCTAssertTrue(report.performed)
        // The old snapshot still reads its segments: their files stay while it lives (segments
        // written after it was taken go at once).
        let held = Set(old?.segmentNumbers ?? []).intersection(report.replacedSegments)
        XCTAssertFalse(held.isEmpty)
        XCTAssertTrue(Set(try CT.segmentFiles(fs, dir)).isSuperset(of: held))
        XCTAssertTrue(Set(try CT.segmentFiles(fs, dir)).isDisjoint(with: Set(report.replacedSegments).subtracting(held)))
        XCTAssertEqual(try old.map(CT.contents), oldModel)
        XCTAssertEqual(try CT.contents(e), newModel)
        // Once it is released, the replaced files go.
        old = nil
        let filesAfter = try CT.segmentFiles(fs, dir)
        XCTAssertTrue(Set(filesAfter).isDisjoint(with: report.replacedSegments), "\(filesBefore) -> \(filesAfter)")
        XCTAssertEqual(try CT.contents(e), newModel)
        try e.close()
    }

    func testReadersAndWritersRunDuringCompaction() throws {
        let fs = InMemoryFileSystem()
        var rng = CTRandom(seed: 6)
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: CT.smallOptions())
        try overwriteHeavily(e, keys: 200, rounds: 3, valueSize: 256, rng: &rng)
        // Every value of key i is "i:<round>" padded; readers check each value they see belongs to its key.
        @Sendable func value(_ i: Int, _ round: Int) -> [UInt8] {
            Array("\(i):\(round):".utf8) + [UInt8](repeating: UInt8(i % 251), count: 200)
        }
        try e.write { t in for i in 0..<200 { try t.put(type: "Item", key: CT.key(i), value: value(i, 0)) } }
        let stop = Atomic(false)
        let failures = Mutex<[String]>([])
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) {
            var round = 1
            while !stop.load(ordering: .relaxed) {
                do {
                    try e.write { t in
                        for i in stride(from: round % 7, to: 200, by: 7) { try t.put(type: "Item", key: CT.key(i), value: value(i, round)) }
                    }
                } catch { failures.withLock { $0.append("write: \(error)") } }
                round += 1
            }
        }
        DispatchQueue.global().async(group: group) {
            while !stop.load(ordering: .relaxed) {
                do {
                    let s = try e.snapshot()
                    XCTAssertEqual(s.count(ofType: "Item"), 200)
                    for i in stride(from: 0, to: 200, by: 13) {
                        guard let v = try s.value(type: "Item", key: CT.key(i)), v.starts(with: Array("\(i):".utf8)) else {
                            failures.withLock { $0.append("bad value for \(i)") }
                            continue
                        }
                    }
                } catch { failures.withLock { $0.append("read: \(error)") } }
            }
        }
        for _ in 0..<5 { try e.compact() }
        stop.store(true, ordering: .relaxed)
        group.wait()
        XCTAssertEqual(failures.withLock { $0 }, [])
        let final = try CT.contents(e)
        try e.close()
        let r = try LogEngine.open(directory: dir, fileSystem: fs, options: CT.smallOptions())
        XCTAssertEqual(try CT.contents(r), final)
        try r.close()
        try fs.removeFile(atPath: _joinPath(dir, LogStoreFormat.checkpointFileName))
        let full = try LogEngine.open(directory: dir, fileSystem: fs, options: CT.smallOptions())
        XCTAssertEqual(try CT.contents(full), final)
        try full.close()
    }

    /// Writes, deletes and a delete-all land while compaction copies (from inside its output's
    /// fsync); the switch must keep all of them, through the journal or, past its limit, by
    /// re-pointing the head.
    func checkWritesDuringTheCopyAreKept(journalLimit: Int) throws {
        let base = InMemoryFileSystem()
        let output = Mutex<Set<UInt32>>([])
        let fs = CTHookFileSystem(base) { path in
            guard let n = LogStoreFormat.segmentNumber(fromFileName: String(path.split(separator: "/").last ?? "")) else { return false }
            return output.withLock { $0.contains(n) }
        }
        var rng = CTRandom(seed: 12)
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: CT.smallOptions())
        e.compactor.journalLimit.withLock { $0 = journalLimit }
        var model = try overwriteHeavily(e, keys: 200, rounds: 3, valueSize: 300, rng: &rng)
        try e.write { t in for i in 0..<30 { try t.put(type: "Other", key: CT.key(i), value: [1]) } }
        model["Other"] = Dictionary(uniqueKeysWithValues: (0..<30).map { (CT.key($0), [UInt8(1)]) })
        // The compaction's output segments are numbered from the manifest's nextSegment on,
        // after the new tail that sealing the current one creates.
        let next = e.state.withLock { $0.log.manifest.nextSegment }
        output.withLock { $0 = Set((next + 1)..<(next + 10)) }
        let during = Mutex<CT.Model?>(nil)
        let before = model
        fs.hook.withLock {
            $0 = { _ in
                // Runs on the compacting thread, which holds no lock while it copies.
                var m = before
                do {
                    try e.write { t in
                        for i in 0..<20 { try t.put(type: "Item", key: CT.key(i), value: [7, UInt8(i)]) }
                        for i in 20..<40 { try t.delete(type: "Item", key: CT.key(i)) }
                        try t.deleteAll(type: "Other")
                        try t.put(type: "New", key: CT.key(1), value: [42])
                    }
                } catch { return }
                for i in 0..<20 { m["Item"]?[CT.key(i)] = [7, UInt8(i)] }
                for i in 20..<40 { m["Item"]?[CT.key(i)] = nil }
                m["Other"] = nil
                m["New"] = [CT.key(1): [42]]
                during.withLock { $0 = m }
            }
        }
        // Everything is compacted (the tail is sealed first); the hook's writes go to the new tail.
        let sealedKey = CT.key(100)
        let report = try e.compact()
        XCTAssertTrue(report.performed)
        model = try XCTUnwrap(during.withLock { $0 }, "the hook did not run")
        XCTAssertEqual(try CT.contents(e), model)
        let s = try e.snapshot()
        for i in 0..<20 {
            XCTAssertFalse(
                report.newSegments.contains(try s.location(type: "Item", key: CT.key(i))?.segment ?? 0),
                "overwritten record points at its stale copy")
        }
        XCTAssertTrue(
            report.newSegments.contains(try s.location(type: "Item", key: sealedKey)?.segment ?? 0), "untouched record not re-pointed")
        try e.close()
        try base.removeFile(atPath: _joinPath(dir, LogStoreFormat.checkpointFileName))
        let r = try LogEngine.open(directory: dir, fileSystem: base, options: CT.smallOptions())
        XCTAssertEqual(try CT.contents(r), model)
        try r.close()
    }

    func testWritesDuringTheCopyAreReplayedFromTheJournal() throws {
        try checkWritesDuringTheCopyAreKept(journalLimit: IndexJournal.defaultLimit)
    }

    func testWritesDuringTheCopyAreKeptWhenTheJournalOverflows() throws {
        try checkWritesDuringTheCopyAreKept(journalLimit: 0)
    }

    func testBackgroundCompactionStartsAtTheDeadBytesThreshold() throws {
        let fs = InMemoryFileSystem()
        var options = CT.smallOptions()
        options.autoCompaction = true
        options.compactionThreshold = 0.5
        options.compactionMinimumDeadBytes = 100 << 10
        var rng = CTRandom(seed: 7)
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: options)
        // One round: nothing is dead, nothing happens.
        var model = try overwriteHeavily(e, keys: 300, rounds: 1, valueSize: 300, rng: &rng)
        let generation = e.manifestInfo.generation
        Thread.sleep(forTimeInterval: 0.05)
        XCTAssertFalse(e.storageStats().segments.contains(where: \.isCompacted))
        // Overwrite until well past the threshold; background compaction must run.
        model = try overwriteHeavily(e, keys: 300, rounds: 6, valueSize: 300, rng: &rng)
        let deadline = Date().addingTimeInterval(20)
        while !e.storageStats().segments.contains(where: \.isCompacted) && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.01)
        }
        let stats = e.storageStats()
        XCTAssertTrue(stats.segments.contains(where: \.isCompacted), "no background compaction: \(stats)")
        XCTAssertGreaterThan(e.manifestInfo.generation, generation)
        // (Writes after the compaction started may leave dead bytes again; its share is not checked here.)
        XCTAssertEqual(try CT.contents(e), model)
        try e.close()
    }

    func testBackgroundCompactionNeverRunsWhenDisabled() throws {
        let fs = InMemoryFileSystem()
        var options = CT.smallOptions()
        options.autoCompaction = false
        // The recompression pass rewrites segments too; it has its own switch.
        options.autoRecompression = false
        options.compactionThreshold = 0.1
        options.compactionMinimumDeadBytes = 0
        var rng = CTRandom(seed: 8)
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: options)
        try overwriteHeavily(e, keys: 200, rounds: 6, valueSize: 300, rng: &rng)
        Thread.sleep(forTimeInterval: 0.1)
        XCTAssertFalse(e.storageStats().segments.contains(where: \.isCompacted))
        XCTAssertGreaterThan(e.storageStats().reclaimableShare, 0.5)
        try e.close()
    }

    func testStorageStatsCountItemsAndDeadBytes() throws {
        let fs = InMemoryFileSystem()
        var o = CT.smallOptions()
        o.compressOnWrite = true
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: o)
        try e.write { t in
            for i in 0..<100 { try t.put(type: "A", key: CT.key(i), value: [UInt8](repeating: 1, count: 1000)) }
            for i in 0..<10 { try t.put(type: "B", key: CT.key(i), value: [2]) }
        }
        var stats = e.storageStats()
        XCTAssertEqual(stats.itemsPerType, ["A": 100, "B": 10])
        XCTAssertEqual(stats.totalItems, 110)
        XCTAssertEqual(stats.lastSequence, 1)
        XCTAssertEqual(stats.oldestLiveSequence, 1)
        XCTAssertLessThan(stats.totalBytes, 100 * 1000 / 4, "repetitive values compress")
        XCTAssertEqual(stats.totalBytes, try CT.segmentBytes(fs, dir))
        XCTAssertEqual(stats.deadBytes, 0)
        try e.write { t in for i in 0..<100 { try t.delete(type: "A", key: CT.key(i)) } }
        stats = e.storageStats()
        XCTAssertEqual(stats.itemsPerType, ["B": 10])
        XCTAssertGreaterThan(stats.deadBytes, stats.liveBytes)
        XCTAssertEqual(stats.reclaimableBytes, 0, "the tail is not reclaimable")
        XCTAssertNil(stats.checkpoint)
        try e.close()
        let r = try LogEngine.open(directory: dir, fileSystem: fs, options: CT.smallOptions())
        let reopened = r.storageStats()
        XCTAssertEqual(reopened.checkpoint?.sequence, 2)
        XCTAssertEqual(reopened.checkpoint?.matchesLog, true)
        XCTAssertEqual(reopened.checkpoint?.logBytesAfter, 0)
        XCTAssertEqual(reopened.segments, stats.segments)
        try r.close()
    }

    /// Builds the same store on a fresh in-memory file system: overwritten, deleted and
    /// deleteAll'ed records spread over many segments.
    func buildCrashFixture() throws -> (InMemoryFileSystem, CT.Model) {
        let fs = InMemoryFileSystem()
        var rng = CTRandom(seed: 9)
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: CT.smallOptions())
        var model = try overwriteHeavily(e, keys: 100, rounds: 4, valueSize: 300, deleteEvery: 4, rng: &rng)
        try e.write { t in for i in 0..<40 { try t.put(type: "Gone", key: CT.key(i), value: rng.bytes(300)) } }
        try e.write { t in try t.deleteAll(type: "Gone") }
        try e.write { t in for i in 0..<20 { try t.put(type: "Tail", key: CT.key(i), value: [UInt8(i)]) } }
        for i in 0..<20 { model["Tail", default: [:]][CT.key(i)] = [UInt8(i)] }
        try e.close()
        return (fs, model)
    }

    func testCrashAtAnyStepOfCompactionLosesNothingAndResurrectsNothing() throws {
        // Count the file system operations of one full compaction (plus its checkpoint).
        let (countFS, model) = try buildCrashFixture()
        XCTAssertGreaterThanOrEqual(try CT.segmentFiles(countFS, dir).count, 3, "the fixture spans several segments")
        let counting = CTCrashingFileSystem(countFS)
        counting.arm(after: 1_000_000)
        do {
            let e = try LogEngine.open(directory: dir, fileSystem: counting, options: CT.smallOptions())
            counting.arm(after: 1_000_000)
            try e.compact()
            let used = 1_000_000 - (counting.budget.withLock { $0 } ?? 0)
            XCTAssertGreaterThan(used, 10)
            try e.close()
            XCTAssertEqual(try CT.contents(LogEngine.open(directory: dir, fileSystem: countFS, options: CT.smallOptions())), model)
            // Crash before each of those operations in turn.
            for n in 0...used {
                let (fs, expected) = try buildCrashFixture()
                let original = Set(try CT.segmentFiles(fs, dir))
                let crashing = CTCrashingFileSystem(fs)
                let e = try LogEngine.open(directory: dir, fileSystem: crashing, options: CT.smallOptions())
                crashing.arm(after: n)
                _ = try? e.compact()
                try? e.close()
                // Restart on what the crash left.
                let r = try LogEngine.open(directory: dir, fileSystem: fs, options: CT.smallOptions())
                XCTAssertEqual(try CT.contents(r), expected, "crash after \(n) operations")
                XCTAssertNil(try r.snapshot().value(type: "Item", key: CT.key(0)), "deleted item came back after a crash at \(n)")
                XCTAssertEqual(try r.snapshot().count(ofType: "Gone"), 0, "deleteAll'ed items came back after a crash at \(n)")
                // One generation or the other: all of the original sealed segments, or none.
                let listed = Set(r.manifestInfo.segments)
                let kept = listed.intersection(original)
                XCTAssertTrue(kept == original || kept.isEmpty, "a mix of generations after a crash at \(n): \(listed) vs \(original)")
                // No file of the other generation is left behind.
                XCTAssertEqual(Set(try CT.segmentFiles(fs, dir)), listed, "crash after \(n) operations")
                // The store stays usable: write and compact again.
                try r.write { t in try t.put(type: "Item", key: CT.key(1), value: [9]) }
                XCTAssertTrue(try r.compact().performed)
                var after = expected
                after["Item", default: [:]][CT.key(1)] = [9]
                XCTAssertEqual(try CT.contents(r), after)
                try r.close()
            }
        }
    }

    func testFailedCompactionLeavesTheStoreUnchangedAndUsable() throws {
        let (fs, model) = try buildCrashFixture()
        let crashing = CTCrashingFileSystem(fs)
        let e = try LogEngine.open(directory: dir, fileSystem: crashing, options: CT.smallOptions())
        // Fail while the new segments are being written.
        crashing.arm(after: 14)
        XCTAssertThrowsError(try e.compact())
        crashing.budget.withLock { $0 = nil }
        XCTAssertEqual(try CT.contents(e), model)
        try e.write { t in try t.put(type: "Tail", key: CT.key(100), value: [1]) }
        var expected = model
        expected["Tail", default: [:]][CT.key(100)] = [1]
        // A retry succeeds.
        XCTAssertTrue(try e.compact().performed)
        XCTAssertEqual(try CT.contents(e), expected)
        try e.close()
        let r = try LogEngine.open(directory: dir, fileSystem: fs, options: CT.smallOptions())
        XCTAssertEqual(try CT.contents(r), expected)
        XCTAssertEqual(Set(try CT.segmentFiles(fs, dir)), Set(r.manifestInfo.segments))
        try r.close()
    }

    func testSalvageWithoutManifestReplaysCompactedSegmentsFirst() throws {
        let fs = InMemoryFileSystem()
        var rng = CTRandom(seed: 11)
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: CT.smallOptions())
        var model = try overwriteHeavily(e, keys: 200, rounds: 3, valueSize: 300, deleteEvery: 3, rng: &rng)
        try e.compact()
        // Newer values in the tail, whose number is below the compacted segments'.
        try e.write { t in for i in 0..<10 { try t.put(type: "Item", key: CT.key(i), value: [UInt8(i)]) } }
        for i in 0..<10 { model["Item", default: [:]][CT.key(i)] = [UInt8(i)] }
        let (_, segments) = e.manifestInfo
        XCTAssertNotEqual(segments, segments.sorted(), "compacted segments are numbered above the tail")
        try e.close()
        try fs.removeFile(atPath: _joinPath(dir, LogStoreFormat.manifestFileName))
        var salvage = CT.smallOptions()
        salvage.recovery = .salvage
        let r = try LogEngine.open(directory: dir, fileSystem: fs, options: salvage)
        XCTAssertEqual(r.manifestInfo.segments, segments)
        XCTAssertEqual(try CT.contents(r), model)
        try r.close()
    }

    func testCompactionOnRealFilesDeletesReplacedSegments() throws {
        let path = NSTemporaryDirectory() + "logstore-compaction-\(UUID().uuidString)"
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        var options = CT.smallOptions()
        options.durability = .synchronous
        var rng = CTRandom(seed: 10)
        let e = try LogEngine.open(directory: path, options: options)
        let model = try overwriteHeavily(e, keys: 100, rounds: 4, valueSize: 1000, deleteEvery: 5, rng: &rng)
        let report = try e.compact()
        XCTAssertTrue(report.performed)
        let fs = POSIXFileSystem()
        XCTAssertEqual(Set(try CT.segmentFiles(fs, path)), Set(e.manifestInfo.segments))
        XCTAssertEqual(try CT.contents(e), model)
        try e.close()
        let r = try LogEngine.open(directory: path, options: options)
        XCTAssertTrue(r.recoveryReport.checkpointUsed)
        XCTAssertEqual(try CT.contents(r), model)
        try r.close()
    }
}
