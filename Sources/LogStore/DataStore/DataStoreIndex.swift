import Foundation
package import LogStoreEngine

/// A secondary index declared on an item type: the store keeps the type's items ordered by
/// these properties, so requests that filter or sort by them read only what they return.
///
/// ```swift
/// struct MenuItem: DataStoreItem {
///     var id: UUID
///     var restaurantId: UUID
///     var category: String
///     var name: String
///     var price: Int
///
///     static let indexes: [DataStoreIndex<MenuItem>] = [
///         .init(\.restaurantId, \.category, \.name),   // compound: equality on leading columns, then a range or a sort
///         .init(\.price),
///         .init(\.name, unique: true),                 // two items may not share a name
///     ]
/// }
/// ```
///
/// Rules (see the "Indexes and Query Performance" article):
/// 1. Properties are named by key path; the store finds where each is stored in the item's
///    Codable form (custom `CodingKeys` included). A key path it cannot place (a computed
///    property, a type whose `init(from:)` rejects probe values) makes declaring the index throw
///    `.invalidArgument`: name the stored attribute instead with ``init(attributes:unique:name:)``.
/// 2. Values order as LogStore sorts them: `nil` first, then Booleans, numbers (integers and
///    doubles together, exactly; NaN last), strings (by the bytes of their Unicode NFC form),
///    data, dates, UUIDs, arrays (element by element, each as one whole value), maps; ties by id.
/// 3. A `unique` index refuses a write that would give two items equal values in every column
///    (`.uniqueConstraintViolation`, the write rolls back); items with a `nil` column never
///    conflict.
/// 4. Indexes are derived from the items: declaring, changing or removing one never changes
///    data. They are built when the store first uses the type (or at ``LogDataStore/prepareIndexes(for:)``),
///    kept in the same atomic commit as every write, and saved in checkpoints.
///
/// A value type, `Sendable`; declare indexes in a `static let`.
public struct DataStoreIndex<Item: DataStoreItem>: @unchecked Sendable, CustomStringConvertible {
    // @unchecked: key paths are immutable objects, safe to share between threads (the standard
    // library marks them Sendable in the Swift 6 language mode).
    /// The indexed properties, most significant first (nil for an index declared by attribute names).
    public let keyPaths: [PartialKeyPath<Item>]?
    /// The stored attribute paths, when declared by name.
    let attributeNames: [[String]]?
    /// Whether two items may not have equal values in every column.
    public let unique: Bool
    /// The index's name, or nil for the default (its attributes, joined).
    public let name: String?

    /// An index on the given properties, most significant first. `unique`: see rule 3.
    public init(_ keyPaths: PartialKeyPath<Item>..., unique: Bool = false, name: String? = nil) {
        self.keyPaths = keyPaths
        attributeNames = nil
        self.unique = unique
        self.name = name
    }

    /// An index on stored attributes named by their coding keys (`"address.city"` for a nested
    /// one), for items whose properties a key path cannot place, and for ``DynamicItem``s.
    public init(attributes: [String], unique: Bool = false, name: String? = nil) {
        keyPaths = nil
        attributeNames = attributes.map { $0.split(separator: ".").map(String.init) }
        self.unique = unique
        self.name = name
    }

    /// The engine's definition of this index. Throws `.invalidArgument` when a key path cannot
    /// be placed in the item's stored form (rule 1).
    package func definition() throws -> IndexDefinition {
        let paths: [[String]]
        if let keyPaths {
            paths = try keyPaths.map { kp in
                guard let path = KeyPathResolver.codingPath(of: kp, in: Item.self) else {
                    throw LogStoreError(
                        .invalidArgument,
                        "The index on \(kp) of \(Item.itemType) names a property that is not stored under a coding key LogStore can find (a computed property, or a type whose init(from:) rejects probe values). Declare it by its stored name instead: DataStoreIndex(attributes: [\"...\"])."
                    )
                }
                return path
            }
        } else {
            paths = attributeNames ?? []
        }
        return try IndexDefinition(name: name, attributes: paths, unique: unique).validated(forType: Item.itemType)
    }

    /// `(\Item.a, \Item.b)`, with `unique` when unique.
    public var description: String {
        let columns = keyPaths.map { $0.map { "\($0)" } } ?? (attributeNames ?? []).map { $0.joined(separator: ".") }
        return "\(unique ? "unique " : "")index(\(columns.joined(separator: ", ")))"
    }
}
