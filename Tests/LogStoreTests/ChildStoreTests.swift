import Foundation
import LogStore
import XCTest

final class ChildStoreTests: StoreTestCase {
    func count<I: DataStoreItem>(_ s: any DataStore, _ t: I.Type) throws -> Int {
        try s.read { try $0.countItems(forRequest: DataStoreRequest(itemType: t)) }
    }

    func testJustPersistScenario() throws {
        try forEachKind { _, parent in
            XCTAssertEqual(try count(parent, Restaurant.self), 0)
            let child = try parent.makeChildDataStore()
            try child.setup()  // harmless
            XCTAssertEqual(try count(child, Restaurant.self), 0)
            try child.writeSync { try $0.insert(r(1)) }
            XCTAssertEqual(try count(parent, Restaurant.self), 0)
            XCTAssertEqual(try count(child, Restaurant.self), 1)
            try parent.merge(child)
            XCTAssertEqual(try count(parent, Restaurant.self), 1)
            XCTAssertEqual(try count(child, Restaurant.self), 1)
            try child.tearDown()
        }
    }

    func testChildSeesParentSnapshotAtCreationOnly() throws {
        try forEachKind { _, parent in
            try parent.writeSync { try $0.insert(r(1)) }
            let child = try parent.makeChildDataStore()
            try parent.writeSync { try $0.insert(r(2)) }
            XCTAssertEqual(try count(child, Restaurant.self), 1)
        }
    }

    func testMergeTwiceAppliesOnlyLaterChanges() throws {
        try forEachKind { _, parent in
            let child = try parent.makeChildDataStore()
            try child.writeSync { try $0.insert(r(1)) }
            try parent.merge(child)
            // The parent changes the merged item; the child has not touched it since the merge.
            try parent.writeSync { try $0.insert(Restaurant(id: "r001", name: "parent edit", rating: 9)) }
            try child.writeSync { try $0.insert(r(2)) }
            try parent.merge(child, policy: .failOnConflict)  // no conflict: r001 is not re-sent
            XCTAssertEqual(try parent.read { try $0.item(ofType: Restaurant.self, id: "r001") }?.name, "parent edit")
            XCTAssertEqual(try count(parent, Restaurant.self), 2)
        }
    }

    func testDeletesAndDeleteAllInChild() throws {
        try forEachKind { _, parent in
            try parent.writeSync { a in for i in 0..<5 { try a.insert(r(i)) } }
            let child = try parent.makeChildDataStore()
            try child.writeSync { a in
                try a.deleteItem(ofType: Restaurant.self, id: "r001")
                try a.insert(Numbered(id: 1, value: "x"))
            }
            try parent.merge(child)
            XCTAssertEqual(try count(parent, Restaurant.self), 4)
            // Delete-all in the child means "the items the child saw": an item the parent adds
            // meanwhile survives the merge.
            try child.writeSync { a in XCTAssertEqual(try a.deleteAllItems(ofType: Restaurant.self), 4) }
            try parent.writeSync { try $0.insert(r(99)) }
            try parent.merge(child)
            XCTAssertEqual(try parent.read { try $0.items(forRequest: DataStoreRequest(itemType: Restaurant.self)) }.map(\.id), ["r099"])
            XCTAssertEqual(try count(parent, Numbered.self), 1)
        }
    }

    func testConflictPolicies() throws {
        for policy in [MergePolicy.childWins, .parentWins, .failOnConflict] {
            try forEachKind { _, parent in
                try parent.writeSync { a in
                    try a.insert(Restaurant(id: "c", name: "base", rating: 0))
                    try a.insert(Restaurant(id: "d", name: "base", rating: 0))
                }
                let child = try parent.makeChildDataStore()
                try child.writeSync { a in
                    try a.insert(Restaurant(id: "c", name: "child", rating: 1))
                    try a.deleteItem(ofType: Restaurant.self, id: "d")
                    try a.insert(Restaurant(id: "e", name: "child only", rating: 1))
                }
                try parent.writeSync { a in
                    try a.insert(Restaurant(id: "c", name: "parent", rating: 2))
                    try a.insert(Restaurant(id: "d", name: "parent", rating: 2))
                }
                switch policy {
                case .childWins:
                    try parent.merge(child, policy: policy)
                    XCTAssertEqual(try parent.read { try $0.item(ofType: Restaurant.self, id: "c") }?.name, "child")
                    XCTAssertNil(try parent.read { try $0.item(ofType: Restaurant.self, id: "d") })
                    XCTAssertNotNil(try parent.read { try $0.item(ofType: Restaurant.self, id: "e") })
                case .parentWins:
                    try parent.merge(child, policy: policy)
                    XCTAssertEqual(try parent.read { try $0.item(ofType: Restaurant.self, id: "c") }?.name, "parent")
                    XCTAssertEqual(try parent.read { try $0.item(ofType: Restaurant.self, id: "d") }?.name, "parent")
                    XCTAssertNotNil(try parent.read { try $0.item(ofType: Restaurant.self, id: "e") })
                case .failOnConflict:
                    do {
                        try parent.merge(child, policy: policy)
                        XCTFail("expected a conflict")
                    } catch let e as LogStoreError {
                        XCTAssertEqual(e.code, .mergeConflict)
                        XCTAssertEqual(Set(e.conflicts.map(\.description)), ["Restaurant/c", "Restaurant/d"])
                    }
                    // Nothing changed.
                    XCTAssertNil(try parent.read { try $0.item(ofType: Restaurant.self, id: "e") })
                    XCTAssertEqual(try parent.read { try $0.item(ofType: Restaurant.self, id: "c") }?.name, "parent")
                }
            }
        }
    }

    func testNestedChildrenCarryChangesUp() throws {
        try forEachKind { _, parent in
            let child = try parent.makeChildDataStore()
            try child.writeSync { try $0.insert(r(1)) }
            let grandchild = try child.makeChildDataStore()
            XCTAssertEqual(try count(grandchild, Restaurant.self), 1)
            try grandchild.writeSync { try $0.insert(r(2)) }
            XCTAssertEqual(try count(child, Restaurant.self), 1)
            try child.merge(grandchild)
            XCTAssertEqual(try count(child, Restaurant.self), 2)
            XCTAssertEqual(try count(parent, Restaurant.self), 0)
            try parent.merge(child)
            XCTAssertEqual(try count(parent, Restaurant.self), 2)
        }
    }

    func testMergingANonChildThrowsAndChangesNothing() throws {
        try forEachKind { _, parent in
            let other = LogDataStore.inMemory()
            try other.setup()
            assertThrowsCode(.notAChild) { try parent.merge(other) }
            let child = try parent.makeChildDataStore()
            let grandchild = try child.makeChildDataStore()
            try grandchild.writeSync { try $0.insert(r(1)) }
            assertThrowsCode(.notAChild) { try parent.merge(grandchild) }
            assertThrowsCode(.notAChild) { try parent.merge(parent) }
            XCTAssertEqual(try count(parent, Restaurant.self), 0)
        }
    }

    func testTearDownOfUnmergedChildDiscardsIt() throws {
        try forEachKind { _, parent in
            let child = try parent.makeChildDataStore()
            try child.writeSync { try $0.insert(r(1)) }
            try child.tearDown()
            assertThrowsCode(.notOpen) { try child.read { _ in 1 } }
            try child.setup()  // a fresh overlay over the parent's current state
            XCTAssertEqual(try count(child, Restaurant.self), 0)
            try parent.merge(child)
            XCTAssertEqual(try count(parent, Restaurant.self), 0)
        }
    }

    func testTearingDownParentMakesChildrenFailClearly() throws {
        try forEachKind { _, parent in
            let child = try parent.makeChildDataStore()
            let grandchild = try child.makeChildDataStore()
            try parent.tearDown()
            assertThrowsCode(.parentClosed) { try child.read { _ in 1 } }
            assertThrowsCode(.parentClosed) { try grandchild.writeSync { try $0.insert(r(1)) } }
            assertThrowsCode(.parentClosed) { try child.setup() }
        }
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

    func testParentReadersDuringMergeSeeAllOrNothing() throws {
        try forEachKind { _, parent in
            let child = try parent.makeChildDataStore()
            try child.writeSync { a in for i in 0..<500 { try a.insert(Numbered(id: i, value: "c")) } }
            let stop = ManagedFlag()
            let bad = ManagedCounter()
            let group = DispatchGroup()
            DispatchQueue.global().async(group: group) {
                while !stop.value {
                    let n = (try? parent.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Numbered.self)) }) ?? -1
                    if n != 0 && n != 500 { bad.increment() }
                }
            }
            try parent.merge(child)
            stop.set()
            group.wait()
            XCTAssertEqual(bad.value, 0)
            XCTAssertEqual(try count(parent, Numbered.self), 500)
        }
    }

    func testChildWritesHaveFullSemantics() throws {
        try forEachKind { _, parent in
            let child = try parent.makeChildDataStore()
            XCTAssertThrowsError(try child.writeSync { a in
                try a.insert(r(1))
                throw Marker()
            })
            XCTAssertEqual(try count(child, Restaurant.self), 0)
            let done = expectation(description: "async")
            child.writeAsync({ try $0.insert(r(2)) }, completion: { e in
                XCTAssertNil(e)
                done.fulfill()
            })
            wait(for: [done], timeout: 10)
            XCTAssertEqual(try count(child, Restaurant.self), 1)
            try child.writeSync { a in
                assertThrowsCode(.reentrantWrite) { try child.writeSync { _ in 1 } }
            }
        }
    }

    func testMergedChangesAreDurable() throws {
        let f = StoreFactory(.disk)
        factories.append(f)
        let parent = f.make()
        try parent.setup()
        let child = try parent.makeChildDataStore()
        try child.writeSync { try $0.insert(r(1)) }
        try parent.merge(child)
        try parent.tearDown()
        let again = f.make()
        try again.setup()
        XCTAssertEqual(try count(again, Restaurant.self), 1)
        try again.tearDown()
    }
}
