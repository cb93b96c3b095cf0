import Foundation
import Synchronization
import XCTest

@testable import LogStoreEngine

/// Transactions whose values outgrow ``LogEngineOptions/transactionSpillThreshold``: values move
/// to a spill file while the body runs and the commit is written in chunks of data frames ending
/// with one commit frame (Docs/Migrations.md, "Large transactions").
final class LargeTransactionTests: XCTestCase {
    static func options(threshold: Int = 4 << 10) -> LogEngineOptions {
        var o = LogEngineOptions.replayOnly
        o.transactionSpillThreshold = threshold
        o.maxFramePayload = 1 << 10
        o.durability = .none
        return o
    }

    static func spillFiles(_ fs: any FileSystem, _ dir: String) throws -> [String] {
        try fs.contentsOfDirectory(atPath: dir).filter { $0.hasPrefix("txn-") }
    }

    /// The operations of one large transaction over `model`: replaces half of "Big", deletes a
    /// tenth, adds new records, and clears "Scratch".
    static func largeTransaction(_ n: Int, count: Int) -> [RecordOperation] {
        var ops: [RecordOperation] = [.deleteAll(type: "Scratch")]
        for i in 0..<count {
            if i % 10 == 3 {
                ops.append(.delete(type: "Big", key: key("b\(i)")))
            } else if i % 2 == 0 {
                ops.append(.put(type: "Big", key: key("b\(i)"), value: sampleValue(n * 100_000 + i, size: 120)))
            }
            ops.append(.put(type: "New", key: key("n\(n)-\(i)"), value: sampleValue(i, size: 60)))
        }
        return ops
    }

    func testASpilledTransactionReadsItsOwnChangesAndCommitsWholeOnDiskAndInMemory() throws {
        for harness in [StoreHarness.posix(self), StoreHarness.memory()] {
            let dir = harness.newStorePath()
            var model: Contents = [:]
            let e = try harness.open(dir, options: Self.options())
            let first =
                (0..<400).map { RecordOperation.put(type: "Big", key: key("b\($0)"), value: sampleValue($0, size: 120)) }
                + [.put(type: "Scratch", key: key("s"), value: sampleValue(1))]
            try write(e, first)
            apply(first, to: &model)

            let ops = Self.largeTransaction(1, count: 400)
            var expected = model
            apply(ops, to: &expected)
            let seq = try e.write { t -> UInt64 in
                for op in ops {
                    switch op {
                    case .put(let ty, let k, let v): try t.put(type: ty, key: k, value: v)
                    case .delete(let ty, let k): try t.delete(type: ty, key: k)
                    case .deleteAll(let ty): try t.deleteAll(type: ty)
                    }
                }
                XCTAssertTrue(t.hasSpilled, "\(harness.name): the values passed the threshold")
                XCTAssertEqual(try Self.spillFiles(harness.fs, dir).count, 1)
                // Reads inside the body see the spilled values.
                XCTAssertEqual(try t.value(type: "Big", key: key("b0")).map(Array.init), expected["Big"]?[key("b0")])
                XCTAssertNil(try t.value(type: "Big", key: key("b3")))
                XCTAssertEqual(try t.count(ofType: "New"), 400)
                return t.sequence + 1
            }
            XCTAssertEqual(try Self.spillFiles(harness.fs, dir), [], "\(harness.name): the spill file goes with the transaction")
            assertSameContents(try dump(e), expected, harness.name)
            XCTAssertEqual(try e.snapshot().sequence, seq, "one transaction")
            try e.close()
            // Replayed from the log: the chunks are one transaction.
            let reopened = try harness.open(dir, options: Self.options())
            XCTAssertEqual(reopened.recoveryReport.lastSequence, seq)
            XCTAssertNil(reopened.recoveryReport.truncatedTail)
            assertSameContents(try dump(reopened), expected, "\(harness.name), reopened")
            try reopened.close()
        }
    }

    func testASpilledTransactionThatThrowsLeavesNothingAndRemovesItsSpillFile() throws {
        let harness = StoreHarness.memory()
        let dir = harness.newStorePath()
        let e = try harness.open(dir, options: Self.options())
        defer { try? e.close() }
        try write(e, [.put(type: "Big", key: key("kept"), value: sampleValue(1))])
        let before = try dump(e)
        struct Stop: Error {}
        XCTAssertThrowsError(
            try e.write { t in
                for i in 0..<200 { try t.put(type: "Big", key: key("x\(i)"), value: sampleValue(i, size: 100)) }
                XCTAssertTrue(t.hasSpilled)
                throw Stop()
            }
        ) { XCTAssertTrue($0 is Stop) }
        XCTAssertEqual(try Self.spillFiles(harness.fs, dir), [])
        assertSameContents(try dump(e), before)
    }

    func testSecondaryIndexesFollowAChunkedCommitAndAUniqueClashAcrossChunksRefusesItWhole() throws {
        let harness = StoreHarness.memory()
        let dir = harness.newStorePath()
        let e = try harness.open(dir, options: Self.options(threshold: 2 << 10))
        defer { try? e.close() }
        func item(_ i: Int, name: String) -> [UInt8] {
            AttributeValue.map(["name": .string(name), "pad": .string(String(repeating: "x", count: 80))]).encoded()
        }
        try e.commit((0..<50).map { .put(type: "U", key: key(String(format: "k%04d", $0)), value: item($0, name: "n\($0)")) })
        try e.declareIndexes([IndexDefinition(attributes: [["name"]], unique: true)], ofType: "U")
        // Rename every record (many chunks), keeping names unique.
        try e.write { t in
            for i in 0..<300 { try t.put(type: "U", key: key(String(format: "k%04d", i)), value: item(i, name: "m\(i)")) }
            XCTAssertTrue(t.hasSpilled)
        }
        XCTAssertEqual(try e.snapshot().secondaryIndexProblems(), [])
        let size = try harness.fs.open(_joinPath(dir, LogStoreFormat.segmentFileName(1)), mode: .readOnly).size()
        // The first and the last record (chunks apart) get the same name: nothing is written.
        XCTAssertThrowsError(
            try e.write { t in
                for i in 0..<300 {
                    try t.put(type: "U", key: key(String(format: "k%04d", i)), value: item(i, name: i == 299 ? "z0" : "z\(i)"))
                }
            }
        ) { XCTAssertEqual(($0 as? LogStoreError)?.code, .uniqueConstraintViolation) }
        XCTAssertEqual(try harness.fs.open(_joinPath(dir, LogStoreFormat.segmentFileName(1)), mode: .readOnly).size(), size)
        XCTAssertEqual(try e.snapshot().secondaryIndexProblems(), [])
    }

    func testALargeTransactionThatDoesNotFitTheTailGoesToANewSegment() throws {
        let harness = StoreHarness.memory()
        let dir = harness.newStorePath()
        var o = Self.options()
        o.segmentSize = 64 << 10
        o.compression = false
        let e = try harness.open(dir, options: o)
        defer { try? e.close() }
        try e.commit((0..<100).map { .put(type: "A", key: key("a\($0)"), value: sampleValue($0, size: 300)) })
        XCTAssertEqual(e.manifestInfo.segments.count, 1)
        try e.write { t in
            for i in 0..<500 { try t.put(type: "B", key: key("b\(i)"), value: sampleValue(i, size: 200)) }
        }
        XCTAssertEqual(e.manifestInfo.segments.count, 2, "the transaction starts a segment of its own")
        XCTAssertEqual(try e.snapshot().count(ofType: "B"), 500)
    }

    /// A power loss or a process crash at every I/O operation of a chunked commit leaves the store
    /// with the transaction whole or not at all.
    func testACrashAtEveryStepOfAChunkedCommitLeavesItWholeOrAbsent() throws {
        var o = Self.options()
        o.durability = .synchronous
        o.segmentSize = 64 << 10
        let before: [RecordOperation] = (0..<60).map { .put(type: "Big", key: key("b\($0)"), value: sampleValue($0, size: 120)) }
        let ops = Self.largeTransaction(2, count: 60)
        var old: Contents = [:]
        apply(before, to: &old)
        var new = old
        apply(ops, to: &new)
        var points = 0
        for k in 0..<200 {
            let fs = FaultInjectingFileSystem()
            try fs.createDirectory(atPath: "/s")
            try fs.syncDirectory(atPath: "/")
            do {
                let e = try LogEngine.open(directory: "/s/store", fileSystem: fs, options: o)
                try e.commit(before)
                fs.scheduleCrash(afterMutatingOperations: k)
                try e.write { t in
                    for op in ops {
                        switch op {
                        case .put(let ty, let kk, let v): try t.put(type: ty, key: kk, value: v)
                        case .delete(let ty, let kk): try t.delete(type: ty, key: kk)
                        case .deleteAll(let ty): try t.deleteAll(type: ty)
                        }
                    }
                }
                try e.close()
            } catch {
                XCTAssertTrue(FaultInjectingFileSystem.isSimulatedCrash(error), "point \(k): \(error)")
            }
            guard fs.isCrashed else { break }
            points += 1
            for image in [fs.processCrashImage(), fs.powerLossImage(seed: UInt64(k))] {
                let e = try LogEngine.open(directory: "/s/store", fileSystem: image, options: o)
                let contents = try dump(e)
                XCTAssertTrue(contents == old || contents == new, "point \(k): the store holds part of the transaction")
                XCTAssertEqual(try Self.spillFiles(image, "/s/store"), [], "point \(k): recovery removes the spill file")
                try e.close()
            }
        }
        XCTAssertGreaterThan(points, 5)
    }

    /// Values spill in key order whatever order they were put in, so that a commit (which reads
    /// them in key order) reads the spill file front to back; a spill that fails halfway loses
    /// nothing: moved values read from the file, the rest from memory, and a later spill moves
    /// the rest.
    func testValuesSpillInKeyOrderAndASpillThatFailsHalfwayLosesNothing() throws {
        var rng = SplitMix64(seed: 15)
        let keys = (0..<3_000).map { key(String(format: "k%05d", $0)) }.shuffled(using: &rng)
        var changes = ChangeSet<FlatChangeStorage>()
        let base = EngineSnapshot(index: IndexState(), segments: [:], cache: nil)
        for (i, k) in keys.enumerated() { try changes.put("T", k, sampleValue(i, size: 700), base: base) }
        let expected = Dictionary(uniqueKeysWithValues: keys.enumerated().map { ($1, sampleValue($0, size: 700)) })
        let store = RecordingValues(failingAppend: 2)
        XCTAssertThrowsError(try changes.moveValues(to: store))
        XCTAssertGreaterThan(store.appended.withLock { $0.count }, 0, "a first batch moved")
        for k in keys { XCTAssertEqual(try changes.value("T", k, base: base).map(Array.init), expected[k]) }
        try changes.moveValues(to: store)
        XCTAssertEqual(changes.valueBytes, 0)
        XCTAssertEqual(store.appended.withLock { $0 }, keys.sorted().map { expected[$0] ?? [] }, "appended in key order")
        var committed: [RecordKey] = []
        try changes.forEachOperation { op in
            guard case .put(_, let k, let v) = op else { return XCTFail("\(op)") }
            XCTAssertEqual(v, expected[k])
            committed.append(k)
        }
        XCTAssertEqual(committed, keys.sorted())
    }

    /// The count of deletes a change set keeps (so that a commit of a million rewrites looks no
    /// key up to find there are no deletes) stays exact through any mix of puts, deletes and
    /// delete-alls over keys the base has and has not, for both change-set storages; the
    /// operations a commit writes are the model's.
    func testTheDeleteCountFollowsEveryPutDeleteAndDeleteAll() throws {
        let harness = StoreHarness.memory()
        let e = try harness.open(harness.newStorePath(), options: Self.options())
        defer { try? e.close() }
        try write(e, (0..<20).map { .put(type: "T", key: key("k\($0)"), value: sampleValue($0)) })
        let base = try e.snapshot()
        func check<S: ChangeSetStorage>(_ storage: S.Type, seed: UInt64) throws {
            var rng = SplitMix64(seed: seed)
            var changes = ChangeSet<S>()
            var model = Dictionary(uniqueKeysWithValues: (0..<20).map { (key("k\($0)"), sampleValue($0)) })
            for step in 0..<400 {
                let k = key("k\(Int.random(in: 0..<30, using: &rng))")
                switch Int.random(in: 0..<10, using: &rng) {
                case 0:
                    try changes.deleteAll("T", base: base)
                    model = [:]
                case 1...4:
                    try changes.delete("T", k, base: base)
                    model[k] = nil
                default:
                    try changes.put("T", k, sampleValue(step), base: base)
                    model[k] = sampleValue(step)
                }
                XCTAssertTrue(changes._deletesAreCounted(), "\(S.self) step \(step)")
            }
            var result = Dictionary(
                uniqueKeysWithValues: try base.locations(ofType: "T").map { ($0.key, Array(try base.value(type: "T", key: $0.key) ?? [])) })
            try changes.forEachOperation { op in
                switch op {
                case .deleteAll: result = [:]
                case .delete(_, let k): XCTAssertNotNil(result.removeValue(forKey: k), "\(S.self): a delete of a key that is there")
                case .put(_, let k, let v): result[k] = v
                }
            }
            XCTAssertEqual(result, model, "\(S.self)")
        }
        for seed in 0..<8 as Range<UInt64> {
            try check(FlatChangeStorage.self, seed: seed)
            try check(PersistentChangeStorage.self, seed: seed)
        }
    }

    /// A spill file returns each value whatever order values are read in: front to back (a
    /// commit: a block read ahead serves many), backwards and at random (reads inside the
    /// transaction: one value read alone).
    func testASpillFileReadsValuesInAnyOrder() throws {
        let fs = InMemoryFileSystem()
        try fs.createDirectory(atPath: "/s")
        let file = try SpillFile(directory: "/s", fs: fs, prefix: "txn")
        let values = (0..<5_000).map { sampleValue($0, size: 50 + $0 % 700) }
        var at: [(offset: UInt64, length: UInt32)] = []
        for chunk in stride(from: 0, to: values.count, by: 900) {
            at += try file.append(contentsOf: Array(values[chunk..<min(chunk + 900, values.count)]))
        }
        var rng = SplitMix64(seed: 7)
        for order in [Array(values.indices), Array(values.indices.reversed()), values.indices.shuffled(using: &rng)] {
            for i in order { XCTAssertEqual(try file.read(offset: at[i].offset, length: at[i].length), values[i], "value \(i)") }
        }
    }
}

/// An ``ExternalValues`` in memory that records what was appended, in order, and fails its
/// `failingAppend`-th append (counting from 1) once.
final class RecordingValues: ExternalValues {
    let appended = Mutex<[[UInt8]]>([])
    let failAt: Mutex<Int?>

    init(failingAppend: Int?) { failAt = Mutex(failingAppend) }

    func append(contentsOf values: [[UInt8]]) throws -> [(offset: UInt64, length: UInt32)] {
        let fail = failAt.withLock { n -> Bool in
            guard let left = n else { return false }
            n = left == 1 ? nil : left - 1
            return left == 1
        }
        if fail { throw LogStoreError(.io, "simulated failed append") }
        return appended.withLock { a in
            defer { a += values }
            return values.indices.map { (UInt64(a.count + $0), UInt32(values[$0].count)) }
        }
    }

    func read(offset: UInt64, length: UInt32) throws -> [UInt8] {
        try appended.withLock { a in
            guard offset < a.count, a[Int(offset)].count == Int(length) else { throw LogStoreError(.corruption, "no value at \(offset)") }
            return a[Int(offset)]
        }
    }
}
