import Foundation
import LogStore

// Requests article: id order, string ids by bytes, the total order of numbers in sorts.

extension DataStoreConformance {
    static let edgeDoubles: [Double] = [
        .nan, -.nan, 0.0 / Double(0), .signalingNaN, .infinity, -.infinity, 0.0, -0.0, 1, -1, 0.5, -0.5,
        .leastNonzeroMagnitude, -.leastNonzeroMagnitude, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
        9_007_199_254_740_992, 9_007_199_254_740_994, 9_223_372_036_854_775_808, -9_223_372_036_854_775_808,
        9_223_372_036_854_774_784, 1e300, -1e300, 0.1, 0.1.nextUp, 0.1.nextDown,
    ]

    static func seedMeasured(_ store: any DataStore) throws -> [Measured] {
        var items: [Measured] = []
        for (i, d) in edgeDoubles.enumerated() {
            items.append(Measured(id: i, value: d, single: Float(d), maybe: i % 3 == 0 ? nil : d))
            items.append(Measured(id: 100 + i, value: d, single: Float(d), maybe: d))  // ties, broken by id
        }
        try store.writeSync { a in for m in items { try a.insert(m) } }
        return items
    }

    static var orderCases: [ConformanceCase] {
        [
            ConformanceCase(
                "order.noSortIsAscendingIdOrder",
                "Requests: without a sort, String ids come in UTF-8 byte order, integers numerically (Int.min to Int.max, UInt64 above Int64.max last), UUIDs by their bytes."
            ) { c in
                let store = try c.openStore()
                let uuids = (0..<12).map { _ in UUID() }
                try store.writeSync { a in
                    for id in ["b", "a", "c", "aa", "B", "", "é", "z\u{0}", "z"] { try a.insert(Restaurant(id: id, name: id, rating: 0)) }
                    for id in [10, -3, 2, 0, Int.max, Int.min, -1, 256, 255] { try a.insert(Numbered(id: id, value: "\(id)")) }
                    for id: UInt64 in [1, .max, 2, 1 << 63, UInt64(Int64.max), 0] { try a.insert(Unsigned(id: id)) }
                    for u in uuids { try a.insert(Tagged(id: u, note: nil)) }
                }
                c.expectEqual(try allOf(Restaurant.self, in: store).map(\.id), ["", "B", "a", "aa", "b", "c", "z", "z\u{0}", "é"])
                c.expectEqual(try allOf(Numbered.self, in: store).map(\.id), [Int.min, -3, -1, 0, 2, 10, 255, 256, Int.max])
                c.expectEqual(try allOf(Unsigned.self, in: store).map(\.id), [0, 1, 2, UInt64(Int64.max), 1 << 63, .max])
                c.expectEqual(try store.read { try $0.item(ofType: Unsigned.self, id: .max) }?.id, .max)
                let byBytes = uuids.sorted { x, y in
                    withUnsafeBytes(of: x.uuid) { a in withUnsafeBytes(of: y.uuid) { b in a.lexicographicallyPrecedes(b) } }
                }
                c.expectEqual(try allOf(Tagged.self, in: store).map(\.id), byBytes)
                var page = DataStoreRequest(itemType: Numbered.self)
                page.offset = 3
                page.limit = 3
                c.expectEqual(try store.read { try $0.items(forRequest: page) }.map(\.id), [0, 2, 10])
            },
            ConformanceCase(
                "order.stringIdsEqualInSwiftButDifferentInBytesAreTwoItems",
                "Requests: a String id is its bytes: composed and decomposed \"café\" (equal as Swift Strings) are two items, ordered by bytes."
            ) { c in
                let nfc = "caf\u{E9}"
                let nfd = "cafe\u{301}"
                let store = try c.openStore()
                try store.writeSync { a in
                    try a.insert(Restaurant(id: nfc, name: "composed", rating: 1))
                    try a.insert(Restaurant(id: nfd, name: "decomposed", rating: 2))
                }
                try store.read { a in
                    c.expectEqual(try a.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)), 2)
                    c.expectEqual(try a.item(ofType: Restaurant.self, id: nfc)?.name, "composed")
                    c.expectEqual(try a.item(ofType: Restaurant.self, id: nfd)?.name, "decomposed")
                    let items = try a.items(forRequest: DataStoreRequest(itemType: Restaurant.self))
                    c.expectEqual(items.map(\.name), ["decomposed", "composed"], "0x65 (e) sorts before 0xC3")
                    c.expectEqual(items.map { Array($0.id.utf8) }, [Array(nfd.utf8), Array(nfc.utf8)], "ids keep their bytes")
                }
                c.expect(try store.writeSync { try $0.deleteItem(ofType: Restaurant.self, id: nfc) }, "delete by the composed id")
                c.expectEqual(try store.read { try $0.item(ofType: Restaurant.self, id: nfd) }?.name, "decomposed")
                c.expect(try store.read { try $0.item(ofType: Restaurant.self, id: nfc) } == nil, "the composed id is gone")
            },
            ConformanceCase(
                "order.sortsUseTheTotalOrderOfNumbers",
                "Requests: sorts on Double, Float and Double? use -inf < ... < -0.0 == 0.0 < ... < +inf < NaN (NaN first in reverse), ties by id, and every limit and offset gives a prefix of the full sort."
            ) { c in
                let store = try c.openStore()
                let items = try seedMeasured(store)
                var request = DataStoreRequest(itemType: Measured.self)
                func checkPrefixes(_ what: String) throws {
                    let full = try store.read { try $0.items(forRequest: request) }
                    c.expectEqual(full.count, items.count, what)
                    for limit in [1, 2, 3, 5, 8, 13, 21, 34, full.count] {
                        var limited = request
                        limited.limit = limit
                        c.expectEqual(
                            try store.read { try $0.items(forRequest: limited) }.map(\.id), full.prefix(limit).map(\.id),
                            "\(what), limit \(limit)")
                        limited.offset = 3
                        c.expectEqual(
                            try store.read { try $0.items(forRequest: limited) }.map(\.id), full.dropFirst(3).prefix(limit).map(\.id),
                            "\(what), offset 3, limit \(limit)")
                    }
                }
                for order in [SortOrder.forward, .reverse] {
                    request.sortDescriptors = [SortDescriptor(\.value, order: order)]
                    try checkPrefixes("Double \(order)")
                    request.sortDescriptors = [SortDescriptor(\.single, order: order)]
                    try checkPrefixes("Float \(order)")
                    request.sortDescriptors = [SortDescriptor(\.maybe, order: order)]
                    try checkPrefixes("Double? \(order)")
                }
                for ascending in [true, false] {
                    request.setSort(whereAttribute: "value", ascending: ascending)
                    try checkPrefixes("attribute sort ascending: \(ascending)")
                }
                request.sortDescriptors = [SortDescriptor(\.value)]
                let ascending = try store.read { try $0.items(forRequest: request) }
                let nans = items.filter(\.value.isNaN).count
                c.expect(ascending.suffix(nans).allSatisfy(\.value.isNaN), "every NaN sorts last ascending")
                c.expectEqual(ascending.first?.value, -.infinity)
                let numbers = ascending.dropLast(nans).map(\.value)
                c.expectEqual(numbers, numbers.sorted(), "numbers ascending")
                let zeros = ascending.filter { $0.value == 0 }.map(\.id)
                c.expectEqual(zeros, zeros.sorted(), "-0.0 and 0.0 are equal: ordered by id")
                c.expectEqual(Set(ascending.map(\.id)), Set(items.map(\.id)))
                request.sortDescriptors = [SortDescriptor(\.value, order: .reverse)]
                let descending = try store.read { try $0.items(forRequest: request) }
                c.expect(descending.prefix(nans).allSatisfy(\.value.isNaN), "every NaN sorts first descending")
                request.setSort(whereAttribute: "value", ascending: true)
                c.expectEqual(
                    try store.read { try $0.items(forRequest: request) }.map(\.id), ascending.map(\.id), "the attribute sort agrees")
            },
            ConformanceCase(
                "order.filterOnNumbersComparesByValue",
                "Requests: an attribute filter on -0.0 matches 0.0; integers and doubles compare exactly (2^53 + 1 is not the double 2^53)."
            ) { c in
                let store = try c.openStore()
                _ = try seedMeasured(store)
                var request = DataStoreRequest(itemType: Measured.self)
                request.setFilter(whereAttribute: "value", equalsValue: -0.0)
                c.expectEqual(try store.read { try $0.countItems(forRequest: request) }, 4)
                request.setFilter(whereAttribute: "value", equalsValue: 0)
                c.expectEqual(try store.read { try $0.countItems(forRequest: request) }, 4)
                request.setFilter(whereAttribute: "value", equalsValue: 9_007_199_254_740_993 as Int64)
                c.expectEqual(try store.read { try $0.countItems(forRequest: request) }, 0, "2^53 + 1 is not the double 2^53")
                request.setFilter(whereAttribute: "value", equalsValue: 9_007_199_254_740_992 as Int64)
                c.expectEqual(try store.read { try $0.countItems(forRequest: request) }, 2)
                request.setFilter(whereAttribute: "value", equalsValue: 0.1)
                c.expectEqual(
                    try store.read { try $0.items(forRequest: request) }.map(\.id).sorted(),
                    [edgeDoubles.firstIndex(of: 0.1)!, 100 + edgeDoubles.firstIndex(of: 0.1)!])
                request.setFilter(whereAttribute: "maybe", equalsValue: Optional<Double>.none)
                c.expectEqual(
                    try store.read { try $0.countItems(forRequest: request) }, edgeDoubles.indices.filter { $0 % 3 == 0 }.count,
                    "nil matches a missing attribute")
            },
        ]
    }
}
