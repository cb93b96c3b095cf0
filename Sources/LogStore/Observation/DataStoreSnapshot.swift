public import LogStoreEngine

/// One committed state of a store, as observation and `changes(since:)` read it. A backend hands
/// them out through its ``DataStoreChangeFeed`` (the "read at a sequence" half of the feed).
///
/// A backend's contract (the conformance suite of every backend checks it):
/// 1. ``sequence`` is the sequence of the newest commit the state includes; every commit with a
///    sequence up to it was published to the feed before the snapshot could be taken.
/// 2. ``read(_:)`` reads exactly that state, however long the snapshot is held and whatever is
///    committed meanwhile (LogStore's snapshots are O(1) MVCC views).
/// 3. ``keys(ofType:writtenAfter:)`` lists the keys written after a sequence if the backend keeps
///    each record's commit sequence, or returns nil and the feed keeps written keys itself.
///
/// `Sendable`: observation reads snapshots on its own threads.
public protocol DataStoreSnapshot: Sendable {
    /// The sequence number of the newest commit this state includes.
    var sequence: UInt64 { get }
    /// Runs `block` over this state, on the calling thread, with an accessor valid only inside it
    /// (like `DataStore.read(_:)`). Rethrows the block's error; throws `.corruption` and the
    /// decoding errors of the accessor's reads.
    func read<T>(_ block: (any DataStoreReadAccessor) throws -> T) throws -> T
    /// The keys of `itemType` whose record a commit after `sequence` inserted or replaced, and which
    /// this state still holds; nil when the backend does not know them (the feed then keeps
    /// written keys in its history). Any thread.
    func keys(ofType itemType: String, writtenAfter sequence: UInt64) throws -> [RecordKey]?
}

/// LogStore's snapshots: an engine snapshot (keys written after a sequence come from the index) or
/// a child store's view (its feed keeps written keys). A closed set, like ``StoreBackend``.
enum ReaderSnapshot: DataStoreSnapshot {
    case engine(EngineSnapshot)
    case child(ChildView)

    var view: any RecordReader & Sendable {
        switch self {
        case .engine(let s): return s
        case .child(let v): return v
        }
    }

    var sequence: UInt64 { view.sequence }

    func read<T>(_ block: (any DataStoreReadAccessor) throws -> T) throws -> T {
        let accessor: ReadAccessor
        switch self {
        case .engine(let s): accessor = ReadAccessor(view: s, health: nil)
        case .child(let v): accessor = ReadAccessor(view: v, health: v)
        }
        defer { accessor.isValid = false }
        return try block(accessor)
    }

    func keys(ofType itemType: String, writtenAfter sequence: UInt64) throws -> [RecordKey]? {
        switch self {
        case .engine(let s): return s.keys(ofType: itemType, writtenAfter: sequence)
        case .child: return nil
        }
    }
}

/// A snapshot over any record reader that holds one fixed state (a SQL backend's held read
/// transaction): what a backend without LogStore's engine serves to its ``DataStoreChangeFeed``.
/// Reads go through LogStore's own accessor, so requests answer exactly as they do on the
/// engine; a reader that failed (``FallibleRecordReader``) makes the read throw its error.
/// `keys(ofType:writtenAfter:)` is nil: such a feed records written keys itself.
package struct RecordReaderSnapshot: DataStoreSnapshot {
    package let reader: any FallibleRecordReader & Sendable

    package init(_ reader: any FallibleRecordReader & Sendable) { self.reader = reader }

    package var sequence: UInt64 { reader.sequence }

    package func read<T>(_ block: (any DataStoreReadAccessor) throws -> T) throws -> T {
        try reader.checkHealthy()
        let accessor = ReadAccessor(view: reader, health: reader)
        defer { accessor.isValid = false }
        let value = try block(accessor)
        try reader.checkHealthy()
        return value
    }

    package func keys(ofType itemType: String, writtenAfter sequence: UInt64) throws -> [RecordKey]? { nil }
}
