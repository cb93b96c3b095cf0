import Foundation
import Hummingbird
import LogStore

/// The service's routes. Every handler goes through the `DataStore` API only (its async twins,
/// which run the store's blocking work off Swift's cooperative pool and off the event loops), so
/// the same code runs on LogStore and on PostgreSQL.
func makeRouter(store: any DataStore) -> Router<BasicRequestContext> {
    let router = Router()
    router.add(middleware: StoreErrorMiddleware())

    router.get("/health") { _, _ -> String in "ok" }

    // GET /restaurants?cuisine=thai&limit=20: by name, filtered by cuisine.
    router.get("/restaurants") { request, _ -> [RestaurantView] in
        var query = DataStoreRequest(itemType: Restaurant.self)
        if let cuisine = request.uri.queryParameters.get("cuisine") {
            query.predicate = #Predicate { $0.cuisine == cuisine }
        }
        query.sortDescriptors = [SortDescriptor(\Restaurant.name)]
        query.limit = request.uri.queryParameters.get("limit", as: Int.self) ?? 50
        let fetch = query
        let found = try await store.read { try $0.items(forRequest: fetch) }
        return found.map(RestaurantView.init)
    }

    router.get("/restaurants/:id") { _, context -> RestaurantView in
        let id = try uuid(context)
        guard let found = try await store.read({ try $0.item(ofType: Restaurant.self, id: id) }) else {
            throw HTTPError(.notFound, message: "No restaurant \(id).")
        }
        return RestaurantView(found)
    }

    router.post("/restaurants") { request, context -> EditedResponse<RestaurantView> in
        let body = try await request.decode(as: NewRestaurant.self, context: context)
        let restaurant = Restaurant(id: UUID(), name: body.name, cuisine: body.cuisine.lowercased(), ratings: 0, ratingSum: 0)
        try await store.write { try $0.insert(restaurant) }
        return EditedResponse(status: .created, response: RestaurantView(restaurant))
    }

    // A read-modify-write: on PostgreSQL a conflicting rating from another server makes the
    // store run this block again, so it computes from what it reads and has no other effect.
    router.post("/restaurants/:id/ratings") { request, context -> RestaurantView in
        let id = try uuid(context)
        let rating = try await request.decode(as: NewRating.self, context: context)
        guard (1...5).contains(rating.stars) else { throw HTTPError(.badRequest, message: "stars must be 1 to 5.") }
        let updated = try await store.write { accessor -> Restaurant? in
            guard var r = try accessor.item(ofType: Restaurant.self, id: id) else { return nil }
            r.ratings += 1
            r.ratingSum += rating.stars
            try accessor.insert(r)
            return r
        }
        guard let updated else { throw HTTPError(.notFound, message: "No restaurant \(id).") }
        return RestaurantView(updated)
    }

    // GET /restaurants/:id/menu: the restaurant's dishes by category and name (an indexed query).
    router.get("/restaurants/:id/menu") { _, context -> [MenuItem] in
        let id = try uuid(context)
        var query = DataStoreRequest(itemType: MenuItem.self)
        query.predicate = #Predicate { $0.restaurantId == id }
        query.sortDescriptors = [SortDescriptor(\MenuItem.category), SortDescriptor(\MenuItem.name)]
        let fetch = query
        return try await store.read { try $0.items(forRequest: fetch) }
    }

    // POST /restaurants/:id/orders: 201 once the order is committed (durable), with its id.
    router.post("/restaurants/:id/orders") { request, context -> EditedResponse<Order> in
        let id = try uuid(context)
        let body = try await request.decode(as: NewOrder.self, context: context)
        let order = Order(id: UUID(), restaurantId: id, dishes: body.dishes, createdAt: Date())
        try await store.write { try $0.insert(order) }
        return EditedResponse(status: .created, response: order)
    }

    // GET /stats: counts of every item type (the load test counts orders with it).
    router.get("/stats") { _, _ -> Stats in
        try await store.read { a in
            Stats(
                restaurants: try a.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)),
                menuItems: try a.countItems(forRequest: DataStoreRequest(itemType: MenuItem.self)),
                orders: try a.countItems(forRequest: DataStoreRequest(itemType: Order.self)))
        }
    }

    // POST /seed {"restaurants": 100, "dishes": 20}: restaurants with menus, for load tests; the
    // ids of the new restaurants.
    router.post("/seed") { request, context -> [UUID] in
        let seed = try await request.decode(as: Seed.self, context: context)
        guard (1...10_000).contains(seed.restaurants), (0...200).contains(seed.dishes) else {
            throw HTTPError(.badRequest, message: "restaurants must be 1 to 10000, dishes 0 to 200.")
        }
        let categories = ["starters", "mains", "desserts", "drinks"]
        var ids: [UUID] = []
        for _ in 0..<seed.restaurants {
            let r = Restaurant(id: UUID(), name: "Restaurant \(ids.count)", cuisine: "thai", ratings: 0, ratingSum: 0)
            let menu = (0..<seed.dishes).map { d in
                MenuItem(id: UUID(), restaurantId: r.id, category: categories[d % categories.count], name: "Dish \(d)", price: 500 + d * 50)
            }
            try await store.write { a in
                try a.insert(r)
                for m in menu { try a.insert(m) }
            }
            ids.append(r.id)
        }
        return ids
    }

    router.delete("/restaurants/:id") { _, context -> HTTPResponse.Status in
        let id = try uuid(context)
        let deleted = try await store.write { try $0.deleteItem(ofType: Restaurant.self, id: id) }
        return deleted ? .noContent : .notFound
    }

    return router
}

/// The `:id` parameter as a UUID (400 otherwise).
func uuid(_ context: BasicRequestContext) throws -> UUID {
    let text = try context.parameters.require("id")
    guard let id = UUID(uuidString: text) else { throw HTTPError(.badRequest, message: "\(text) is not a UUID.") }
    return id
}
