import Foundation
import XCTest
import _LogStoreTestSupport

@testable import LogStoreEngine

/// Reads inside a write body see the body's own changes. A put does not look its key up in the
/// base index at once, the first count or iteration does; every read must agree with a model
/// whatever the order of puts, deletes, delete-alls and reads.
final class TransactionReadTests: XCTestCase {
    func testReadsInsideAWriteAgreeWithAModelWhateverTheOrderOfChanges() throws {
        var rng = SplitMix64(seed: 77)
        for round in 0..<40 {
            let e = try LogEngine.open(directory: "/s", fileSystem: InMemoryFileSystem(), options: CT.smallOptions())
            var model: [String: [RecordKey: [UInt8]]] = [:]
            // A base of two types.
            try e.write { t in
                for i in 0..<30 {
                    let type = i % 2 == 0 ? "A" : "B"
                    try t.put(type: type, key: CT.key(i), value: [UInt8(i)])
                    model[type, default: [:]][CT.key(i)] = [UInt8(i)]
                }
            }
            try e.write { t in
                for step in 0..<60 {
                    let type = rng.chance(0.5) ? "A" : "B"
                    let k = CT.key(rng.int(in: 0..<45))
                    switch rng.int(in: 0..<10) {
                    case 0..<5:
                        let v = [UInt8(truncatingIfNeeded: step), 1]
                        try t.put(type: type, key: k, value: v)
                        model[type, default: [:]][k] = v
                    case 5..<7:
                        let existed = try t.delete(type: type, key: k)
                        XCTAssertEqual(existed, model[type]?[k] != nil, "round \(round) step \(step): delete's result")
                        model[type]?[k] = nil
                    case 7:
                        let n = try t.deleteAll(type: type)
                        XCTAssertEqual(n, model[type]?.count ?? 0, "round \(round) step \(step): deleteAll's count")
                        model[type] = [:]
                    default:
                        XCTAssertEqual(try t.count(ofType: type), model[type]?.count ?? 0, "round \(round) step \(step): count")
                        var seen: [RecordKey: [UInt8]] = [:]
                        try t.forEach(ofType: type) { key, v in
                            XCTAssertNil(seen[key], "round \(round) step \(step): \(key) yielded twice")
                            seen[key] = Array(v)
                            return true
                        }
                        XCTAssertEqual(seen, model[type] ?? [:], "round \(round) step \(step): forEach")
                        XCTAssertEqual(Set(try t.keys(ofType: type)), Set((model[type] ?? [:]).keys), "round \(round) step \(step): keys")
                    }
                    XCTAssertEqual(try t.contains(type: type, key: k), model[type]?[k] != nil)
                    XCTAssertEqual(try t.value(type: type, key: k).map(Array.init), model[type]?[k])
                }
                XCTAssertEqual(try t.itemTypes, model.filter { !$0.value.isEmpty }.keys.sorted())
            }
            XCTAssertEqual(try CT.contents(e), model.filter { !$0.value.isEmpty }, "round \(round): committed state")
            try e.close()
        }
    }
}
