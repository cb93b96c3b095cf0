import LogStoreEngine

/// One element of ``DataStore/observe(_:)``: a request's results at one committed state, and how
/// they differ from the previous element's.
///
/// ```swift
/// for try await results in store.observe(request) {
///     rows = Array(results.items)                       // or apply results.difference to your ids
///     reload(results.updatedIDs)
/// }
/// ```
///
/// A value; `Sendable`; keeps what it holds for as long as you keep it.
public struct ObservedResults<Item: DataStoreItem>: Sendable {
    /// The results, exactly what `items(forRequest:)` returns at ``sequence``.
    public let items: ObservedItems<Item>
    /// From the previous element's ids to these ids: removals at offsets of the previous
    /// element, insertions at offsets of this one (an item whose position among the others
    /// changed is removed and inserted; call `inferringMoves()` to pair them). The first element's
    /// inserts every id. `previousIDs.applying(difference)` gives `items.map(\.id)`.
    public let difference: CollectionDifference<Item.ID>
    /// Ids in both the previous element and this one whose item changed (wherever it moved), in
    /// key order: rows to reload.
    public let updatedIDs: [Item.ID]
    /// The sequence of the commit whose state the results reflect.
    public let sequence: UInt64
    /// The token of that state (for ``DataStore/changes(since:)``).
    public let token: DataStoreChangeToken
    /// Whether this is the first element (the initial fetch).
    public let isInitial: Bool
}

/// The items of an ``ObservedResults``: a random-access collection in the request's order.
///
/// An observation of a request without limit or offset keeps its results in a persistent ordered
/// tree, so an element shares them with the next one (O(1) to hand out, whatever the count) and
/// indexing is O(log n); iteration is O(1) per item. Otherwise an array. `Sendable`.
public struct ObservedItems<Item: DataStoreItem>: RandomAccessCollection, Sendable {
    enum Storage: Sendable {
        case array([Item])
        case tree(OrderedTree<ResultEntry<Item>, Bool>)
    }
    let storage: Storage

    /// 0.
    public var startIndex: Int { 0 }
    /// The number of items.
    public var endIndex: Int {
        switch storage {
        case .array(let a): return a.count
        case .tree(let t): return t.count
        }
    }

    /// The item at `position` (0 ..< count). O(1) for an array, O(log n) for a tree.
    public subscript(position: Int) -> Item {
        switch storage {
        case .array(let a): return a[position]
        case .tree(let t):
            guard let e = t.element(at: position) else {
                preconditionFailure("ObservedItems index \(position) out of range 0..<\(t.count)")
            }
            return e.key.item
        }
    }

    /// Iterates in order, O(1) per item.
    public func makeIterator() -> Iterator {
        switch storage {
        case .array(let a): return Iterator(state: .array(a.makeIterator()))
        case .tree(let t): return Iterator(state: .tree(t.makeIterator()))
        }
    }

    /// The iterator of ``ObservedItems``.
    public struct Iterator: IteratorProtocol {
        enum State {
            case array(IndexingIterator<[Item]>)
            case tree(OrderedTree<ResultEntry<Item>, Bool>.Iterator)
        }
        var state: State

        /// The next item, or nil.
        public mutating func next() -> Item? {
            switch state {
            case .array(var i):
                defer { state = .array(i) }
                return i.next()
            case .tree(var i):
                defer { state = .tree(i) }
                return i.next()?.key.item
            }
        }
    }
}

/// One element of ``DataStore/observeItem(ofType:id:)``: the item at one committed state.
public struct ObservedItem<Item: DataStoreItem>: Sendable {
    /// The item, or nil when no item has the id.
    public let item: Item?
    /// The sequence of the commit whose state this reflects.
    public let sequence: UInt64
    /// The token of that state.
    public let token: DataStoreChangeToken
    /// Whether this is the first element.
    public let isInitial: Bool
}

/// One element of ``DataStore/observeCount(_:)``: how many items match a request at one
/// committed state.
public struct ObservedCount: Sendable, Hashable {
    /// What `countItems(forRequest:)` returns at ``sequence`` (offset and limit ignored).
    public let count: Int
    /// The sequence of the commit whose state this reflects.
    public let sequence: UInt64
    /// The token of that state.
    public let token: DataStoreChangeToken
    /// Whether this is the first element.
    public let isInitial: Bool
}
