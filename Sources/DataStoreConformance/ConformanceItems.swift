import Foundation
import LogStore

// The item types the cases store. Their `itemType` names are the suite's own, so a backend that
// lists its types sees exactly these.

/// String ids (byte order), a name, a rating and tags.
struct Restaurant: DataStoreItem, Equatable {
    static let itemType = "Restaurant"
    var id: String
    var name: String
    var rating: Int
    var tags: [String] = []
}

/// Integer ids (numeric order).
struct Numbered: DataStoreItem, Equatable {
    static let itemType = "Numbered"
    var id: Int
    var value: String
}

/// UUID ids and an optional property; an item type name that is not a Swift identifier.
struct Tagged: DataStoreItem, Equatable {
    static let itemType = "tagged-items"
    var id: UUID
    var note: String?
}

/// Int64 ids.
struct Wide: DataStoreItem, Equatable {
    static let itemType = "Wide"
    var id: Int64
    var v: Int
}

/// UInt64 ids, above Int64.max too.
struct Unsigned: DataStoreItem, Equatable {
    static let itemType = "Unsigned"
    var id: UInt64
}

/// Floating-point fields for the total order of sorts.
struct Measured: DataStoreItem, Equatable {
    static let itemType = "Measured"
    var id: Int
    var value: Double
    var single: Float
    var maybe: Double?

    static func == (a: Measured, b: Measured) -> Bool {
        a.id == b.id && a.value.bitPattern == b.value.bitPattern && a.single.bitPattern == b.single.bitPattern
            && a.maybe?.bitPattern == b.maybe?.bitPattern
    }
}

/// An error a block throws, checked to arrive unchanged.
struct Marker: Error, Equatable {
    var n = 1
}

/// `Restaurant` number `n`: id `r000`-style, so ids sort like numbers.
func restaurant(_ n: Int, rating: Int = 3) -> Restaurant {
    Restaurant(id: "r" + String(repeating: "0", count: max(0, 3 - String(n).count)) + String(n), name: "Restaurant \(n)", rating: rating)
}

func countOf<I: DataStoreItem>(_ type: I.Type, in store: any DataStore) throws -> Int {
    try store.read { try $0.countItems(forRequest: DataStoreRequest(itemType: I.self)) }
}

func allOf<I: DataStoreItem>(_ type: I.Type, in store: any DataStore) throws -> [I] {
    try store.read { try $0.items(forRequest: DataStoreRequest(itemType: I.self)) }
}
