import Foundation
import LogStoreEngine
import XCTest

final class DumpCommandTests: XCTestCase {
    func testDumpPrintsOneJSONLinePerLiveRecordInTypeAndKeyOrder() throws {
        let store = try makeStore()
        let run = runTool(["dump", store.dir, "--progress", "none"])
        XCTAssertEqual(run.code, 0, run.stderr)
        let lines = try run.jsonLines()
        XCTAssertEqual(lines.count, 310)
        let types = lines.compactMap { $0["type"] as? String }
        XCTAssertEqual(types, types.sorted())
        XCTAssertEqual(Set(types), ["User", "Note"])
        let userKeys = lines.filter { $0["type"] as? String == "User" }.compactMap { $0["key"] as? String }
        XCTAssertEqual(userKeys, userKeys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
        XCTAssertFalse(userKeys.contains("u10"), "deleted records are not dumped")
    }

    func testDumpRendersDatesAsISO8601BytesAsBase64AndUUIDsAsStrings() throws {
        let store = try makeStore()
        let run = runTool(["dump", store.dir, "--type", "User", "--progress", "none"])
        XCTAssertEqual(run.code, 0, run.stderr)
        let line = try XCTUnwrap(try run.jsonLines().first { $0["key"] as? String == "u77" } ?? nil)
        XCTAssertEqual(line["keyEncoding"] as? String, "utf8")
        XCTAssertNotNil(line["sequence"] as? UInt64)
        let value = try XCTUnwrap(line["value"] as? [String: Any])
        XCTAssertEqual(value["name"] as? String, "user 77 \u{e9}")
        XCTAssertEqual(value["age"] as? Int, 47)
        XCTAssertEqual(value["score"] as? Double, 19.25)
        XCTAssertEqual(value["flag"] as? Bool, false)
        XCTAssertTrue(value["nothing"] is NSNull)
        let iso = ISO8601DateFormatter()
        iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let created = try XCTUnwrap(iso.date(from: try XCTUnwrap(value["created"] as? String)))
        XCTAssertEqual(created.timeIntervalSinceReferenceDate, StoreFixture.created.timeIntervalSinceReferenceDate + 77, accuracy: 0.001)
        XCTAssertEqual(Data(base64Encoded: try XCTUnwrap(value["blob"] as? String))?.count, 300)
        XCTAssertEqual((value["id"] as? String).flatMap(UUID.init(uuidString:))?.uuid.15, 2, "u77 was overwritten in round 2")
        XCTAssertEqual(value["tags"] as? [AnyHashable], ["a" as AnyHashable, 2 as AnyHashable])
    }

    func testDumpTypedWrapsValuesJSONHasNoTypeFor() throws {
        let store = try makeStore()
        let run = runTool(["dump", store.dir, "--type", "User", "--typed", "--progress", "none"])
        XCTAssertEqual(run.code, 0)
        let value = try XCTUnwrap(try run.jsonLines().first?["value"] as? [String: Any])
        XCTAssertNotNil((value["blob"] as? [String: Any])?["$bytes"] as? String)
        XCTAssertNotNil((value["id"] as? [String: Any])?["$uuid"] as? String)
        let date = try XCTUnwrap(value["created"] as? [String: Any])
        XCTAssertNotNil(date["$date"] as? String)
        XCTAssertNotNil(date["$seconds"] as? Double)
    }

    func testDumpPrintsBinaryKeysAsHex() throws {
        let store = try makeStore()
        let run = runTool(["dump", store.dir, "--type", "Note", "--json", "--progress", "none"])
        XCTAssertEqual(run.code, 0)
        let lines = try run.jsonLines()
        XCTAssertEqual(lines.count, 40)
        XCTAssertTrue(lines.allSatisfy { $0["keyEncoding"] as? String == "hex" })
        XCTAssertTrue(lines.contains { $0["key"] as? String == StoreFixture.noteKey(3).description })
    }

    func testDumpOfAnUnknownTypePrintsNothingAndSaysSo() throws {
        let store = try makeStore()
        let run = runTool(["dump", store.dir, "--type", "Nope", "--progress", "none"])
        XCTAssertEqual(run.code, 0)
        XCTAssertEqual(run.stdout, "")
        XCTAssertTrue(run.stderr.contains("no records of type Nope"))
    }

    func testDumpPrintsUndecodableValuesAsBase64AndExitsOne() throws {
        let dir = temporaryPath()
        let e = try LogEngine.open(directory: dir, options: StoreFixture.options())
        try e.commit([.put(type: "Raw", key: RecordKey([0x07]), value: [0xFF, 0x00])])
        try e.close()
        let run = runTool(["dump", dir, "--progress", "none"])
        XCTAssertEqual(run.code, 1)
        let line = try XCTUnwrap(try run.jsonLines().first)
        XCTAssertEqual((line["value"] as? [String: Any])?["$undecodable"] as? String, "/wA=")
        XCTAssertEqual(line["key"] as? String, "07")
    }

    func testDumpWritesNothingToTheStore() throws {
        let store = try makeStore()
        let before = try snapshotFiles(store.dir)
        XCTAssertEqual(runTool(["dump", store.dir, "--progress", "none"]).code, 0)
        XCTAssertEqual(try snapshotFiles(store.dir), before)
    }
}
