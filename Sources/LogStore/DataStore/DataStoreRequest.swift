public import Foundation

/// What to fetch: an item type, an optional predicate, sort order, offset and limit
/// (Core Data's `NSFetchRequest`, JustPersist's `DataStoreRequest`).
///
/// ```swift
/// var request = DataStoreRequest(itemType: Restaurant.self)
/// request.predicate = #Predicate { $0.rating >= 4 }
/// request.sortDescriptors = [SortDescriptor(\.name)]
/// request.limit = 10
/// ```
///
/// Results are deterministic: ties in the sort order, and results of a request with no sort, come
/// in ascending id order. A value type: safe to build on one thread and run on another.
public struct DataStoreRequest<Item: DataStoreItem>: Sendable {
    /// Only items for which the predicate is true are returned. Any predicate that compiles works:
    /// each item is decoded and the predicate evaluated.
    public var predicate: Predicate<Item>?
    /// The sort order, most significant first. Setting it removes an attribute sort set by
    /// ``setSort(whereAttribute:ascending:)``. Descriptors on `Double`, `Float` and `Date`
    /// properties (optional or not) use LogStore's total order (NaN after `+infinity`, `-0.0`
    /// equal to `0.0`; see the Requests article), so a `limit` never changes which items come first.
    public var sortDescriptors: [SortDescriptor<Item>] = [] {
        didSet { attributeSort = nil }
    }
    /// How many matching items to skip (after sorting). Default 0; negative throws `.invalidArgument`.
    public var offset: Int = 0
    /// The most items to return (after the offset). nil (the default) = no limit.
    public var limit: Int?

    /// An attribute equality filter set by ``setFilter(whereAttribute:equalsValue:)``.
    package var attributeFilter: (attribute: String, value: Result<AttributeValue, LogStoreError>)?
    /// An attribute sort set by ``setSort(whereAttribute:ascending:)``.
    package var attributeSort: (attribute: String, ascending: Bool)?

    /// Whether results are sorted (by descriptors or an attribute sort) rather than in id order.
    package var isSorted: Bool { !sortDescriptors.isEmpty || attributeSort != nil }

    /// A request for every item of `itemType`, in ascending id order.
    public init(itemType: Item.Type) {}

    /// JustPersist's convenience filter: only items whose attribute `attribute` (the coding key)
    /// equals `value`. Replaces any earlier attribute filter; combines (AND) with ``predicate``.
    /// Checked on the stored record before the item is decoded. Numbers compare by value
    /// (`5` equals `5.0`). If `value` cannot be encoded, running the request throws `.encodingFailed`.
    public mutating func setFilter(whereAttribute attribute: String, equalsValue value: some Encodable & Sendable) {
        let encoded: Result<AttributeValue, LogStoreError>
        do {
            encoded = .success(try AttributeEncoder().encode(value))
        } catch let e as LogStoreError {
            encoded = .failure(e)
        } catch {
            encoded = .failure(LogStoreError(.encodingFailed, "The filter value for \(attribute) could not be encoded.", underlying: error))
        }
        attributeFilter = (attribute, encoded)
    }

    /// Replaces the sort descriptors with one sort on the stored attribute `attribute` (the coding
    /// key). Values order as: missing/null, Booleans, numbers, strings, bytes, dates, UUIDs, arrays,
    /// maps. Numbers (integers and doubles together) and dates use LogStore's total order: NaN
    /// after `+infinity`, `-0.0` equal to `0.0`, exact comparison of integers with doubles.
    /// Ties are broken by id.
    public mutating func setSort(whereAttribute attribute: String, ascending: Bool) {
        sortDescriptors = []
        attributeSort = (attribute, ascending)
    }
}
