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

/// Any ``RecordReader`` that holds one state as a snapshot: a child store's view, or a SQL
/// backend's snapshot of its database. It does not know which records were written after a
/// sequence (the feed keeps written keys itself). Package API; any thread.
package struct RecordReaderSnapshot: DataStoreSnapshot {
    /// The state.
    package let reader: any RecordReader & Sendable

    /// A snapshot of `reader`'s state.
    package init(_ reader: any RecordReader & Sendable) { self.reader = reader }

    /// See ``DataStoreSnapshot/sequence``.
    package var sequence: UInt64 { reader.sequence }

    /// See ``DataStoreSnapshot/read(_:)``: requests run over the reader; its failures throw.
    package func read<T>(_ block: (any DataStoreReadAccessor) throws -> T) throws -> T {
        let accessor = ReadAccessor(view: reader)
        defer { accessor.isValid = false }
        return try block(accessor)
    }

    /// See ``DataStoreSnapshot/keys(ofType:writtenAfter:)``: not known (nil).
    package func keys(ofType itemType: String, writtenAfter sequence: UInt64) throws -> [RecordKey]? { nil }
}
