import Foundation
import LogStore
import XCTest

/// Merges racing other writes of the parent and the child: no deadlock, and issue order kept.
final class MergeConcurrencyTests: StoreTestCase {
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
}
