import Foundation
import LogStoreEngine

/// The total order of a request's results, on decoded items: its sort descriptors (LogStore's
/// total order for numbers, dates and strings), then ascending key (id): `SortedResults`' order
/// (the same ``NumberOrder`` comparators and tie-break), so an observation can place a changed
/// item without running the request again. Immutable.
final class ResultOrder<Item: DataStoreItem>: Sendable {
    let comparators: [@Sendable (Item, Item) -> ComparisonResult]

    init(_ descriptors: [SortDescriptor<Item>]) { comparators = descriptors.map(NumberOrder.comparator) }

    func less(_ a: ResultEntry<Item>, _ b: ResultEntry<Item>) -> Bool {
        NumberOrder.precedes(a.item, b.item, by: comparators) ?? (a.key < b.key)
    }
}

/// One result of an observed request: its key, its item, and the order that places it. A class:
/// the trees and maps an observation keeps copy entries often, and a copy is then one retain
/// instead of a copy of every field of the item.
final class ResultEntry<Item: DataStoreItem>: Comparable, Sendable {
    let key: RecordKey
    let item: Item
    let order: ResultOrder<Item>

    init(key: RecordKey, item: Item, order: ResultOrder<Item>) {
        self.key = key
        self.item = item
        self.order = order
    }

    static func < (a: ResultEntry, b: ResultEntry) -> Bool { a.order.less(a, b) }
    static func == (a: ResultEntry, b: ResultEntry) -> Bool { !a.order.less(a, b) && !a.order.less(b, a) }
}

/// A request's predicate and order, evaluated on decoded items, to decide which commits can change
/// an observed result.
struct RequestMatcher<Item: DataStoreItem>: Sendable {
    let predicate: Predicate<Item>?
    let order: ResultOrder<Item>
    /// The request filters or sorts by stored attribute (``DataStoreRequest/setFilter(whereAttribute:equalsValue:)``,
    /// ``DataStoreRequest/setSort(whereAttribute:ascending:)``), which are evaluated on stored
    /// bytes, not on items: any change of the type may be relevant, and the request is run again.
    let readsAttributes: Bool

    init(_ request: DataStoreRequest<Item>) {
        predicate = request.predicate
        order = ResultOrder(request.sortDescriptors)
        readsAttributes = request.attributeFilter != nil || request.attributeSort != nil
    }

    /// Whether `item` passes the predicate. Rethrows the predicate's error.
    func matches(_ item: Item) throws -> Bool { try predicate?.evaluate(item) ?? true }

    func entry(_ key: RecordKey, _ item: Item) -> ResultEntry<Item> { ResultEntry(key: key, item: item, order: order) }
}

/// Whether two values of an item are the same: `==` for `Equatable` items, equal encoded bytes
/// otherwise (so a commit that rewrites an item with the same value changes nothing observed).
enum ItemValues {
    static func same<Item: DataStoreItem>(_ a: Item, _ b: Item) -> Bool {
        if let a = a as? any Equatable { return equal(a, b) }
        guard let x = try? AttributeCoding.encodeBytes(a), let y = try? AttributeCoding.encodeBytes(b) else { return false }
        return x == y
    }

    private static func equal<E: Equatable>(_ a: E, _ b: Any) -> Bool {
        guard let b = b as? E else { return false }
        return a == b
    }
}

extension DataStoreSnapshot {
    /// The items of `keys` in this state (a key with no item is absent). Throws `.decodingFailed`
    /// for a key or record that is not an `Item`, and the read's errors.
    func items<Item: DataStoreItem>(_ type: Item.Type, keys: some Sequence<RecordKey>) throws -> [RecordKey: Item] {
        try read { accessor in
            var out: [RecordKey: Item] = [:]
            for key in keys {
                if let item = try accessor.item(ofType: Item.self, id: try ItemKey.id(Item.ID.self, from: key)) { out[key] = item }
            }
            return out
        }
    }
}

/// The keys of `type` a batch of commits touched, and whether one of them may have changed every
/// item of it (a delete-all, or a reset).
func touchedKeys(_ commits: [CommitChanges], type: String) -> (keys: Set<RecordKey>, all: Bool) {
    var keys = Set<RecordKey>()
    var all = false
    for c in commits {
        if c.isReset { all = true }
        guard let t = c.types[type] else { continue }
        if t.cleared != nil { all = true }
        keys.formUnion(t.written)
        keys.formUnion(t.deleted)
    }
    return (keys, all)
}
