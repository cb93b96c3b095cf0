import Foundation
import XCTest

@testable import LogStoreEngine

final class VerifyCommandTests: XCTestCase {
    func issues(_ json: [String: Any]) -> [[String: Any]] { json["issues"] as? [[String: Any]] ?? [] }

    func testVerifyOfACleanStoreExitsZeroAndComparesEveryIndexEntry() throws {
        let store = try makeStore()
        let run = runTool(["verify", store.dir, "--json", "--progress", "none"])
        XCTAssertEqual(run.code, 0, run.stdout + run.stderr)
        let json = try run.json()
        XCTAssertEqual(json["ok"] as? Bool, true)
        XCTAssertEqual(issues(json).count, 0)
        let checked = try XCTUnwrap(json["checked"] as? [String: Any])
        XCTAssertEqual(checked["indexCompared"] as? Bool, true)
        XCTAssertEqual(checked["indexEntries"] as? Int, 310)
        XCTAssertEqual(checked["transactions"] as? UInt64, store.lastSequence)
        XCTAssertEqual(checked["values"] as? Int, 470 + 40 + 20, "every put's value is decoded")
    }

    func testVerifyReportsTheFileAndOffsetOfAFlippedFrameByteThatTheEngineRefuses() throws {
        let store = try makeStore()
        // (Nothing of its segment after the damage: salvage, which the engine's side of the
        // comparison uses, keeps later transactions that the scan does not replay.)
        let loc = try locationInTheLastFrameOfASealedSegment(store)
        let file = LogStoreFormat.segmentFileName(loc.segment)
        let frame = try StoreFixture.frameStart(ofRecordAt: loc.offset, in: store.dir + "/" + file)
        try flipByte(store.dir + "/" + file, at: Int(loc.offset) + 24 + 5)
        XCTAssertThrowsError(try LogEngine.open(directory: store.dir, options: StoreFixture.options()).close()) { error in
            XCTAssertEqual((error as? LogStoreError)?.code, .corruption, "precondition: strict open refuses the store")
        }

        let run = runTool(["verify", store.dir, "--json", "--progress", "none"])
        XCTAssertEqual(run.code, 1)
        let json = try run.json()
        XCTAssertEqual(json["ok"] as? Bool, false)
        let damage = issues(json).filter { $0["severity"] as? String == "damage" }
        XCTAssertEqual(damage.count, 1, "\(damage)")
        XCTAssertEqual(damage.first?["kind"] as? String, "frame")
        XCTAssertEqual(damage.first?["file"] as? String, file)
        XCTAssertEqual(damage.first?["offset"] as? UInt64, frame, "the frame that holds the damaged record")
        XCTAssertTrue((damage.first?["message"] as? String ?? "").contains("checksum mismatch"))
        // The engine, opened read-only in salvage mode, agrees with the independent replay.
        XCTAssertFalse(issues(json).contains { $0["kind"] as? String == "index" })

        let text = runTool(["verify", store.dir, "--progress", "none"])
        XCTAssertEqual(text.code, 1)
        XCTAssertTrue(text.stdout.contains("damage  frame         \(file) @ "), text.stdout)
        XCTAssertTrue(text.stdout.contains("DAMAGED: 1 problem"), text.stdout)
    }

    func testVerifyScansSegmentsEvenWhenTheManifestIsDamaged() throws {
        let store = try makeStore()
        try flipByte(store.dir + "/MANIFEST", at: 20)
        let run = runTool(["verify", store.dir, "--json", "--progress", "none"])
        XCTAssertEqual(run.code, 1)
        let json = try run.json()
        let kinds = issues(json).map { $0["kind"] as? String }
        XCTAssertEqual(kinds, ["manifest"])
        XCTAssertEqual((json["checked"] as? [String: Any])?["segments"] as? Int, try segmentFiles(store.dir).count)
        XCTAssertEqual((json["checked"] as? [String: Any])?["indexCompared"] as? Bool, false)
    }

    func testVerifyTreatsATornTailAsAWarningAndDoesNotCutIt() throws {
        let store = try makeStore()
        let last = store.dir + "/" + (try segmentFiles(store.dir).last ?? "")
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: last))
        handle.seekToEndOfFile()
        handle.write(Data([0x01, 0x02, 0x03, 0x04, 0x40, 0, 0, 0, 0x02, 0, 0, 0]))  // a frame header cut short
        handle.closeFile()
        let before = try snapshotFiles(store.dir)

        let run = runTool(["verify", store.dir, "--json", "--progress", "none"])
        XCTAssertEqual(run.code, 0, run.stdout)
        let json = try run.json()
        XCTAssertEqual(json["warnings"] as? Int, 1)
        XCTAssertEqual(issues(json).first?["kind"] as? String, "tornTail")
        XCTAssertEqual(try snapshotFiles(store.dir), before, "verify must not cut the tail")
    }

    func testVerifyTreatsAMultiFrameTransactionWithoutItsCommitFrameAtTheEndAsATornTail() throws {
        let dir = temporaryPath()
        var o = StoreFixture.options()
        o.maxFramePayload = 512
        o.compression = false
        let e = try LogEngine.open(directory: dir, options: o)
        try e.commit([.put(type: "A", key: RecordKey([1]), value: AttributeValue.int(1).encoded())])
        let committedEnd = try XCTUnwrap(try FileManager.default.attributesOfItem(atPath: dir + "/000001.log")[.size] as? Int)
        try e.commit(
            (0..<10).map {
                .put(type: "A", key: RecordKey([UInt8($0 + 10)]), value: AttributeValue.bytes([UInt8](repeating: 7, count: 300)).encoded())
            })
        try e.close()
        let path = dir + "/000001.log"
        let full = try Data(contentsOf: URL(fileURLWithPath: path))
        // Keep the data frames, drop the commit frame (the last frame; same size as the others).
        let frameSize = (full.count - committedEnd) / 10
        try full.prefix(full.count - frameSize).write(to: URL(fileURLWithPath: path))

        let run = runTool(["verify", dir, "--json", "--progress", "none"])
        XCTAssertEqual(run.code, 0, run.stdout)
        let issue = try XCTUnwrap(issues(try run.json()).first)
        XCTAssertEqual(issue["kind"] as? String, "tornTail")
        XCTAssertEqual(issue["offset"] as? Int, committedEnd)
    }

    /// Format v2: a roll-over lists a segment only once its file is durable, so a listed last
    /// segment without a file is damage (format v1 builds listed it first; the engine recreated it).
    func testVerifyReportsAListedLastSegmentWithoutItsFileAsDamage() throws {
        let store = try makeStore()
        let path = store.dir + "/MANIFEST"
        var manifest = try ManifestFile.decode([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))), path: path)
        if let tail = manifest.segments.last {
            let size = try XCTUnwrap(
                FileManager.default.attributesOfItem(atPath: store.dir + "/" + LogStoreFormat.segmentFileName(tail))[.size] as? Int)
            manifest.sealed[tail] = ManifestFile.Sealed(length: UInt64(size), lastSequence: 0)
        }
        manifest.segments.append(manifest.nextSegment)
        manifest.nextSegment += 1
        manifest.generation += 1
        try Data(manifest.encoded()).write(to: URL(fileURLWithPath: path))

        let run = runTool(["verify", store.dir, "--json", "--progress", "none"])
        XCTAssertEqual(run.code, 1, run.stdout)
        let json = try run.json()
        XCTAssertEqual(issues(json).first?["kind"] as? String, "file")
        XCTAssertThrowsError(try LogEngine.open(directory: store.dir, options: StoreFixture.options())) { error in
            XCTAssertEqual((error as? LogStoreError)?.code, .corruption, "\(error)")
        }
    }

    func testVerifyReportsAValueThatIsNotAnAttributeValueUnlessToldNotToDecode() throws {
        let dir = temporaryPath()
        let e = try LogEngine.open(directory: dir, options: StoreFixture.options())
        try e.commit([.put(type: "Raw", key: RecordKey([1]), value: [0xFF, 0x00])])
        let record = try XCTUnwrap(e.snapshot().location(type: "Raw", key: RecordKey([1])))
        try e.close()

        let run = runTool(["verify", dir, "--json", "--progress", "none"])
        XCTAssertEqual(run.code, 1)
        let issue = try XCTUnwrap(issues(try run.json()).first)
        XCTAssertEqual(issue["kind"] as? String, "value")
        XCTAssertEqual(issue["offset"] as? UInt64, UInt64(record.offset), "the put record, after the frame header and the type's define")
        XCTAssertEqual(runTool(["verify", dir, "--no-values", "--progress", "none"]).code, 0)
    }

    func testVerifyRefusesAStoreOpenElsewhere() throws {
        let store = try makeStore()
        let engine = try LogEngine.open(directory: store.dir, options: StoreFixture.options())
        defer { try? engine.close() }
        XCTAssertEqual(runTool(["verify", store.dir]).code, 3)
    }

    func testVerifyDetectsAFlippedByteInTheCheckpoint() throws {
        let store = try makeStore()
        // A clean close with the default options writes a checkpoint.
        let e = try LogEngine.open(directory: store.dir)
        try e.close()
        let checkpoint = store.dir + "/" + LogStoreFormat.checkpointFileName
        XCTAssertTrue(FileManager.default.fileExists(atPath: checkpoint))
        let clean = runTool(["verify", store.dir, "--json", "--progress", "none"])
        XCTAssertEqual(clean.code, 0, clean.stdout)
        let size = try FileManager.default.attributesOfItem(atPath: checkpoint)[.size] as? Int ?? 0
        try flipByte(checkpoint, at: size / 2)
        let run = runTool(["verify", store.dir, "--json", "--progress", "none"])
        XCTAssertEqual(run.code, 1)
        XCTAssertTrue(issues(try run.json()).contains { $0["kind"] as? String == "checkpoint" && $0["severity"] as? String == "damage" })
    }

    func testVerifyChecksEveryPageOfTheRunsTheCheckpointNames() throws {
        let store = try makeStore()
        let e = try LogEngine.open(directory: store.dir)
        try e.close()
        let runs = try FileManager.default.contentsOfDirectory(atPath: store.dir).filter { $0.hasSuffix(".run") }.sorted()
        XCTAssertFalse(runs.isEmpty)
        let clean = runTool(["verify", store.dir, "--json", "--progress", "none"])
        XCTAssertEqual(clean.code, 0, clean.stdout)
        XCTAssertEqual(try clean.json()["checked"].flatMap { ($0 as? [String: Any])?["indexCompared"] as? Bool }, true)
        // A byte of a leaf page (page 1, after its 16-byte header): a page no open reads.
        let path = store.dir + "/" + runs[0]
        try flipByte(path, at: 4096 + 40)
        let run = runTool(["verify", store.dir, "--json", "--progress", "none"])
        XCTAssertEqual(run.code, 1, run.stdout)
        XCTAssertTrue(
            issues(try run.json()).contains {
                $0["kind"] as? String == "checkpoint" && ($0["path"] as? String)?.hasSuffix(runs[0]) == true
                    && ($0["message"] as? String)?.contains("page 1") == true
            }, run.stdout)
        // Open does not read the page: it opens from the checkpoint, and a read of the page fails
        // with a typed error, never a wrong answer.
        let reopened = try LogEngine.open(directory: store.dir)
        XCTAssertTrue(reopened.recoveryReport.checkpointUsed)
        let snapshot = try reopened.snapshot()
        var failures: [LogStoreError] = []
        for type in snapshot.itemTypes {
            do { _ = try snapshot.keys(ofType: type) } catch let e as LogStoreError { failures.append(e) }
        }
        XCTAssertEqual(failures.map(\.code), [.corruption])
        XCTAssertEqual(failures.first?.path?.hasSuffix(runs[0]), true)
        try reopened.close()
    }

    /// A compacted segment's frame holds putAt records of many transactions, each with its own
    /// sequence number (the frame's is the largest): verify compares each record's own, as the
    /// engine's index holds it.
    func testVerifyOfACompactedStoreComparesEachPutAtRecordsOwnSequence() throws {
        let dir = temporaryPath()
        var o = StoreFixture.options()
        o.maxFramePayload = 8 << 10
        let e = try LogEngine.open(directory: dir, options: o)
        for t in 0..<40 {
            try e.commit([.put(type: "A", key: RecordKey(Array("k\(t % 25)".utf8)), value: AttributeValue.int(Int64(t)).encoded())])
        }
        _ = try e.compact(includingTail: true)
        try e.close()
        let run = runTool(["verify", dir, "--json", "--progress", "none"])
        XCTAssertEqual(run.code, 0, run.stdout + run.stderr)
        XCTAssertEqual(issues(try run.json()).count, 0)
    }
}
