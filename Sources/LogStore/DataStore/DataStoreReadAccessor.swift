/// Read access to a store, handed to the block of `read(_:)` (and, extended, to write
/// blocks).
///
/// An accessor is valid only inside the block that received it: it reads one consistent snapshot,
/// and after the block returns every method throws `LogStoreError/Code/accessorExpired`.
/// Use it only on the thread that runs the block. Items it returns are values: keep them as long
/// as you like and pass them to any thread.
public protocol DataStoreReadAccessor {
    /// The items matching `request`: filtered by its predicate and attribute filter, sorted by its
    /// sort descriptors (ties, and requests without sort descriptors, in ascending id order), then
    /// `offset` skipped and at most `limit` returned.
    /// Throws `LogStoreError` (`.decodingFailed`, `.corruption`, `.invalidArgument`) or the
    /// predicate's own error.
    func items<Item: DataStoreItem>(forRequest request: DataStoreRequest<Item>) throws -> [Item]
    /// The first item `items(forRequest:)` would return (predicate, sort and offset honoured), or nil.
    func firstItem<Item: DataStoreItem>(forRequest request: DataStoreRequest<Item>) throws -> Item?
    /// The number of items matching the request's predicate and filter, ignoring offset and limit.
    /// Without a predicate or filter it is answered from the index, without reading items.
    func countItems<Item: DataStoreItem>(forRequest request: DataStoreRequest<Item>) throws -> Int
    /// The item of `type` with `id`, or nil.
    func item<Item: DataStoreItem>(ofType type: Item.Type, id: Item.ID) throws -> Item?
    /// Runs `request` as ``items(forRequest:)`` would and describes how: the index and ranges
    /// used or a scan, what was checked per item, and how many items were visited and decoded
    /// (``DataStoreQueryPlan``). Throws what `items(forRequest:)` throws.
    func explain<Item: DataStoreItem>(_ request: DataStoreRequest<Item>) throws -> DataStoreQueryPlan
    /// Counts as ``countItems(forRequest:)`` would and describes how (whether index entry counts
    /// alone answered it).
    func explainCount<Item: DataStoreItem>(_ request: DataStoreRequest<Item>) throws -> DataStoreQueryPlan
}

/// Read and write access to a store, handed to the blocks of ``DataStore/writeSync(_:)``,
/// ``DataStore/writeAsync(_:completion:)`` and ``DataStore/write(_:)``.
///
/// Reads see the block's own uncommitted changes. Changes are committed, atomically, when the
/// block returns; if it throws, none of them are. Valid only inside its block (see
/// ``DataStoreReadAccessor``).
public protocol DataStoreReadWriteAccessor: DataStoreReadAccessor {
    /// Inserts the item, or replaces the stored item with the same id.
    /// Throws `.encodingFailed`, `.itemTooLarge`, `.keyTooLarge`.
    func insert<Item: DataStoreItem>(_ item: Item) throws
    /// Deletes the stored item with `item.id`; true when an item with that id existed.
    @discardableResult func delete<Item: DataStoreItem>(_ item: Item) throws -> Bool
    /// Deletes the item of `type` with `id`; true when it existed.
    @discardableResult func deleteItem<Item: DataStoreItem>(ofType type: Item.Type, id: Item.ID) throws -> Bool
    /// Deletes every item of `type`; returns how many there were. One log operation.
    @discardableResult func deleteAllItems<Item: DataStoreItem>(ofType type: Item.Type) throws -> Int
}
