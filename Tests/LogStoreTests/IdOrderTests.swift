import Foundation
import LogStore
import XCTest

/// Ids sort in LogStore's key order (Docs/FileFormat.md §9), including unsigned ids above Int64.max.
final class IdOrderTests: StoreTestCase {
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
