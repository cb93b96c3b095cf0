import Foundation
import LogStore

// Record-level access (what BackendMigrator and DynamicItem use): type names, records in key
// order after a key, point reads, writes of raw records, dynamic items.

extension DataStoreConformance {
    static var recordCases: [ConformanceCase] {
        [
            ConformanceCase(
                "records.itemTypeNamesListNonEmptyTypes",
                "itemTypeNames() lists the types holding at least one item, sorted by UTF-8 bytes, in the accessor's view.",
                requires: .recordAccess
            ) { c in
                let store = try c.openStore()
                c.expectEqual(try store.read { try $0.itemTypeNames() }, [])
                try store.writeSync { a in
                    try a.insert(restaurant(1))
                    try a.insert(Numbered(id: 1, value: "x"))
                    try a.insert(Tagged(id: UUID(), note: nil))
                }
                c.expectEqual(try store.read { try $0.itemTypeNames() }, ["Numbered", "Restaurant", "tagged-items"])
                try store.writeSync { a in
                    _ = try a.deleteAllItems(ofType: Tagged.self)
                    try a.deleteItem(ofType: Numbered.self, id: 1)
                    c.expectEqual(try a.itemTypeNames(), ["Restaurant"], "inside the write block")
                    try a.insert(Wide(id: 1, v: 1))
                    c.expectEqual(try a.itemTypeNames(), ["Restaurant", "Wide"], "inside the write block, after an insert")
                }
                c.expectEqual(try store.read { try $0.itemTypeNames() }, ["Restaurant", "Wide"])
                try store.nuke()
                c.expectEqual(try store.read { try $0.itemTypeNames() }, [])
            },
            ConformanceCase(
                "records.forEachRecordWalksKeyOrderAfterAKey",
                "forEachRecord(ofType:after:) hands out records in ascending key order, from just after the given key, stopping when asked; record(ofType:key:) reads one; recordCount counts them.",
                requires: .recordAccess
            ) { c in
                let store = try c.openStore()
                let ids = [5, -3, 100, 0, 7, Int.min, 42, 8, 9, 1_000_000]
                try store.writeSync { a in for id in ids { try a.insert(Numbered(id: id, value: "v\(id)")) } }
                let sorted = ids.sorted()
                let keys = try sorted.map { try ItemKey.make($0) }
                try store.read { a in
                    var seen: [RecordKey] = []
                    try a.forEachRecord(ofType: Numbered.itemType, after: nil) { k, v in
                        seen.append(k)
                        c.expectEqual(
                            Array(v),
                            try AttributeEncoder().encode(Numbered(id: sorted[seen.count - 1], value: "v\(sorted[seen.count - 1])"))
                                .encoded(), "bytes of \(k)")
                        return true
                    }
                    c.expectEqual(seen, keys, "every record in key order")
                    for (i, k) in keys.enumerated() {
                        var after: [RecordKey] = []
                        try a.forEachRecord(ofType: Numbered.itemType, after: k) { k, _ in
                            after.append(k)
                            return after.count < 3
                        }
                        c.expectEqual(after, Array(keys.dropFirst(i + 1).prefix(3)), "three records after \(sorted[i])")
                    }
                    // After a key that is not stored: from the next stored one.
                    var between: [RecordKey] = []
                    try a.forEachRecord(ofType: Numbered.itemType, after: try ItemKey.make(6)) { k, _ in
                        between.append(k)
                        return true
                    }
                    c.expectEqual(between, try [7, 8, 9, 42, 100, 1_000_000].map { try ItemKey.make($0) })
                    c.expectEqual(
                        try a.record(ofType: Numbered.itemType, key: try ItemKey.make(42)),
                        try AttributeEncoder().encode(Numbered(id: 42, value: "v42")).encoded())
                    c.expect(try a.record(ofType: Numbered.itemType, key: try ItemKey.make(43)) == nil, "a missing record")
                    c.expect(try a.record(ofType: "NoSuchType", key: try ItemKey.make(42)) == nil, "a missing type")
                    c.expectEqual(try a.recordCount(ofType: Numbered.itemType), ids.count, "recordCount")
                    c.expectEqual(try a.recordCount(ofType: "NoSuchType"), 0, "recordCount of a missing type")
                    var none = 0
                    try a.forEachRecord(ofType: "NoSuchType", after: nil) { _, _ in
                        none += 1
                        return true
                    }
                    c.expectEqual(none, 0, "records of a missing type")
                }
            },
            ConformanceCase(
                "records.putAndDeleteRecords",
                "putRecord stores canonical bytes that typed reads decode; deleteRecord says whether the record existed; bytes that are not one attribute value throw .corruption and change nothing.",
                requires: .recordAccess
            ) { c in
                let store = try c.openStore()
                let item = Restaurant(id: "raw", name: "Raw", rating: 4, tags: ["a", "b"])
                let bytes = try AttributeEncoder().encode(item).encoded()
                try store.writeSync { a in
                    try a.putRecord(ofType: Restaurant.itemType, key: try ItemKey.make("raw"), value: bytes)
                    c.expectEqual(try a.item(ofType: Restaurant.self, id: "raw"), item, "read back in the block")
                    c.expectEqual(try a.record(ofType: Restaurant.itemType, key: try ItemKey.make("raw")), bytes)
                }
                c.expectEqual(try store.read { try $0.item(ofType: Restaurant.self, id: "raw") }, item)
                var req = DataStoreRequest(itemType: Restaurant.self)
                req.predicate = #Predicate<Restaurant> { $0.rating == 4 }
                c.expectEqual(try store.read { try $0.items(forRequest: req) }, [item], "a predicate over a raw record")
                c.expectThrows(.corruption, "truncated bytes") {
                    try store.writeSync { a in
                        try a.putRecord(ofType: Restaurant.itemType, key: try ItemKey.make("bad"), value: Array(bytes.dropLast()))
                    }
                }
                c.expectThrows(.corruption, "trailing bytes") {
                    try store.writeSync { a in
                        try a.putRecord(ofType: Restaurant.itemType, key: try ItemKey.make("bad"), value: bytes + [0])
                    }
                }
                c.expectThrows(.corruption, "an unknown tag") {
                    try store.writeSync { a in try a.putRecord(ofType: Restaurant.itemType, key: try ItemKey.make("bad"), value: [0xEE]) }
                }
                c.expect(
                    try store.read { try $0.record(ofType: Restaurant.itemType, key: try ItemKey.make("bad")) } == nil,
                    "a refused record was stored")
                c.expect(
                    try store.writeSync { try $0.deleteRecord(ofType: Restaurant.itemType, key: try ItemKey.make("raw")) },
                    "deleteRecord of a stored record")
                c.expect(
                    try !store.writeSync { try $0.deleteRecord(ofType: Restaurant.itemType, key: try ItemKey.make("raw")) },
                    "deleteRecord of a missing record")
                c.expectEqual(try countOf(Restaurant.self, in: store), 0)
            },
            ConformanceCase(
                "records.dynamicItemsWithoutSwiftTypes",
                "DynamicItem: read, rename an attribute, write back, delete, without the Swift type; a dynamic item and a typed item with the same id are one record.",
                requires: .recordAccess
            ) { c in
                let store = try c.openStore()
                try seedRestaurants(store)
                try store.writeSync { a in
                    for var item in try a.dynamicItems(ofType: "Restaurant") {
                        item.setObject(item.object(forKey: "name"), forKey: "title")
                        item.setObject(nil, forKey: "name")
                        item.setObject(.int(7), forKey: "id")  // ignored: the id cannot change
                        try a.insert(item)
                    }
                }
                let items = try store.read { try $0.dynamicItems(ofType: "Restaurant") }
                c.expectEqual(items.count, 20)
                c.expectEqual(items.first?.object(forKey: "title"), .string("N0"))
                c.expect(items.first?.object(forKey: "name") == nil, "the renamed attribute is gone")
                c.expectEqual(items.map(\.id), (0..<20).map { .string(String(format: "r%02d", $0)) }, "dynamic items in id order")
                c.expectEqual(
                    try store.read { try $0.dynamicItem(ofType: "Restaurant", id: .string("r03")) }?.object(forKey: "rating"), .int(3))
                try store.writeSync { a in
                    try a.insert(DynamicItem(itemType: "Numbered", id: .int(5), attributes: ["value": .string("dyn")]))
                    c.expect(try a.deleteDynamicItem(ofType: "Restaurant", id: .string("r00")), "deleteDynamicItem of a stored item")
                }
                c.expectEqual(
                    try store.read { try $0.item(ofType: Numbered.self, id: 5) }, Numbered(id: 5, value: "dyn"),
                    "a dynamic item read as a typed one")
                c.expectEqual(try countOf(Restaurant.self, in: store), 19)
            },
        ]
    }
}
