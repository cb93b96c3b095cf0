import Foundation
public import LogStore
import LogStoreEngine

extension PostgresDataStore {
    /// A child store: reads this store's committed state as of now (a snapshot held by a
    /// connection of its own) plus its own writes, which this store sees only after
    /// ``merge(_:policy:)``. The child is LogStore's own child store over that snapshot (the
    /// Child Stores article, every rule), spilling past `childSpillThreshold` into a temporary
    /// directory. Throws `.notOpen`, or the error of opening the snapshot.
    public func makeChildDataStore() throws -> any DataStore {
        try LogDataStore.makeChild(of: self, options: options)
    }

    /// See `ChildStoreParent`: a child store's backend over a new snapshot of this store.
    package func makeChildStore(options: LogStoreOptions) throws -> ChildStore {
        let session = try currentSession()
        let reader = try PostgresSnapshotReader(session: session)
        session.snapshots.withLock { s in
            s.removeAll { $0.reader == nil }
            s.append(PostgresSession.WeakSnapshot(reader))
        }
        let spill = FileManager.default.temporaryDirectory.appendingPathComponent("logstore-postgres-children-\(session.storeID)").path
        return ChildStore(base: reader, options: options, spillDirectory: spill, fileSystem: POSIXFileSystem())
    }

    /// See `ChildStoreParent`.
    package func adopt(_ child: LogDataStore) throws {
        try state.withLock { s in
            guard s.session != nil else { throw Self.notOpenError() }
            s.children.removeAll { $0.store == nil }
            s.children.append(LogDataStore.WeakChild(child))
        }
    }

    /// Replays `child`'s changes since its last merge into this store as one transaction, with
    /// `MergePolicy.childWins`. See ``merge(_:policy:)``.
    public func merge(_ child: any DataStore) throws {
        try merge(child, policy: .childWins)
    }

    /// Replays `child`'s changes since its base (its creation or last merge) as one SERIALIZABLE
    /// transaction of this store, with an optimistic check per item: a change conflicts when the
    /// item's `version` in the store is a commit after the child's base (any server's), or the
    /// item was deleted since; `policy` decides. A delete-all in the child deletes the items the
    /// child saw. Afterwards the child rebases onto the store's new state. The transaction retries
    /// like every write (the conflicts are found again on each attempt). Throws `.notAChild`
    /// (changing nothing), `.mergeConflict` under `.failOnConflict` (changing nothing),
    /// `.reentrantWrite` inside a write block of either store, `.notOpen`, and the errors of the
    /// commit (then nothing is merged).
    public func merge(_ child: any DataStore, policy: MergePolicy) throws {
        let session = try currentSession()
        try ChildMerge.run(child: child, parent: self, policy: policy, parentIsWriting: isWritingOnCurrentThread, queue: writeQueue) {
            merge in
            try transaction { try merge($0) }
        } newBase: {
            let reader = try PostgresSnapshotReader(session: session)
            session.snapshots.withLock { $0.append(PostgresSession.WeakSnapshot(reader)) }
            return reader
        }
    }
}
