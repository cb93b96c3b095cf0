import Foundation
import GRDB
import LogStore

// The app workload's food-delivery app: 20,000 restaurants, 400,000 menu items and 200,000 orders,
// the same rows in LogStore (declared `DataStoreIndex`es) and in SQLite through GRDB (the matching
// SQL indexes). Every type is both a `DataStoreItem` and a GRDB record, so both stores hold the
// same values; `AppData` makes them deterministically from their ids.

/// A restaurant. Indexes: (cuisine, isOpen, rating) for "open restaurants of one cuisine, best
/// first", (name) for browsing by name.
struct Restaurant: DataStoreItem, Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    static var itemType: String { "Restaurant" }
    static var databaseTableName: String { "restaurant" }

    var id: Int
    var name: String
    var cuisine: String
    var rating: Double
    var isOpen: Bool

    static let indexes: [DataStoreIndex<Restaurant>] = [
        .init(\.cuisine, \.isOpen, \.rating),
        .init(\.name),
    ]
}

/// A dish on a restaurant's menu. Indexes: (restaurantId, category, name) for "the menu of this
/// restaurant", (price) for price ranges.
struct MenuItem: DataStoreItem, Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    static var itemType: String { "MenuItem" }
    static var databaseTableName: String { "menuItem" }

    var id: Int
    var restaurantId: Int
    var category: String
    var name: String
    var price: Int

    static let indexes: [DataStoreIndex<MenuItem>] = [
        .init(\.restaurantId, \.category, \.name),
        .init(\.price),
    ]
}

/// The same values as ``MenuItem`` in a type with no secondary index (the bulk-insert, open and
/// memory baselines).
struct PlainMenuItem: DataStoreItem, Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    static var itemType: String { "PlainMenuItem" }
    static var databaseTableName: String { "plainMenuItem" }

    var id: Int
    var restaurantId: Int
    var category: String
    var name: String
    var price: Int

    init(_ m: MenuItem) {
        id = m.id
        restaurantId = m.restaurantId
        category = m.category
        name = m.name
        price = m.price
    }
}

/// An order. Indexes: (createdAt) for "orders of the last 24 hours", (restaurantId, createdAt)
/// for a restaurant's order history.
struct DeliveryOrder: DataStoreItem, Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    static var itemType: String { "Order" }
    static var databaseTableName: String { "deliveryOrder" }

    var id: Int
    var restaurantId: Int
    var createdAt: Date
    var total: Int

    static let indexes: [DataStoreIndex<DeliveryOrder>] = [
        .init(\.createdAt),
        .init(\.restaurantId, \.createdAt),
    ]
}

/// Sizes of the app's data set and the deterministic rows.
enum AppData {
    static let restaurants = 20_000
    static let menuItems = 400_000
    static let orders = 200_000
    /// "Now" for the orders: they were placed in the 30 days before it.
    static let now = Date(timeIntervalSinceReferenceDate: 760_000_000)
    static let orderWindow: TimeInterval = 30 * 86_400

    static let cuisines = [
        "thai", "italian", "indian", "japanese", "mexican", "chinese", "french", "greek", "korean", "vietnamese",
        "lebanese", "spanish", "turkish", "ethiopian", "american", "burgers", "pizza", "sushi", "vegan", "bakery",
    ]
    static let categories = ["starters", "soups", "salads", "mains", "sides", "desserts", "drinks", "specials"]
    static let adjectives = [
        "Golden", "Little", "Blue", "Happy", "Old", "Green", "Royal", "Spicy", "Lucky", "Silver", "Red", "Sunny",
        "Hidden", "Grand", "Urban", "Rustic",
    ]
    static let nouns = [
        "Spoon", "Garden", "Dragon", "Table", "Kitchen", "Lantern", "Oven", "Fork", "Bowl", "Harbour", "Market",
        "Corner", "Terrace", "Bistro", "Canteen", "House",
    ]
    static let dishes = [
        "curry", "noodles", "salad", "soup", "rice", "tacos", "pasta", "pizza", "burger", "dumplings", "skewers",
        "pancakes", "stew", "bowl", "wrap", "tart", "cake", "lemonade", "tea", "platter",
    ]
    static let dishAdjectives = [
        "spicy", "crispy", "grilled", "smoked", "sweet", "sour", "fresh", "roasted", "green", "red", "house", "classic",
    ]

    static func rng(_ kind: UInt64, _ id: Int) -> SplitMix64 {
        SplitMix64(seed: UInt64(bitPattern: Int64(id)) &* 0x2545_F491_4F6C_DD1D ^ (kind &* 0x9E37_79B9_7F4A_7C15))
    }

    static func restaurant(_ id: Int) -> Restaurant {
        var r = rng(1, id)
        let name = "\(adjectives[Int(r.next() % 16)]) \(nouns[Int(r.next() % 16)]) \(id)"
        let cuisine = cuisines[Int(r.next() % UInt64(cuisines.count))]
        let rating = Double(10 + r.next() % 41) / 10
        let isOpen = r.next() % 10 < 6
        return Restaurant(id: id, name: name, cuisine: cuisine, rating: rating, isOpen: isOpen)
    }

    static func menuItem(_ id: Int) -> MenuItem {
        var r = rng(2, id)
        let restaurantId = Int(r.next() % UInt64(restaurants))
        let category = categories[Int(r.next() % UInt64(categories.count))]
        let name = "\(dishAdjectives[Int(r.next() % 12)]) \(dishes[Int(r.next() % 20)]) \(id % 97)"
        let price = 300 + Int(r.next() % 3_000)
        return MenuItem(id: id, restaurantId: restaurantId, category: category, name: name, price: price)
    }

    static func order(_ id: Int) -> DeliveryOrder {
        var r = rng(3, id)
        let restaurantId = Int(r.next() % UInt64(restaurants))
        // Whole milliseconds, which GRDB's text dates keep exactly.
        let ago = Double(r.next() % UInt64(orderWindow * 1000)) / 1000
        let total = 800 + Int(r.next() % 8_000)
        return DeliveryOrder(id: id, restaurantId: restaurantId, createdAt: now.addingTimeInterval(-ago), total: total)
    }

    /// Bytes of the indexed values of a menu item in index (restaurantId, category, name) and in
    /// (price), plus its id (8 bytes): what the values themselves hold (8 per number, UTF-8 per
    /// string), before any encoding.
    static func menuValueBytes(_ m: MenuItem) -> (compound: Int, price: Int) {
        (8 + m.category.utf8.count + m.name.utf8.count + 8, 8 + 8)
    }
}

// MARK: - SQLite (GRDB) with the matching indexes

/// The app's rows in SQLite through GRDB 7.10.0 (`DatabasePool`, WAL, synchronous=FULL): one table
/// per type with `id INTEGER PRIMARY KEY` and the indexes the LogStore types declare (`withIndexes`),
/// or none.
final class AppSQLite: Sendable {
    let path: String
    let pool: DatabasePool

    init(path: String, withIndexes: Bool = true) throws {
        self.path = path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        pool = try DatabasePool(path: path + "/app.sqlite")
        let level = try pool.writeWithoutTransaction { db -> Int in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            return try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1
        }
        guard level == 2 else { throw BenchError("SQLite: PRAGMA synchronous is \(level), wanted FULL") }
        try pool.write { db in
            try db.create(table: Restaurant.databaseTableName) { t in
                t.primaryKey("id", .integer)
                t.column("name", .text).notNull()
                t.column("cuisine", .text).notNull()
                t.column("rating", .double).notNull()
                t.column("isOpen", .boolean).notNull()
            }
            for table in [MenuItem.databaseTableName, PlainMenuItem.databaseTableName] {
                try db.create(table: table) { t in
                    t.primaryKey("id", .integer)
                    t.column("restaurantId", .integer).notNull()
                    t.column("category", .text).notNull()
                    t.column("name", .text).notNull()
                    t.column("price", .integer).notNull()
                }
            }
            try db.create(table: DeliveryOrder.databaseTableName) { t in
                t.primaryKey("id", .integer)
                t.column("restaurantId", .integer).notNull()
                t.column("createdAt", .datetime).notNull()
                t.column("total", .integer).notNull()
            }
            guard withIndexes else { return }
            try db.create(
                index: "restaurant_cuisine_isOpen_rating", on: Restaurant.databaseTableName, columns: ["cuisine", "isOpen", "rating"])
            try db.create(index: "restaurant_name", on: Restaurant.databaseTableName, columns: ["name"])
            try db.create(
                index: "menuItem_restaurantId_category_name", on: MenuItem.databaseTableName, columns: ["restaurantId", "category", "name"])
            try db.create(index: "menuItem_price", on: MenuItem.databaseTableName, columns: ["price"])
            try db.create(index: "deliveryOrder_createdAt", on: DeliveryOrder.databaseTableName, columns: ["createdAt"])
            try db.create(
                index: "deliveryOrder_restaurantId_createdAt", on: DeliveryOrder.databaseTableName, columns: ["restaurantId", "createdAt"])
        }
    }

    /// The app's database written by an earlier run (`--app-dir`).
    init(existing path: String) throws {
        self.path = path
        pool = try DatabasePool(path: path + "/app.sqlite")
    }

    /// One write transaction inserting `records`.
    func insert<R: PersistableRecord & Sendable>(_ records: ArraySlice<R>) throws {
        try pool.write { db in for r in records { try r.insert(db) } }
    }

    func close() throws { try pool.close() }
}
