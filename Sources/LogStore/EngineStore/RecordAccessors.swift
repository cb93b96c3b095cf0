import LogStoreEngine

/// The read accessor handed to read blocks: a view plus a validity flag.
/// Not thread-safe by design (see ``DataStoreReadAccessor``): used on the block's thread only.
final class ReadAccessor: DataStoreReadAccessor {
    /// The snapshot the block reads. Replaced at most by a snapshot of the same state that also
    /// has indexes declared during the block (``prepare(_:)``).
    private(set) var view: any RecordReader
    /// The view's failure report when it reads a store through queries that can fail in
    /// non-throwing methods (a child of a SQLite store): checked before any answer is returned.
    let health: (any FallibleRecordReader)?
    /// Declares item types' indexes on first use; nil: never.
    let indexes: IndexDeclarer?
    /// Where a fresh committed snapshot comes from (to pick up indexes declared during the
    /// block); nil inside a write, whose base is fixed.
    let latest: StoreBackend?
    var isValid = true

    /// An accessor over `view`. `health` is the view's failure report (see
    /// ``health(of:)``); a caller that knows its view cannot fail passes nil and saves the
    /// protocol-conformance lookup that finding out costs (a third of a point read's overhead
    /// before the decode, measured with callgrind).
    init(view: any RecordReader, health: (any FallibleRecordReader)?, indexes: IndexDeclarer? = nil, latest: StoreBackend? = nil) {
        self.view = view
        self.health = health
        self.indexes = indexes
        self.latest = latest
    }

    /// The failure report of `view`: itself when it is a ``FallibleRecordReader``, the base of a
    /// transaction over one, or nil.
    static func health(of view: any RecordReader) -> (any FallibleRecordReader)? {
        // The engine's own snapshot first: a cast to a concrete type is a metadata comparison.
        if view is EngineSnapshot { return nil }
        return view as? any FallibleRecordReader ?? (view as? EngineTransaction).flatMap { health(of: $0.baseView) }
    }

    /// Refuses an item type reserved for LogStore's own records (requests never show them), then
    /// declares `Item`'s indexes if this store has not yet; when that built one and nothing was
    /// committed since this block's snapshot, reads on from a snapshot of the same state that has
    /// it. Inside a write, the index history (``StoreHistory``) is recorded in its transaction.
    func prepare<Item: DataStoreItem>(_ type: Item.Type) throws {
        try Self.checkNotReserved(Item.itemType)
        guard let indexes, try indexes.ensure(Item.self, transaction: view as? EngineTransaction), let latest else { return }
        let fresh = try latest.readView()
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

    func checkValid() throws {
        guard isValid else {
            throw LogStoreError(
                .accessorExpired,
                "A read accessor was used after its block returned. Use accessors only inside the block that received them; copy the items you need out of the block."
            )
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
        try checkValid()
        try prepare(Item.self)
        return try answer { try QueryExecutor.items(request, in: view) }
    }

    func firstItem<Item: DataStoreItem>(forRequest request: DataStoreRequest<Item>) throws -> Item? {
        try checkValid()
        try prepare(Item.self)
        var r = request
        r.limit = 1
        return try answer { try QueryExecutor.items(r, in: view).first }
    }

    func countItems<Item: DataStoreItem>(forRequest request: DataStoreRequest<Item>) throws -> Int {
        try checkValid()
        try prepare(Item.self)
        return try answer { try QueryExecutor.count(request, in: view) }
    }

    func explain<Item: DataStoreItem>(_ request: DataStoreRequest<Item>) throws -> DataStoreQueryPlan {
        try checkValid()
        try prepare(Item.self)
        return try answer {
            var stats = QueryExecutor.Stats()
            let (items, plan) = try QueryExecutor.run(request, in: view, stats: &stats)
            return plan.described(stats, resultCount: items.count, counting: false)
        }
    }

    func explainCount<Item: DataStoreItem>(_ request: DataStoreRequest<Item>) throws -> DataStoreQueryPlan {
        try checkValid()
        try prepare(Item.self)
        return try answer {
            var stats = QueryExecutor.Stats()
            let (count, plan) = try QueryExecutor.count(request, in: view, stats: &stats)
            return plan.described(stats, resultCount: count, counting: true)
        }
    }

    func item<Item: DataStoreItem>(ofType type: Item.Type, id: Item.ID) throws -> Item? {
        try Self.checkNotReserved(Item.itemType)
        return try answer { try QueryExecutor.item(type, id: id, in: view) }
    }

    func itemTypeNames() throws -> [String] {
        try answer {
            view.itemTypes.filter { !StoreHistory.isReserved($0) && view.count(ofType: $0) > 0 }.sorted {
                $0.utf8.lexicographicallyPrecedes($1.utf8)
            }
        }
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

    func recordCount(ofType itemType: String) throws -> Int {
        try answer { view.count(ofType: itemType) }
    }
}

/// The read-write accessor handed to write blocks: wraps the engine transaction.
final class ReadWriteAccessor: DataStoreReadWriteAccessor {
    let txn: EngineTransaction
    let reader: ReadAccessor

    /// `indexes`: the registry that declares item types' indexes (nil for a child store, whose
    /// writes must not take its root engine's writer lock). `baseIsEngine`: the transaction's
    /// base is an engine snapshot, which cannot fail without throwing, so there is no failure
    /// report to look up (``ReadAccessor/health(of:)``).
    init(txn: EngineTransaction, indexes: IndexDeclarer? = nil, baseIsEngine: Bool = false) {
        self.txn = txn
        reader = ReadAccessor(view: txn, health: baseIsEngine ? nil : ReadAccessor.health(of: txn.baseView), indexes: indexes)
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
        try reader.answer { try txn.put(type: Item.itemType, key: key, value: bytes) }
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
        return try reader.answer { try txn.delete(type: Item.itemType, key: key) }
    }

    @discardableResult
    func deleteAllItems<Item: DataStoreItem>(ofType type: Item.Type) throws -> Int {
        try reader.checkValid()
        try reader.prepare(Item.self)
        return try reader.answer { try txn.deleteAll(type: Item.itemType) }
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

    @discardableResult
    func deleteAllRecords(ofType itemType: String) throws -> Int {
        try reader.answer { try txn.deleteAll(type: itemType) }
    }
}
