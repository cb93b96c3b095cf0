import Foundation
import LogStore
import XCTest

/// Regression tests for the findings of the code review, named after what they caught.
final class ReviewRegressionTests: StoreTestCase {
    func testParentWriteBlockWritingToChildDoesNotDeadlockWithMerge() throws {
        try forEachKind { _, parent in
            let child = try parent.makeChildDataStore()
            let group = DispatchGroup()
            for i in 0..<20 {
                DispatchQueue.global().async(group: group) {
                    try? parent.writeSync { _ in try child.writeSync { try $0.insert(Numbered(id: i, value: "c")) } }
                }
                DispatchQueue.global().async(group: group) { try? parent.merge(child) }
            }
            XCTAssertEqual(group.wait(timeout: .now() + 30), .success, "deadlock between merge and a parent block writing to the child")
            try parent.merge(child)
            XCTAssertEqual(try parent.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Numbered.self)) }, 20)
        }
    }

    func testMergeWithQueuedParentAsyncWriteThatWritesToChildDoesNotDeadlock() throws {
        try forEachKind { _, parent in
            let child = try parent.makeChildDataStore()
            let done = DispatchSemaphore(value: 0)
            parent.writeAsync({ _ in try child.writeSync { try $0.insert(Numbered(id: 1, value: "x")) } }, completion: { _ in done.signal() })
            let merged = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                try? parent.merge(child)
                merged.signal()
            }
            XCTAssertEqual(merged.wait(timeout: .now() + 30), .success, "merge deadlocked with a queued parent write")
            XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        }
    }

    func testFlushInsideWriteBlockThrowsInsteadOfDeadlocking() throws {
        try forEachKind { _, store in
            try store.writeSync { _ in
                store.writeAsync({ try $0.insert(Numbered(id: 1, value: "x")) }, completion: nil)
                assertThrowsCode(.reentrantWrite) { try store.flush() }
            }
            try store.flush()
            XCTAssertEqual(try store.read { try $0.item(ofType: Numbered.self, id: 1) }?.value, "x")
        }
    }

    func testMergeIncludesWritesQueuedOnTheChildBeforeIt() throws {
        try forEachKind { _, parent in
            let child = try parent.makeChildDataStore()
            child.writeAsync({ a in
                Thread.sleep(forTimeInterval: 0.05)
                try a.insert(Numbered(id: 1, value: "slow"))
            }, completion: nil)
            child.writeAsync({ try $0.insert(Numbered(id: 2, value: "fast")) }, completion: nil)
            try parent.merge(child)
            XCTAssertEqual(try parent.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Numbered.self)) }, 2)
        }
    }

    func testWritesRacingTearDownNeverReportFailureForCommittedData() throws {
        let f = StoreFactory(.disk)
        factories.append(f)
        let store = f.make()
        try store.setup()
        let failedIDs = ManagedIDs()
        let group = DispatchGroup()
        for t in 0..<4 {
            DispatchQueue.global().async(group: group) {
                for i in 0..<40 {
                    let id = t * 1000 + i
                    do { try store.writeSync { try $0.insert(Numbered(id: id, value: "v")) } } catch { failedIDs.add(id) }
                }
            }
        }
        Thread.sleep(forTimeInterval: 0.01)
        try store.tearDown()
        group.wait()
        let again = f.make()
        try again.setup()
        for id in failedIDs.all {
            XCTAssertNil(try again.read { try $0.item(ofType: Numbered.self, id: id) }, "write \(id) reported failure but was committed")
        }
        try again.tearDown()
    }

    func testUnsignedIDsAboveInt64MaxSortNumerically() throws {
        struct U: DataStoreItem, Equatable {
            var id: UInt64
        }
        try forEachKind { _, store in
            let ids: [UInt64] = [1, .max, 2, 1 << 63, UInt64(Int64.max)]
            try store.writeSync { a in for id in ids { try a.insert(U(id: id)) } }
            XCTAssertEqual(try store.read { try $0.items(forRequest: DataStoreRequest(itemType: U.self)) }.map(\.id), ids.sorted())
            XCTAssertEqual(try store.read { try $0.item(ofType: U.self, id: .max) }?.id, .max)
        }
    }
}

final class ManagedIDs: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var ids: [Int] = []
    func add(_ id: Int) { lock.withLock { ids.append(id) } }
    var all: [Int] { lock.withLock { ids } }
}
