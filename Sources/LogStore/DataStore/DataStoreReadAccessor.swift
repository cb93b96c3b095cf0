public import LogStoreEngine

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

    // MARK: Record-level access (tools: BackendMigrator, DynamicItem)

    /// The names of the item types that hold at least one item in this accessor's view, sorted
    /// by their UTF-8 bytes. Throws `.unsupported` if the store cannot list its types (then give
    /// the types to the tool that asked).
    func itemTypeNames() throws -> [String]
    /// Calls `body` with the stored records of the type named `itemType` in ascending key order
    /// (LogStore's id order, ``ItemKey``), starting after `key` (nil: from the first), until it
    /// returns false. A record's value is the item's canonical attribute bytes (the value grammar
    /// of Docs/FileFormat.md, "Values": `AttributeValue.decode` reads them), the same bytes on
    /// every backend for the same item. The slice is valid only during the call.
    /// Throws `.unsupported` if the store does not offer record-level access, `.corruption` for
    /// damaged records, or `body`'s error.
    func forEachRecord(
        ofType itemType: String, after key: RecordKey?,
        _ body: (RecordKey, ArraySlice<UInt8>) throws -> Bool) throws
    /// The number of records of the type named `itemType` (0 for an unknown type). Throws
    /// `.unsupported` as ``forEachRecord(ofType:after:_:)``.
    func recordCount(ofType itemType: String) throws -> Int
    /// The canonical attribute bytes of the record `key` of the type named `itemType`, or nil.
    /// Throws `.unsupported` or `.corruption` as ``forEachRecord(ofType:after:_:)``.
    func record(ofType itemType: String, key: RecordKey) throws -> [UInt8]?
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

    /// Stores `value` (an item's attribute bytes in the value grammar, as
    /// ``DataStoreReadAccessor/forEachRecord(ofType:after:_:)`` hands them out) as record `key`
    /// of the type named `itemType`, replacing any record with that key. Used to copy items
    /// between stores without their Swift types. Throws `.corruption` (changing nothing) if
    /// `value` is not one value of the grammar, `.itemTooLarge`, `.keyTooLarge`, `.unsupported`.
    func putRecord(ofType itemType: String, key: RecordKey, value: [UInt8]) throws
    /// Deletes record `key` of the type named `itemType`; true when it existed. Throws
    /// `.unsupported` if the store does not offer record-level access.
    @discardableResult func deleteRecord(ofType itemType: String, key: RecordKey) throws -> Bool
    /// Deletes every record of the type named `itemType`; returns how many there were. The
    /// default walks the type and deletes record by record; a backend that can drop a whole type
    /// at once (LogStore: one log operation; SQL: one `DELETE`) implements it. Throws
    /// `.unsupported` if the store does not offer record-level access.
    @discardableResult func deleteAllRecords(ofType itemType: String) throws -> Int
}
