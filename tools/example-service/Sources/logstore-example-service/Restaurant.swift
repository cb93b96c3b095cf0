import Foundation
import Hummingbird
import LogStore

/// What the service stores: a restaurant, with a running count of its ratings.
struct Restaurant: DataStoreItem, ResponseCodable, Equatable {
    var id: UUID
    var name: String
    var cuisine: String
    var ratings: Int
    var ratingSum: Int

    /// Lookups by cuisine are planned through this index (and enforced nowhere: not unique).
    static let indexes: [DataStoreIndex<Restaurant>] = [DataStoreIndex(\.cuisine)]

    var average: Double { ratings == 0 ? 0 : Double(ratingSum) / Double(ratings) }
}

/// The body of `POST /restaurants`.
struct NewRestaurant: Decodable {
    var name: String
    var cuisine: String
}

/// The body of `POST /restaurants/:id/ratings`.
struct NewRating: Decodable {
    var stars: Int
}

/// A restaurant as the API shows it.
struct RestaurantView: ResponseCodable {
    var id: UUID
    var name: String
    var cuisine: String
    var ratings: Int
    var average: Double

    init(_ r: Restaurant) {
        id = r.id
        name = r.name
        cuisine = r.cuisine
        ratings = r.ratings
        average = r.average
    }
}
