import Foundation
public import LogStore
import LogStoreEngine

extension SQLiteDataStore {
    /// A child store: reads this store's committed state as of now (a snapshot held by a
    /// read-only connection) plus its own writes, which this store sees only after
    /// ``merge(_:policy:)``. The child is LogStore's own child store over that snapshot (the
    /// Child Stores article, every rule), spilling past `childSpillThreshold` into
    /// `<file>-children/`. Throws `.notOpen`, or the SQLite error of opening the snapshot.
    public func makeChildDataStore() throws -> any DataStore {
        try LogDataStore.makeChild(of: self, options: options)
    }

    /// See `ChildStoreParent`: a child store's backend over a new snapshot of this store.
    package func makeChildStore(options: LogStoreOptions) throws -> ChildStore {
        let session = try currentSession()
        return ChildStore(
            base: try session.openSnapshot(), options: options, spillDirectory: session.spillDirectory, fileSystem: POSIXFileSystem())
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

    /// Replays `child`'s changes since its base (its creation or last merge) as one transaction of
    /// this store. A change conflicts when this store changed the same item after the child's
    /// base (a commit numbered after the base's wrote it, or deleted it); `policy` decides. A
    /// delete-all in the child deletes the items the child saw. Afterwards the child rebases onto
    /// this store's new state. Throws `.notAChild` (changing nothing), `.mergeConflict` under
    /// `.failOnConflict` (changing nothing), `.reentrantWrite` inside a write block of either
    /// store, `.notOpen`, and the SQLite errors of the commit (then nothing is merged).
    public func merge(_ child: any DataStore, policy: MergePolicy) throws {
        let session = try currentSession()
        try ChildMerge.run(child: child, parent: self, policy: policy, parentIsWriting: isWritingOnCurrentThread, queue: writeQueue) {
            merge in
            try transaction { try merge($0) }
        } newBase: {
            try session.openSnapshot()
        }
    }
}
