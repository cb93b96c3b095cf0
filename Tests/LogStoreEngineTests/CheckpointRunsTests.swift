import Foundation
import XCTest

@testable import LogStoreEngine

/// What checkpoints write as run files (Docs/Compaction.md, "Checkpoints"): nothing for an
/// unchanged index, a delta run for a few changes, a new base run (a fold) for many, and runs
/// that a background checkpoint installs in the head while commits continue.
final class CheckpointRunsTests: XCTestCase {
    let dir = "/store"
    static let byTag = IndexDefinition(attributes: [["tag"]])

    static func value(_ i: Int, round: Int) -> [UInt8] { AttributeValue.map(["tag": .int(Int64((i + round) % 7))]).encoded() }

    func checkpoint(_ fs: any FileSystem) throws -> CheckpointFileV4 {
        try CT.readFile(fs, _joinPath(dir, LogStoreFormat.checkpointFileName)).withUnsafeBytes { try CheckpointFileV4.decode($0) }
    }

    func runFiles(_ fs: any FileSystem) throws -> Set<UInt32> {
        Set(try fs.contentsOfDirectory(atPath: dir).compactMap(RunFile.number(fromFileName:)))
    }

    func testAFewChangesGoToADeltaRunAndManyToANewBase() throws {
        let fs = InMemoryFileSystem()
        var model: CT.Model = [:]
        var e = try LogEngine.open(directory: dir, fileSystem: fs, options: CT.smallOptions())
        try e.declareIndexes([Self.byTag], ofType: "T")
        try e.commit((0..<2_000).map { .put(type: "T", key: CT.key($0), value: Self.value($0, round: 0)) })
        try e.commit((0..<300).map { .put(type: "Other", key: CT.key($0), value: [UInt8($0 & 0xFF)]) })
        for i in 0..<2_000 { model["T", default: [:]][CT.key(i)] = Self.value(i, round: 0) }
        for i in 0..<300 { model["Other", default: [:]][CT.key(i)] = [UInt8(i & 0xFF)] }
        try e.close()
        let first = try checkpoint(fs)
        XCTAssertTrue(first.indexes.allSatisfy { $0.delta == nil && $0.base != nil })
        XCTAssertEqual(try runFiles(fs), Set(first.runNumbers))

        // A few changes to T: a delta run over T's base (and over its index's base); Other keeps
        // its run.
        e = try LogEngine.open(directory: dir, fileSystem: fs, options: CT.smallOptions())
        try e.commit(
            (0..<10).map { .put(type: "T", key: CT.key($0), value: Self.value($0, round: 1)) }
                + (10..<15).map { .delete(type: "T", key: CT.key($0)) }
                + (5_000..<5_005).map { .put(type: "T", key: CT.key($0), value: Self.value($0, round: 1)) })
        for i in 0..<10 { model["T"]?[CT.key(i)] = Self.value(i, round: 1) }
        for i in 10..<15 { model["T"]?[CT.key(i)] = nil }
        for i in 5_000..<5_005 { model["T"]?[CT.key(i)] = Self.value(i, round: 1) }
        try e.close()
        let second = try checkpoint(fs)
        for (a, b) in zip(first.indexes, second.indexes) {
            XCTAssertEqual(a.base, b.base, "\(b.type) \(b.definition?.name ?? "")")
            XCTAssertEqual(b.delta == nil, b.type == "Other", "\(b.type) \(b.definition?.name ?? "")")
        }
        XCTAssertEqual(second.indexes.first { $0.type == "T" && $0.definition == nil }?.entryCount, 2_000)
        XCTAssertEqual(try runFiles(fs), Set(second.runNumbers))
        e = try LogEngine.open(directory: dir, fileSystem: fs, options: CT.smallOptions())
        XCTAssertTrue(e.recoveryReport.checkpointUsed)
        XCTAssertEqual(try CT.contents(e), model)
        XCTAssertEqual(try e.snapshot().secondaryIndexProblems(), [])

        // Changes beyond max(65,536, base / 20): T's indexes fold into new bases.
        try e.commit((10_000..<76_000).map { .put(type: "T", key: CT.key($0), value: Self.value($0, round: 2)) })
        for i in 10_000..<76_000 { model["T"]?[CT.key(i)] = Self.value(i, round: 2) }
        try e.close()
        let third = try checkpoint(fs)
        for i in third.indexes where i.type == "T" {
            XCTAssertNil(i.delta)
            XCTAssertFalse(second.runNumbers.contains(try XCTUnwrap(i.base).runNumber))
        }
        XCTAssertEqual(try runFiles(fs), Set(third.runNumbers), "replaced runs are removed")
        e = try LogEngine.open(directory: dir, fileSystem: fs, options: CT.smallOptions())
        XCTAssertTrue(e.recoveryReport.checkpointUsed)
        XCTAssertEqual(try CT.contents(e), model)
        XCTAssertEqual(try e.snapshot().secondaryIndexProblems(), [])
        try e.close()
    }

    func testABackgroundCheckpointGivesTheHeadItsRunsWhileCommitsContinue() throws {
        let fs = InMemoryFileSystem()
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: CT.smallOptions())
        try e.declareIndexes([Self.byTag], ofType: "T")
        let writer = DispatchGroup()
        DispatchQueue.global().async(group: writer) {
            var rng = CTRandom(seed: 28)
            var model: CT.Model = [:]
            for round in 0..<400 {
                var ops: [RecordOperation] = []
                var keys = Set<Int>()
                while keys.count < 20 { keys.insert(Int.random(in: 0..<1_500, using: &rng)) }
                for i in keys.sorted() {
                    let type = i % 3 == 0 ? "U" : "T"
                    if Int.random(in: 0..<4, using: &rng) == 0 {
                        ops.append(.delete(type: type, key: CT.key(i)))
                        model[type]?[CT.key(i)] = nil
                    } else {
                        let v = Self.value(i, round: round)
                        ops.append(.put(type: type, key: CT.key(i), value: v))
                        model[type, default: [:]][CT.key(i)] = v
                    }
                }
                do {
                    try e.commit(ops)
                    if round == 200 {
                        try e.commit([.deleteAll(type: "U")])
                        model["U"] = nil
                    }
                } catch {
                    XCTFail("commit: \(error)")
                }
            }
            model = model.filter { !$0.value.isEmpty }
            XCTAssertEqual(try? CT.contents(e), model)
        }
        var checkpoints = 0
        while writer.wait(timeout: .now()) == .timedOut {
            try e.writeCheckpoint()
            checkpoints += 1
        }
        XCTAssertGreaterThan(checkpoints, 1)
        var model = try CT.contents(e)
        XCTAssertEqual(try e.snapshot().secondaryIndexProblems(), [])
        // With no commit in between, the last checkpoint leaves the head with empty trees.
        try e.commit([.put(type: "T", key: CT.key(99_999), value: Self.value(0, round: 0))])
        model["T", default: [:]][CT.key(99_999)] = Self.value(0, round: 0)
        try e.writeCheckpoint()
        let head = e.state.withLock { $0.views.head.index }
        XCTAssertEqual(head.types.values.map(\.treeCount).reduce(0, +), 0)
        XCTAssertEqual(head.secondary.values.flatMap(\.values).map(\.entries.treeCount).reduce(0, +), 0)
        XCTAssertEqual(try CT.contents(e), model)
        try e.close()
        let r = try LogEngine.open(directory: dir, fileSystem: fs, options: CT.smallOptions())
        XCTAssertTrue(r.recoveryReport.checkpointUsed)
        XCTAssertEqual(try CT.contents(r), model)
        XCTAssertEqual(try r.snapshot().secondaryIndexProblems(), [])
        try r.close()
    }

    func testACloseDuringACheckpointOnAnotherThreadWaitsForItAndNothingIsWrittenAfter() throws {
        let fs = InMemoryFileSystem()
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: CT.smallOptions())
        try e.commit((0..<3_000).map { .put(type: "T", key: CT.key($0), value: Self.value($0, round: 0)) })
        let other = DispatchGroup()
        DispatchQueue.global().async(group: other) {
            // Commits and checkpoints (a foreground compaction's, say) until the store is closed.
            for i in 0..<200 {
                do {
                    try e.commit([.put(type: "T", key: CT.key(10_000 + i), value: Self.value(i, round: 1))])
                    try e.writeCheckpoint()
                } catch let error as LogStoreError {
                    XCTAssertTrue(e.isClosed, "\(error)")
                } catch {
                    XCTFail("\(error)")
                }
            }
        }
        Thread.sleep(forTimeInterval: 0.02)
        try e.close()
        let files = try fs.contentsOfDirectory(atPath: dir).sorted()
        let checkpoint = try CT.readFile(fs, _joinPath(dir, LogStoreFormat.checkpointFileName))
        XCTAssertEqual(other.wait(timeout: .now() + 60), .success, "close and a checkpoint deadlocked")
        XCTAssertEqual(try fs.contentsOfDirectory(atPath: dir).sorted(), files, "files written after close")
        XCTAssertEqual(try CT.readFile(fs, _joinPath(dir, LogStoreFormat.checkpointFileName)), checkpoint)
        let r = try LogEngine.open(directory: dir, fileSystem: fs, options: CT.smallOptions())
        XCTAssertTrue(r.recoveryReport.checkpointUsed)
        XCTAssertEqual(r.recoveryReport.bytesReplayed, 0, "the close's checkpoint covers every commit")
        try r.close()
    }
}
