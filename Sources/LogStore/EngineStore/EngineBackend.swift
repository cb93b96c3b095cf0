import Foundation
package import LogStoreEngine

/// The LogStore engine as a store shell's backend: what a `LogDataStore` runs on. Reads are
/// engine snapshots (the read path allocates one accessor and walks the index; no lock is held),
/// writes are engine transactions, and each commit reaches the change feed through the engine's
/// publication hook, under its state lock, in sequence order.
///
/// It also declares item types' secondary indexes on first use (``ensureIndexes(_:transaction:)``,
/// an ``IndexRegistry`` per opening). Thread-safe; made by `setup()`, closed by `tearDown()`.
package final class EngineBackend: DataStoreBackend {
    /// The open engine.
    package let engine: LogEngine
    /// The item types whose indexes this opening declared.
    let indexes = IndexRegistry()
    /// See ``DataStoreBackend/changeFeed``.
    package let changeFeed: DataStoreChangeFeed
    /// See ``DataStoreBackend/spillLocation``: the store's directory, on its file system.
    package let spillLocation: SpillLocation

    /// The backend of `engine` (just opened, not yet written to), publishing its commits to a new
    /// change feed kept per `options`. Throws `.notOpen` if the engine closed meanwhile.
    init(engine: LogEngine, options: DataStoreOptions) throws {
        self.engine = engine
        spillLocation = SpillLocation(directory: engine.directory, fileSystem: engine.fileSystem, cipher: engine.options.encryption.cipher)
        let feed = DataStoreChangeFeed(
            storeIdentity: engine.storeIdentifier, sequence: try engine.snapshot().sequence, retention: options.changeHistory,
            recordsWrites: false,
            snapshot: { [weak engine] in
                guard let engine else { throw StoreErrors.notOpen() }
                return EngineStateSnapshot(snapshot: try engine.snapshot())
            })
        _ = engine.setPublicationObserver { [weak feed] event in
            switch event {
            case .published(let commits): feed?.publish(commits)
            case .poisoned(let error): feed?.finish(throwing: error)
            }
        }
        changeFeed = feed
    }

    /// See ``DataStoreBackend/limits``: the engine's.
    package var limits: RecordLimits { engine.options.limits }

    /// See ``DataStoreBackend/read(_:)``: a snapshot of the published state.
    package func read<T>(_ block: (any DataStoreReadAccessor) throws -> T) throws -> T {
        let accessor = ReadAccessor(view: try engine.snapshot(), engine: self)
        defer { accessor.isValid = false }
        return try block(accessor)
    }

    /// See ``DataStoreBackend/write(_:)``: an engine transaction, durable under the engine's
    /// durability when this returns.
    package func write<T>(_ block: (any DataStoreReadWriteAccessor) throws -> T) throws -> T {
        try engine.write { txn in
            let accessor = ReadWriteAccessor(txn: txn, engine: self)
            defer { accessor.invalidate() }
            return try block(accessor)
        }
    }

    /// See ``DataStoreBackend/write(_:onDurable:)``: queued writes share group commits.
    package func write<T>(_ block: (any DataStoreReadWriteAccessor) throws -> T, onDurable: @escaping @Sendable ((any Error)?) -> Void)
        throws -> T
    {
        try engine.write(
            { txn in
                let accessor = ReadWriteAccessor(txn: txn, engine: self)
                defer { accessor.invalidate() }
                return try block(accessor)
            }, onDurable: onDurable)
    }

    /// See ``DataStoreBackend/merge(_:)``: one engine transaction that commits the merged
    /// operations as they are (already in commit order: no second change set, no second sort).
    /// An item changed since a child's base when the commit that last wrote it is numbered after
    /// the base's, or it was deleted since: exact, from the index.
    package func merge(_ plan: (_ changedSince: ChildMerge.ChangedSince) throws -> [RecordOperation]?) throws {
        try engine.write { txn in
            guard let now = txn.engineBase else { return }
            guard
                let operations = try plan({ base, type, key in
                    try ChildMerge.changed(writtenAt: now.location(type: type, key: key)?.sequence, since: base, type: type, key: key)
                })
            else { return }
            try txn.commitAsIs(operations)
        }
    }

    /// See ``DataStoreBackend/deleteEverything()``.
    package func deleteEverything() throws {
        try engine.write { txn in
            for t in try txn.itemTypes where !StoreHistory.isReserved(t) { try txn.deleteAll(type: t) }
        }
    }

    /// See ``DataStoreBackend/childBase()``: a snapshot of the published state. O(1).
    package func childBase() throws -> any RecordReader & Sendable { try engine.snapshot() }

    /// See ``DataStoreBackend/isWritingOnCurrentThread``: the engine's writer lock.
    package var isWritingOnCurrentThread: Bool { engine.isWritingOnCurrentThread }

    /// See ``DataStoreBackend/close()``: flushes, writes a checkpoint (per the options), releases
    /// the lock.
    package func close() throws { try engine.close() }

    /// Declares `Item`'s indexes with the engine if this opening has not yet; returns whether that
    /// built or dropped something. See ``IndexRegistry/ensure(_:engine:transaction:)``.
    func ensureIndexes<Item: DataStoreItem>(_ type: Item.Type, transaction: EngineTransaction?) throws -> Bool {
        try indexes.ensure(Item.self, engine: engine, transaction: transaction)
    }
}

/// A committed engine state as observation reads it: an engine snapshot, which also knows which
/// records were written after a sequence (from the index).
struct EngineStateSnapshot: DataStoreSnapshot {
    let snapshot: EngineSnapshot

    var sequence: UInt64 { snapshot.sequence }

    func read<T>(_ block: (any DataStoreReadAccessor) throws -> T) throws -> T {
        let accessor = ReadAccessor(view: snapshot)
        defer { accessor.isValid = false }
        return try block(accessor)
    }

    func keys(ofType itemType: String, writtenAfter sequence: UInt64) throws -> [RecordKey]? {
        try snapshot.keys(ofType: itemType, writtenAfter: sequence)
    }
}
