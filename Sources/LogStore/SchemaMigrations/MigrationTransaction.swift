public import LogStoreEngine

/// What a migration step works with: the step's write transaction, seen as raw items
/// (``DynamicItem``: an item type name, an id and attributes by coding key), so a step needs none
/// of the Swift types the store was written with.
///
/// ```swift
/// store.migrations.register("v2-split-name") { tx in
///     try tx.updateItems(ofType: "Person") { person in
///         guard case .string(let name)? = person.object(forKey: "name") else { return }
///         let parts = name.split(separator: " ", maxSplits: 1).map(String.init)
///         person.setObject(.string(parts.first ?? ""), forKey: "firstName")
///         person.setObject(.string(parts.count > 1 ? parts[1] : ""), forKey: "lastName")
///         person.setObject(nil, forKey: "name")
///     }
/// }
/// ```
///
/// Everything a step does, and the record that it ran, commit as one transaction when it returns
/// (or none of it, if it throws). The walks (``forEachItem(ofType:_:)`` and the helpers built on
/// it) read a type in id order, a page at a time, so a step over millions of items holds one page
/// of them; the store keeps what the step writes out of memory past its spill threshold
/// (`LogStoreOptions/transactionSpillThreshold` for ``LogDataStore``).
///
/// Valid only inside the step that received it, on the thread that runs the step: afterwards
/// every method throws `.accessorExpired`. Methods throw the store's errors: `.corruption`,
/// `.decodingFailed` for a record that is not an attribute map, `.encodingFailed`,
/// `.itemTooLarge`, `.keyTooLarge`, `.invalidArgument` for a reserved item type.
public final class MigrationTransaction {
    /// The migration's name.
    public let name: String
    /// The step's write accessor: typed requests and writes with the app's current item types,
    /// and record-level access. What the step does through it commits with the step.
    public let accessor: any DataStoreReadWriteAccessor
    /// Records put or deleted through this object (recorded in the store's history).
    public private(set) var changes = 0
    var isValid = true

    /// The most items a walk reads per page, and the most bytes of them.
    static let pageItems = 2_000
    static let pageBytes = 4 << 20

    init(name: String, accessor: any DataStoreReadWriteAccessor) {
        self.name = name
        self.accessor = accessor
    }

    func checkValid() throws {
        guard isValid else {
            throw LogStoreError(
                .accessorExpired,
                "The migration \"\(name)\" used its MigrationTransaction after the step returned. Use it only inside the step.")
        }
    }

    static func checkType(_ type: String) throws {
        guard !StoreHistory.isReserved(type) else {
            throw LogStoreError(
                .invalidArgument,
                "The item type \"\(type)\" is reserved for LogStore's own records (the prefix \"\(StoreHistory.reservedPrefix)\"); a migration cannot read or write it."
            )
        }
        guard !type.isEmpty else { throw LogStoreError(.invalidArgument, "An item type name must not be empty.") }
    }

    // MARK: Reading

    /// The item types holding at least one item, sorted by their UTF-8 bytes (reserved types left
    /// out), as the step sees them (its own writes included).
    public func itemTypeNames() throws -> [String] {
        try checkValid()
        return try accessor.itemTypeNames().filter { !StoreHistory.isReserved($0) }
    }

    /// Calls `body` with every item of `type` in ascending id order, as the step sees them (its own
    /// earlier writes included). Reads a page of items at a time before `body` sees them, so
    /// `body` may write anything: other types, and the walked type at or behind the current item
    /// (replace or delete the current item, insert items with smaller ids). Writes to the walked
    /// type ahead of the current item may or may not be seen by the walk (whether they land in a
    /// page already read): collect such items and insert them after the walk. Throws `body`'s
    /// error or the store's.
    public func forEachItem(ofType type: String, _ body: (DynamicItem) throws -> Void) throws {
        try checkValid()
        try Self.checkType(type)
        try forEachRecordPage(ofType: type) { page in
            for (key, value) in page { try body(try DynamicItem.decode(itemType: type, key: key, bytes: value[...])) }
        }
    }

    /// Calls `body` with the records of `type` in key order, a page (at most ``pageItems`` records
    /// and about ``pageBytes``) at a time, each page read before `body` sees it.
    func forEachRecordPage(ofType type: String, _ body: ([(RecordKey, [UInt8])]) throws -> Void) throws {
        var after: RecordKey? = nil
        while true {
            var page: [(RecordKey, [UInt8])] = []
            var bytes = 0
            try accessor.forEachRecord(ofType: type, after: after) { key, value in
                page.append((key, Array(value)))
                bytes += value.count
                return page.count < Self.pageItems && bytes < Self.pageBytes
            }
            guard let last = page.last else { return }
            try body(page)
            try checkValid()
            after = last.0
        }
    }

    /// The item of `type` with `id`, as the step sees it, or nil.
    public func item(ofType type: String, id: AttributeValue) throws -> DynamicItem? {
        try checkValid()
        try Self.checkType(type)
        return try accessor.dynamicItem(ofType: type, id: id)
    }

    // MARK: Writing

    /// Inserts `item`, or replaces the item of its type with the same id (the record it was read
    /// from, for an item from ``forEachItem(ofType:_:)``).
    public func insert(_ item: DynamicItem) throws {
        try checkValid()
        try Self.checkType(item.itemType)
        try accessor.insert(item)
        changes += 1
    }

    /// Deletes `item` (the record it was read from); true when it existed.
    @discardableResult
    public func delete(_ item: DynamicItem) throws -> Bool {
        try checkValid()
        try Self.checkType(item.itemType)
        changes += 1
        return try accessor.deleteRecord(ofType: item.itemType, key: item.key)
    }

    /// Deletes the item of `type` with `id`; true when it existed.
    @discardableResult
    public func deleteItem(ofType type: String, id: AttributeValue) throws -> Bool {
        try checkValid()
        try Self.checkType(type)
        changes += 1
        return try accessor.deleteDynamicItem(ofType: type, id: id)
    }

    /// Deletes every item of `type`; returns how many there were.
    @discardableResult
    public func deleteAllItems(ofType type: String) throws -> Int {
        try checkValid()
        try Self.checkType(type)
        let n = try accessor.deleteAllRecords(ofType: type)
        changes += n
        return n
    }

    // MARK: Whole types

    /// Calls `update` with every item of `type` (``forEachItem(ofType:_:)``) and writes back the
    /// items it changed. Returns how many changed. `update` may not change an item's id or type
    /// (make a new ``DynamicItem`` and ``insert(_:)`` it instead).
    @discardableResult
    public func updateItems(ofType type: String, _ update: (inout DynamicItem) throws -> Void) throws -> Int {
        var changed = 0
        try forEachItem(ofType: type) { item in
            var copy = item
            try update(&copy)
            if copy != item {
                try insert(copy)
                changed += 1
            }
        }
        return changed
    }

    /// Deletes the items of `type` for which `predicate` is true; returns how many.
    @discardableResult
    public func deleteItems(ofType type: String, where predicate: (DynamicItem) throws -> Bool) throws -> Int {
        var deleted = 0
        try forEachItem(ofType: type) { item in
            if try predicate(item) {
                try delete(item)
                deleted += 1
            }
        }
        return deleted
    }

    /// Renames the attribute `old` to `new` in every item of `type` that has it (replacing a
    /// `new` attribute it may already have). Returns how many items changed. Throws
    /// `.invalidArgument` for `"id"` or an empty name.
    @discardableResult
    public func renameAttribute(_ old: String, to new: String, ofType type: String) throws -> Int {
        for a in [old, new] where a.isEmpty || a == "id" {
            throw LogStoreError(
                .invalidArgument,
                "renameAttribute cannot rename \(a.isEmpty ? "an empty attribute name" : "the id attribute") (migration \"\(name)\").")
        }
        return try updateItems(ofType: type) { item in
            guard let value = item.object(forKey: old) else { return }
            item.setObject(nil, forKey: old)
            item.setObject(value, forKey: new)
        }
    }

    /// Removes the attribute `attribute` from every item of `type`; returns how many items had it.
    @discardableResult
    public func removeAttribute(_ attribute: String, ofType type: String) throws -> Int {
        try updateItems(ofType: type) { item in item.setObject(nil, forKey: attribute) }
    }

    /// Sets `attribute` in every item of `type` that lacks it (or holds `null`), to what `value`
    /// returns for the item: how a new non-optional property gets its value. With `overwrite`,
    /// in every item. Returns how many items changed.
    @discardableResult
    public func setAttribute(
        _ attribute: String, ofType type: String, overwrite: Bool = false,
        _ value: (DynamicItem) throws -> AttributeValue
    ) throws -> Int {
        try updateItems(ofType: type) { item in
            let current = item.object(forKey: attribute)
            guard overwrite || current == nil || current == .null else { return }
            item.setObject(try value(item), forKey: attribute)
        }
    }

    /// Moves every item of `old` to the item type `new`, unchanged (same ids, same attributes),
    /// without decoding them: what renaming a Swift type whose ``DataStoreItem/itemType`` is its
    /// name needs. Returns how many items moved. Throws `.invalidArgument` when `new` already holds
    /// items (merging two types is a walk of your own: ``forEachItem(ofType:_:)`` and
    /// ``insert(_:)``).
    @discardableResult
    public func renameItemType(_ old: String, to new: String) throws -> Int {
        try checkValid()
        try Self.checkType(old)
        try Self.checkType(new)
        guard old != new else { return 0 }
        var occupied = false
        try accessor.forEachRecord(ofType: new, after: nil) { _, _ in
            occupied = true
            return false
        }
        guard !occupied else {
            throw LogStoreError(
                .invalidArgument,
                "renameItemType cannot move \(old) to \(new): \(new) already holds items (migration \"\(name)\"). Delete them first, or move the items one by one."
            )
        }
        var moved = 0
        try forEachRecordPage(ofType: old) { page in
            for (key, value) in page { try accessor.putRecord(ofType: new, key: key, value: value) }
            moved += page.count
        }
        try accessor.deleteAllRecords(ofType: old)
        changes += 2 * moved
        return moved
    }
}
