import Foundation
import LogStore
import LogStorePostgres
import Testing

/// Declared indexes are PostgreSQL expression indexes that the server uses: a request whose
/// predicate compares an index's leading attribute with a constant is planned through it, and the
/// narrowing that lets it changes no answer.
@Suite(.serialized, .enabled(if: PostgresTestServer.isAvailable, Comment(rawValue: PostgresTestServer.skipReason)))
struct PostgresIndexTests {
    struct Dish: DataStoreItem, Codable, Equatable {
        static let itemType = "Dish"
        static let indexes: [DataStoreIndex<Dish>] = [DataStoreIndex(\.group), DataStoreIndex(\.day)]
        var id: Int
        var group: Int
        var name: String
        var spicy: Bool
        var day: Date
    }

    static func dish(_ i: Int) -> Dish {
        Dish(
            id: i, group: i / 20, name: "dish \(i % 7)", spicy: i % 3 == 0,
            day: Date(timeIntervalSinceReferenceDate: Double(i / 100) * 86_400))
    }

    @Test func anEqualityOnAnIndexedAttributeIsAnIndexScan() throws {
        let schema = PostgresTestServer.freshSchema("i")
        defer { PostgresTestServer.drop(schema: schema) }
        let store = try PostgresTestServer.store(schema: schema)
        try store.setup()
        defer { try? store.tearDown() }
        let all = (0..<4_000).map(Self.dish)
        try store.writeSync { a in for d in all { try a.insert(d) } }
        try PostgresTestServer.execute("ANALYZE \"\(schema)\".\"Dish\"")

        var byGroup = DataStoreRequest(itemType: Dish.self)
        byGroup.predicate = #Predicate { $0.group == 57 }
        let plan = try store.read { try $0.explain(byGroup) }
        #expect(plan.access == .index("group"), "\(plan.residual ?? "")")
        #expect(plan.resultCount == 20)

        let day = Date(timeIntervalSinceReferenceDate: 12 * 86_400)
        var byDay = DataStoreRequest(itemType: Dish.self)
        byDay.predicate = #Predicate { $0.day == day && $0.spicy == true }
        let dayPlan = try store.read { try $0.explain(byDay) }
        #expect(dayPlan.access == .index("day"), "\(dayPlan.residual ?? "")")

        // The narrowing changes no answer: items, counts, sorts, offsets against Swift's filter.
        var sorted = DataStoreRequest(itemType: Dish.self)
        sorted.predicate = #Predicate { $0.group == 57 && $0.name != "dish 3" }
        sorted.sortDescriptors = [SortDescriptor(\Dish.name), SortDescriptor(\Dish.id, order: .reverse)]
        sorted.offset = 2
        let expected = all.filter { $0.group == 57 && $0.name != "dish 3" }.sorted { ($0.name, -$0.id) < ($1.name, -$1.id) }.dropFirst(2)
        try store.read { a throws in
            #expect(try a.items(forRequest: sorted) == Array(expected))
            #expect(try a.countItems(forRequest: byGroup) == 20)
            #expect(try a.items(forRequest: byDay) == all.filter { $0.day == day && $0.spicy })
            var none = DataStoreRequest(itemType: Dish.self)
            none.predicate = #Predicate { $0.group == -1 }
            #expect(try a.items(forRequest: none).isEmpty)
            #expect(try a.countItems(forRequest: none) == 0)
        }
    }
}
