import LogStoreEngine

/// The read accessor handed to read blocks: a view plus a validity flag.
/// Not thread-safe by design (see ``DataStoreReadAccessor``): used on the block's thread only.
final class ReadAccessor: DataStoreReadAccessor {
    let view: any RecordReader
    /// The view's failure report when it reads a store through queries that can fail in
    /// non-throwing methods (a child of a SQLite store): checked before any answer is returned.
    let health: (any FallibleRecordReader)?
    var isValid = true

    init(view: any RecordReader) {
        self.view = view
        health = view as? any FallibleRecordReader ?? (view as? EngineTransaction)?.baseView as? any FallibleRecordReader
    }

    func checkValid() throws {
        guard isValid else {
            throw LogStoreError(.accessorExpired, "A read accessor was used after its block returned. Use accessors only inside the block that received them; copy the items you need out of the block.")
        }
    }

    /// Runs `body` if the accessor is valid, then checks that the view did not fail meanwhile.
    func answer<T>(_ body: () throws -> T) throws -> T {
        try checkValid()
        let result = try body()
        try health?.checkHealthy()
        return result
    }

    func items<Item: DataStoreItem>(forRequest request: DataStoreRequest<Item>) throws -> [Item] {
        try answer { try QueryExecutor.items(request, in: view) }
    }

    func firstItem<Item: DataStoreItem>(forRequest request: DataStoreRequest<Item>) throws -> Item? {
        var r = request
        r.limit = 1
        return try answer { try QueryExecutor.items(r, in: view).first }
    }

    func countItems<Item: DataStoreItem>(forRequest request: DataStoreRequest<Item>) throws -> Int {
        try answer { try QueryExecutor.count(request, in: view) }
    }

    func item<Item: DataStoreItem>(ofType type: Item.Type, id: Item.ID) throws -> Item? {
        try answer { try QueryExecutor.item(type, id: id, in: view) }
    }

    func itemTypeNames() throws -> [String] {
        try answer { view.itemTypes.filter { view.count(ofType: $0) > 0 }.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) } }
    }

    func forEachRecord(ofType itemType: String, after key: RecordKey?, _ body: (RecordKey, ArraySlice<UInt8>) throws -> Bool) throws {
        try answer {
            try view.forEachRecordInKeyOrder(ofType: itemType, after: key) { k, v in
                try checkValid()
                try health?.checkHealthy()
                return try body(k, v)
            }
        }
    }

    func record(ofType itemType: String, key: RecordKey) throws -> [UInt8]? {
        try answer { try view.value(type: itemType, key: key).map(Array.init) }
    }
}

/// The read-write accessor handed to write blocks: wraps the engine transaction.
final class ReadWriteAccessor: DataStoreReadWriteAccessor {
    let txn: EngineTransaction
    let reader: ReadAccessor

    init(txn: EngineTransaction) {
        self.txn = txn
        reader = ReadAccessor(view: txn)
    }

    func invalidate() { reader.isValid = false }

    func items<Item: DataStoreItem>(forRequest request: DataStoreRequest<Item>) throws -> [Item] {
        try reader.items(forRequest: request)
    }
    func firstItem<Item: DataStoreItem>(forRequest request: DataStoreRequest<Item>) throws -> Item? {
        try reader.firstItem(forRequest: request)
    }
    func countItems<Item: DataStoreItem>(forRequest request: DataStoreRequest<Item>) throws -> Int {
        try reader.countItems(forRequest: request)
    }
    func item<Item: DataStoreItem>(ofType type: Item.Type, id: Item.ID) throws -> Item? {
        try reader.item(ofType: type, id: id)
    }
    func itemTypeNames() throws -> [String] { try reader.itemTypeNames() }
    func forEachRecord(ofType itemType: String, after key: RecordKey?, _ body: (RecordKey, ArraySlice<UInt8>) throws -> Bool) throws {
        try reader.forEachRecord(ofType: itemType, after: key, body)
    }
    func record(ofType itemType: String, key: RecordKey) throws -> [UInt8]? {
        try reader.record(ofType: itemType, key: key)
    }

    func insert<Item: DataStoreItem>(_ item: Item) throws {
        try reader.checkValid()
        let key = try ItemKey.make(item.id)
        let bytes = try AttributeCoding.encodeBytes(item)
        try reader.answer { try txn.put(type: Item.itemType, key: key, value: bytes) }
    }

    @discardableResult
    func delete<Item: DataStoreItem>(_ item: Item) throws -> Bool {
        try deleteItem(ofType: Item.self, id: item.id)
    }

    @discardableResult
    func deleteItem<Item: DataStoreItem>(ofType type: Item.Type, id: Item.ID) throws -> Bool {
        try reader.checkValid()
        let key = try ItemKey.make(id)
        return try reader.answer { try txn.delete(type: Item.itemType, key: key) }
    }

    @discardableResult
    func deleteAllItems<Item: DataStoreItem>(ofType type: Item.Type) throws -> Int {
        try reader.answer { try txn.deleteAll(type: Item.itemType) }
    }

    func putRecord(ofType itemType: String, key: RecordKey, value: [UInt8]) throws {
        try reader.checkValid()
        try LogStoreError.checkRecordValue(value)
        try reader.answer { try txn.put(type: itemType, key: key, value: value) }
    }

    @discardableResult
    func deleteRecord(ofType itemType: String, key: RecordKey) throws -> Bool {
        try reader.answer { try txn.delete(type: itemType, key: key) }
    }
}
