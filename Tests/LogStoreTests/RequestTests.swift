import Foundation
import LogStore
import XCTest

/// Requests (predicate, sort, offset, limit, attribute filter and sort) and JustPersist's and
/// Skopelos's own scenarios.
final class RequestTests: StoreTestCase {
    func seed(_ store: LogDataStore) throws {
        try store.writeSync { a in
            for i in 0..<20 {
                try a.insert(Restaurant(id: String(format: "r%02d", i), name: "N\(i % 4)", rating: i % 5, tags: i % 2 == 0 ? ["even"] : ["odd"]))
            }
        }
    }

    func testNoSortReturnsAscendingIdOrder() throws {
        try forEachKind { _, store in
            try store.writeSync { a in
                for id in ["b", "a", "c", "aa", "B"] { try a.insert(Restaurant(id: id, name: id, rating: 0)) }
                for id in [10, -3, 2, 0, Int.max, Int.min] { try a.insert(Numbered(id: id, value: "\(id)")) }
            }
            XCTAssertEqual(try store.read { try $0.items(forRequest: DataStoreRequest(itemType: Restaurant.self)) }.map(\.id), ["B", "a", "aa", "b", "c"])
            XCTAssertEqual(try store.read { try $0.items(forRequest: DataStoreRequest(itemType: Numbered.self)) }.map(\.id), [Int.min, -3, 0, 2, 10, Int.max])
        }
    }

    func testPredicateSortOffsetLimit() throws {
        try forEachKind { _, store in
            try seed(store)
            var req = DataStoreRequest(itemType: Restaurant.self)
            req.predicate = #Predicate<Restaurant> { $0.rating >= 3 }
            req.sortDescriptors = [SortDescriptor(\.rating, order: .reverse), SortDescriptor(\.name)]
            let all = try store.read { try $0.items(forRequest: req) }
            XCTAssertEqual(all.count, 8)
            XCTAssertTrue(all.allSatisfy { $0.rating >= 3 })
            // Ties broken by id.
            let expected = all.sorted { a, b in
                if a.rating != b.rating { return a.rating > b.rating }
                if a.name != b.name { return a.name < b.name }
                return a.id < b.id
            }
            XCTAssertEqual(all, expected)
            req.offset = 2
            req.limit = 3
            XCTAssertEqual(try store.read { try $0.items(forRequest: req) }, Array(expected[2..<5]))
            XCTAssertEqual(try store.read { try $0.firstItem(forRequest: req) }, expected[2])
            XCTAssertEqual(try store.read { try $0.countItems(forRequest: req) }, 8, "count ignores offset and limit")
            req.offset = 100
            XCTAssertEqual(try store.read { try $0.items(forRequest: req) }, [])
            XCTAssertNil(try store.read { try $0.firstItem(forRequest: req) })
        }
    }

    /// Issue 20 item 6: ids compare by their UTF-8 bytes as stored, not by Swift's `==`
    /// (canonical equivalence). NFC "é" (C3 A9) and NFD "é" (65 CC 81) are two items.
    func testStringIdsEqualInSwiftButDifferentInBytesAreTwoItems() throws {
        let nfc = "caf\u{E9}", nfd = "cafe\u{301}"
        XCTAssertEqual(nfc, nfd, "Swift calls them equal")
        try forEachKind { _, store in
            try store.writeSync { a in
                try a.insert(Restaurant(id: nfc, name: "composed", rating: 1))
                try a.insert(Restaurant(id: nfd, name: "decomposed", rating: 2))
            }
            try store.read { a in
                XCTAssertEqual(try a.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)), 2)
                XCTAssertEqual(try a.item(ofType: Restaurant.self, id: nfc)?.name, "composed")
                XCTAssertEqual(try a.item(ofType: Restaurant.self, id: nfd)?.name, "decomposed")
                // Id order is byte order: 0x65 ("e") sorts before 0xC3.
                XCTAssertEqual(try a.items(forRequest: DataStoreRequest(itemType: Restaurant.self)).map(\.name), ["decomposed", "composed"])
                XCTAssertEqual(Array(try a.items(forRequest: DataStoreRequest(itemType: Restaurant.self)).map(\.id)[1].utf8), Array(nfc.utf8))
            }
            XCTAssertTrue(try store.writeSync { try $0.deleteItem(ofType: Restaurant.self, id: nfc) })
            try store.read { a in
                XCTAssertNil(try a.item(ofType: Restaurant.self, id: nfc))
                XCTAssertEqual(try a.item(ofType: Restaurant.self, id: nfd)?.name, "decomposed")
            }
        }
    }

    func testOffsetAndLimitWithoutSortFollowIdOrder() throws {
        try forEachKind { _, store in
            try seed(store)
            var req = DataStoreRequest(itemType: Restaurant.self)
            req.offset = 5
            req.limit = 4
            XCTAssertEqual(try store.read { try $0.items(forRequest: req) }.map(\.id), ["r05", "r06", "r07", "r08"])
            req.predicate = #Predicate<Restaurant> { $0.rating == 0 }
            req.offset = 1
            req.limit = 2
            XCTAssertEqual(try store.read { try $0.items(forRequest: req) }.map(\.id), ["r05", "r10"])
            req.limit = 0
            XCTAssertEqual(try store.read { try $0.items(forRequest: req) }, [])
        }
    }

    /// Found by the model property test: `limit: 0` with an offset and no predicate returned one
    /// item (the ordered walk took a key before checking the limit).
    func testZeroLimitWithAnOffsetAndNoPredicateReturnsNothing() throws {
        try forEachKind { _, store in
            try seed(store)
            var req = DataStoreRequest(itemType: Restaurant.self)
            req.offset = 1
            req.limit = 0
            XCTAssertEqual(try store.read { try $0.items(forRequest: req) }, [])
            XCTAssertEqual(try store.read { try $0.firstItem(forRequest: req) }?.id, "r01", "firstItem takes the item at the offset, whatever the limit")
        }
    }

    func testNegativeOffsetOrLimitThrowsInvalidArgument() throws {
        try forEachKind { _, store in
            var req = DataStoreRequest(itemType: Restaurant.self)
            req.offset = -1
            assertThrowsCode(.invalidArgument) { try store.read { try $0.items(forRequest: req) } }
            req.offset = 0
            req.limit = -2
            assertThrowsCode(.invalidArgument) { try store.read { try $0.items(forRequest: req) } }
        }
    }

    func testAttributeFilterAndAttributeSort() throws {
        try forEachKind { _, store in
            try seed(store)
            var req = DataStoreRequest(itemType: Restaurant.self)
            req.setFilter(whereAttribute: "name", equalsValue: "N1")
            XCTAssertEqual(try store.read { try $0.items(forRequest: req) }.map(\.id), ["r01", "r05", "r09", "r13", "r17"])
            req.setFilter(whereAttribute: "rating", equalsValue: 4)  // replaces the earlier filter
            XCTAssertEqual(try store.read { try $0.countItems(forRequest: req) }, 4)
            req.setFilter(whereAttribute: "rating", equalsValue: 4.0)  // numbers compare by value
            XCTAssertEqual(try store.read { try $0.countItems(forRequest: req) }, 4)
            req.setSort(whereAttribute: "name", ascending: false)
            let got = try store.read { try $0.items(forRequest: req) }
            XCTAssertEqual(got.map(\.name), ["N3", "N2", "N1", "N0"])
            req.predicate = #Predicate<Restaurant> { $0.name != "N3" }
            XCTAssertEqual(try store.read { try $0.items(forRequest: req) }.map(\.name), ["N2", "N1", "N0"])
            req.sortDescriptors = [SortDescriptor(\.name)]  // replaces the attribute sort
            XCTAssertEqual(try store.read { try $0.items(forRequest: req) }.map(\.name), ["N0", "N1", "N2"])
        }
    }

    func testPredicateErrorsPropagate() throws {
        try forEachKind { _, store in
            try seed(store)
            var req = DataStoreRequest(itemType: Restaurant.self)
            req.predicate = #Predicate<Restaurant> { $0.tags[5] == "x" }  // out of range: evaluation throws
            XCTAssertThrowsError(try store.read { try $0.items(forRequest: req) })
        }
    }

    func testLargeRequestWithLimitUsesBoundedHeapAndMatchesFullSort() throws {
        try forEachKind { _, store in
            try store.writeSync { a in
                for i in 0..<2000 { try a.insert(Numbered(id: (i * 7919) % 2000, value: String((i * 31) % 97))) }
            }
            var req = DataStoreRequest(itemType: Numbered.self)
            req.sortDescriptors = [SortDescriptor(\.value)]
            let all = try store.read { try $0.items(forRequest: req) }
            req.offset = 10
            req.limit = 25
            XCTAssertEqual(try store.read { try $0.items(forRequest: req) }, Array(all[10..<35]))
        }
    }

    // MARK: JustPersist / Skopelos scenarios

    func testSkopelosCreateCountRemove() throws {
        try forEachKind { _, store in
            try store.writeSync { a in try a.insert(Restaurant(id: "1", name: "A", rating: 1)) }
            XCTAssertEqual(try store.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)) }, 1)
            try store.writeSync { a in
                let first = try a.firstItem(forRequest: DataStoreRequest(itemType: Restaurant.self))
                XCTAssertNotNil(first)
                if let first { XCTAssertTrue(try a.delete(first)) }
            }
            XCTAssertEqual(try store.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)) }, 0)
        }
    }

    func testSkopelosRemoveInSameBlock() throws {
        try forEachKind { _, store in
            try store.writeSync { a in
                let item = Restaurant(id: "x", name: "X", rating: 1)
                try a.insert(item)
                XCTAssertTrue(try a.delete(item))
            }
            XCTAssertEqual(try store.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)) }, 0)
        }
    }

    func testSkopelosRemoveAll() throws {
        try forEachKind { _, store in
            try seed(store)
            let n = try store.writeSync { try $0.deleteAllItems(ofType: Restaurant.self) }
            XCTAssertEqual(n, 20)
            XCTAssertEqual(try store.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)) }, 0)
        }
    }

    func testJustPersistFirstWithFilterAndUpdate() throws {
        try forEachKind { _, store in
            try seed(store)
            try store.writeSync { a in
                var req = DataStoreRequest(itemType: Restaurant.self)
                req.setFilter(whereAttribute: "name", equalsValue: "N2")
                guard var restaurant = try a.firstItem(forRequest: req) else { return XCTFail("no item") }
                XCTAssertEqual(restaurant.id, "r02")
                restaurant.name = "Renamed"
                try a.insert(restaurant)  // replaces
            }
            XCTAssertEqual(try store.read { try $0.item(ofType: Restaurant.self, id: "r02") }?.name, "Renamed")
            XCTAssertEqual(try store.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)) }, 20)
        }
    }

    func testOrderOfOperationsFromSeveralQueues() throws {
        try forEachKind { _, store in
            let group = DispatchGroup()
            for q in 0..<4 {
                DispatchQueue.global().async(group: group) {
                    for i in 0..<25 {
                        try? store.writeSync { a in
                            let current = try a.item(ofType: Numbered.self, id: 0)
                            let n = Int(current?.value ?? "0") ?? 0
                            try a.insert(Numbered(id: 0, value: String(n + 1)))
                            try a.insert(Numbered(id: 1000 + q * 100 + i, value: "q\(q)"))
                        }
                    }
                }
            }
            group.wait()
            // Serialized read-modify-write: no lost updates.
            XCTAssertEqual(try store.read { try $0.item(ofType: Numbered.self, id: 0) }?.value, "100")
            XCTAssertEqual(try store.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Numbered.self)) }, 101)
        }
    }
}
