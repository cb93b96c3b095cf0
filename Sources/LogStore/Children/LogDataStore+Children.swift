import LogStoreEngine

extension LogDataStore {
    /// See ``DataStore/makeChildDataStore()``. The child is already set up (calling `setup()` on it
    /// is harmless). Its base is this store's committed state now; making it copies nothing.
    public func makeChildDataStore() throws -> any DataStore {
        let child = LogDataStore(kind: .child(parent: self), options: options)
        let backend = try child.makeBackend()
        child.state.withLock { $0.backend = backend }
        try state.withLock { s in
            if let f = s.failure { throw f }
            guard s.backend != nil else { throw Self.notOpenError() }
            s.children.removeAll { $0.store == nil }
            s.children.append(WeakChild(child))
        }
        return child
    }

    /// The backend of a new child of this store: a ``ChildStore`` over this store's current view,
    /// spilling into the root store's directory.
    func makeChildStore(options: LogStoreOptions) throws -> ChildStore {
        let view = try currentBackend().readView()
        let root = try rootEngine()
        return ChildStore(base: view, options: options, spillDirectory: root.directory, fileSystem: root.fileSystem)
    }

    /// The error a child store throws once its parent was torn down.
    static func parentClosedError() -> LogStoreError {
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
        guard let child = child as? LogDataStore, case .child(let parent) = child.kind, parent === self else {
            throw LogStoreError(.notAChild, "merge(_:) was given a store that is not a child of this store. Merge a child into the store that made it (makeChildDataStore()).")
        }
        guard case .child(let overlay) = try child.currentBackend() else {
            throw LogStoreError(.notAChild, "The store given to merge(_:) is not backed by a child store.")
        }
        let backend = try currentBackend()
        if backend.isWritingOnCurrentThread || overlay.isWritingOnCurrentThread {
            throw LogStoreError(.reentrantWrite, "merge(_:) was called from inside a write block of the parent or the child; it would wait for itself. Merge after the block returns.")
        }
        // Writes queued on the child before the merge belong in it (issue order).
        child.drainAsyncQueue()
        // Lock order: the parent's writer lock, then the child's (as a write block of the parent
        // that writes to the child would take them). The child's lock is held until the merged
        // transaction is durable and the child has rebased, so nothing slips in between.
        var merging = false
        defer { if merging { overlay.endMerge(rebaseOnto: nil) } }
        try writeTransaction { txn in
            let (childBase, changes) = try overlay.beginMerge()
            merging = true
            guard !changes.isEmpty else { return }
            let now = txn.baseView
            var conflicting = Set<Int>()
            if policy != .childWins {
                for (i, ch) in changes.enumerated() where try Self.changedSince(now: now, base: childBase, type: ch.type, key: ch.key) {
                    conflicting.insert(i)
                }
            }
            if policy == .failOnConflict && !conflicting.isEmpty {
                let list = conflicting.sorted().map { LogStoreError.Conflict(itemType: changes[$0].type, id: Self.describeKey(changes[$0].key)) }
                throw LogStoreError(
                    .mergeConflict,
                    "\(list.count) item(s) changed both in the child and in the parent since the child's base: \(list.prefix(10).map(\.description).joined(separator: ", "))\(list.count > 10 ? ", ..." : ""). Nothing was merged; merge with .childWins or .parentWins, or resolve the items first.",
                    conflicts: list)
            }
            // The child's changes are already in commit order: hand them over whole (no second
            // change set, no second sort).
            var operations: [RecordOperation] = []
            operations.reserveCapacity(changes.count)
            for (i, ch) in changes.enumerated() {
                if policy == .parentWins && conflicting.contains(i) { continue }
                operations.append(ch.value.map { .put(type: ch.type, key: ch.key, value: $0) } ?? .delete(type: ch.type, key: ch.key))
            }
            try txn.commitAsIs(operations)
        }
        // The merge is committed and durable. Rebase the child onto the parent's new state; if the
        // parent was closed meanwhile, the child is invalidated anyway, so this is not an error.
        if merging {
            merging = false
            overlay.endMerge(rebaseOnto: try? backend.readView())
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

    /// An id for messages: UTF-8 when printable, else hex.
    static func describeKey(_ key: RecordKey) -> String {
        let bytes = key.bytes
        if let s = String(validating: bytes, as: UTF8.self), s.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) {
            return s
        }
        return key.description
    }
}
