import Foundation
import Synchronization

/// An item stored in a ``DataStore``: a Codable value type (JustPersist's `DataStoreItem`, Core
/// Data's managed object), safe to pass between threads.
///
/// Items are stored by ``itemType`` (the entity name) and `id`. Inserting an item whose id is
/// already stored replaces it. IDs of type `UUID`, `String`, `Int` and `Int64` (and the other
/// integer types) are stored so that results come in ascending id order; any other
/// `Codable & Hashable` id works too, in an unspecified but stable order.
///
/// ```swift
/// struct Restaurant: DataStoreItem {
///     var id: UUID
///     var name: String
///     var rating: Int
/// }
/// ```
public protocol DataStoreItem: Codable, Sendable, Identifiable where ID: Codable & Hashable & Sendable {
    /// The collection ("entity") name stored on disk. Default: the type's name
    /// (`String(describing: Self.self)`, e.g. `"Restaurant"`). Renaming the Swift type changes the
    /// default, so set it explicitly if you might rename the type.
    static var itemType: String { get }

    /// The type's secondary indexes (``DataStoreIndex``). Default: none, and every request with a
    /// predicate or a sort scans the type. Declare them in a `static let`; the store builds and
    /// keeps them (see the "Indexes and Query Performance" article).
    static var indexes: [DataStoreIndex<Self>] { get }
}

extension DataStoreItem {
    /// The type's name, e.g. `"Restaurant"` for `struct Restaurant`. Computed once per type and
    /// process (``DefaultItemTypeNames``): `String(describing:)` walks the type's metadata, about
    /// 13,000 instructions, which every read and write would otherwise pay.
    public static var itemType: String { DefaultItemTypeNames.name(of: Self.self) }

    /// No secondary index.
    public static var indexes: [DataStoreIndex<Self>] { [] }
}

/// The default ``DataStoreItem/itemType`` of each type, by metatype, computed on first use. Any
/// thread: a lock guards the table (a lookup is a hash of the metatype's address).
enum DefaultItemTypeNames {
    private static let names = Mutex<[ObjectIdentifier: String]>([:])

    /// `String(describing: type)`, from the table after its first use.
    static func name(of type: Any.Type) -> String {
        let id = ObjectIdentifier(type)
        if let known = names.withLock({ $0[id] }) { return known }
        let name = String(describing: type)
        names.withLock { $0[id] = name }
        return name
    }
}
