import Foundation
import XCTest

@testable import LogStoreEngine

/// Size limits and argument checks reject the operation and commit nothing.
final class LimitsTests: XCTestCase {
    func testOversizedItemKeyAndEmptyTypeCommitNothing() throws { try Scenarios.limitsCommitNothing(.posix(self)) }

    func testInvalidOptionsAreRefused() throws {
        let h = StoreHarness.posix(self)
        for (what, change) in [
            ("segmentSize too small", { (o: inout LogEngineOptions) in o.segmentSize = 1000 }),
            ("segmentSize too large", { (o: inout LogEngineOptions) in o.segmentSize = 2 << 30 }),
            ("maxItemSize zero", { (o: inout LogEngineOptions) in o.maxItemSize = 0 }),
            ("maxKeySize zero", { (o: inout LogEngineOptions) in o.maxKeySize = 0 }),
        ] as [(String, (inout LogEngineOptions) -> Void)] {
            var o = LogEngineOptions.replayOnly
            change(&o)
            let dir = h.newStorePath()
            assertThrowsLogStoreError(.invalidArgument, what) { try h.open(dir, options: o) }
            XCTAssertNil(h.fs.itemKind(atPath: dir), "\(what): nothing may be created")
        }
    }
}

extension Scenarios {
    static func limitsCommitNothing(_ h: StoreHarness) throws {
        var options = LogEngineOptions.replayOnly
        options.maxItemSize = 1000
        options.maxKeySize = 20
        options.maxTypeNameSize = 10
        let dir = h.newStorePath("limits")
        let e = try h.open(dir, options: options)
        try write(e, [.put(type: "T", key: key("base"), value: [1])])
        let committed = try dump(e)
        let size = try h.fs.fileSize(segmentPath(dir, 1))

        let longKey = RecordKey([UInt8](repeating: 7, count: 21))
        let cases: [(LogStoreError.Code, String, (EngineTransaction) throws -> Void)] = [
            (
                .itemTooLarge, "item of maxItemSize + 1",
                { try $0.put(type: "T", key: key("big"), value: [UInt8](repeating: 0, count: 1001)) }
            ),
            (.keyTooLarge, "key of maxKeySize + 1", { try $0.put(type: "T", key: longKey, value: [1]) }),
            (.keyTooLarge, "delete with a key of maxKeySize + 1", { try $0.delete(type: "T", key: longKey) }),
            (.keyTooLarge, "type name of maxTypeNameSize + 1", { try $0.put(type: "ElevenChars", key: key("k"), value: [1]) }),
            (.invalidArgument, "empty type name", { try $0.put(type: "", key: key("k"), value: [1]) }),
            (.invalidArgument, "delete with an empty type name", { try $0.delete(type: "", key: key("k")) }),
            (.invalidArgument, "deleteAll with an empty type name", { try $0.deleteAll(type: "") }),
        ]
        for (code, what, bad) in cases {
            // The body does valid work first, then hits the limit and lets the error out.
            assertThrowsLogStoreError(code, "\(what) on \(h.name)") {
                try e.write { t in
                    try t.put(type: "T", key: key("sneaky"), value: [9])
                    try t.delete(type: "T", key: key("base"))
                    try bad(t)
                }
            }
            // The same operation through commit(_:), after a valid one.
            let op: RecordOperation
            switch what {
            case "item of maxItemSize + 1": op = .put(type: "T", key: key("big"), value: [UInt8](repeating: 0, count: 1001))
            case "key of maxKeySize + 1": op = .put(type: "T", key: longKey, value: [1])
            case "delete with a key of maxKeySize + 1": op = .delete(type: "T", key: longKey)
            case "type name of maxTypeNameSize + 1": op = .put(type: "ElevenChars", key: key("k"), value: [1])
            case "deleteAll with an empty type name": op = .deleteAll(type: "")
            case "delete with an empty type name": op = .delete(type: "", key: key("k"))
            default: op = .put(type: "", key: key("k"), value: [1])
            }
            assertThrowsLogStoreError(code, "commit: \(what) on \(h.name)") {
                try e.commit([.put(type: "T", key: key("sneaky"), value: [9]), op])
            }
            assertSameContents(try dump(e), committed, what)
            XCTAssertEqual(try e.snapshot().sequence, 1, what)
        }
        // Exactly at the limits is fine.
        try write(
            e, [.put(type: "TenChars!!", key: RecordKey([UInt8](repeating: 1, count: 20)), value: [UInt8](repeating: 2, count: 1000))])
        XCTAssertEqual(try e.snapshot().sequence, 2)
        try e.close()
        XCTAssertGreaterThan(try h.fs.fileSize(segmentPath(dir, 1)), size)
        let e2 = try h.open(dir, options: options)
        XCTAssertEqual(e2.recoveryReport.transactionsReplayed, 2)
        XCTAssertFalse(try e2.snapshot().contains(type: "T", key: key("sneaky")))
        XCTAssertTrue(try e2.snapshot().contains(type: "T", key: key("base")))
        try e2.close()
    }
}
