import Foundation
import LogStoreEngine
import XCTest

/// `dump` of a hostile, 10,000-level nested value reports it as undecodable
/// instead of recursing once per level.
final class DeepValueDumpTests: XCTestCase {
    func testDumpOfTenThousandLevelValueReportsItUndecodable() throws {
        let dir = temporaryPath("deep")
        let e = try LogEngine.open(directory: dir, options: StoreFixture.options())
        var deep: [UInt8] = []
        for _ in 0..<10_000 { deep += [AttributeValue.Tag.array.rawValue, 1] }
        deep.append(AttributeValue.Tag.null.rawValue)
        let nested = AttributeValue.map(["depth": .int(Int64(AttributeValue.maxDepth))]).encoded()
        try e.commit([
            .put(type: "Deep", key: RecordKey(Array("hostile".utf8)), value: deep),
            .put(type: "Deep", key: RecordKey(Array("fine".utf8)), value: nested),
        ])
        try e.close()

        let run = runTool(["dump", dir, "--progress", "none"])
        XCTAssertEqual(run.code, 1, run.stderr)
        XCTAssertTrue(run.stderr.contains("nested deeper than \(AttributeValue.maxDepth)"), run.stderr)
        let lines = try run.jsonLines()
        XCTAssertEqual(lines.count, 2)
        let hostile = try XCTUnwrap(lines.first { $0["key"] as? String == "hostile" })
        XCTAssertNotNil((hostile["value"] as? [String: Any])?["$undecodable"] as? String)
        let fine = try XCTUnwrap(lines.first { $0["key"] as? String == "fine" })
        XCTAssertEqual((fine["value"] as? [String: Any])?["depth"] as? Int, AttributeValue.maxDepth)
    }
}
