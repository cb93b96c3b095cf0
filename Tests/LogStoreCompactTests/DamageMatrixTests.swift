import Foundation
import LogStoreCompactCommands
import LogStoreEngine
import XCTest

/// The damage matrix (Docs/Testing.md, "Damage matrix"): every file kind of a store with
/// several segments, each damaged in every way an operator, a disk or a copy tool can damage it,
/// after a clean close and after a kill -9. For every cell, a strict open either returns every
/// committed transaction or throws a typed error naming a file; it never opens with less, except
/// in the one cell kind no file can vouch for (the tail shortened after a kill -9, with no
/// checkpoint since), where it opens with a prefix of the log and never a wrong value. Where the
/// open refuses, `verify` reports damage too, and `salvage` opens and keeps only committed values.
///
/// One test per cell, named file kind + damage + ending (`testTailSegmentTruncatedToHalfAfterKill9`).
final class DamageMatrixTests: XCTestCase {
    enum FileKind: String, CaseIterable {
        case manifest, tail, sealed, checkpoint, lock, tmp
    }

    enum Damage: String, CaseIterable {
        case deleted, truncatedTo0, truncatedToHalf, truncatedByOneByte, extendedWithZeros, extendedWithGarbage
        case randomBytesOfTheSameLength, sameFileFromAnotherStore, olderCopyOfItself
    }

    enum Ending: String, CaseIterable {
        /// `close()`: the log synced, a checkpoint written.
        case cleanClose
        /// What a kill -9 of a `.synchronous` store leaves: every commit synced, no checkpoint
        /// since the previous clean close (the files are those of a close without a checkpoint).
        case kill9
    }

    enum Outcome: Equatable {
        /// Opens with every committed transaction.
        case everything
        /// Throws `.corruption` (or another typed error) naming a file of the store.
        case refused
        /// Opens with a prefix of the log: undetectable (Docs/Design.md, failure table).
        case prefix
    }

    /// The expected outcome of a cell; the reasons are in Docs/Testing.md's matrix.
    static func expected(_ kind: FileKind, _ damage: Damage, _ ending: Ending) -> Outcome {
        switch kind {
        case .manifest:
            return .refused
        case .sealed:
            return .refused
        case .tail:
            switch damage {
            case .extendedWithZeros, .extendedWithGarbage: return .everything
            case .truncatedToHalf, .truncatedByOneByte, .olderCopyOfItself: return ending == .cleanClose ? .refused : .prefix
            default: return .refused
            }
        case .checkpoint, .lock, .tmp:
            return .everything
        }
    }

    // MARK: The store

    let root = FileManager.default.temporaryDirectory.appendingPathComponent("logstore-matrix-\(UUID().uuidString)").path

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: root)
        super.tearDown()
    }

    static var options: LogEngineOptions {
        var o = LogEngineOptions()
        o.autoCompaction = false
        o.segmentSize = 64 << 10
        o.compression = false
        return o
    }

    /// Committed state: type "Item", key -> value.
    typealias Model = [RecordKey: [UInt8]]

    struct Store {
        var dir: String
        var model: Model
        /// A copy of the store after its first session (for "older copy" damages).
        var older: String
        /// The same workload in another store (another store id).
        var other: String
        /// The segment each committed item was written to (every item is written once).
        var segmentOf: [RecordKey: UInt32]
    }

    func item(_ i: Int) -> (RecordKey, [UInt8]) {
        (RecordKey(Array("item-\(i)".utf8)), AttributeValue.string(String(repeating: "v\(i)-", count: 60)).encoded())
    }

    /// Session 1: 20 transactions, clean close (a checkpoint). Copied as the older store. Session 2:
    /// 40 more transactions (several roll-overs), then the ending.
    func build(_ name: String, _ ending: Ending) throws -> (dir: String, model: Model, older: String, segmentOf: [RecordKey: UInt32]) {
        let dir = root + "/" + name
        var model: Model = [:]
        var e = try LogEngine.open(directory: dir, options: Self.options)
        func commit(_ t: Int) throws {
            let ops: [RecordOperation] = (0..<10).map { j in
                let (k, v) = item(t * 10 + j)
                model[k] = v
                return .put(type: "Item", key: k, value: v)
            }
            try e.commit(ops)
        }
        for t in 0..<20 { try commit(t) }
        try e.close()
        let older = root + "/" + name + "-older"
        try FileManager.default.copyItem(atPath: dir, toPath: older)
        var o = Self.options
        o.checkpointOnClose = ending == .cleanClose
        e = try LogEngine.open(directory: dir, options: o)
        for t in 20..<60 { try commit(t) }
        XCTAssertGreaterThanOrEqual(e.manifestInfo.segments.count, 3, "several segments")
        var segmentOf: [RecordKey: UInt32] = [:]
        for (k, loc) in try e.snapshot().locations(ofType: "Item") { segmentOf[k] = loc.segment }
        try e.close()
        return (dir, model, older, segmentOf)
    }

    func makeStore(_ ending: Ending) throws -> Store {
        let name = "s-\(UUID().uuidString.prefix(8))"
        let (dir, model, older, segmentOf) = try build(name, ending)
        let (other, _, _, _) = try build(name + "-other", ending)
        return Store(dir: dir, model: model, older: older, other: other, segmentOf: segmentOf)
    }

    // MARK: Applying a damage

    func segments(_ dir: String) throws -> [UInt32] {
        let m = try ManifestFile.decode([UInt8](try Data(contentsOf: URL(fileURLWithPath: dir + "/MANIFEST"))), path: dir)
        return m.segments
    }

    /// The file of `kind` in `dir` (creating the temporary file the tmp kind damages).
    func file(_ kind: FileKind, in dir: String) throws -> String {
        switch kind {
        case .manifest: return dir + "/MANIFEST"
        case .checkpoint: return dir + "/CHECKPOINT"
        case .lock: return dir + "/LOCK"
        case .tmp:
            let path = dir + "/MANIFEST.tmp"
            if !FileManager.default.fileExists(atPath: path) {
                try Data(try Data(contentsOf: URL(fileURLWithPath: dir + "/MANIFEST"))).write(to: URL(fileURLWithPath: path))
            }
            return path
        case .tail: return dir + "/" + LogStoreFormat.segmentFileName(try segments(dir).last ?? 1)
        case .sealed:
            let s = try segments(dir)
            return dir + "/" + LogStoreFormat.segmentFileName(s[s.count / 2 - (s.count > 2 ? 0 : 1)])
        }
    }

    func apply(_ damage: Damage, to path: String, store: Store) throws {
        let fm = FileManager.default
        let url = URL(fileURLWithPath: path)
        let bytes = [UInt8]((try? Data(contentsOf: url)) ?? Data())
        let name = (path as NSString).lastPathComponent
        var g = SystemRandomNumberGenerator()
        switch damage {
        case .deleted: try? fm.removeItem(atPath: path)
        case .truncatedTo0: try Data().write(to: url)
        case .truncatedToHalf: try Data(bytes.prefix(bytes.count / 2)).write(to: url)
        case .truncatedByOneByte: try Data(bytes.dropLast()).write(to: url)
        case .extendedWithZeros: try Data(bytes + [UInt8](repeating: 0, count: 1000)).write(to: url)
        case .extendedWithGarbage: try Data(bytes + (0..<1000).map { _ in UInt8.random(in: 0...255, using: &g) }).write(to: url)
        case .randomBytesOfTheSameLength:
            try Data((0..<max(bytes.count, 1)).map { _ in UInt8.random(in: 0...255, using: &g) }).write(to: url)
        case .sameFileFromAnotherStore, .olderCopyOfItself:
            let source = (damage == .olderCopyOfItself ? store.older : store.other) + "/" + name
            try? fm.removeItem(atPath: path)
            if fm.fileExists(atPath: source) { try fm.copyItem(atPath: source, toPath: path) }
        }
    }

    // MARK: Checking a cell

    func check(_ kind: FileKind, _ damage: Damage, _ ending: Ending) throws {
        let cell = "\(kind.rawValue) \(damage.rawValue) after \(ending.rawValue)"
        let store = try makeStore(ending)
        let path = try file(kind, in: store.dir)
        // An older copy of a file the older store did not have yet is a deletion.
        let older = store.older + "/" + (path as NSString).lastPathComponent
        let effective = damage == .olderCopyOfItself && !FileManager.default.fileExists(atPath: older) ? .deleted : damage
        let damagedSegment = kind == .tail || kind == .sealed ? UInt32((path as NSString).lastPathComponent.prefix(6)) : nil
        try apply(damage, to: path, store: store)
        let expectation = Self.expected(kind, effective, ending)
        try checkOutcome(store, expectation, cell, damagedSegments: damagedSegment.map { [$0] } ?? [])
    }

    func checkOutcome(_ store: Store, _ expectation: Outcome, _ cell: String, damagedSegments: Set<UInt32>) throws {
        let opened: LogEngine
        do {
            opened = try LogEngine.open(directory: store.dir, options: Self.options)
        } catch let e as LogStoreError {
            XCTAssertEqual(expectation, .refused, "\(cell): refused unexpectedly: \(e)")
            XCTAssertNotNil(e.path, "\(cell): the error names a file: \(e)")
            let scan = try StoreScanner(directory: store.dir).scan()
            XCTAssertTrue(scan.hasDamage, "\(cell): verify reports damage too: \(scan.issues.map(\.message))")
            var salvage = Self.options
            salvage.recovery = .salvage
            do {
                let s = try LogEngine.open(directory: store.dir, options: salvage)
                defer { try? s.close() }
                try checkSubset(s, store.model, cell + " (salvage)", prefix: false)
                // Salvage keeps everything that survived: every item written to a segment that
                // was not damaged.
                let found = try contents(s)
                let lost = store.model.keys.filter { found[$0] == nil && !damagedSegments.contains(store.segmentOf[$0] ?? 0) }
                XCTAssertTrue(lost.isEmpty, "\(cell): salvage lost \(lost.count) items from undamaged segments")
            } catch {
                XCTFail("\(cell): salvage could not open what survived: \(error)")
            }
            return
        }
        defer { try? opened.close() }
        let found = try contents(opened)
        switch expectation {
        case .refused:
            XCTFail("\(cell): opened with \(found.count) of \(store.model.count) items instead of refusing")
        case .everything:
            XCTAssertEqual(found.count, store.model.count, "\(cell): every committed item")
            XCTAssertTrue(found == store.model, "\(cell): every committed value")
        case .prefix:
            try checkSubset(opened, store.model, cell, prefix: true)
        }
    }

    func contents(_ e: LogEngine) throws -> Model {
        var out: Model = [:]
        try e.snapshot().forEach(ofType: "Item") { k, v in
            out[k] = Array(v)
            return true
        }
        return out
    }

    /// What an open kept is committed data, value for value; with `prefix`, also a prefix of the
    /// log (which writes items in order, so a prefix of the items). Salvage keeps what survived,
    /// holes included.
    func checkSubset(_ e: LogEngine, _ model: Model, _ cell: String, prefix: Bool) throws {
        let found = try contents(e)
        for (k, v) in found { XCTAssertEqual(model[k], v, "\(cell): a value that was never committed") }
        guard prefix else { return }
        var i = 0
        while found[item(i).0] != nil { i += 1 }
        XCTAssertEqual(i, found.count, "\(cell): a prefix of the log, no holes")
    }

    // MARK: The matrix, one test per cell (file kind x damage x ending)

    /// Every cell is listed below; this keeps the list and the enums in step.
    func testEveryCellHasItsOwnTest() {
        XCTAssertEqual(FileKind.allCases.count * Damage.allCases.count * Ending.allCases.count, 108)
    }

    func testManifestDeletedAfterCleanClose() throws { try check(.manifest, .deleted, .cleanClose) }
    func testManifestDeletedAfterKill9() throws { try check(.manifest, .deleted, .kill9) }
    func testManifestTruncatedTo0AfterCleanClose() throws { try check(.manifest, .truncatedTo0, .cleanClose) }
    func testManifestTruncatedTo0AfterKill9() throws { try check(.manifest, .truncatedTo0, .kill9) }
    func testManifestTruncatedToHalfAfterCleanClose() throws { try check(.manifest, .truncatedToHalf, .cleanClose) }
    func testManifestTruncatedToHalfAfterKill9() throws { try check(.manifest, .truncatedToHalf, .kill9) }
    func testManifestTruncatedByOneByteAfterCleanClose() throws { try check(.manifest, .truncatedByOneByte, .cleanClose) }
    func testManifestTruncatedByOneByteAfterKill9() throws { try check(.manifest, .truncatedByOneByte, .kill9) }
    func testManifestExtendedWithZerosAfterCleanClose() throws { try check(.manifest, .extendedWithZeros, .cleanClose) }
    func testManifestExtendedWithZerosAfterKill9() throws { try check(.manifest, .extendedWithZeros, .kill9) }
    func testManifestExtendedWithGarbageAfterCleanClose() throws { try check(.manifest, .extendedWithGarbage, .cleanClose) }
    func testManifestExtendedWithGarbageAfterKill9() throws { try check(.manifest, .extendedWithGarbage, .kill9) }
    func testManifestRandomBytesOfTheSameLengthAfterCleanClose() throws { try check(.manifest, .randomBytesOfTheSameLength, .cleanClose) }
    func testManifestRandomBytesOfTheSameLengthAfterKill9() throws { try check(.manifest, .randomBytesOfTheSameLength, .kill9) }
    func testManifestSameFileFromAnotherStoreAfterCleanClose() throws { try check(.manifest, .sameFileFromAnotherStore, .cleanClose) }
    func testManifestSameFileFromAnotherStoreAfterKill9() throws { try check(.manifest, .sameFileFromAnotherStore, .kill9) }
    func testManifestOlderCopyOfItselfAfterCleanClose() throws { try check(.manifest, .olderCopyOfItself, .cleanClose) }
    func testManifestOlderCopyOfItselfAfterKill9() throws { try check(.manifest, .olderCopyOfItself, .kill9) }

    func testTailSegmentDeletedAfterCleanClose() throws { try check(.tail, .deleted, .cleanClose) }
    func testTailSegmentDeletedAfterKill9() throws { try check(.tail, .deleted, .kill9) }
    func testTailSegmentTruncatedTo0AfterCleanClose() throws { try check(.tail, .truncatedTo0, .cleanClose) }
    func testTailSegmentTruncatedTo0AfterKill9() throws { try check(.tail, .truncatedTo0, .kill9) }
    func testTailSegmentTruncatedToHalfAfterCleanClose() throws { try check(.tail, .truncatedToHalf, .cleanClose) }
    func testTailSegmentTruncatedToHalfAfterKill9() throws { try check(.tail, .truncatedToHalf, .kill9) }
    func testTailSegmentTruncatedByOneByteAfterCleanClose() throws { try check(.tail, .truncatedByOneByte, .cleanClose) }
    func testTailSegmentTruncatedByOneByteAfterKill9() throws { try check(.tail, .truncatedByOneByte, .kill9) }
    func testTailSegmentExtendedWithZerosAfterCleanClose() throws { try check(.tail, .extendedWithZeros, .cleanClose) }
    func testTailSegmentExtendedWithZerosAfterKill9() throws { try check(.tail, .extendedWithZeros, .kill9) }
    func testTailSegmentExtendedWithGarbageAfterCleanClose() throws { try check(.tail, .extendedWithGarbage, .cleanClose) }
    func testTailSegmentExtendedWithGarbageAfterKill9() throws { try check(.tail, .extendedWithGarbage, .kill9) }
    func testTailSegmentRandomBytesOfTheSameLengthAfterCleanClose() throws { try check(.tail, .randomBytesOfTheSameLength, .cleanClose) }
    func testTailSegmentRandomBytesOfTheSameLengthAfterKill9() throws { try check(.tail, .randomBytesOfTheSameLength, .kill9) }
    func testTailSegmentSameFileFromAnotherStoreAfterCleanClose() throws { try check(.tail, .sameFileFromAnotherStore, .cleanClose) }
    func testTailSegmentSameFileFromAnotherStoreAfterKill9() throws { try check(.tail, .sameFileFromAnotherStore, .kill9) }
    func testTailSegmentOlderCopyOfItselfAfterCleanClose() throws { try check(.tail, .olderCopyOfItself, .cleanClose) }
    func testTailSegmentOlderCopyOfItselfAfterKill9() throws { try check(.tail, .olderCopyOfItself, .kill9) }

    func testSealedSegmentDeletedAfterCleanClose() throws { try check(.sealed, .deleted, .cleanClose) }
    func testSealedSegmentDeletedAfterKill9() throws { try check(.sealed, .deleted, .kill9) }
    func testSealedSegmentTruncatedTo0AfterCleanClose() throws { try check(.sealed, .truncatedTo0, .cleanClose) }
    func testSealedSegmentTruncatedTo0AfterKill9() throws { try check(.sealed, .truncatedTo0, .kill9) }
    func testSealedSegmentTruncatedToHalfAfterCleanClose() throws { try check(.sealed, .truncatedToHalf, .cleanClose) }
    func testSealedSegmentTruncatedToHalfAfterKill9() throws { try check(.sealed, .truncatedToHalf, .kill9) }
    func testSealedSegmentTruncatedByOneByteAfterCleanClose() throws { try check(.sealed, .truncatedByOneByte, .cleanClose) }
    func testSealedSegmentTruncatedByOneByteAfterKill9() throws { try check(.sealed, .truncatedByOneByte, .kill9) }
    func testSealedSegmentExtendedWithZerosAfterCleanClose() throws { try check(.sealed, .extendedWithZeros, .cleanClose) }
    func testSealedSegmentExtendedWithZerosAfterKill9() throws { try check(.sealed, .extendedWithZeros, .kill9) }
    func testSealedSegmentExtendedWithGarbageAfterCleanClose() throws { try check(.sealed, .extendedWithGarbage, .cleanClose) }
    func testSealedSegmentExtendedWithGarbageAfterKill9() throws { try check(.sealed, .extendedWithGarbage, .kill9) }
    func testSealedSegmentRandomBytesOfTheSameLengthAfterCleanClose() throws {
        try check(.sealed, .randomBytesOfTheSameLength, .cleanClose)
    }
    func testSealedSegmentRandomBytesOfTheSameLengthAfterKill9() throws { try check(.sealed, .randomBytesOfTheSameLength, .kill9) }
    func testSealedSegmentSameFileFromAnotherStoreAfterCleanClose() throws { try check(.sealed, .sameFileFromAnotherStore, .cleanClose) }
    func testSealedSegmentSameFileFromAnotherStoreAfterKill9() throws { try check(.sealed, .sameFileFromAnotherStore, .kill9) }
    func testSealedSegmentOlderCopyOfItselfAfterCleanClose() throws { try check(.sealed, .olderCopyOfItself, .cleanClose) }
    func testSealedSegmentOlderCopyOfItselfAfterKill9() throws { try check(.sealed, .olderCopyOfItself, .kill9) }

    func testCheckpointDeletedAfterCleanClose() throws { try check(.checkpoint, .deleted, .cleanClose) }
    func testCheckpointDeletedAfterKill9() throws { try check(.checkpoint, .deleted, .kill9) }
    func testCheckpointTruncatedTo0AfterCleanClose() throws { try check(.checkpoint, .truncatedTo0, .cleanClose) }
    func testCheckpointTruncatedTo0AfterKill9() throws { try check(.checkpoint, .truncatedTo0, .kill9) }
    func testCheckpointTruncatedToHalfAfterCleanClose() throws { try check(.checkpoint, .truncatedToHalf, .cleanClose) }
    func testCheckpointTruncatedToHalfAfterKill9() throws { try check(.checkpoint, .truncatedToHalf, .kill9) }
    func testCheckpointTruncatedByOneByteAfterCleanClose() throws { try check(.checkpoint, .truncatedByOneByte, .cleanClose) }
    func testCheckpointTruncatedByOneByteAfterKill9() throws { try check(.checkpoint, .truncatedByOneByte, .kill9) }
    func testCheckpointExtendedWithZerosAfterCleanClose() throws { try check(.checkpoint, .extendedWithZeros, .cleanClose) }
    func testCheckpointExtendedWithZerosAfterKill9() throws { try check(.checkpoint, .extendedWithZeros, .kill9) }
    func testCheckpointExtendedWithGarbageAfterCleanClose() throws { try check(.checkpoint, .extendedWithGarbage, .cleanClose) }
    func testCheckpointExtendedWithGarbageAfterKill9() throws { try check(.checkpoint, .extendedWithGarbage, .kill9) }
    func testCheckpointRandomBytesOfTheSameLengthAfterCleanClose() throws {
        try check(.checkpoint, .randomBytesOfTheSameLength, .cleanClose)
    }
    func testCheckpointRandomBytesOfTheSameLengthAfterKill9() throws { try check(.checkpoint, .randomBytesOfTheSameLength, .kill9) }
    func testCheckpointSameFileFromAnotherStoreAfterCleanClose() throws { try check(.checkpoint, .sameFileFromAnotherStore, .cleanClose) }
    func testCheckpointSameFileFromAnotherStoreAfterKill9() throws { try check(.checkpoint, .sameFileFromAnotherStore, .kill9) }
    func testCheckpointOlderCopyOfItselfAfterCleanClose() throws { try check(.checkpoint, .olderCopyOfItself, .cleanClose) }
    func testCheckpointOlderCopyOfItselfAfterKill9() throws { try check(.checkpoint, .olderCopyOfItself, .kill9) }

    func testLockFileDeletedAfterCleanClose() throws { try check(.lock, .deleted, .cleanClose) }
    func testLockFileDeletedAfterKill9() throws { try check(.lock, .deleted, .kill9) }
    func testLockFileTruncatedTo0AfterCleanClose() throws { try check(.lock, .truncatedTo0, .cleanClose) }
    func testLockFileTruncatedTo0AfterKill9() throws { try check(.lock, .truncatedTo0, .kill9) }
    func testLockFileTruncatedToHalfAfterCleanClose() throws { try check(.lock, .truncatedToHalf, .cleanClose) }
    func testLockFileTruncatedToHalfAfterKill9() throws { try check(.lock, .truncatedToHalf, .kill9) }
    func testLockFileTruncatedByOneByteAfterCleanClose() throws { try check(.lock, .truncatedByOneByte, .cleanClose) }
    func testLockFileTruncatedByOneByteAfterKill9() throws { try check(.lock, .truncatedByOneByte, .kill9) }
    func testLockFileExtendedWithZerosAfterCleanClose() throws { try check(.lock, .extendedWithZeros, .cleanClose) }
    func testLockFileExtendedWithZerosAfterKill9() throws { try check(.lock, .extendedWithZeros, .kill9) }
    func testLockFileExtendedWithGarbageAfterCleanClose() throws { try check(.lock, .extendedWithGarbage, .cleanClose) }
    func testLockFileExtendedWithGarbageAfterKill9() throws { try check(.lock, .extendedWithGarbage, .kill9) }
    func testLockFileRandomBytesOfTheSameLengthAfterCleanClose() throws { try check(.lock, .randomBytesOfTheSameLength, .cleanClose) }
    func testLockFileRandomBytesOfTheSameLengthAfterKill9() throws { try check(.lock, .randomBytesOfTheSameLength, .kill9) }
    func testLockFileSameFileFromAnotherStoreAfterCleanClose() throws { try check(.lock, .sameFileFromAnotherStore, .cleanClose) }
    func testLockFileSameFileFromAnotherStoreAfterKill9() throws { try check(.lock, .sameFileFromAnotherStore, .kill9) }
    func testLockFileOlderCopyOfItselfAfterCleanClose() throws { try check(.lock, .olderCopyOfItself, .cleanClose) }
    func testLockFileOlderCopyOfItselfAfterKill9() throws { try check(.lock, .olderCopyOfItself, .kill9) }

    func testTemporaryFileDeletedAfterCleanClose() throws { try check(.tmp, .deleted, .cleanClose) }
    func testTemporaryFileDeletedAfterKill9() throws { try check(.tmp, .deleted, .kill9) }
    func testTemporaryFileTruncatedTo0AfterCleanClose() throws { try check(.tmp, .truncatedTo0, .cleanClose) }
    func testTemporaryFileTruncatedTo0AfterKill9() throws { try check(.tmp, .truncatedTo0, .kill9) }
    func testTemporaryFileTruncatedToHalfAfterCleanClose() throws { try check(.tmp, .truncatedToHalf, .cleanClose) }
    func testTemporaryFileTruncatedToHalfAfterKill9() throws { try check(.tmp, .truncatedToHalf, .kill9) }
    func testTemporaryFileTruncatedByOneByteAfterCleanClose() throws { try check(.tmp, .truncatedByOneByte, .cleanClose) }
    func testTemporaryFileTruncatedByOneByteAfterKill9() throws { try check(.tmp, .truncatedByOneByte, .kill9) }
    func testTemporaryFileExtendedWithZerosAfterCleanClose() throws { try check(.tmp, .extendedWithZeros, .cleanClose) }
    func testTemporaryFileExtendedWithZerosAfterKill9() throws { try check(.tmp, .extendedWithZeros, .kill9) }
    func testTemporaryFileExtendedWithGarbageAfterCleanClose() throws { try check(.tmp, .extendedWithGarbage, .cleanClose) }
    func testTemporaryFileExtendedWithGarbageAfterKill9() throws { try check(.tmp, .extendedWithGarbage, .kill9) }
    func testTemporaryFileRandomBytesOfTheSameLengthAfterCleanClose() throws { try check(.tmp, .randomBytesOfTheSameLength, .cleanClose) }
    func testTemporaryFileRandomBytesOfTheSameLengthAfterKill9() throws { try check(.tmp, .randomBytesOfTheSameLength, .kill9) }
    func testTemporaryFileSameFileFromAnotherStoreAfterCleanClose() throws { try check(.tmp, .sameFileFromAnotherStore, .cleanClose) }
    func testTemporaryFileSameFileFromAnotherStoreAfterKill9() throws { try check(.tmp, .sameFileFromAnotherStore, .kill9) }
    func testTemporaryFileOlderCopyOfItselfAfterCleanClose() throws { try check(.tmp, .olderCopyOfItself, .cleanClose) }
    func testTemporaryFileOlderCopyOfItselfAfterKill9() throws { try check(.tmp, .olderCopyOfItself, .kill9) }

    /// Two segment files swapped (a sealed one with the tail, two sealed ones): their headers name
    /// other numbers, so the open refuses, after either ending.
    func testTwoSegmentsSwapped() throws {
        for ending in Ending.allCases {
            for pair in ["sealed+tail", "sealed+sealed"] {
                let store = try makeStore(ending)
                let s = try segments(store.dir)
                let (a, b) = pair == "sealed+tail" ? (s[0], s[s.count - 1]) : (s[0], s[1])
                let pa = store.dir + "/" + LogStoreFormat.segmentFileName(a)
                let pb = store.dir + "/" + LogStoreFormat.segmentFileName(b)
                try FileManager.default.moveItem(atPath: pa, toPath: pa + ".swap")
                try FileManager.default.moveItem(atPath: pb, toPath: pa)
                try FileManager.default.moveItem(atPath: pa + ".swap", toPath: pb)
                try checkOutcome(store, .refused, "\(pair) swapped after \(ending.rawValue)", damagedSegments: [a, b])
            }
        }
    }
}
