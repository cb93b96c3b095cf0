import Foundation
import XCTest

@testable import LogStoreEngine

final class CheckpointTests: XCTestCase {
    let dir = "/store"
    var checkpointPath: String { _joinPath(dir, LogStoreFormat.checkpointFileName) }

    func options(checkpointOnClose: Bool = true) -> LogEngineOptions {
        var o = CT.smallOptions()
        o.checkpointOnClose = checkpointOnClose
        return o
    }

    /// Puts, overwrites, deletes and a delete-all across several segments.
    @discardableResult
    func churn(_ e: LogEngine, seed: UInt64, model: inout CT.Model) throws -> Int {
        var rng = CTRandom(seed: seed)
        var transactions = 0
        for round in 0..<4 {
            for start in stride(from: 0, to: 200, by: 25) {
                var batch: [(String, RecordKey, [UInt8]?)] = []
                for i in start..<(start + 25) {
                    let type = i % 3 == 0 ? "Small" : "Item"
                    let del = round > 0 && Int.random(in: 0..<5, using: &rng) == 0
                    batch.append((type, CT.key(i), del ? nil : rng.bytes(Int.random(in: 1...400, using: &rng))))
                }
                try e.write { t in
                    for (type, k, v) in batch {
                        if let v { try t.put(type: type, key: k, value: v) } else { try t.delete(type: type, key: k) }
                    }
                }
                transactions += 1
                for (type, k, v) in batch {
                    model[type, default: [:]][k] = v
                    if model[type]?.isEmpty == true { model[type] = nil }
                }
            }
        }
        try e.write { t in try t.deleteAll(type: "Small") }
        model["Small"] = nil
        try e.write { t in for i in 0..<5 { try t.put(type: "Small", key: CT.key(i), value: [UInt8(i)]) } }
        for i in 0..<5 { model["Small", default: [:]][CT.key(i)] = [UInt8(i)] }
        return transactions + 2
    }

    func index(_ e: LogEngine) -> IndexState { e.state.withLock { $0.views.head.index } }

    func assertSameIndex(_ a: IndexState, _ b: IndexState, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(a.sequence, b.sequence, "sequence", file: file, line: line)
        XCTAssertEqual(Set(a.types.keys), Set(b.types.keys), "types", file: file, line: line)
        for (t, d) in a.types { XCTAssertTrue(d == b.types[t], "locations of \(t) differ", file: file, line: line) }
    }

    /// The run files a CHECKPOINT 4 names: path and bytes.
    func runFiles(_ fs: any FileSystem, named checkpoint: [UInt8], in dir: String = "/store") throws -> [(String, [UInt8])] {
        let cp = try checkpoint.withUnsafeBytes { try CheckpointFileV4.decode($0) }
        return try cp.runNumbers.map { n in
            let path = _joinPath(dir, RunFile.fileName(n))
            return (path, try CT.readFile(fs, path))
        }
    }

    func testCleanCloseWritesACheckpointAndReopenReplaysNothing() throws {
        let fs = InMemoryFileSystem()
        var model: CT.Model = [:]
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: options())
        try churn(e, seed: 1, model: &model)
        let before = index(e)
        try e.close()
        XCTAssertEqual(fs.itemKind(atPath: checkpointPath), .file)
        let r = try LogEngine.open(directory: dir, fileSystem: fs, options: options())
        XCTAssertTrue(r.recoveryReport.checkpointUsed)
        XCTAssertNil(r.recoveryReport.checkpointRejectedReason)
        XCTAssertEqual(r.recoveryReport.transactionsReplayed, 0)
        XCTAssertEqual(r.recoveryReport.checkpointSequence, before.sequence)
        XCTAssertEqual(r.recoveryReport.lastSequence, before.sequence)
        assertSameIndex(index(r), before)
        XCTAssertEqual(try CT.contents(r), model)
        try r.close()
    }

    func testCheckpointPlusTailReplayGivesTheSameStateAsAFullReplay() throws {
        let fs = InMemoryFileSystem()
        var model: CT.Model = [:]
        do {
            let e = try LogEngine.open(directory: dir, fileSystem: fs, options: options())
            try churn(e, seed: 2, model: &model)
            try e.close()
        }
        // More log after the checkpoint, over several roll-overs; no new checkpoint.
        let tailTransactions: Int
        do {
            let e = try LogEngine.open(directory: dir, fileSystem: fs, options: options(checkpointOnClose: false))
            XCTAssertTrue(e.recoveryReport.checkpointUsed)
            tailTransactions = try churn(e, seed: 3, model: &model)
            try e.close()
        }
        let fromCheckpoint = try LogEngine.open(directory: dir, fileSystem: fs, options: options(checkpointOnClose: false))
        XCTAssertTrue(fromCheckpoint.recoveryReport.checkpointUsed)
        XCTAssertEqual(fromCheckpoint.recoveryReport.transactionsReplayed, tailTransactions)
        let viaCheckpoint = index(fromCheckpoint)
        let statsViaCheckpoint = fromCheckpoint.storageStats()
        XCTAssertEqual(try CT.contents(fromCheckpoint), model)
        try fromCheckpoint.close()

        try fs.removeFile(atPath: checkpointPath)
        let full = try LogEngine.open(directory: dir, fileSystem: fs, options: options(checkpointOnClose: false))
        XCTAssertFalse(full.recoveryReport.checkpointUsed)
        assertSameIndex(index(full), viaCheckpoint)
        XCTAssertEqual(full.storageStats().segments, statsViaCheckpoint.segments)
        XCTAssertEqual(full.state.withLock { $0.log.tailOffset }, fromCheckpoint.state.withLock { $0.log.tailOffset })
        XCTAssertGreaterThan(full.recoveryReport.bytesReplayed, fromCheckpoint.recoveryReport.bytesReplayed)
        try full.close()
    }

    func testTornTailAfterTheCheckpointIsCutAsInAFullReplay() throws {
        let fs = InMemoryFileSystem()
        var model: CT.Model = [:]
        do {
            let e = try LogEngine.open(directory: dir, fileSystem: fs, options: options())
            try churn(e, seed: 4, model: &model)
            try e.close()
        }
        do {
            let e = try LogEngine.open(directory: dir, fileSystem: fs, options: options(checkpointOnClose: false))
            try e.write { t in try t.put(type: "Item", key: CT.key(1), value: [7]) }
            model["Item", default: [:]][CT.key(1)] = [7]
            try e.close()
        }
        // A torn append at the end of the tail.
        let tail = _joinPath(dir, LogStoreFormat.segmentFileName(try XCTUnwrap(CT.segmentFiles(fs, dir).last)))
        let f = try fs.open(tail, mode: .readWrite)
        try f.write([0x55, 0, 0, 0, 200, 0, 0, 0, 2, 0], at: try f.size())
        try f.close()
        let r = try LogEngine.open(directory: dir, fileSystem: fs, options: options())
        XCTAssertTrue(r.recoveryReport.checkpointUsed)
        XCTAssertNotNil(r.recoveryReport.truncatedTail)
        XCTAssertEqual(try CT.contents(r), model)
        try r.close()
    }

    func testDamagedCheckpointFallsBackToAFullReplay() throws {
        let fs = InMemoryFileSystem()
        var model: CT.Model = [:]
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: options())
        try churn(e, seed: 5, model: &model)
        try e.close()
        let good = try CT.readFile(fs, checkpointPath)
        var flipped = good
        flipped[good.count / 2] ^= 0x40
        let damaged: [(String, [UInt8])] = [
            ("flipped byte", flipped),
            ("truncated", Array(good.prefix(good.count - 9))),
            ("empty", []),
            ("garbage", [UInt8](repeating: 0xAB, count: 300)),
            ("header only", Array(good.prefix(40))),
        ]
        for (what, bytes) in damaged {
            try CT.writeFile(fs, checkpointPath, bytes)
            let r = try LogEngine.open(directory: dir, fileSystem: fs, options: options(checkpointOnClose: false))
            XCTAssertFalse(r.recoveryReport.checkpointUsed, what)
            XCTAssertNotNil(r.recoveryReport.checkpointRejectedReason, what)
            XCTAssertGreaterThan(r.recoveryReport.transactionsReplayed, 0, what)
            XCTAssertEqual(try CT.contents(r), model, what)
            try r.close()
        }
        XCTAssertTrue(
            try XCTUnwrap(
                {
                    try CT.writeFile(fs, checkpointPath, flipped)
                    let r = try LogEngine.open(directory: dir, fileSystem: fs, options: options(checkpointOnClose: false))
                    defer { try? r.close() }
                    return r.recoveryReport.checkpointRejectedReason
                }()
            ).contains("checksum"))
        // A good checkpoint written at the next close replaces the damaged one.
        let r = try LogEngine.open(directory: dir, fileSystem: fs, options: options())
        try r.close()
        let again = try LogEngine.open(directory: dir, fileSystem: fs, options: options())
        XCTAssertTrue(again.recoveryReport.checkpointUsed)
        try again.close()
    }

    func testCheckpointFromBeforeACompactionIsIgnored() throws {
        let fs = InMemoryFileSystem()
        var model: CT.Model = [:]
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: options())
        try churn(e, seed: 6, model: &model)
        try e.close()
        let old = try CT.readFile(fs, checkpointPath)
        let e2 = try LogEngine.open(directory: dir, fileSystem: fs, options: options())
        try churn(e2, seed: 7, model: &model)
        XCTAssertTrue(try e2.compact().checkpointWritten)
        try e2.close()
        // Put the pre-compaction checkpoint back: it names segments that no longer exist.
        try CT.writeFile(fs, checkpointPath, old)
        let r = try LogEngine.open(directory: dir, fileSystem: fs, options: options())
        XCTAssertFalse(r.recoveryReport.checkpointUsed)
        XCTAssertTrue(
            r.recoveryReport.checkpointRejectedReason?.contains("compacted") == true,
            "\(String(describing: r.recoveryReport.checkpointRejectedReason))")
        XCTAssertEqual(try CT.contents(r), model)
        try r.close()
    }

    func testCheckpointFromAnOlderGenerationWithTheSameSegmentsIsUsed() throws {
        let fs = InMemoryFileSystem()
        var model: CT.Model = [:]
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: options())
        try churn(e, seed: 8, model: &model)
        try e.close()
        let old = try CT.readFile(fs, checkpointPath)
        let oldRuns = try runFiles(fs, named: old)
        let generation = e.manifestInfo.generation
        // Roll-overs only append segments: the old checkpoint still covers a prefix of the log.
        let e2 = try LogEngine.open(directory: dir, fileSystem: fs, options: options())
        try churn(e2, seed: 9, model: &model)
        try e2.close()
        XCTAssertGreaterThan(e2.manifestInfo.generation, generation)
        // Without the run files it names, the old CHECKPOINT is not used; with them it is.
        try CT.writeFile(fs, checkpointPath, old)
        let missing = try LogEngine.open(directory: dir, fileSystem: fs, options: options(checkpointOnClose: false))
        XCTAssertFalse(missing.recoveryReport.checkpointUsed)
        XCTAssertTrue(
            missing.recoveryReport.checkpointRejectedReason?.contains("missing") == true,
            "\(String(describing: missing.recoveryReport.checkpointRejectedReason))")
        XCTAssertEqual(try CT.contents(missing), model)
        try missing.close()
        for (path, bytes) in oldRuns { try CT.writeFile(fs, path, bytes) }
        let r = try LogEngine.open(directory: dir, fileSystem: fs, options: options(checkpointOnClose: false))
        XCTAssertTrue(r.recoveryReport.checkpointUsed)
        XCTAssertGreaterThan(r.recoveryReport.segmentsScanned, 1)
        XCTAssertEqual(try CT.contents(r), model)
        let viaOld = index(r)
        try r.close()
        try fs.removeFile(atPath: checkpointPath)
        let full = try LogEngine.open(directory: dir, fileSystem: fs, options: options(checkpointOnClose: false))
        assertSameIndex(index(full), viaOld)
        try full.close()
    }

    /// Writes a checkpoint of `e` now (runs and CHECKPOINT 4) and returns its CHECKPOINT, changed
    /// to disagree with the store in one way; the runs it names stay on disk.
    func craftedCheckpoint(_ e: LogEngine, generationDelta: Int = 0, extraLength: UInt64 = 0) throws -> [UInt8] {
        try e.writeCheckpoint()
        let bytes = try CT.readFile(e.fileSystem, checkpointPath)
        var cp = try bytes.withUnsafeBytes { try CheckpointFileV4.decode($0) }
        cp.generation = UInt64(Int(cp.generation) + generationDelta)
        cp.segments[cp.segments.count - 1].length += extraLength
        return cp.encode()
    }

    func testCheckpointThatDisagreesWithTheLogIsRejected() throws {
        let fs = InMemoryFileSystem()
        var model: CT.Model = [:]
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: options(checkpointOnClose: false))
        try churn(e, seed: 10, model: &model)
        let newer = try craftedCheckpoint(e, generationDelta: 1)
        let longer = try craftedCheckpoint(e, extraLength: 1000)
        let exact = try craftedCheckpoint(e)
        try e.close()
        // A checkpoint of a newer generation than MANIFEST proves MANIFEST is an older copy (its
        // unlisted segments may hold committed data): strict open refuses before deleting anything.
        try CT.writeFile(fs, checkpointPath, newer)
        XCTAssertThrowsError(try LogEngine.open(directory: dir, fileSystem: fs, options: options(checkpointOnClose: false))) { error in
            let e = error as? LogStoreError
            XCTAssertEqual(e?.code, .corruption, "\(error)")
            XCTAssertTrue(e?.message.contains("older copy") == true && e?.path?.hasSuffix("MANIFEST") == true, "\(error)")
        }
        // A checkpoint recording more synced bytes of a segment than the file holds proves the
        // segment lost committed data: strict open refuses naming the segment, salvage
        // opens with every valid transaction and reports the loss.
        try CT.writeFile(fs, checkpointPath, longer)
        XCTAssertThrowsError(try LogEngine.open(directory: dir, fileSystem: fs, options: options(checkpointOnClose: false))) { error in
            let e = error as? LogStoreError
            XCTAssertEqual(e?.code, .corruption, "\(error)")
            XCTAssertTrue(e?.message.contains("truncated") == true && e?.path?.hasSuffix(".log") == true, "\(error)")
        }
        var salvage = options(checkpointOnClose: false)
        salvage.recovery = .salvage
        let s = try LogEngine.open(directory: dir, fileSystem: fs, options: salvage)
        XCTAssertEqual(try CT.contents(s), model, "nothing was really lost here: salvage keeps it all")
        XCTAssertEqual(s.recoveryReport.dropped.count, 1)
        try s.close()
        try CT.writeFile(fs, checkpointPath, exact)
        let r = try LogEngine.open(directory: dir, fileSystem: fs, options: options(checkpointOnClose: false))
        XCTAssertTrue(r.recoveryReport.checkpointUsed)
        XCTAssertEqual(try CT.contents(r), model)
        try r.close()
    }

    func testCheckpointDecoderRejectsMutatedBytesWithoutCrashing() throws {
        let fs = InMemoryFileSystem()
        var model: CT.Model = [:]
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: options())
        try e.write { t in
            for i in 0..<40 { try t.put(type: i % 2 == 0 ? "A" : "Bee", key: CT.key(i), value: [UInt8(i)]) }
        }
        model = try CT.contents(e)
        try e.close()
        let good = try CT.readFile(fs, checkpointPath)
        XCTAssertNoThrow(try good.withUnsafeBytes { try CheckpointFileV4.decode($0) })
        var rng = CTRandom(seed: 11)
        var accepted = 0
        for iteration in 0..<3000 {
            var bytes = good
            switch iteration % 4 {
            case 0:
                for _ in 0..<Int.random(in: 1...4, using: &rng) {
                    bytes[Int.random(in: 0..<bytes.count - 4, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                }
            case 1:
                bytes.removeSubrange(Int.random(in: 8..<bytes.count - 4, using: &rng)..<(bytes.count - 4))
            case 2:
                bytes.insert(
                    contentsOf: rng.bytes(Int.random(in: 1...8, using: &rng)), at: Int.random(in: 8..<bytes.count - 4, using: &rng))
            default:
                bytes = rng.bytes(Int.random(in: 0...200, using: &rng))
            }
            // Fix the checksum so the parser itself is exercised.
            if iteration % 8 != 7, bytes.count >= 4 {
                let crc = CRC32C.mask(
                    bytes.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<(bytes.count - 4)])) })
                withUnsafeBytes(of: crc.littleEndian) { for i in 0..<4 { bytes[bytes.count - 4 + i] = $0[i] } }
            }
            if let cp = try? bytes.withUnsafeBytes({ try CheckpointFileV4.decode($0) }) {
                accepted += 1
                // Whatever it accepts is self-consistent, and encodes back to the same bytes.
                XCTAssertEqual(Set(cp.runNumbers).count, cp.runNumbers.count)
                XCTAssertTrue(cp.runNumbers.allSatisfy { $0 < cp.nextRun })
                XCTAssertFalse(cp.segments.isEmpty)
                XCTAssertEqual(try cp.encode().withUnsafeBytes { try CheckpointFileV4.decode($0) }, cp)
            }
        }
        XCTAssertLessThan(accepted, 1500)
        // The store still opens (from the intact checkpoint).
        let r = try LogEngine.open(directory: dir, fileSystem: fs, options: options())
        XCTAssertTrue(r.recoveryReport.checkpointUsed)
        XCTAssertEqual(try CT.contents(r), model)
        try r.close()
    }

    func testLargeIndexIsBuiltInPartsAndRejectsRepeatedKeys() throws {
        let n = 70_000  // above the thresholds for sorted and multi-part building
        let keys = (0..<n).map { CT.key($0) }
        let locations = (0..<n).map {
            RecordLocation(segment: 1, frameOffset: 32, valueOffset: 0, valueLength: 1, sequence: UInt64($0 + 1))
        }
        func build(_ keys: [RecordKey], _ locations: [RecordLocation]) -> TypeIndex? {
            var decoded = CheckpointFile.DecodedKeys()
            decoded.reserveCapacity(keys.count)
            for k in keys { k.withUnsafeBytes { decoded.append($0) } }
            return decoded.index(locations)
        }
        let d = try XCTUnwrap(build(keys, locations))
        XCTAssertEqual(d.count, n)
        for i in stride(from: 0, to: n, by: 997) { XCTAssertEqual(try d.location(keys[i])?.sequence, UInt64(i + 1)) }
        // Entries in another order (older checkpoints listed them in hash order) are sorted.
        var rng = SplitMix64(seed: 4)
        let order = (0..<n).shuffled(using: &rng)
        XCTAssertEqual(build(order.map { keys[$0] }, order.map { locations[$0] }), d)
        var repeated = keys
        repeated[n - 1] = keys[12_345]
        XCTAssertNil(build(repeated, locations))
        // Keys of mixed lengths: 8-byte keys first, then one that widens what was read.
        let mixed = [RecordKey([1, 2, 3, 4, 5, 6, 7, 8]), RecordKey([1, 2, 3, 4, 5, 6, 7, 9]), RecordKey([2])]
        let m = try XCTUnwrap(build(mixed, Array(locations.prefix(3))))
        XCTAssertEqual(try m.keys(), mixed)
    }

    func testACheckpointNamesRunFilesThatOpeningMapsWithoutReadingAPage() throws {
        for harness in [StoreHarness.posix(self), StoreHarness.memory()] {
            let dir = harness.newStorePath()
            var o = options()
            o.segmentSize = 64 << 10
            let e = try LogEngine.open(directory: dir, fileSystem: harness.fs, options: o)
            var model: CT.Model = [:]
            try churn(e, seed: 9, model: &model)
            try e.close()
            // CHECKPOINT (FileFormat.md, "CHECKPOINT 4") names one base run per type, and each
            // run's header page equals its witness.
            let bytes = try CT.readFile(harness.fs, _joinPath(dir, LogStoreFormat.checkpointFileName))
            let cp = try bytes.withUnsafeBytes { try CheckpointFileV4.decode($0) }
            XCTAssertEqual(Set(cp.indexes.map(\.type)), Set(model.keys), harness.name)
            for i in cp.indexes {
                let base = try XCTUnwrap(i.base, harness.name)
                let run = try MappedRun.open(path: _joinPath(dir, RunFile.fileName(base.runNumber)), fs: harness.fs)
                XCTAssertEqual(RunWitness(run.header), base, harness.name)
                XCTAssertEqual(Int(i.entryCount), model[i.type]?.count, harness.name)
            }
            // Every entry of those runs is the whole format 4 put record of its key.
            let file = try CheckpointFile.read(bytes, directory: dir, fs: harness.fs, validatingRuns: true).get()
            var checked = 0
            for (type, tree) in file.index.types {
                for (key, loc) in try tree.elements() {
                    XCTAssertFalse(loc.isLegacy)
                    let segment = try harness.fs.readAll(segmentPath(dir, loc.segment))
                    let record = Array(segment[Int(loc.offset)..<Int(loc.offset + loc.length)])
                    let fields = try record.withUnsafeBytes { b throws(_DecodeError) in try RecordCodec.parse(b, at: 0) }
                    XCTAssertEqual(fields.length, Int(loc.length), "\(harness.name): record at \(loc.offset) of segment \(loc.segment)")
                    XCTAssertEqual(fields.op, .put)
                    XCTAssertEqual(file.index.meta.typeName(fields.typeID), type)
                    XCTAssertEqual(Array(record[fields.key]), key.withUnsafeBytes { Array($0) })
                    checked += 1
                }
            }
            XCTAssertGreaterThan(checked, 100, harness.name)
            // Opening maps the runs and checks their headers; no page is read until a read needs it.
            let r = try LogEngine.open(directory: dir, fileSystem: harness.fs, options: o)
            XCTAssertTrue(r.recoveryReport.checkpointUsed, harness.name)
            XCTAssertEqual(r.recoveryReport.bytesReplayed, 0, harness.name)
            let runs = r.checkpointer.currentRuns
            XCTAssertEqual(Set(runs.keys), Set(cp.runNumbers), harness.name)
            for run in runs.values {
                XCTAssertFalse((1..<run.header.pageCount).contains { run.isChecked(page: $0) }, harness.name)
            }
            XCTAssertEqual(try CT.contents(r), model, harness.name)
            XCTAssertTrue(runs.values.contains { run in (1..<run.header.pageCount).contains { run.isChecked(page: $0) } }, harness.name)
            try r.close()
        }
    }

    func testCheckpointOfALargeTypeGivesTheSameIndexAsAFullReplay() throws {
        let fs = InMemoryFileSystem()
        var o = options()
        o.segmentSize = 1 << 20
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: o)
        for start in stride(from: 0, to: 10_000, by: 2_500) {
            try e.write { t in for i in start..<(start + 2_500) { try t.put(type: "Big", key: CT.key(i), value: [UInt8(i & 0xFF)]) } }
        }
        try e.close()
        let r = try LogEngine.open(directory: dir, fileSystem: fs, options: o)
        XCTAssertTrue(r.recoveryReport.checkpointUsed)
        XCTAssertEqual(try r.snapshot().count(ofType: "Big"), 10_000)
        let viaCheckpoint = index(r)
        try r.close()
        try fs.removeFile(atPath: checkpointPath)
        var noCheckpoint = o
        noCheckpoint.checkpointOnClose = false
        let full = try LogEngine.open(directory: dir, fileSystem: fs, options: noCheckpoint)
        assertSameIndex(index(full), viaCheckpoint)
        try full.close()
    }

    func testPeriodicCheckpointBoundsTheReplayAfterACrash() throws {
        let fs = InMemoryFileSystem()
        var o = options(checkpointOnClose: false)
        o.checkpointInterval = 64 << 10
        var model: CT.Model = [:]
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: o)
        try churn(e, seed: 12, model: &model)
        let deadline = Date().addingTimeInterval(10)
        while fs.itemKind(atPath: checkpointPath) == nil && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertEqual(fs.itemKind(atPath: checkpointPath), .file)
        let total = e.storageStats().totalBytes
        try e.close()  // no checkpoint on close: like a crash, as far as the checkpoint goes
        let r = try LogEngine.open(directory: dir, fileSystem: fs, options: o)
        XCTAssertTrue(r.recoveryReport.checkpointUsed)
        XCTAssertLessThan(r.recoveryReport.bytesReplayed, total)
        XCTAssertEqual(try CT.contents(r), model)
        try r.close()
    }

    func testUnchangedStoreDoesNotRewriteItsCheckpoint() throws {
        let fs = InMemoryFileSystem()
        var model: CT.Model = [:]
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: options())
        try churn(e, seed: 13, model: &model)
        try e.close()
        let first = try CT.readFile(fs, checkpointPath)
        Thread.sleep(forTimeInterval: 0.01)
        let r = try LogEngine.open(directory: dir, fileSystem: fs, options: options())
        try r.close()
        XCTAssertEqual(try CT.readFile(fs, checkpointPath), first)
    }
}
