import Foundation
import LogStore
import XCTest

/// What only LogDataStore's child stores do: spill to a temporary log file in the root store's
/// directory. The contract of child stores (snapshots, merges, policies) is in the conformance
/// suite (DataStoreConformance, `children.*` and `merge.*`).
final class ChildStoreTests: StoreTestCase {
    func count<I: DataStoreItem>(_ s: any DataStore, _ t: I.Type) throws -> Int {
        try s.read { try $0.countItems(forRequest: DataStoreRequest(itemType: t)) }
    }

    func testChildLargerThanSpillThreshold() throws {
        var options = LogStoreOptions()
        options.childSpillThreshold = 16 << 10
        try forEachKind(options: options) { f, parent in
            let child = try parent.makeChildDataStore()
            try child.writeSync { a in
                for i in 0..<400 { try a.insert(Restaurant(id: "s\(i)", name: String(repeating: "n", count: 200), rating: i)) }
            }
            try child.writeSync { a in
                for i in 0..<50 { try a.deleteItem(ofType: Restaurant.self, id: "s\(i)") }
            }
            XCTAssertEqual(try count(child, Restaurant.self), 350)
            XCTAssertEqual(try child.read { try $0.item(ofType: Restaurant.self, id: "s399") }?.rating, 399)
            if f.kind == .disk {
                let temps = try FileManager.default.contentsOfDirectory(atPath: f.directory.path).filter { $0.hasSuffix(".tmp") }
                XCTAssertEqual(temps.count, 1, "spilled to a temporary log file")
            }
            try parent.merge(child)
            XCTAssertEqual(try count(parent, Restaurant.self), 350)
            try child.tearDown()
            if f.kind == .disk {
                let temps = try FileManager.default.contentsOfDirectory(atPath: f.directory.path).filter { $0.hasSuffix(".tmp") }
                XCTAssertEqual(temps, [], "removed on tearDown")
            }
        }
    }
}
