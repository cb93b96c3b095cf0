import Foundation
import LogStore
import XCTest

/// Writes meeting flush: a flush inside a write block throws instead of waiting for itself. (A write
/// racing tearDown is in the conformance suite, `durability.writesRacingTearDown...`.)
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
}
