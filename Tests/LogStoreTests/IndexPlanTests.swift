import Foundation
import LogStore
import XCTest

/// The planner's choices, asserted through `explain` (plans, never timings), and what declaring
/// indexes on item types does through the DataStore API.
final class IndexPlanTests: XCTestCase {
    struct MenuItem: DataStoreItem, Equatable {
        var id: Int
        var restaurantId: Int
        var category: String
        var name: String
        var price: Int
        var vegetarian: Bool?

        static let indexes: [DataStoreIndex<MenuItem>] = [
            .init(\.restaurantId, \.category, \.name),
            .init(\.price),
        ]
    }

    struct Account: DataStoreItem, Equatable {
        var id: String
        var email: String?
        var handle: String

        enum CodingKeys: String, CodingKey {
            case id
            case email = "mail"
            case handle
        }
        static let indexes: [DataStoreIndex<Account>] = [.init(\.email, unique: true)]
    }

    func menu(_ n: Int = 400) throws -> LogDataStore {
        let store = LogDataStore.inMemory()
        try store.setup()
        try store.writeSync { a in
            for i in 0..<n {
                try a.insert(
                    MenuItem(
                        id: i, restaurantId: i % 20, category: ["mains", "drinks", "sides"][i % 3], name: "dish \(n - i)", price: i % 50))
            }
        }
        return store
    }

    func testMenuOfOneRestaurantUsesTheCompoundIndexAndItsOrder() throws {
        let store = try menu()
        var r = DataStoreRequest(itemType: MenuItem.self)
        r.predicate = #Predicate { $0.restaurantId == 7 }
        r.sortDescriptors = [SortDescriptor(\.category), SortDescriptor(\.name)]
        let plan = try store.read { try $0.explain(r) }
        XCTAssertEqual(plan.access, .index("restaurantId,category,name"), "\(plan)")
        XCTAssertTrue(plan.sortedByIndex)
        XCTAssertNil(plan.residual)
        XCTAssertEqual(plan.itemsVisited, 20, "only that restaurant's items are read")
        XCTAssertEqual(plan.resultCount, 20)
        let items = try store.read { try $0.items(forRequest: r) }
        XCTAssertEqual(items, items.sorted { ($0.category, $0.name, $0.id) < ($1.category, $1.name, $1.id) })
        XCTAssertTrue(items.allSatisfy { $0.restaurantId == 7 })
        try store.tearDown()
    }

    func testALimitStopsTheIndexWalkEarly() throws {
        let store = try menu()
        var r = DataStoreRequest(itemType: MenuItem.self)
        r.sortDescriptors = [SortDescriptor(\.price, order: .reverse)]
        r.offset = 5
        r.limit = 10
        let plan = try store.read { try $0.explain(r) }
        XCTAssertEqual(plan.access, .index("price"), "\(plan)")
        XCTAssertTrue(plan.sortedByIndex)
        XCTAssertLessThanOrEqual(plan.itemsVisited, 24, "offset + limit, plus the last group of ties: \(plan)")
        let items = try store.read { try $0.items(forRequest: r) }
        // Descending prices, ties in ascending id order.
        let all = try store.read { try $0.items(forRequest: DataStoreRequest(itemType: MenuItem.self)) }
        let want = all.sorted { $0.price != $1.price ? $0.price > $1.price : $0.id < $1.id }.dropFirst(5).prefix(10)
        XCTAssertEqual(items, Array(want))
        try store.tearDown()
    }

    func testARangeAndAnInListAreIndexRangesAndCountsComeFromTheIndex() throws {
        let store = try menu()
        var r = DataStoreRequest(itemType: MenuItem.self)
        r.predicate = #Predicate { $0.price >= 10 && $0.price < 15 }
        let count = try store.read { try $0.explainCount(r) }
        XCTAssertEqual(count.access, .index("price"))
        XCTAssertTrue(count.countedFromIndex, "\(count)")
        XCTAssertEqual(count.itemsVisited, 0, "no item is read to count")
        XCTAssertEqual(count.resultCount, 40)
        let ids = [3, 11, 19]
        var i = DataStoreRequest(itemType: MenuItem.self)
        i.predicate = #Predicate { ids.contains($0.restaurantId) && $0.category == "drinks" }
        let plan = try store.read { try $0.explain(i) }
        XCTAssertEqual(plan.access, .index("restaurantId,category,name"), "\(plan)")
        XCTAssertEqual(plan.itemsVisited, plan.resultCount, "three exact ranges")
        XCTAssertEqual(try store.read { try $0.items(forRequest: i) }.map(\.id), (0..<400).filter { ids.contains($0 % 20) && $0 % 3 == 1 })
        var o = DataStoreRequest(itemType: MenuItem.self)
        o.predicate = #Predicate { $0.price == 3 || $0.price == 47 }
        let union = try store.read { try $0.explain(o) }
        XCTAssertEqual(union.access, .index("price"), "a disjunction of equalities on one column is a union of ranges: \(union)")
        XCTAssertEqual(union.itemsVisited, 16)
        try store.tearDown()
    }

    func testAPredicateNoIndexCoversIsCheckedOnStoredBytesAndOnlyMatchesAreDecoded() throws {
        let store = try menu()
        var r = DataStoreRequest(itemType: MenuItem.self)
        r.predicate = #Predicate { $0.name == "dish 5" }
        let plan = try store.read { try $0.explain(r) }
        XCTAssertEqual(plan.access, .scan)
        XCTAssertEqual(plan.itemsVisited, 400)
        XCTAssertEqual(plan.itemsDecoded, 1, "decoded only the match: \(plan)")
        try store.tearDown()
    }

    func testTheFirstRequestForATypeAlreadyUsesItsIndexes() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("logstore-plan-\(UUID().uuidString)")
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        let store = LogDataStore(directory: dir)
        try store.setup()
        try store.writeSync { a in
            for i in 0..<100 { try a.insert(MenuItem(id: i, restaurantId: i % 10, category: "c", name: "n", price: i)) }
        }
        try store.tearDown()
        // A new process: the indexes come from the checkpoint; the first read uses them.
        let again = LogDataStore(directory: dir)
        try again.setup()
        var r = DataStoreRequest(itemType: MenuItem.self)
        r.predicate = #Predicate { $0.price == 42 }
        XCTAssertEqual(try again.read { try $0.explain(r) }.access, .index("price"))
        try again.tearDown()
    }

    func testAUniqueIndexRefusesADuplicateThroughTheDataStoreAndRollsTheBlockBack() throws {
        let store = LogDataStore.inMemory()
        try store.setup()
        // The very first write of the type already enforces the unique index.
        try store.writeSync { a in try a.insert(Account(id: "a", email: "x@example.com", handle: "a")) }
        XCTAssertThrowsError(
            try store.writeSync { a in
                try a.insert(Account(id: "b", email: "y@example.com", handle: "b"))
                try a.insert(Account(id: "c", email: "x@example.com", handle: "c"))
            }
        ) { XCTAssertEqual(($0 as? LogStoreError)?.code, .uniqueConstraintViolation, "\($0)") }
        XCTAssertEqual(
            try store.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Account.self)) }, 1, "the whole block rolled back")
        // nil never conflicts; the renamed coding key ("mail") is what the index reads.
        try store.writeSync { a in
            try a.insert(Account(id: "d", email: nil, handle: "d"))
            try a.insert(Account(id: "e", email: nil, handle: "e"))
        }
        var r = DataStoreRequest(itemType: Account.self)
        let wanted = "x@example.com"
        r.predicate = #Predicate { $0.email == wanted }
        let plan = try store.read { try $0.explain(r) }
        XCTAssertEqual(plan.access, .index("mail"), "\(plan)")
        XCTAssertEqual(plan.resultCount, 1)
        // A child store sees its own changes through the parent's index; the merge is checked.
        let child = try store.makeChildDataStore()
        try child.writeSync { a in try a.insert(Account(id: "f", email: "x@example.com", handle: "f")) }
        XCTAssertEqual(try child.read { try $0.items(forRequest: r) }.map(\.id), ["a", "f"], "the child's view: no check until the merge")
        XCTAssertThrowsError(try store.merge(child)) { XCTAssertEqual(($0 as? LogStoreError)?.code, .uniqueConstraintViolation, "\($0)") }
        try store.tearDown()
    }

    struct Computed: DataStoreItem {
        var id: Int
        var first: String
        var shout: String { first.uppercased() }
        static let indexes: [DataStoreIndex<Computed>] = [.init(\.shout)]
    }

    func testAnIndexOnAPropertyThatIsNotStoredIsRefusedWithAFix() throws {
        let store = LogDataStore.inMemory()
        try store.setup()
        XCTAssertThrowsError(try store.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Computed.self)) }) { error in
            let e = error as? LogStoreError
            XCTAssertEqual(e?.code, .invalidArgument)
            XCTAssertTrue(e?.message.contains("DataStoreIndex(attributes:") ?? false, "\(error)")
        }
        try store.tearDown()
    }
}
