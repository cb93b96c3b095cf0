import Foundation
import Hummingbird
import LogStore

/// A dish on a restaurant's menu. The menu of one restaurant is read through the index on
/// `restaurantId` (on PostgreSQL an expression index the server uses).
struct MenuItem: DataStoreItem, ResponseCodable, Equatable {
    var id: UUID
    var restaurantId: UUID
    var category: String
    var name: String
    var price: Int

    static let indexes: [DataStoreIndex<MenuItem>] = [DataStoreIndex(\.restaurantId, \.category, \.name)]
}

/// An order placed at a restaurant.
struct Order: DataStoreItem, ResponseCodable, Equatable {
    var id: UUID
    var restaurantId: UUID
    var dishes: [UUID]
    var createdAt: Date

    static let indexes: [DataStoreIndex<Order>] = [DataStoreIndex(\.restaurantId)]
}

/// The body of `POST /restaurants/:id/orders`.
struct NewOrder: Decodable {
    var dishes: [UUID]
}

/// The body of `POST /seed`: how many restaurants, and dishes per restaurant.
struct Seed: Decodable {
    var restaurants: Int
    var dishes: Int
}

/// What `GET /stats` shows: how many items of each type the store holds.
struct Stats: ResponseCodable {
    var restaurants: Int
    var menuItems: Int
    var orders: Int
}
