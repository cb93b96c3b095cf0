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

    // A child written once since its base keeps that write's operations as they are and hands
    // them to the parent at merge (ChildStore.State.run); the cases below are the ways that
    // state ends: read, written again, spilled, merged, with or without conflicts.

    func ids(_ s: any DataStore) throws -> [String: Int] {
        try s.read { r in
            Dictionary(
                uniqueKeysWithValues: try r.items(forRequest: DataStoreRequest(itemType: Restaurant.self)).map { ($0.id, $0.rating) })
        }
    }

    func seeded(_ parent: any DataStore) throws {
        try parent.writeSync { a in for i in 0..<10 { try a.insert(Restaurant(id: "r\(i)", name: "n", rating: i)) } }
    }

    func testChildWrittenOnceThenMergedAppliesItsPutsAndDeletes() throws {
        try forEachKind { _, parent in
            try seeded(parent)
            let child = try parent.makeChildDataStore()
            try child.writeSync { a in
                try a.insert(Restaurant(id: "r1", name: "n", rating: 100))
                try a.insert(Restaurant(id: "new", name: "n", rating: 7))
                try a.deleteItem(ofType: Restaurant.self, id: "r2")
                try a.deleteItem(ofType: Restaurant.self, id: "absent")
            }
            try parent.merge(child)
            var expected = Dictionary(uniqueKeysWithValues: (0..<10).map { ("r\($0)", $0) })
            expected["r1"] = 100
            expected["new"] = 7
            expected["r2"] = nil
            XCTAssertEqual(try ids(parent), expected)
            XCTAssertEqual(try ids(child), expected, "rebased onto the merged parent")
            // Written once again after the rebase, merged again.
            try child.writeSync { a in try a.deleteItem(ofType: Restaurant.self, id: "new") }
            try parent.merge(child)
            expected["new"] = nil
            XCTAssertEqual(try ids(parent), expected)
        }
    }

    func testChildWrittenOnceIsReadableAndWritableAgainBeforeItsMerge() throws {
        try forEachKind { _, parent in
            try seeded(parent)
            let child = try parent.makeChildDataStore()
            try child.writeSync { a in try a.insert(Restaurant(id: "r3", name: "n", rating: 33)) }
            XCTAssertEqual(try child.read { try $0.item(ofType: Restaurant.self, id: "r3") }?.rating, 33)
            XCTAssertEqual(try count(child, Restaurant.self), 10)
            let grandchild = try child.makeChildDataStore()
            XCTAssertEqual(try grandchild.read { try $0.item(ofType: Restaurant.self, id: "r3") }?.rating, 33)
            try child.writeSync { a in try a.deleteItem(ofType: Restaurant.self, id: "r4") }
            XCTAssertEqual(try count(child, Restaurant.self), 9)
            XCTAssertEqual(try count(parent, Restaurant.self), 10, "nothing reaches the parent before the merge")
            try parent.merge(child)
            XCTAssertEqual(try parent.read { try $0.item(ofType: Restaurant.self, id: "r3") }?.rating, 33)
            XCTAssertNil(try parent.read { try $0.item(ofType: Restaurant.self, id: "r4") })
        }
    }

    func testChildWrittenOnceMergedAfterTheParentChangedTheSameItemFollowsThePolicy() throws {
        try forEachKind { _, parent in
            try seeded(parent)
            let child = try parent.makeChildDataStore()
            try child.writeSync { a in
                try a.insert(Restaurant(id: "r5", name: "child", rating: 50))
                try a.insert(Restaurant(id: "r6", name: "child", rating: 60))
            }
            try parent.writeSync { a in try a.insert(Restaurant(id: "r5", name: "parent", rating: -5)) }
            XCTAssertThrowsError(try parent.merge(child, policy: .failOnConflict)) { e in
                XCTAssertEqual((e as? LogStoreError)?.code, .mergeConflict)
            }
            XCTAssertEqual(try ids(parent)["r6"], 6, "a refused merge changes nothing")
            try parent.merge(child, policy: .parentWins)
            XCTAssertEqual(try ids(parent)["r5"], -5)
            XCTAssertEqual(try ids(parent)["r6"], 60)
        }
    }

    func testChildWrittenOncePastTheSpillThresholdSpillsAndMerges() throws {
        var options = LogStoreOptions()
        options.childSpillThreshold = 4 << 10
        try forEachKind(options: options) { f, parent in
            let child = try parent.makeChildDataStore()
            try child.writeSync { a in
                for i in 0..<100 { try a.insert(Restaurant(id: "s\(i)", name: String(repeating: "n", count: 200), rating: i)) }
            }
            if f.kind == .disk {
                let temps = try FileManager.default.contentsOfDirectory(atPath: f.directory.path).filter { $0.hasSuffix(".tmp") }
                XCTAssertEqual(temps.count, 1, "one write past the threshold spills")
            }
            XCTAssertEqual(try count(child, Restaurant.self), 100)
            try parent.merge(child)
            XCTAssertEqual(try count(parent, Restaurant.self), 100)
            XCTAssertEqual(try parent.read { try $0.item(ofType: Restaurant.self, id: "s42") }?.rating, 42)
        }
    }

    func testChildWrittenOnceWithADeleteAllMergesIt() throws {
        try forEachKind { _, parent in
            try seeded(parent)
            let child = try parent.makeChildDataStore()
            try child.writeSync { a in
                try a.deleteAllItems(ofType: Restaurant.self)
                try a.insert(Restaurant(id: "only", name: "n", rating: 1))
            }
            try parent.merge(child)
            XCTAssertEqual(try ids(parent), ["only": 1])
        }
    }

    func testChildWrittenOnceAndTornDownLeavesTheParentUnchanged() throws {
        try forEachKind { _, parent in
            try seeded(parent)
            let child = try parent.makeChildDataStore()
            try child.writeSync { a in try a.insert(Restaurant(id: "r1", name: "n", rating: 100)) }
            try child.tearDown()
            XCTAssertEqual(try ids(parent)["r1"], 1)
            XCTAssertThrowsError(try parent.merge(child))
        }
    }
}
