import Foundation
import XCTest

@testable import LogStoreEngine

final class EngineSmokeTests: XCTestCase {
    func tempDir() -> String {
        let d = NSTemporaryDirectory() + "logstore-smoke-\(UUID().uuidString)"
        addTeardownBlock { try? FileManager.default.removeItem(atPath: d) }
        return d
    }

    func testWriteCloseReopenRead() throws {
        let dir = tempDir()
        // No checkpoint on close, so the reopen below replays the log.
        var options = LogEngineOptions.replayOnly
        options.checkpointOnClose = false
        do {
            let e = try LogEngine.open(directory: dir, options: options)
            XCTAssertTrue(e.recoveryReport.created)
            try e.write { t in
                for i in 0..<1000 {
                    try t.put(
                        type: "User", key: RecordKey(Array("k\(i)".utf8)),
                        value: AttributeValue.map(["name": .string("user \(i) " + String(repeating: "x", count: 100)), "n": .int(Int64(i))])
                            .encoded())
                }
            }
            try e.write { t in
                try t.delete(type: "User", key: RecordKey(Array("k5".utf8)))
            }
            let s = try e.snapshot()
            XCTAssertEqual(s.count(ofType: "User"), 999)
            try e.close()
        }
        let e = try LogEngine.open(directory: dir)
        XCTAssertEqual(e.recoveryReport.transactionsReplayed, 2)
        let s = try e.snapshot()
        XCTAssertEqual(s.count(ofType: "User"), 999)
        let v = try XCTUnwrap(try s.value(type: "User", key: RecordKey(Array("k7".utf8))))
        XCTAssertEqual(try AttributeValue.decode(Array(v))["n"], .int(7))
        XCTAssertNil(try s.value(type: "User", key: RecordKey(Array("k5".utf8))))
        try e.close()
    }
}
