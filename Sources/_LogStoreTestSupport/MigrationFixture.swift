public import Foundation
public import LogStore

/// The items the migrator's round-trip tests copy between backends (SQLite and PostgreSQL alike):
/// three item types with UUID, negative integer and string ids, and the values a backend's row
/// format must keep exactly (NaN, -0.0, ±infinity, 1e300, the smallest subnormal, composed and
/// decomposed strings, NUL in strings and in map keys, bytes, nils).
public enum MigrationFixture {
    /// A restaurant (UUID ids).
    public struct Restaurant: DataStoreItem, Equatable {
        public static var itemType: String { "Restaurant" }
        public var id: UUID
        public var name: String
        public var rating: Int
        public var opened: Date
        public var tags: [String]
        public var extra: [String: Double]
    }

    /// A menu item (integer ids, half of them negative).
    public struct MenuItem: DataStoreItem, Equatable {
        public static var itemType: String { "MenuItem" }
        public var id: Int
        public var restaurant: UUID
        public var name: String
        public var price: Double
        public var spicy: Bool?
    }

    /// An order (string ids `o0`, `o1`...).
    public struct Order: DataStoreItem, Equatable {
        public static var itemType: String { "Order" }
        public var id: String
        public var items: [Int]
        public var total: Double
        public var note: String?
        public var receipt: Data

        public init(id: String, items: [Int], total: Double, note: String?, receipt: Data) {
            self.id = id
            self.items = items
            self.total = total
            self.note = note
            self.receipt = receipt
        }
    }

    static let names = ["Rice & Spice", "caf\u{E9}", "cafe\u{301}", "Ülm", "東京", "", "a\u{0}b", "\u{1}x"]
    static let prices: [Double] = [0.1, -0.0, .nan, .infinity, 12.5, 1e300, .leastNonzeroMagnitude, -1.5e-7]

    /// Writes `n` items of each type to `store`, in transactions of 500. Deterministic but for
    /// the restaurants' UUIDs.
    public static func seed(_ store: any DataStore, _ n: Int) throws {
        for batch in stride(from: 0, to: n, by: 500) {
            try store.writeSync { a in
                for i in batch..<min(n, batch + 500) {
                    let u = UUID()
                    try a.insert(
                        Restaurant(
                            id: u, name: names[i % names.count] + "\(i)", rating: i % 5,
                            opened: Date(timeIntervalSinceReferenceDate: Double(i) * 1.5 - 7),
                            tags: i % 3 == 0 ? [] : ["t\(i % 7)"], extra: ["b": prices[i % prices.count], "ab\u{0}": 1, "$x": -0.0]))
                    try a.insert(
                        MenuItem(
                            id: i - n / 2, restaurant: u, name: "dish \(i)", price: prices[i % prices.count],
                            spicy: i % 4 == 0 ? nil : i % 2 == 0))
                    try a.insert(
                        Order(
                            id: "o\(i)", items: [i, i + 1], total: Double(i) / 3, note: i % 2 == 0 ? nil : "note",
                            receipt: Data((0..<(i % 9)).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ i) })))
                }
            }
        }
    }

    /// Every record of every type of `store`: key bytes, 0xFF, value bytes, per type in key order.
    public static func records(_ store: any DataStore) throws -> [String: [[UInt8]]] {
        try store.read { a in
            var out: [String: [[UInt8]]] = [:]
            for t in try a.itemTypeNames() {
                try a.forEachRecord(ofType: t, after: nil) { k, v in
                    out[t, default: []].append(k.bytes + [0xFF] + Array(v))
                    return true
                }
            }
            return out
        }
    }
}
