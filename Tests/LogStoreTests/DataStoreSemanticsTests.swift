import Foundation
import LogStore
import XCTest

/// The numbered semantics of the DataStore contract, on disk and in memory.
final class DataStoreSemanticsTests: StoreTestCase {

    func testInsertReadCountOnBothKinds() throws {
        try forEachKind { _, store in
            try store.writeSync { a in
                for i in 0..<10 { try a.insert(r(i, rating: i % 5)) }
            }
            let n = try store.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)) }
            XCTAssertEqual(n, 10)
            let got = try store.read { try $0.item(ofType: Restaurant.self, id: "r003") }
            XCTAssertEqual(got, r(3, rating: 3))
        }
    }

    // 1. read runs on the calling thread over one snapshot; reads never wait for writers.
    func testReadSeesOneSnapshotWhileWriterCommits() throws {
        try forEachKind { _, store in
            try store.writeSync { a in try a.insert(r(1)) }
            try store.read { a in
                XCTAssertEqual(try a.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)), 1)
                let done = expectation(description: "write")
                DispatchQueue.global().async {
                    try? store.writeSync { w in try w.insert(r(2)) }
                    done.fulfill()
                }
                wait(for: [done], timeout: 10)
                // Still the snapshot taken when the block started.
                XCTAssertEqual(try a.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)), 1)
            }
            XCTAssertEqual(try store.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)) }, 2)
        }
    }

    // 2. writeSync runs on the calling thread and returns the block's value.
    func testWriteSyncRunsOnCallingThreadAndReturnsValue() throws {
        try forEachKind { _, store in
            let caller = threadID()
            let v = try store.writeSync { a -> Int in
                XCTAssertEqual(threadID(), caller)
                try a.insert(r(1))
                return 42
            }
            XCTAssertEqual(v, 42)
        }
    }

    // 3. writeAsync returns at once, runs off the thread, completion after commit; issue order kept.
    func testWriteAsyncCommitsInIssueOrder() throws {
        try forEachKind { _, store in
            let done = expectation(description: "all")
            done.expectedFulfillmentCount = 50
            let caller = threadID()
            for i in 0..<50 {
                store.writeAsync({ a in
                    XCTAssertNotEqual(threadID(), caller)
                    try a.insert(Numbered(id: 1, value: "v\(i)"))
                }, completion: { error in
                    XCTAssertNil(error)
                    done.fulfill()
                })
            }
            wait(for: [done], timeout: 30)
            let last = try store.read { try $0.item(ofType: Numbered.self, id: 1) }
            XCTAssertEqual(last?.value, "v49")
        }
    }

    func testWriteSyncAfterWriteAsyncFromSameThreadCommitsInIssueOrder() throws {
        try forEachKind { _, store in
            for i in 0..<20 {
                store.writeAsync({ a in try a.insert(Numbered(id: 7, value: "async\(i)")) }, completion: nil)
            }
            try store.writeSync { a in try a.insert(Numbered(id: 7, value: "sync")) }
            XCTAssertEqual(try store.read { try $0.item(ofType: Numbered.self, id: 7) }?.value, "sync")
        }
    }

    // 4. A block that throws commits nothing; the error arrives unchanged.
    func testThrowingWriteBlockCommitsNothingAndRethrowsSameError() throws {
        try forEachKind { _, store in
            XCTAssertThrowsError(try store.writeSync { a in
                try a.insert(r(1))
                throw Marker(n: 7)
            }) { XCTAssertEqual($0 as? Marker, Marker(n: 7)) }
            XCTAssertEqual(try store.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)) }, 0)
            let done = expectation(description: "async")
            store.writeAsync({ a in
                try a.insert(r(2))
                throw Marker(n: 9)
            }, completion: { e in
                XCTAssertEqual(e as? Marker, Marker(n: 9))
                done.fulfill()
            })
            wait(for: [done], timeout: 10)
            XCTAssertEqual(try store.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)) }, 0)
            XCTAssertThrowsError(try store.read { _ in throw Marker(n: 3) }) { XCTAssertEqual($0 as? Marker, Marker(n: 3)) }
        }
    }

    // 5. Use before setup or after tearDown throws .notOpen, never crashes.
    func testUseBeforeSetupAndAfterTearDownThrowsNotOpen() throws {
        for kind in StoreKind.allCases {
            let f = StoreFactory(kind)
            factories.append(f)
            let store = f.make()
            assertThrowsCode(.notOpen) { try store.read { _ in 1 } }
            assertThrowsCode(.notOpen) { try store.writeSync { _ in 1 } }
            assertThrowsCode(.notOpen) { try store.nuke() }
            assertThrowsCode(.notOpen) { try store.makeChildDataStore() }
            let done = expectation(description: "async")
            store.writeAsync({ _ in XCTFail("block must not run") }, completion: { e in
                XCTAssertEqual((e as? LogStoreError)?.code, .notOpen)
                done.fulfill()
            })
            wait(for: [done], timeout: 10)
            try store.setup()
            try store.setup()  // idempotent
            try store.tearDown()
            try store.tearDown()  // idempotent
            assertThrowsCode(.notOpen) { try store.read { _ in 1 } }
        }
    }

    func testAsyncVariantsWork() async throws {
        for kind in StoreKind.allCases {
            let f = StoreFactory(kind)
            factories.append(f)
            let store = f.make()
            try store.setup()
            let id = try await store.write { a -> String in
                try a.insert(Restaurant(id: "a", name: "A", rating: 1))
                return "a"
            }
            let got = try await store.read { a in try a.item(ofType: Restaurant.self, id: id) }
            XCTAssertEqual(got?.name, "A")
            do {
                _ = try await store.write { _ -> Int in throw Marker(n: 5) }
                XCTFail("expected throw")
            } catch {
                XCTAssertEqual(error as? Marker, Marker(n: 5))
            }
            try store.tearDown()
        }
    }

    // 6. A write block that calls writeSync on the same store throws instead of deadlocking.
    func testNestedWriteSyncThrowsReentrantWrite() throws {
        try forEachKind { _, store in
            try store.writeSync { a in
                try a.insert(r(1))
                assertThrowsCode(.reentrantWrite) { try store.writeSync { _ in 1 } }
            }
            let done = expectation(description: "async")
            store.writeAsync({ _ in
                assertThrowsCode(.reentrantWrite) { try store.writeSync { _ in 1 } }
            }, completion: { _ in done.fulfill() })
            wait(for: [done], timeout: 10)
            XCTAssertEqual(try store.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)) }, 1)
        }
    }

    // 7. A second store on a held directory fails setup (same process; the engine tests cover another process).
    func testSecondStoreOnSameDirectoryFailsSetupWithLocked() throws {
        let f = StoreFactory(.disk)
        factories.append(f)
        let a = f.make()
        try a.setup()
        let b = f.make()
        assertThrowsCode(.locked) { try b.setup() }
        try a.tearDown()
        try b.setup()
        try b.tearDown()
    }

    // 8. After tearDown and setup every committed write is there; setup creates the directory.
    func testCommittedWritesSurviveTearDownAndSetup() throws {
        for kind in StoreKind.allCases {
            let f = StoreFactory(kind)
            factories.append(f)
            let store = f.make()
            if kind == .disk { XCTAssertFalse(FileManager.default.fileExists(atPath: f.directory.path)) }
            try store.setup()
            try store.writeSync { a in for i in 0..<100 { try a.insert(r(i)) } }
            try store.writeSync { a in try a.deleteItem(ofType: Restaurant.self, id: "r005") }
            try store.tearDown()
            let again = f.make()
            try again.setup()
            XCTAssertEqual(try again.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)) }, 99)
            XCTAssertNil(try again.read { try $0.item(ofType: Restaurant.self, id: "r005") })
            try again.tearDown()
        }
    }

    func testNukeIsDurable() throws {
        for kind in StoreKind.allCases {
            let f = StoreFactory(kind)
            factories.append(f)
            let store = f.make()
            try store.setup()
            try store.writeSync { a in
                try a.insert(r(1))
                try a.insert(Numbered(id: 1, value: "x"))
            }
            try store.nuke()
            XCTAssertEqual(try store.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Numbered.self)) }, 0)
            try store.writeSync { a in try a.insert(r(2)) }  // still usable
            try store.tearDown()
            let again = f.make()
            try again.setup()
            XCTAssertEqual(try again.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)) }, 1)
            XCTAssertEqual(try again.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Numbered.self)) }, 0)
            try again.tearDown()
        }
    }

    func testItemTypeDefaultsToTypeName() {
        XCTAssertEqual(Restaurant.itemType, "Restaurant")
        XCTAssertEqual(Tagged.itemType, "tagged-items")
    }

    func testAccessorUsedAfterBlockThrowsAccessorExpired() throws {
        try forEachKind { _, store in
            var escaped: (any DataStoreReadAccessor)?
            try store.read { escaped = $0 }
            assertThrowsCode(.accessorExpired) { try escaped?.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)) }
            var escapedW: (any DataStoreReadWriteAccessor)?
            try store.writeSync { escapedW = $0 }
            assertThrowsCode(.accessorExpired) { try escapedW?.insert(r(1)) }
        }
    }

    func testReadsInsideWriteSeeOwnChanges() throws {
        try forEachKind { _, store in
            try store.writeSync { a in try a.insert(r(1)) }
            try store.writeSync { a in
                try a.insert(r(2))
                XCTAssertEqual(try a.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)), 2)
                XCTAssertTrue(try a.delete(r(1)))
                XCTAssertFalse(try a.delete(r(1)))
                XCTAssertEqual(try a.items(forRequest: DataStoreRequest(itemType: Restaurant.self)).map(\.id), ["r002"])
                XCTAssertEqual(try a.deleteAllItems(ofType: Restaurant.self), 1)
                XCTAssertEqual(try a.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)), 0)
                try a.insert(r(3))
            }
            XCTAssertEqual(try store.read { try $0.items(forRequest: DataStoreRequest(itemType: Restaurant.self)) }.map(\.id), ["r003"])
        }
    }

    func testManyReadersNeverSeePartOfATransaction() throws {
        try forEachKind { _, store in
            let stop = ManagedFlag()
            let group = DispatchGroup()
            let failures = ManagedCounter()
            for _ in 0..<4 {
                DispatchQueue.global().async(group: group) {
                    while !stop.value {
                        let n = (try? store.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Numbered.self)) }) ?? -1
                        if n % 10 != 0 { failures.increment() }
                    }
                }
            }
            for round in 0..<30 {
                try store.writeSync { a in
                    for i in 0..<10 { try a.insert(Numbered(id: round * 10 + i, value: "x")) }
                }
            }
            stop.set()
            group.wait()
            XCTAssertEqual(failures.value, 0)
        }
    }

    func testIntUUIDStringAndInt64IDsWork() throws {
        struct I64: DataStoreItem, Equatable { var id: Int64; var v: Int }
        try forEachKind { _, store in
            let u = UUID()
            try store.writeSync { a in
                try a.insert(Tagged(id: u, note: nil))
                try a.insert(I64(id: -5, v: 1))
                try a.insert(I64(id: 5, v: 2))
                try a.insert(Numbered(id: -1, value: "neg"))
            }
            XCTAssertEqual(try store.read { try $0.item(ofType: Tagged.self, id: u) }?.id, u)
            XCTAssertEqual(try store.read { try $0.items(forRequest: DataStoreRequest(itemType: I64.self)) }.map(\.id), [-5, 5])
            XCTAssertEqual(try store.read { try $0.item(ofType: Numbered.self, id: -1) }?.value, "neg")
        }
    }
}

final class ManagedFlag: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var v = false
    var value: Bool { lock.withLock { v } }
    func set() { lock.withLock { v = true } }
}

final class ManagedCounter: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var v = 0
    var value: Int { lock.withLock { v } }
    func increment() { lock.withLock { v += 1 } }
}
