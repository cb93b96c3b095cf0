package import LogStoreEngine

/// A store that can have child stores: it hands out overlays over its committed state and keeps
/// track of the children, so that tearing it down fails them with `.parentClosed`.
/// ``LogDataStore`` is one; so are other backends whose snapshots are `RecordReader`s (the SQLite
/// backend), so that every child store has one implementation with one set of semantics.
/// Package API: any thread.
package protocol ChildStoreParent: AnyObject, Sendable {
    /// A new overlay over this store's committed state as of now. Throws `.notOpen` (or the
    /// store's failure) when this store is not usable.
    func makeChildStore(options: LogStoreOptions) throws -> ChildStore
    /// Records `child` (just made over ``makeChildStore(options:)``) so that a later tearDown
    /// invalidates it. Throws `.notOpen` if this store was torn down meanwhile.
    func adopt(_ child: LogDataStore) throws
}

extension LogDataStore: ChildStoreParent {
    /// See ``DataStore/makeChildDataStore()``. The child is already set up (calling `setup()` on it
    /// is harmless). Its base is this store's committed state now; making it copies nothing.
    public func makeChildDataStore() throws -> any DataStore {
        try Self.makeChild(of: self, options: options)
    }

    /// A child store of `parent` (a `LogDataStore` whose kind is `.child`), set up and adopted.
    /// Throws what ``ChildStoreParent/makeChildStore(options:)`` and
    /// ``ChildStoreParent/adopt(_:)`` throw.
    package static func makeChild(of parent: any ChildStoreParent, options: LogStoreOptions) throws -> LogDataStore {
        let child = LogDataStore(kind: .child(parent: parent), options: options)
        let backend = try child.makeBackend()
        let feed = try child.makeFeed(for: backend)
        child.state.withLock { s in
            s.backend = backend
            s.feed = feed
        }
        try parent.adopt(child)
        return child
    }

    /// See ``ChildStoreParent/adopt(_:)``.
    package func adopt(_ child: LogDataStore) throws {
        try state.withLock { s in
            if let f = s.failure { throw f }
            guard s.backend != nil else { throw Self.notOpenError() }
            s.children.removeAll { $0.store == nil }
            s.children.append(WeakChild(child))
        }
    }

    /// The backend of a new child of this store: a ``ChildStore`` over this store's current view,
    /// spilling where this store's own overlay spills (the root store's directory).
    package func makeChildStore(options: LogStoreOptions) throws -> ChildStore {
        let backend = try currentBackend()
        let view = try backend.readView()
        switch backend {
        case .engine(let e):
            return ChildStore(base: view, options: options, spillDirectory: e.directory, fileSystem: e.fileSystem)
        case .child(let c):
            return ChildStore(base: view, options: options, spillDirectory: c.spillDirectory, fileSystem: c.fileSystem)
        }
    }

    /// The error a child store throws once its parent was torn down.
    package static func parentClosedError() -> LogStoreError {
        LogStoreError(.parentClosed, "The parent of this child store was torn down. Make a new child store from a set-up parent.")
    }

    /// See ``DataStore/merge(_:)``.
    public func merge(_ child: any DataStore) throws {
        try merge(child, policy: .childWins)
    }

    /// See ``DataStore/merge(_:policy:)``.
    ///
    /// The child's changes since its base (its creation or last merge) are replayed as one
    /// transaction of this store, durable under this store's durability. A change conflicts when
    /// this store changed the same item (insert, replace or delete) after the child's base. A
    /// delete-all in the child is replayed as deletes of the items the child saw at its base, not
    /// of items this store added since. Afterwards the child rebases onto this store's new state.
    public func merge(_ child: any DataStore, policy: MergePolicy) throws {
        let backend = try currentBackend()
        try ChildMerge.run(child: child, parent: self, policy: policy, parentIsWriting: backend.isWritingOnCurrentThread) { plan in
            try writeTransaction { txn in
                let now = txn.baseView
                guard let operations = try plan({ base, type, key in try Self.changedSince(now: now, base: base, type: type, key: key) })
                else { return }
                // The child's changes are already in commit order: hand them over whole (no second
                // change set, no second sort, no value copies).
                try txn.commitAsIs(operations)
            }
        } newBase: {
            try backend.readView()
        }
    }

    /// Whether item (type, key) differs between `base` and `now`: for two engine snapshots, by the
    /// sequence number of its last write (exact); otherwise by comparing stored bytes.
    static func changedSince(now: any RecordReader, base: any RecordReader, type: String, key: RecordKey) throws -> Bool {
        if let n = now as? EngineSnapshot, let b = base as? EngineSnapshot {
            if let loc = n.location(type: type, key: key) { return loc.sequence > b.sequence }
            return b.contains(type: type, key: key)
        }
        return try now.value(type: type, key: key) != base.value(type: type, key: key)
    }
}
