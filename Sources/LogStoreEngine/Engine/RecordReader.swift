/// Read access to the records of one consistent state of a store: a committed snapshot, a write
/// transaction (its base plus its own changes) or a child store's overlay.
///
/// Values are encoded ``AttributeValue`` bytes. Implementations are used from one thread at a
/// time unless they say otherwise (``EngineSnapshot`` is `Sendable`).
public protocol RecordReader {
    /// The sequence number of the last transaction this state includes.
    var sequence: UInt64 { get }
    /// The item types that have at least one record.
    var itemTypes: [String] { get }
    /// The number of records of `type`, from the index (nothing is read from disk).
    func count(ofType type: String) -> Int
    /// Whether a record `key` of `type` exists.
    func contains(type: String, key: RecordKey) -> Bool
    /// The value bytes of record `key` of `type`, or nil. Throws `.corruption` if the bytes on
    /// disk are damaged.
    func value(type: String, key: RecordKey) throws -> ArraySlice<UInt8>?
    /// Calls `body` with every record of `type` (in an order chosen for I/O, not key order) until
    /// it returns false.
    func forEach(ofType type: String, _ body: (RecordKey, ArraySlice<UInt8>) throws -> Bool) throws
    /// Every key of `type`, unordered.
    func keys(ofType type: String) -> [RecordKey]
    /// Calls `body` with the keys of `type` in key order (byte order), starting with the one at
    /// position `offset`, until it returns false. A committed snapshot walks its ordered index:
    /// O(log n) to start, then O(1) per key; other readers sort their keys first.
    func forEachKeyInOrder(ofType type: String, fromOffset offset: Int, _ body: (RecordKey) throws -> Bool) rethrows
}

extension RecordReader {
    /// See ``RecordReader/forEachKeyInOrder(ofType:fromOffset:_:)``: sorts ``keys(ofType:)``.
    public func forEachKeyInOrder(ofType type: String, fromOffset offset: Int, _ body: (RecordKey) throws -> Bool) rethrows {
        let keys = self.keys(ofType: type).sorted()
        var i = Swift.max(0, offset)
        while i < keys.count {
            if try !body(keys[i]) { return }
            i += 1
        }
    }
}
