import LogStoreEngine

/// The read accessor over a ``RecordReader``: what read blocks get on the engine (a snapshot) and
/// on a child store (its view), and what write blocks read through (a transaction). Requests run
/// in Swift over the reader (``QueryExecutor``); every read throws what the reader throws.
///
/// Not thread-safe by design (see ``DataStoreReadAccessor``): used on the block's thread only,
/// and only until its block returns (``isValid``).
final class ReadAccessor: DataStoreReadAccessor {
    /// The state the block reads. Replaced at most by a snapshot of the same state that also has
    /// indexes declared during the block (``prepare(_:)``).
    private(set) var view: any RecordReader
    /// The write transaction `view` is, when the block is a write's: declarations of indexes
    /// record their history in it.
    let transaction: EngineTransaction?
    /// The engine store that declares item types' indexes on first use; nil for a child store,
    /// whose merges are indexed by its root's commits.
    let engine: EngineBackend?
    /// Cleared when the block returns: every later call throws `.accessorExpired`.
    var isValid = true

    /// An accessor over `view`, declaring indexes with `engine` (in `transaction` inside a write).
    init(view: any RecordReader, transaction: EngineTransaction? = nil, engine: EngineBackend? = nil) {
        self.view = view
        self.transaction = transaction
        self.engine = engine
    }

    /// Refuses an item type reserved for LogStore's own records (requests never show them), then
    /// declares `Item`'s indexes if this store has not yet; when that built one outside a write
    /// and nothing was committed since this block's snapshot, reads on from a snapshot of the same
    /// state that has it. Inside a write, the index history (``StoreHistory``) is recorded in its
    /// transaction.
    func prepare<Item: DataStoreItem>(_ type: Item.Type) throws {
        try Self.checkNotReserved(Item.itemType)
        guard let engine, try engine.ensureIndexes(Item.self, transaction: transaction), transaction == nil else { return }
        let fresh = try engine.engine.snapshot()
        if fresh.sequence == view.sequence { view = fresh }
    }

    /// Throws `.invalidArgument` for an item type with the reserved prefix (``StoreHistory``).
    static func checkNotReserved(_ type: String) throws {
        guard !StoreHistory.isReserved(type) else {
            throw LogStoreError(
                .invalidArgument,
                "The item type \"\(type)\" is reserved for LogStore's own records (the prefix \"\(StoreHistory.reservedPrefix)\"). Give the type another itemType."
            )
        }
    }

    /// Throws `.accessorExpired` once the block returned.
    func checkValid() throws {
        guard isValid else {
            throw LogStoreError(
                .accessorExpired,
                "A read accessor was used after its block returned. Use accessors only inside the block that received them; copy the items you need out of the block."
            )
        }
    }

    func items<Item: DataStoreItem>(forRequest request: DataStoreRequest<Item>) throws -> [Item] {
        try checkValid()
        try prepare(Item.self)
        return try QueryExecutor.items(request, in: view)
    }

    func firstItem<Item: DataStoreItem>(forRequest request: DataStoreRequest<Item>) throws -> Item? {
        try checkValid()
        try prepare(Item.self)
        var r = request
        r.limit = 1
        return try QueryExecutor.items(r, in: view).first
    }

    func countItems<Item: DataStoreItem>(forRequest request: DataStoreRequest<Item>) throws -> Int {
        try checkValid()
        try prepare(Item.self)
        return try QueryExecutor.count(request, in: view)
    }

    func explain<Item: DataStoreItem>(_ request: DataStoreRequest<Item>) throws -> DataStoreQueryPlan {
        try checkValid()
        try prepare(Item.self)
        var stats = QueryExecutor.Stats()
        let (items, plan) = try QueryExecutor.run(request, in: view, stats: &stats)
        return plan.described(stats, resultCount: items.count, counting: false)
    }

    func explainCount<Item: DataStoreItem>(_ request: DataStoreRequest<Item>) throws -> DataStoreQueryPlan {
        try checkValid()
        try prepare(Item.self)
        var stats = QueryExecutor.Stats()
        let (count, plan) = try QueryExecutor.count(request, in: view, stats: &stats)
        return plan.described(stats, resultCount: count, counting: true)
    }

    func item<Item: DataStoreItem>(ofType type: Item.Type, id: Item.ID) throws -> Item? {
        try checkValid()
        try Self.checkNotReserved(Item.itemType)
        return try QueryExecutor.item(type, id: id, in: view)
    }

    func itemTypeNames() throws -> [String] {
        try checkValid()
        return try view.itemTypes.filter { try !StoreHistory.isReserved($0) && view.count(ofType: $0) > 0 }.sorted {
            $0.utf8.lexicographicallyPrecedes($1.utf8)
        }
    }

    func forEachRecord(ofType itemType: String, after key: RecordKey?, _ body: (RecordKey, ArraySlice<UInt8>) throws -> Bool) throws {
        try checkValid()
        try view.forEachRecordInKeyOrder(ofType: itemType, after: key) { k, v in
            try checkValid()
            return try body(k, v)
        }
    }

    func record(ofType itemType: String, key: RecordKey) throws -> [UInt8]? {
        try checkValid()
        return try view.value(type: itemType, key: key).map(Array.init)
    }

    func recordCount(ofType itemType: String) throws -> Int {
        try checkValid()
        return try view.count(ofType: itemType)
    }
}

/// The read-write accessor handed to write blocks on the engine and on child stores: a
/// ``ReadAccessor`` over the write's transaction, and the transaction's writes.
final class ReadWriteAccessor: DataStoreReadWriteAccessor {
    let txn: EngineTransaction
    let reader: ReadAccessor

    /// An accessor over `txn`. `engine`: the engine store that declares item types' indexes
    /// (under the writer lock the body holds); nil for a child store, whose writes must not take
    /// its root engine's writer lock.
    init(txn: EngineTransaction, engine: EngineBackend? = nil) {
        self.txn = txn
        reader = ReadAccessor(view: txn, transaction: txn, engine: engine)
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
    func recordCount(ofType itemType: String) throws -> Int { try reader.recordCount(ofType: itemType) }
    func explain<Item: DataStoreItem>(_ request: DataStoreRequest<Item>) throws -> DataStoreQueryPlan {
        try reader.explain(request)
    }
    func explainCount<Item: DataStoreItem>(_ request: DataStoreRequest<Item>) throws -> DataStoreQueryPlan {
        try reader.explainCount(request)
    }

    func insert<Item: DataStoreItem>(_ item: Item) throws {
        try reader.checkValid()
        try reader.prepare(Item.self)
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
        try reader.prepare(Item.self)
        let key = try ItemKey.make(id)
        return try txn.delete(type: Item.itemType, key: key)
    }

    @discardableResult
    func deleteAllItems<Item: DataStoreItem>(ofType type: Item.Type) throws -> Int {
        try reader.checkValid()
        try reader.prepare(Item.self)
        return try txn.deleteAll(type: Item.itemType)
    }

    func putRecord(ofType itemType: String, key: RecordKey, value: [UInt8]) throws {
        try reader.checkValid()
        try LogStoreError.checkRecordValue(value)
        try txn.put(type: itemType, key: key, value: value)
    }

    @discardableResult
    func deleteRecord(ofType itemType: String, key: RecordKey) throws -> Bool {
        try reader.checkValid()
        return try txn.delete(type: itemType, key: key)
    }

    @discardableResult
    func deleteAllRecords(ofType itemType: String) throws -> Int {
        try reader.checkValid()
        return try txn.deleteAll(type: itemType)
    }
}
