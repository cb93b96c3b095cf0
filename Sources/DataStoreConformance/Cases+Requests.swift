import Foundation
import LogStore

// Requests article: predicate, sort, offset, limit, ties by id, attribute filters and sorts,
// counts, first items, errors.

extension DataStoreConformance {
    /// 20 restaurants `r00`-`r19`: name `N<i % 4>`, rating `i % 5`, tags `even`/`odd`.
    static func seedRestaurants(_ store: any DataStore) throws {
        try store.writeSync { a in
            for i in 0..<20 {
                try a.insert(
                    Restaurant(id: String(format: "r%02d", i), name: "N\(i % 4)", rating: i % 5, tags: i % 2 == 0 ? ["even"] : ["odd"]))
            }
        }
    }

    static var requestCases: [ConformanceCase] {
        [
            ConformanceCase(
                "requests.predicateSortOffsetLimit",
                "Requests: filter, then sort (ties by id), then skip offset, then at most limit; count ignores offset and limit; firstItem honours predicate, sort and offset."
            ) { c in
                let store = try c.openStore()
                try seedRestaurants(store)
                var req = DataStoreRequest(itemType: Restaurant.self)
                req.predicate = #Predicate<Restaurant> { $0.rating >= 3 }
                req.sortDescriptors = [SortDescriptor(\.rating, order: .reverse), SortDescriptor(\.name)]
                let all = try store.read { try $0.items(forRequest: req) }
                c.expectEqual(all.count, 8)
                let expected = all.sorted { a, b in
                    if a.rating != b.rating { return a.rating > b.rating }
                    if a.name != b.name { return a.name < b.name }
                    return a.id < b.id
                }
                c.expectEqual(all.map(\.id), expected.map(\.id), "sorted, ties by id")
                c.expect(all.allSatisfy { $0.rating >= 3 }, "only matching items")
                req.offset = 2
                req.limit = 3
                c.expectEqual(try store.read { try $0.items(forRequest: req) }.map(\.id), expected[2..<5].map(\.id))
                c.expectEqual(try store.read { try $0.firstItem(forRequest: req) }?.id, expected[2].id)
                c.expectEqual(try store.read { try $0.countItems(forRequest: req) }, 8, "count ignores offset and limit")
                req.offset = 100
                c.expectEqual(try store.read { try $0.items(forRequest: req) }, [])
                c.expect(try store.read { try $0.firstItem(forRequest: req) } == nil, "firstItem past the end")
            },
            ConformanceCase(
                "requests.offsetAndLimitWithoutSortFollowIdOrder",
                "Requests: without a sort, results come in ascending id order, offset and limit apply to it."
            ) { c in
                let store = try c.openStore()
                try seedRestaurants(store)
                var req = DataStoreRequest(itemType: Restaurant.self)
                req.offset = 5
                req.limit = 4
                c.expectEqual(try store.read { try $0.items(forRequest: req) }.map(\.id), ["r05", "r06", "r07", "r08"])
                req.predicate = #Predicate<Restaurant> { $0.rating == 0 }
                req.offset = 1
                req.limit = 2
                c.expectEqual(try store.read { try $0.items(forRequest: req) }.map(\.id), ["r05", "r10"])
                req.limit = 0
                c.expectEqual(try store.read { try $0.items(forRequest: req) }, [])
                req.predicate = nil
                req.offset = 1
                c.expectEqual(try store.read { try $0.items(forRequest: req) }, [], "limit 0 with an offset and no predicate")
                c.expectEqual(
                    try store.read { try $0.firstItem(forRequest: req) }?.id, "r01",
                    "firstItem takes the item at the offset, whatever the limit")
                req.offset = 18
                req.limit = 10
                c.expectEqual(try store.read { try $0.items(forRequest: req) }.map(\.id), ["r18", "r19"])
            },
            ConformanceCase(
                "requests.negativeOffsetOrLimitThrowsInvalidArgument",
                "Requests: a negative offset or limit throws .invalidArgument."
            ) { c in
                let store = try c.openStore()
                var req = DataStoreRequest(itemType: Restaurant.self)
                req.offset = -1
                c.expectThrows(.invalidArgument, "offset -1") { try store.read { try $0.items(forRequest: req) } }
                c.expectThrows(.invalidArgument, "offset -1, count") { try store.read { try $0.countItems(forRequest: req) } }
                req.offset = 0
                req.limit = -2
                c.expectThrows(.invalidArgument, "limit -2") { try store.read { try $0.items(forRequest: req) } }
            },
            ConformanceCase(
                "requests.attributeFilterAndAttributeSort",
                "JustPersist's setFilter(whereAttribute:) and setSort(whereAttribute:): numbers compare by value, sort descriptors replace an attribute sort, a filter combines with a predicate."
            ) { c in
                let store = try c.openStore()
                try seedRestaurants(store)
                var req = DataStoreRequest(itemType: Restaurant.self)
                req.setFilter(whereAttribute: "name", equalsValue: "N1")
                c.expectEqual(try store.read { try $0.items(forRequest: req) }.map(\.id), ["r01", "r05", "r09", "r13", "r17"])
                req.setFilter(whereAttribute: "rating", equalsValue: 4)
                c.expectEqual(try store.read { try $0.countItems(forRequest: req) }, 4)
                req.setFilter(whereAttribute: "rating", equalsValue: 4.0)
                c.expectEqual(try store.read { try $0.countItems(forRequest: req) }, 4, "4.0 equals 4")
                req.setFilter(whereAttribute: "missing", equalsValue: 4)
                c.expectEqual(try store.read { try $0.countItems(forRequest: req) }, 0)
                req.setFilter(whereAttribute: "rating", equalsValue: 4)
                req.setSort(whereAttribute: "name", ascending: false)
                c.expectEqual(try store.read { try $0.items(forRequest: req) }.map(\.name), ["N3", "N2", "N1", "N0"])
                req.predicate = #Predicate<Restaurant> { $0.name != "N3" }
                c.expectEqual(try store.read { try $0.items(forRequest: req) }.map(\.name), ["N2", "N1", "N0"])
                req.sortDescriptors = [SortDescriptor(\.name)]
                c.expectEqual(try store.read { try $0.items(forRequest: req) }.map(\.name), ["N0", "N1", "N2"])
                var byTag = DataStoreRequest(itemType: Restaurant.self)
                byTag.setSort(whereAttribute: "tags", ascending: true)
                byTag.limit = 3
                c.expectEqual(
                    try store.read { try $0.items(forRequest: byTag) }.map(\.id), ["r00", "r02", "r04"],
                    "arrays sort element by element, ties by id")
            },
            ConformanceCase(
                "requests.predicateErrorsPropagate",
                "Requests: an error thrown while evaluating a predicate reaches the caller."
            ) { c in
                let store = try c.openStore()
                try seedRestaurants(store)
                var req = DataStoreRequest(itemType: Restaurant.self)
                req.predicate = #Predicate<Restaurant> { $0.tags[5] == "x" }
                do {
                    _ = try store.read { try $0.items(forRequest: req) }
                    c.fail("an out-of-range subscript in a predicate did not throw")
                } catch {}
            },
            ConformanceCase(
                "requests.limitGivesPrefixOfFullSort",
                "Requests: with a limit, the results are the first ones of the full sort (bounded heap)."
            ) { c in
                let store = try c.openStore()
                try store.writeSync { a in
                    for i in 0..<2000 { try a.insert(Numbered(id: (i * 7919) % 2000, value: String((i * 31) % 97))) }
                }
                var req = DataStoreRequest(itemType: Numbered.self)
                req.sortDescriptors = [SortDescriptor(\.value)]
                let all = try store.read { try $0.items(forRequest: req) }
                c.expectEqual(all.count, 2000)
                req.offset = 10
                req.limit = 25
                c.expectEqual(try store.read { try $0.items(forRequest: req) }.map(\.id), all[10..<35].map(\.id))
                let reverse = SortDescriptor(\Numbered.value, order: .reverse)
                req.sortDescriptors = [reverse]
                req.predicate = #Predicate<Numbered> { $0.id % 3 == 0 }
                let filtered = all.filter { $0.id % 3 == 0 }.sorted { a, b in
                    switch reverse.compare(a, b) {
                    case .orderedAscending: return true
                    case .orderedDescending: return false
                    case .orderedSame: return a.id < b.id
                    }
                }
                c.expectEqual(
                    try store.read { try $0.items(forRequest: req) }.map(\.id), filtered.dropFirst(10).prefix(25).map(\.id),
                    "an opaque predicate, reverse sort, offset, limit")
            },
            ConformanceCase(
                "requests.justPersistAndSkopelosScenarios",
                "JustPersist and Skopelos usage: create, count, firstItem with a filter, update by re-inserting, remove, remove all."
            ) { c in
                let store = try c.openStore()
                try store.writeSync { a in try a.insert(Restaurant(id: "1", name: "A", rating: 1)) }
                c.expectEqual(try countOf(Restaurant.self, in: store), 1)
                try store.writeSync { a in
                    let first = try a.firstItem(forRequest: DataStoreRequest(itemType: Restaurant.self))
                    c.expect(first != nil, "firstItem")
                    if let first { c.expect(try a.delete(first), "delete(first)") }
                }
                c.expectEqual(try countOf(Restaurant.self, in: store), 0)
                try store.writeSync { a in
                    let item = Restaurant(id: "x", name: "X", rating: 1)
                    try a.insert(item)
                    c.expect(try a.delete(item), "delete in the same block")
                }
                c.expectEqual(try countOf(Restaurant.self, in: store), 0)
                try seedRestaurants(store)
                try store.writeSync { a in
                    var req = DataStoreRequest(itemType: Restaurant.self)
                    req.setFilter(whereAttribute: "name", equalsValue: "N2")
                    guard var r = try a.firstItem(forRequest: req) else { return c.fail("no item") }
                    c.expectEqual(r.id, "r02")
                    r.name = "Renamed"
                    try a.insert(r)
                }
                c.expectEqual(try store.read { try $0.item(ofType: Restaurant.self, id: "r02") }?.name, "Renamed")
                c.expectEqual(try countOf(Restaurant.self, in: store), 20)
                c.expectEqual(try store.writeSync { try $0.deleteAllItems(ofType: Restaurant.self) }, 20)
            },
        ]
    }
}
