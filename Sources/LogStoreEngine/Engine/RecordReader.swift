import Foundation

/// Read access to the records of one consistent state of a store: a committed snapshot, a write
/// transaction (its base plus its own changes), a child store's overlay, or a snapshot of another
/// backend (a SQLite or PostgreSQL read transaction).
///
/// Every read can throw, counts and membership included: a reader over a database answers them
/// with queries that can fail, and its failure reaches the caller as a typed error, never as a
/// wrong answer. The engine's own snapshots read memory and mapped files and declare the same
/// methods without `throws`.
///
/// Values are encoded ``AttributeValue`` bytes. Implementations are used from one thread at a
/// time unless they say otherwise (``EngineSnapshot`` is `Sendable`). A value slice a reader
/// returns stays valid as long as the caller holds it (it owns its storage).
public protocol RecordReader {
    /// The sequence number of the last transaction this state includes.
    var sequence: UInt64 { get }
    /// The item types that have at least one record, in no particular order.
    var itemTypes: [String] { get throws }
    /// The number of records of `type` (from the index where the reader has one).
    func count(ofType type: String) throws -> Int
    /// Whether a record `key` of `type` exists.
    func contains(type: String, key: RecordKey) throws -> Bool
    /// The value bytes of record `key` of `type`, or nil. Throws `.corruption` if the bytes on
    /// disk are damaged.
    func value(type: String, key: RecordKey) throws -> ArraySlice<UInt8>?
    /// Calls `body` with the value bytes of record `key` of `type` (nil if there is none), without
    /// a copy where the reader can avoid one (a committed snapshot hands over a record stored raw
    /// in place, in its mapped segment). The bytes are valid only while `body` runs: nothing may
    /// keep them, or anything that points into them. Throws `.corruption` like
    /// ``value(type:key:)``; rethrows what `body` throws.
    func withValue<R>(type: String, key: RecordKey, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R
    /// Calls `body` with every record of `type` (in an order chosen for I/O, not key order) until
    /// it returns false.
    func forEach(ofType type: String, _ body: (RecordKey, ArraySlice<UInt8>) throws -> Bool) throws
    /// Every key of `type`, unordered.
    func keys(ofType type: String) throws -> [RecordKey]
    /// Calls `body` with the keys of `type` in key order (byte order), starting with the one at
    /// position `offset`, until it returns false. A committed snapshot walks its ordered index:
    /// O(log n) to start, then O(1) per key; other readers sort their keys first.
    func forEachKeyInOrder(ofType type: String, fromOffset offset: Int, _ body: (RecordKey) throws -> Bool) throws
    /// Calls `body` with every record of `type` whose key is after `key` (every record when nil),
    /// in key order, until it returns false. A committed snapshot walks its ordered index; a write
    /// transaction merges its own puts into its base's walk; other readers sort their keys.
    func forEachRecordInKeyOrder(
        ofType type: String, after key: RecordKey?, _ body: (RecordKey, ArraySlice<UInt8>) throws -> Bool
    ) throws
    /// The secondary indexes of `type` this reader can scan (by name), as they were declared.
    /// Empty when it has none (a reader that does not keep indexes answers every request by
    /// scanning).
    func secondaryIndexes(ofType type: String) throws -> [String: IndexDefinition]
    /// Calls `body` with each entry of the secondary index `index` of `type` in `range` and the
    /// key of the record it belongs to, in ascending entry order (descending with `reverse`),
    /// until it returns false. Entries are ``IndexKeyEncoding`` byte strings: the indexed values,
    /// then the record key. A reader with changes of its own (a write transaction, a child store)
    /// includes them. Throws `.invalidArgument` for an index it does not have.
    func forEachIndexEntry(
        ofType type: String, index: String, in range: IndexEntryRange, reverse: Bool,
        _ body: (_ entry: IndexEntry, _ key: RecordKey) throws -> Bool
    ) throws
    /// The number of entries of index `index` of `type` in `range` (O(log n) on a committed
    /// snapshot). Throws `.invalidArgument` for an index it does not have.
    func countIndexEntries(ofType type: String, index: String, in range: IndexEntryRange) throws -> Int
}

/// A half-open range of secondary-index entries, as bytes (``IndexKeyEncoding``): every entry
/// `>= lower` and `< upper` (no upper bound when nil).
public struct IndexEntryRange: Hashable, Sendable, CustomStringConvertible {
    /// The smallest entry in the range (inclusive).
    public var lower: [UInt8]
    /// The first entry after the range (exclusive); nil: to the end.
    public var upper: [UInt8]?

    /// A range from `lower` (inclusive) to `upper` (exclusive, or to the end when nil).
    public init(lower: [UInt8] = [], upper: [UInt8]? = nil) {
        self.lower = lower
        self.upper = upper
    }

    /// Every entry whose first bytes are `prefix` (equal values in the leading attributes).
    public init(prefix: [UInt8]) {
        self.init(lower: prefix, upper: IndexKeyEncoding.successor(ofPrefix: prefix))
    }

    /// Whether `entry` lies in the range.
    public func contains(_ entry: IndexEntry) -> Bool {
        entry.withUnsafeBytes { e in
            !e.lexicographicallyPrecedes(lower) && (upper.map { e.lexicographicallyPrecedes($0) } ?? true)
        }
    }

    /// The range in hex, for plans and logs.
    public var description: String {
        func hex(_ b: [UInt8]) -> String { b.map { String(format: "%02x", $0) }.joined() }
        return "[\(hex(lower)), \(upper.map(hex) ?? "end"))"
    }
}

extension RecordReader {
    /// See ``RecordReader/withValue(type:key:_:)``: reads ``value(type:key:)`` and hands over its
    /// bytes.
    public func withValue<R>(type: String, key: RecordKey, _ body: (UnsafeRawBufferPointer?) throws -> R) throws -> R {
        guard let v = try value(type: type, key: key) else { return try body(nil) }
        return try v.withUnsafeBytes { try body($0) }
    }

    /// See ``RecordReader/secondaryIndexes(ofType:)``: none.
    public func secondaryIndexes(ofType type: String) throws -> [String: IndexDefinition] { [:] }

    /// See ``RecordReader/forEachIndexEntry(ofType:index:in:reverse:_:)``: this reader has no index.
    public func forEachIndexEntry(
        ofType type: String, index: String, in range: IndexEntryRange, reverse: Bool,
        _ body: (_ entry: IndexEntry, _ key: RecordKey) throws -> Bool
    ) throws {
        throw LogStoreError.noSuchIndex(type, index)
    }

    /// See ``RecordReader/countIndexEntries(ofType:index:in:)``: this reader has no index.
    public func countIndexEntries(ofType type: String, index: String, in range: IndexEntryRange) throws -> Int {
        throw LogStoreError.noSuchIndex(type, index)
    }

    /// See ``RecordReader/forEachKeyInOrder(ofType:fromOffset:_:)``: sorts ``keys(ofType:)``.
    public func forEachKeyInOrder(ofType type: String, fromOffset offset: Int, _ body: (RecordKey) throws -> Bool) throws {
        let keys = try self.keys(ofType: type).sorted()
        var i = Swift.max(0, offset)
        while i < keys.count {
            if try !body(keys[i]) { return }
            i += 1
        }
    }

    /// See ``RecordReader/forEachRecordInKeyOrder(ofType:after:_:)``: sorts ``keys(ofType:)`` and
    /// reads each value.
    public func forEachRecordInKeyOrder(
        ofType type: String, after key: RecordKey?, _ body: (RecordKey, ArraySlice<UInt8>) throws -> Bool
    ) throws {
        let keys = try self.keys(ofType: type).sorted()
        var i = key.map { k in keys.partitioningIndex { $0 > k } } ?? 0
        while i < keys.count {
            if let v = try value(type: type, key: keys[i]), try !body(keys[i], v) { return }
            i += 1
        }
    }
}

extension RandomAccessCollection {
    /// The index of the first element for which `belongs` is true, in a collection where it is
    /// false for a prefix and true for the rest. O(log n).
    package func partitioningIndex(where belongs: (Element) throws -> Bool) rethrows -> Index {
        var low = startIndex
        var n = count
        while n > 0 {
            let half = n / 2
            let mid = index(low, offsetBy: half)
            if try belongs(self[mid]) {
                n = half
            } else {
                low = index(after: mid)
                n -= half + 1
            }
        }
        return low
    }
}
