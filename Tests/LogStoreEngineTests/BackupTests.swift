import Foundation
import XCTest

@testable import LogStoreEngine

/// Online backup (``LogEngine/backup(to:fileSystem:verification:progress:)``): a consistent,
/// verified copy that is itself a store.
final class BackupTests: XCTestCase {
    static func options() -> LogEngineOptions {
        var o = LogEngineOptions.replayOnly
        o.segmentSize = 64 << 10
        o.maxFramePayload = 1 << 10
        o.durability = .none
        o.compression = false
        return o
    }

    /// A store with several sealed segments, a compacted prefix, overwrites, deletes and a
    /// secondary index; returns its contents.
    func fill(_ e: LogEngine, transactions: Range<Int> = 0..<60) throws -> Contents {
        var model: Contents = [:]
        for n in transactions {
            let ops = workloadTransaction(n, puts: 6, valueSize: 300)
            try write(e, ops)
            apply(ops, to: &model)
        }
        return model
    }

    /// The run files in `dest`.
    func backupRuns(_ harness: StoreHarness, _ dest: String) throws -> Set<UInt32> {
        Set(try harness.fs.contentsOfDirectory(atPath: dest).compactMap(RunFile.number(fromFileName:)))
    }

    /// The run files the CHECKPOINT in `dest` names (format 4).
    func namedRuns(_ harness: StoreHarness, _ dest: String) throws -> Set<UInt32> {
        let bytes = try CT.readFile(harness.fs, _joinPath(dest, LogStoreFormat.checkpointFileName))
        return Set(try bytes.withUnsafeBytes { try CheckpointFileV4.decode($0) }.runNumbers)
    }

    func testABackupIsAStoreHoldingTheSnapshotOnDiskAndInMemoryWithEitherVerification() throws {
        for verification in BackupVerification.allCases {
            for harness in [StoreHarness.posix(self), StoreHarness.memory()] {
                let dir = harness.newStorePath()
                let e = try harness.open(dir, options: Self.options())
                var model = try fill(e)
                try e.declareIndexes([IndexDefinition(attributes: [["i"]])], ofType: "Even")
                _ = try e.compact(includingTail: false)
                let more = workloadTransaction(99, puts: 6, valueSize: 300)
                try write(e, more)
                apply(more, to: &model)
                XCTAssertGreaterThan(e.manifestInfo.segments.count, 1)
                let dest = harness.newStorePath("backup")
                var phases: [BackupProgress.Phase] = []
                let report = try e.backup(to: dest, fileSystem: harness.fs, verification: verification) { phases.append($0.phase) }
                XCTAssertEqual(report.sequence, try e.snapshot().sequence)
                XCTAssertEqual(report.segments, e.manifestInfo.segments.count)
                XCTAssertEqual(report.segmentsReused, 0)
                XCTAssertEqual(phases.first, .copying)
                XCTAssertEqual(phases.last, .done)
                XCTAssertTrue(phases.contains(.verifying))
                // The store goes on; the backup does not change.
                try write(e, workloadTransaction(100, puts: 3))
                try e.close()
                XCTAssertFalse(try harness.fs.contentsOfDirectory(atPath: dest).contains(LogEngine.backupMarkerFileName))
                XCTAssertEqual(
                    try backupRuns(harness, dest), try namedRuns(harness, dest),
                    "\(harness.name) \(verification): the backup holds the run files its CHECKPOINT names")
                let b = try harness.open(dest, options: Self.options())
                XCTAssertTrue(b.recoveryReport.checkpointUsed, "\(harness.name) \(verification): opens from its checkpoint")
                XCTAssertEqual(b.recoveryReport.lastSequence, report.sequence)
                assertSameContents(try dump(b), model, "\(harness.name) \(verification)")
                XCTAssertEqual(try b.snapshot().index.secondaryIndexes(ofType: "Even").count, 1, "the checkpoint holds the indexes")
                XCTAssertEqual(try b.snapshot().secondaryIndexProblems(), [])
                // A restored store is writable and survives a replay.
                try write(b, workloadTransaction(101, puts: 3))
                try b.close()
                let again = try harness.open(dest, options: Self.options())
                XCTAssertEqual(again.recoveryReport.lastSequence, report.sequence + 1)
                try again.close()
            }
        }
    }

    func testABackupRefusesADestinationThatIsNotEmptyOrInsideTheStore() throws {
        let harness = StoreHarness.memory()
        let dir = harness.newStorePath()
        let e = try harness.open(dir, options: Self.options())
        defer { try? e.close() }
        _ = try fill(e, transactions: 0..<3)
        let foreign = harness.newStorePath("foreign")
        try harness.fs.createDirectory(atPath: foreign)
        try harness.fs.open(foreign + "/notes.txt", mode: .createNew).close()
        XCTAssertThrowsError(try e.backup(to: foreign, fileSystem: harness.fs)) {
            XCTAssertEqual(($0 as? LogStoreError)?.code, .invalidArgument)
        }
        XCTAssertThrowsError(try e.backup(to: dir + "/inside", fileSystem: harness.fs)) {
            XCTAssertEqual(($0 as? LogStoreError)?.code, .invalidArgument)
        }
        XCTAssertThrowsError(try e.backup(to: dir, fileSystem: harness.fs)) {
            XCTAssertEqual(($0 as? LogStoreError)?.code, .invalidArgument)
        }
        // Another store's backup.
        let other = try harness.open(harness.newStorePath("other"), options: Self.options())
        let otherBackup = harness.newStorePath("other-backup")
        try other.backup(to: otherBackup, fileSystem: harness.fs)
        try other.close()
        XCTAssertThrowsError(try e.backup(to: otherBackup, fileSystem: harness.fs)) {
            XCTAssertEqual(($0 as? LogStoreError)?.code, .invalidArgument)
        }
        // An open backup is locked.
        let mine = harness.newStorePath("mine")
        try e.backup(to: mine, fileSystem: harness.fs)
        let opened = try harness.open(mine, options: Self.options())
        XCTAssertThrowsError(try e.backup(to: mine, fileSystem: harness.fs)) { XCTAssertEqual(($0 as? LogStoreError)?.code, .locked) }
        try opened.close()
    }

    func testAnIncrementalBackupCopiesOnlyWhatTheDestinationLacks() throws {
        for harness in [StoreHarness.posix(self), StoreHarness.memory()] {
            let dir = harness.newStorePath()
            let e = try harness.open(dir, options: Self.options())
            var model = try fill(e)
            let dest = harness.newStorePath("backup")
            let first = try e.backup(to: dest, fileSystem: harness.fs)
            // More writes (the tail grows, new segments), then a compaction of part of them.
            for n in 60..<90 {
                let ops = workloadTransaction(n, puts: 6, valueSize: 300)
                try write(e, ops)
                apply(ops, to: &model)
            }
            let second = try e.backup(to: dest, fileSystem: harness.fs)
            XCTAssertGreaterThan(second.segmentsReused, 0, harness.name)
            XCTAssertLessThan(second.bytesCopied, second.bytes, harness.name)
            XCTAssertGreaterThan(second.sequence, first.sequence)
            _ = try e.compact(includingTail: true)
            let ops = workloadTransaction(200, puts: 2)
            try write(e, ops)
            apply(ops, to: &model)
            let third = try e.backup(to: dest, fileSystem: harness.fs)
            // Nothing new: nothing copied, every segment (the tail too) reused.
            let fourth = try e.backup(to: dest, fileSystem: harness.fs)
            XCTAssertEqual(fourth.bytesCopied, 0, harness.name)
            XCTAssertEqual(fourth.segmentsCopied, 0, harness.name)
            XCTAssertEqual(fourth.segmentsReused, fourth.segments, harness.name)
            XCTAssertEqual(fourth.sequence, third.sequence)
            try e.close()
            XCTAssertEqual(try backupRuns(harness, dest), try namedRuns(harness, dest), harness.name)
            let b = try harness.open(dest, options: Self.options())
            XCTAssertTrue(b.recoveryReport.checkpointUsed, harness.name)
            XCTAssertEqual(b.recoveryReport.lastSequence, third.sequence)
            assertSameContents(try dump(b), model, harness.name)
            XCTAssertEqual(
                Set(try harness.fs.contentsOfDirectory(atPath: dest).compactMap(LogStoreFormat.segmentNumber(fromFileName:))),
                Set(b.manifestInfo.segments), "segments compacted away are gone from the backup too")
            try b.close()
        }
    }

    /// copyBytes copies a range between two files: inside the kernel between POSIX files, by
    /// reading and writing between any others (here a POSIX file into memory and back); a source
    /// that ends early copies what it has; progress adds up to the bytes copied.
    func testCopyBytesCopiesARangeBetweenAnyTwoFiles() throws {
        let posix = StoreHarness.posix(self)
        let memory = InMemoryFileSystem()
        let dir = posix.newStorePath()
        try posix.fs.createDirectory(atPath: dir)
        let bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let source = try posix.fs.open(dir + "/source", mode: .createNew)
        try source.write(bytes, at: 0)
        for (name, target) in [
            ("posix", try posix.fs.open(dir + "/target", mode: .createNew)), ("memory", try memory.open("/target", mode: .createNew)),
        ] {
            var progress: UInt64 = 0
            XCTAssertEqual(
                try target.copyBytes(from: source, at: 1_000, count: 250_000, to: 10, chunk: 64 << 10) { progress += $0 }, 250_000, name)
            XCTAssertEqual(progress, 250_000, name)
            XCTAssertTrue(try target.read(at: 10, count: 250_000) == Array(bytes[1_000..<251_000]), name)
            XCTAssertEqual(
                try target.copyBytes(from: source, at: 299_000, count: 5_000, to: 260_000, chunk: 4_096) { _ in }, 1_000,
                "\(name): the source ends")
            XCTAssertTrue(try target.read(at: 260_000, count: 5_000) == Array(bytes[299_000...]), name)
            // And back, from the other kind.
            let back = try posix.fs.open(dir + "/back-\(name)", mode: .createNew)
            XCTAssertEqual(try back.copyBytes(from: target, at: 10, count: 250_000, to: 0, chunk: 1 << 20) { _ in }, 250_000, name)
            XCTAssertTrue(try back.read(at: 0, count: 250_000) == Array(bytes[1_000..<251_000]), name)
        }
    }

    /// Storage that returns other bytes than were written to it (a failing disk, a bad cable) is
    /// caught by every verification mode before the backup's MANIFEST exists: the call throws
    /// `.corruption`, what the backup created is removed, and a sound destination then takes the backup.
    func testADestinationThatReadsBackOtherBytesFailsTheBackupInEveryMode() throws {
        let harness = StoreHarness.memory()
        let e = try harness.open(harness.newStorePath(), options: Self.options())
        defer { try? e.close() }
        _ = try fill(e, transactions: 0..<20)
        for verification in BackupVerification.allCases {
            let dest = harness.newStorePath("backup-\(verification)")
            let failing = ReadBackFlippingFileSystem(harness.fs, flippingUnder: dest)
            XCTAssertThrowsError(try e.backup(to: dest, fileSystem: failing, verification: verification), "\(verification)") {
                XCTAssertEqual(($0 as? LogStoreError)?.code, .corruption, "\(verification): \($0)")
            }
            // What it created is gone: no MANIFEST, no segment (the directory stays, empty).
            XCTAssertEqual(try harness.fs.contentsOfDirectory(atPath: dest), [], "\(verification)")
            XCTAssertNoThrow(
                try e.backup(to: dest, fileSystem: harness.fs, verification: verification), "\(verification): retried on sound storage")
        }
    }

    /// A crash (process or power loss) at every I/O operation of a backup never leaves a
    /// destination that opens as anything but a whole backup, and never changes the store, which
    /// lives on another file system. An incremental backup's destination always opens: as the
    /// earlier backup, as the new one, or (its old tail appended in place) as the store at a
    /// transaction between the two, a state the store really had.
    func testACrashAtEveryStepOfABackupLeavesNoHalfBackupThatOpens() throws {
        let source = StoreHarness.memory()
        let dir = source.newStorePath()
        let e = try source.open(dir, options: Self.options())
        defer { try? e.close() }
        let oldModel = try fill(e, transactions: 0..<30)
        // An earlier backup, for the incremental sweep.
        let base = FaultInjectingFileSystem()
        try base.createDirectory(atPath: "/b")
        try base.syncDirectory(atPath: "/")
        let oldSequence = try e.backup(to: "/b/full", fileSystem: base).sequence
        var model = oldModel
        var states: [UInt64: Contents] = [oldSequence: oldModel]
        for n in 30..<45 {
            let ops = workloadTransaction(n, puts: 6, valueSize: 300)
            let seq = try write(e, ops)
            apply(ops, to: &model)
            states[seq] = model
        }
        let sourceBefore = try dump(e)
        for (label, destination, previous) in [("new", "/b/new", Contents?.none), ("incremental", "/b/full", Contents?.some(oldModel))] {
            // The uncrashed run: how many mutating operations a backup takes.
            let probe = base.processCrashImage()
            let before = probe.mutatingOperationCount
            try e.backup(to: destination, fileSystem: probe)
            let total = probe.mutatingOperationCount - before
            var outcomes: [String: Int] = [:]
            for k in 0..<total {
                let fs = base.processCrashImage()
                fs.scheduleCrash(afterMutatingOperations: k)
                XCTAssertThrowsError(try e.backup(to: destination, fileSystem: fs), "\(label) point \(k)")
                XCTAssertTrue(fs.isCrashed)
                for (name, image) in [("process", fs.processCrashImage()), ("power", fs.powerLossImage(seed: UInt64(k)))] {
                    let names = (try? image.contentsOfDirectory(atPath: destination)) ?? []
                    if names.isEmpty {
                        outcomes["nothing", default: 0] += 1
                        continue
                    }
                    do {
                        let b = try LogEngine.open(directory: destination, fileSystem: image, options: Self.options())
                        let contents = try dump(b)
                        if contents == model {
                            outcomes["new backup", default: 0] += 1
                        } else if let previous, contents == previous {
                            outcomes["earlier backup", default: 0] += 1
                        } else if previous != nil, let state = states[b.recoveryReport.lastSequence], contents == state {
                            outcomes["a state between", default: 0] += 1
                        } else {
                            XCTFail(
                                "\(label) point \(k) \(name): the destination opens holding neither the snapshot nor the earlier backup")
                        }
                        try b.close()
                    } catch let error as LogStoreError {
                        XCTAssertTrue([.notAStore, .corruption].contains(error.code), "\(label) point \(k) \(name): \(error)")
                        XCTAssertNil(
                            previous, "\(label) point \(k) \(name): an incremental backup must leave the earlier backup openable: \(error)")
                        outcomes["refused", default: 0] += 1
                    }
                }
            }
            XCTAssertGreaterThan(total, 10, label)
            XCTAssertNotNil(outcomes["new backup"], "\(label): \(outcomes)")
            if previous != nil {
                XCTAssertNotNil(outcomes["earlier backup"], "\(label): \(outcomes)")
                XCTAssertNotNil(outcomes["a state between"], "\(label): \(outcomes)")
            } else {
                XCTAssertNotNil(outcomes["refused"], "\(label): \(outcomes)")
            }
        }
        assertSameContents(try dump(e), sourceBefore, "the store is never changed")
    }
}

/// A file system whose segment files under one directory read back with their first byte flipped.
final class ReadBackFlippingFileSystem: WrappingFileSystem, @unchecked Sendable {
    // @unchecked Sendable: `directory` is immutable.
    let directory: String

    init(_ base: any FileSystem, flippingUnder directory: String) {
        self.directory = directory
        super.init(base)
    }

    override func didRead(_ path: String, at offset: UInt64, _ bytes: inout [UInt8]) {
        let name = String(path.split(separator: "/").last ?? "")
        guard path.hasPrefix(directory + "/"), LogStoreFormat.segmentNumber(fromFileName: name) != nil, offset == 0, !bytes.isEmpty else {
            return
        }
        bytes[0] ^= 0x40
    }
}
