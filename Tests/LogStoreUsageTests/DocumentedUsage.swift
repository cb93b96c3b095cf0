// Compile-only checks: the usage patterns the documentation teaches compile in Swift 6 language
// mode with strict concurrency. The tests run them once against an in-memory store.
import Foundation
import LogStore
import XCTest

struct Restaurant: DataStoreItem {
    var id: UUID
    var name: String
    var rating: Int
}

// Pattern: a shared client, as in JustPersist's README, typed as the protocol.
enum DataStoreClient {
    static let shared: any DataStore = LogDataStore.inMemory()
}

// Pattern: an actor that owns no store state, only a reference to a Sendable store.
actor RestaurantRepository {
    let store: any DataStore
    init(store: any DataStore) { self.store = store }

    func add(_ name: String) async throws -> UUID {
        let item = Restaurant(id: UUID(), name: name, rating: 3)
        try await store.write { try $0.insert(item) }  // item is Sendable: crosses into the block
        return item.id
    }

    func best(limit: Int) async throws -> [Restaurant] {
        try await store.read { accessor in
            var request = DataStoreRequest(itemType: Restaurant.self)
            request.predicate = #Predicate { $0.rating >= 4 }
            request.sortDescriptors = [SortDescriptor(\.name)]
            request.limit = limit
            return try accessor.items(forRequest: request)
        }
    }
}

// Pattern: a main-actor view model calling sync reads (they never wait for writers).
@MainActor
final class RestaurantsViewModel {
    let store: any DataStore
    var names: [String] = []
    init(store: any DataStore) { self.store = store }
    func reload() throws {
        names = try store.read { try $0.items(forRequest: DataStoreRequest(itemType: Restaurant.self)) }.map(\.name)
    }
}

final class DocumentedUsageTests: XCTestCase {
    func testPatternsCompileAndRun() async throws {
        let store = LogDataStore.inMemory()
        try store.setup()
        let repo = RestaurantRepository(store: store)
        _ = try await repo.add("A")
        _ = try await repo.best(limit: 5)
        let vm = await RestaurantsViewModel(store: store)
        try await vm.reload()
        // Pattern: writeAsync with a Sendable completion.
        let exp = expectation(description: "async")
        store.writeAsync({ try $0.insert(Restaurant(id: UUID(), name: "B", rating: 5)) }, completion: { _ in exp.fulfill() })
        await fulfillment(of: [exp], timeout: 10)
        // Pattern: tasks writing concurrently.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<8 {
                group.addTask { try await store.write { try $0.insert(Restaurant(id: UUID(), name: "T\(i)", rating: 1)) } }
            }
            try await group.waitForAll()
        }
        // In async code the async twins are chosen: `try await store.read { ... }`.
        let n = try await store.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)) }
        XCTAssertEqual(n, 10)
        // Pattern: dynamic access for a migration.
        try await store.write { accessor in
            for var item in try accessor.dynamicItems(ofType: "Restaurant") {
                item.setObject(.string("unknown"), forKey: "cuisine")
                try accessor.insert(item)
            }
        }
        let migrated = try await store.read { try $0.dynamicItems(ofType: "Restaurant") }
        XCTAssertEqual(migrated.first?.object(forKey: "cuisine"), .string("unknown"))
        try DataStoreClient.shared.setup()
        try DataStoreClient.shared.tearDown()
        try store.tearDown()
    }
}
