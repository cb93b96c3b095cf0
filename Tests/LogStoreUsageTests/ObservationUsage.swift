// Compile-and-run checks of the patterns the "Observing Changes" article teaches, in Swift 6
// language mode with strict concurrency.
import Foundation
import LogStore
import Observation
import XCTest

struct Order: DataStoreItem {
    var id: UUID
    var status: String
}

struct OpenRestaurant: DataStoreItem {
    var id: UUID
    var name: String
    var isOpen: Bool
}

// Pattern: a main-actor view model that owns the observation's task.
@MainActor @Observable
final class OpenRestaurantsModel {
    private(set) var restaurants: [OpenRestaurant] = []
    private(set) var failure: (any Error)?
    private var observation: Task<Void, Never>?

    func start(_ store: any DataStore) {
        var open = DataStoreRequest(itemType: OpenRestaurant.self)
        open.predicate = #Predicate { $0.isOpen }
        open.sortDescriptors = [SortDescriptor(\.name)]
        observation = Task {
            do {
                for try await results in store.observe(open) {
                    restaurants = Array(results.items)
                }
            } catch {
                failure = error
            }
        }
    }

    func stop() { observation?.cancel() }
}

// Pattern: a server's Server-Sent Events for one order.
func orderEvents(_ store: any DataStore, orderID: UUID) -> some AsyncSequence<String, any Error> {
    store.observeItem(ofType: Order.self, id: orderID).map { element in
        let status = element.item?.status ?? "deleted"
        return "id: \(element.sequence)\nevent: order\ndata: {\"status\":\"\(status)\"}\n\n"
    }
}

final class ObservationUsageTests: XCTestCase {
    @MainActor
    func testTheArticlesPatternsRun() async throws {
        let store = LogDataStore.inMemory()
        try store.setup()
        let model = OpenRestaurantsModel()
        model.start(store)
        try await store.write { try $0.insert(OpenRestaurant(id: UUID(), name: "Rice", isOpen: true)) }
        for _ in 0..<2000 where model.restaurants.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
        XCTAssertEqual(model.restaurants.map(\.name), ["Rice"])
        model.stop()

        let id = UUID()
        var events = orderEvents(store, orderID: id).makeAsyncIterator()
        let first = try await events.next()
        XCTAssertTrue(first?.contains("deleted") == true)
        try await store.write { try $0.insert(Order(id: id, status: "cooking")) }
        let second = try await events.next()
        XCTAssertTrue(second?.contains("cooking") == true)

        // Change tracking: what a sync engine does between launches.
        var token = try store.changeToken()
        try await store.write { try $0.insert(Order(id: id, status: "delivered")) }
        let changes = try store.changes(since: token)
        XCTAssertEqual(try changes.changes(of: Order.self).insertedOrUpdated, [id])
        token = changes.token
        XCTAssertTrue(try store.changes(since: token).isEmpty)
        try store.tearDown()
        XCTAssertNil(model.failure)
    }
}
