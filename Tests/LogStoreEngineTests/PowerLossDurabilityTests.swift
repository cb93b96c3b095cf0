import LogStoreEngine
import XCTest
import _LogStoreTestSupport

/// What must survive a power loss after the situations the power-loss harness (PowerLossTests)
/// found mishandled: the store directory's own entry, commits made after a restart from a kill,
/// transactions a reader saw, and the torn-tail rule for multi-frame transactions. Each test is
/// the smallest scenario that showed its bug.
final class PowerLossDurabilityTests: XCTestCase {
    let marker = RecordKey([1])

    func commitMarker(_ e: LogEngine) throws {
        try e.commit([.put(type: "T", key: marker, value: [42])])
    }

    /// Opens the store on every power-loss image of `fs` for a range of seeds and checks that the
    /// committed marker is there.
    func assertMarkerSurvivesPowerLoss(
        _ fs: FaultInjectingFileSystem, directory: String,
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        for seed in 0..<48 as Range<UInt64> {
            let image = fs.powerLossImage(seed: seed)
            let e = try LogEngine.open(directory: directory, fileSystem: image, options: .replayOnly)
            XCTAssertEqual(try e.snapshot().value(type: "T", key: marker).map(Array.init), [42], "seed \(seed)", file: file, line: line)
            try e.close()
        }
    }

    /// `LogEngine.open` created the store directory but never fsynced its parent, so a power loss
    /// after acknowledged commits could take the whole store directory away.
    func testStoreDirectoryCreatedByOpenSurvivesPowerLoss() throws {
        let fs = FaultInjectingFileSystem()
        try fs.createDirectory(atPath: "/data")
        try fs.syncDirectory(atPath: "/")
        let e = try LogEngine.open(directory: "/data/a/store", fileSystem: fs, options: .replayOnly)
        try commitMarker(e)
        try e.close()
        try assertMarkerSurvivesPowerLoss(fs, directory: "/data/a/store")
    }

    /// A kill -9 right after `open` created the store directory, before it fsynced the parent,
    /// left the directory's entry only in the OS cache; the next open found the directory and
    /// never made its entry durable, so a power loss could take the store away again.
    func testStoreDirectoryEntryLeftUnsyncedByAKillSurvivesPowerLoss() throws {
        let fs = FaultInjectingFileSystem()
        try fs.createDirectory(atPath: "/data")
        try fs.syncDirectory(atPath: "/")
        fs.scheduleCrash(afterMutatingOperations: 1)  // mkdir runs, the parent's fsync crashes
        XCTAssertThrowsError(try LogEngine.open(directory: "/data/store", fileSystem: fs, options: .replayOnly))
        let restarted = fs.processCrashImage()
        XCTAssertEqual(restarted.itemKind(atPath: "/data/store"), .directory)
        let e = try LogEngine.open(directory: "/data/store", fileSystem: restarted, options: .replayOnly)
        try commitMarker(e)
        try e.close()
        try assertMarkerSurvivesPowerLoss(restarted, directory: "/data/store")
    }
}

extension PowerLossDurabilityTests {
    /// Fills a fresh store with 6 KiB transactions until the next one rolls over to segment 2.
    func storeAboutToRollOver(_ fs: FaultInjectingFileSystem, _ options: LogEngineOptions) throws -> LogEngine {
        let e = try LogEngine.open(directory: "/s", fileSystem: fs, options: options)
        var rng = SplitMix64(seed: 7)
        // Incompressible values: 10 transactions fit in a 64 KiB segment; the 11th rolls over.
        for i in 0..<10 as Range<UInt8> {
            try e.commit([.put(type: "Fill", key: RecordKey([i]), value: rng.bytes(6_000))])
        }
        XCTAssertEqual(e.manifestInfo.segments, [1])
        return e
    }

    /// A kill -9 during a segment roll-over can leave the new segment's directory entry (and the
    /// new MANIFEST's rename) only in the OS cache. Later commits fdatasync only the segment's
    /// data, so unless recovery fsyncs the directory before using them, a power loss after the
    /// restart can drop the segment file and with it transactions acknowledged after the restart.
    func testCommitAfterRestartFromAKillDuringRollOverSurvivesPowerLoss() throws {
        var options = LogEngineOptions.replayOnly
        options.segmentSize = 64 << 10
        for crashPoint in 0..<14 {
            let fs = FaultInjectingFileSystem()
            let e = try storeAboutToRollOver(fs, options)
            fs.scheduleCrash(afterMutatingOperations: crashPoint)
            var rng = SplitMix64(seed: 8)
            _ = try? e.commit([.put(type: "Fill", key: RecordKey([99]), value: rng.bytes(6_000))])
            fs.crash()
            try? e.close()
            let restarted = fs.processCrashImage()
            let e2 = try LogEngine.open(directory: "/s", fileSystem: restarted, options: options)
            if crashPoint == 13 { XCTAssertEqual(e2.manifestInfo.segments, [1, 2]) }
            try commitMarker(e2)
            try e2.close()
            for seed in 0..<16 as Range<UInt64> {
                let image = restarted.powerLossImage(seed: seed)
                let e3 = try LogEngine.open(directory: "/s", fileSystem: image, options: options)
                XCTAssertEqual(
                    try e3.snapshot().value(type: "T", key: marker).map(Array.init), [42], "crash point \(crashPoint), seed \(seed)")
                try e3.close()
            }
        }
    }

    /// After a kill -9, recovery published a transaction that was written but never fsynced;
    /// a power loss after the restart could then take back a transaction readers had seen.
    func testTransactionVisibleAfterRestartSurvivesALaterPowerLoss() throws {
        var options = LogEngineOptions.replayOnly
        options.durability = .none
        let fs = FaultInjectingFileSystem()
        let e = try LogEngine.open(directory: "/s", fileSystem: fs, options: options)
        try commitMarker(e)  // written to the OS, not fsynced
        fs.crash()
        try? e.close()
        let restarted = fs.processCrashImage()
        let e2 = try LogEngine.open(directory: "/s", fileSystem: restarted, options: options)
        XCTAssertEqual(try e2.snapshot().value(type: "T", key: marker).map(Array.init), [42])
        try e2.close()
        try assertMarkerSurvivesPowerLoss(restarted, directory: "/s")
    }
}

extension PowerLossDurabilityTests {
    /// A store whose last transaction spans several frames; returns the file system, the segment
    /// path and the offsets where the last two transactions start.
    func storeEndingWithAMultiFrameTransaction() throws -> (FaultInjectingFileSystem, String, UInt64, UInt64) {
        var options = LogEngineOptions.replayOnly
        options.maxFramePayload = 512
        let fs = FaultInjectingFileSystem()
        let e = try LogEngine.open(directory: "/s", fileSystem: fs, options: options)
        let segment = "/s/" + LogStoreFormat.segmentFileName(1)
        var rng = SplitMix64(seed: 3)
        let size = { try fs.open(segment, mode: .readOnly).size() }
        let a = try size()
        try e.commit([
            .put(type: "A", key: RecordKey([1]), value: rng.bytes(400)), .put(type: "A", key: RecordKey([2]), value: rng.bytes(400)),
        ])
        let b = try size()
        try e.commit((3..<6).map { .put(type: "B", key: RecordKey([$0]), value: rng.bytes(400)) })
        try e.close()
        return (fs, segment, a, b)
    }

    func flipByte(_ fs: FaultInjectingFileSystem, _ path: String, at offset: UInt64) throws {
        let f = try fs.open(path, mode: .readWrite)
        let byte = try f.read(at: offset, count: 1)
        try f.write([byte[0] ^ 0xFF], at: offset)
        try f.sync()
    }

    /// A power loss during the fdatasync of a multi-frame transaction can write its later sectors
    /// and not an earlier one. The valid frames after the damage belong to the damaged,
    /// uncommitted transaction itself, so they do not make the damage "committed data follows":
    /// it is a torn tail (sector reordering in the power-loss harness reaches this).
    func testDamageFollowedOnlyByFramesOfTheSameTransactionIsATornTail() throws {
        let (fs, segment, _, b) = try storeEndingWithAMultiFrameTransaction()
        try flipByte(fs, segment, at: b + 24 + 10)  // the payload of the last transaction's first frame
        let e = try LogEngine.open(directory: "/s", fileSystem: fs, options: .replayOnly)
        XCTAssertEqual(e.recoveryReport.truncatedTail?.offset, b)
        XCTAssertEqual(try e.snapshot().count(ofType: "A"), 2)
        XCTAssertEqual(try e.snapshot().count(ofType: "B"), 0)
        try e.close()
    }

    /// The other side of the same rule: damage followed by a committed later transaction is not a
    /// torn write, and open still refuses it.
    func testDamageFollowedByALaterCommittedTransactionIsCorruption() throws {
        let (fs, segment, a, _) = try storeEndingWithAMultiFrameTransaction()
        try flipByte(fs, segment, at: a + 24 + 10)
        XCTAssertThrowsError(try LogEngine.open(directory: "/s", fileSystem: fs, options: .replayOnly)) { error in
            XCTAssertEqual((error as? LogStoreError)?.code, .corruption)
        }
    }
}

extension PowerLossDurabilityTests {
    /// A kill -9 during a compaction, between the new MANIFEST's rename and the directory's fsync,
    /// leaves that MANIFEST only in the OS cache. The restart's recovery reads it and removes the
    /// segments it does not list as strays; unless recovery syncs the directory first, a power
    /// loss then brings the older MANIFEST back, still listing them, and the store refuses to
    /// open: "segment N is listed in MANIFEST ... but its file is missing". (The DataStore
    /// power-loss soak with background compaction reaches this about once in 88,000 cycles.) Every
    /// pair of crash points (in the compaction, then in the recovery after it) must leave a store
    /// that opens after a power loss with every committed item.
    func testStrayRemovalAfterAKillDuringCompactionSurvivesPowerLoss() throws {
        var options = LogEngineOptions()
        options.segmentSize = 64 << 10
        options.autoCompaction = false
        options.checkpointInterval = 0
        let base = FaultInjectingFileSystem()
        var model: [RecordKey: [UInt8]] = [:]
        do {
            let e = try LogEngine.open(directory: "/s", fileSystem: base, options: options)
            var rng = SplitMix64(seed: 24)
            // Overwrites across several segments, so that compaction has dead bytes to drop and
            // segments to replace.
            for round in 0..<4 {
                for i in 0..<12 as Range<UInt8> {
                    let value = rng.bytes(3_000) + [UInt8(round)]
                    try e.commit([.put(type: "T", key: RecordKey([i]), value: value)])
                    model[RecordKey([i])] = value
                }
            }
            XCTAssertGreaterThan(e.manifestInfo.segments.count, 2)
            try e.close()  // with a checkpoint: a witness of the segments it covers
        }
        func check(_ fs: FaultInjectingFileSystem, _ what: String) throws {
            let e = try LogEngine.open(directory: "/s", fileSystem: fs, options: options)
            defer { try? e.close() }
            let s = try e.snapshot()
            for (key, value) in model {
                XCTAssertEqual(try s.value(type: "T", key: key).map(Array.init), value, what)
            }
        }
        // How many mutating operations an uninterrupted open + compaction takes.
        let probe = base.processCrashImage()
        let before = probe.mutatingOperationCount
        do {
            let e = try LogEngine.open(directory: "/s", fileSystem: probe, options: options)
            _ = try e.compact()
            try e.close()
        }
        let total = probe.mutatingOperationCount - before
        XCTAssertGreaterThan(total, 5)
        for k in 0..<total {
            let fs = base.processCrashImage()
            fs.scheduleCrash(afterMutatingOperations: k)
            if let e = try? LogEngine.open(directory: "/s", fileSystem: fs, options: options) {
                _ = try? e.compact()
                fs.crash()
                try? e.close()
            }
            let killed = fs.processCrashImage()
            // Recovery after the kill, itself killed after j operations, then a power loss.
            for j in 0..<8 {
                let restarted = killed.processCrashImage()
                restarted.scheduleCrash(afterMutatingOperations: j)
                if let e = try? LogEngine.open(directory: "/s", fileSystem: restarted, options: options) { try? e.close() }
                restarted.crash()
                for seed in 0..<3 as Range<UInt64> {
                    try check(restarted.powerLossImage(seed: seed), "compaction crash point \(k), recovery crash point \(j), seed \(seed)")
                }
            }
        }
    }
}
