import Foundation
import LogStore
import XCTest

/// Writes meeting flush and tearDown: a flush inside a write block throws instead of waiting for itself, and a write that committed is never reported as failed.
final class WriteLifecycleTests: StoreTestCase {
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
}
