import Foundation
import LogStoreEngine
import XCTest

final class SalvageCommandTests: XCTestCase {
    func count(_ dir: String) throws -> [String: Int] {
        let e = try LogEngine.open(directory: dir)
        defer { try? e.close() }
        let s = try e.snapshot()
        return Dictionary(uniqueKeysWithValues: s.itemTypes.map { ($0, s.count(ofType: $0)) })
    }

    func testSalvageOfACleanStoreCopiesEveryRecordAndExitsZero() throws {
        let store = try makeStore()
        let target = temporaryPath("salvaged")
        let run = runTool(["salvage", store.dir, "--into", target, "--json", "--progress", "none"])
        XCTAssertEqual(run.code, 0, run.stdout + run.stderr)
        let json = try run.json()
        XCTAssertEqual(json["records"] as? Int, 310)
        XCTAssertEqual((json["dropped"] as? [Any])?.count, 0)
        XCTAssertEqual(try count(target), store.live)
        XCTAssertEqual(runTool(["verify", target, "--progress", "none"]).code, 0)
    }

    func testSalvageOfAFlippedByteKeepsTheValidTransactionsAndReportsTheDrop() throws {
        let store = try makeStore()
        let loc = try locationOutsideLastSegment(store)
        let file = LogStoreFormat.segmentFileName(loc.segment)
        let frame = try StoreFixture.frameStart(ofRecordAt: loc.offset, in: store.dir + "/" + file)
        try flipByte(store.dir + "/" + file, at: Int(loc.offset) + 30)
        let before = try snapshotFiles(store.dir)
        let target = temporaryPath("salvaged")

        let run = runTool(["salvage", store.dir, "--into", target, "--json", "--progress", "none"])
        XCTAssertEqual(run.code, 1, "data was dropped")
        let json = try run.json()
        let dropped = try XCTUnwrap(json["dropped"] as? [[String: Any]])
        XCTAssertEqual(dropped.count, 1)
        XCTAssertEqual(dropped.first?["path"] as? String, store.dir + "/" + file)
        XCTAssertEqual(dropped.first?["offset"] as? UInt64, frame, "the damaged record's frame")
        let copied = try XCTUnwrap(json["records"] as? Int)
        XCTAssertGreaterThan(copied, 0)
        XCTAssertLessThanOrEqual(copied, 310)
        XCTAssertEqual(try count(target).values.reduce(0, +), copied)
        XCTAssertEqual(try snapshotFiles(store.dir), before, "salvage only reads the damaged store")
        XCTAssertEqual(runTool(["verify", target, "--progress", "none"]).code, 0, "the new store is clean")
    }

    func testSalvageReadsSegmentsInFileOrderWhenTheManifestIsDamaged() throws {
        let store = try makeStore()
        try flipByte(store.dir + "/MANIFEST", at: 20)
        let target = temporaryPath("salvaged")
        let run = runTool(["salvage", store.dir, "--into", target, "--json", "--progress", "none"])
        XCTAssertEqual(run.code, 1, run.stderr)
        let json = try run.json()
        XCTAssertEqual(json["manifestRebuilt"] as? Bool, true)
        let dropped = try XCTUnwrap(json["dropped"] as? [[String: Any]])
        XCTAssertEqual(dropped.map { $0["path"] as? String }, [store.dir + "/MANIFEST"])
        XCTAssertEqual(try count(target), store.live, "every segment is intact, so nothing else is lost")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: (target as NSString).deletingLastPathComponent)
        XCTAssertFalse(leftovers.contains { $0.hasPrefix(".logstore-salvage-") }, "the temporary copy is removed")
    }

    func testSalvageRescuesEveryRecordWhenTheManifestIsEmptyOrNotLogStores() throws {
        for (what, bytes) in [("empty", Data()), ("text", Data("not a manifest at all".utf8))] {
            let store = try makeStore()
            try bytes.write(to: URL(fileURLWithPath: store.dir + "/MANIFEST"))
            let verify = runTool(["verify", store.dir, "--progress", "none"])
            XCTAssertEqual(verify.code, 1, "\(what): verify calls it damaged: \(verify.stdout)")
            let target = temporaryPath("salvaged-\(what)")
            let run = runTool(["salvage", store.dir, "--into", target, "--json", "--progress", "none"])
            XCTAssertEqual(run.code, 1, "\(what): \(run.stderr)")
            XCTAssertEqual(try run.json()["manifestRebuilt"] as? Bool, true, what)
            XCTAssertEqual(try count(target), store.live, "\(what): every record is rescued")
        }
    }

    func testSalvageRefusesANonEmptyTarget() throws {
        let store = try makeStore()
        let target = temporaryPath("busy")
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: target + "/file.txt"))
        let run = runTool(["salvage", store.dir, "--into", target])
        XCTAssertEqual(run.code, 2)
        XCTAssertTrue(run.stderr.contains("not empty"), run.stderr)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: target), ["file.txt"])
        XCTAssertEqual(runTool(["salvage", store.dir, "--into", store.dir]).code, 2, "the store itself is not a target")
    }

    func testSalvageHonoursTheTargetSegmentSize() throws {
        let store = try makeStore()
        let target = temporaryPath("salvaged")
        XCTAssertEqual(runTool(["salvage", store.dir, "--into", target, "--segment-size", "64K", "--progress", "none"]).code, 0)
        XCTAssertGreaterThan(try segmentFiles(target).count, 1)
        XCTAssertEqual(runTool(["salvage", store.dir, "--into", temporaryPath("x"), "--segment-size", "lots"]).code, 2)
    }
}
