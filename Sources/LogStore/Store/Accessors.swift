import LogStoreEngine

/// The read accessor handed to read blocks: a view plus a validity flag.
/// Not thread-safe by design (see ``DataStoreReadAccessor``): used on the block's thread only.
final class ReadAccessor: DataStoreReadAccessor {
    let view: any RecordReader
    var isValid = true

    init(view: any RecordReader) { self.view = view }

    func checkValid() throws {
        guard isValid else {
            throw LogStoreError(.accessorExpired, "A read accessor was used after its block returned. Use accessors only inside the block that received them; copy the items you need out of the block.")
        }
    }

    func items<Item: DataStoreItem>(forRequest request: DataStoreRequest<Item>) throws -> [Item] {
        try checkValid()
        return try QueryExecutor.items(request, in: view)
    }

    func firstItem<Item: DataStoreItem>(forRequest request: DataStoreRequest<Item>) throws -> Item? {
        try checkValid()
        var r = request
        r.limit = 1
        return try QueryExecutor.items(r, in: view).first
    }

    func countItems<Item: DataStoreItem>(forRequest request: DataStoreRequest<Item>) throws -> Int {
        try checkValid()
        return try QueryExecutor.count(request, in: view)
    }

    func item<Item: DataStoreItem>(ofType type: Item.Type, id: Item.ID) throws -> Item? {
        try checkValid()
        return try QueryExecutor.item(type, id: id, in: view)
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

    func insert<Item: DataStoreItem>(_ item: Item) throws {
        try reader.checkValid()
        let key = try ItemKey.make(item.id)
        let bytes = try AttributeCoding.encodeBytes(item)
        try txn.put(type: Item.itemType, key: key, value: bytes)
    }

    @discardableResult
    func delete<Item: DataStoreItem>(_ item: Item) throws -> Bool {
        try deleteItem(ofType: Item.self, id: item.id)
    }

    @discardableResult
    func deleteItem<Item: DataStoreItem>(ofType type: Item.Type, id: Item.ID) throws -> Bool {
        try reader.checkValid()
        return try txn.delete(type: Item.itemType, key: try ItemKey.make(id))
    }

    @discardableResult
    func deleteAllItems<Item: DataStoreItem>(ofType type: Item.Type) throws -> Int {
        try reader.checkValid()
        return try txn.deleteAll(type: Item.itemType)
    }
}
