package import LogStoreEngine

/// The merge protocol of every child store, whatever its parent (a `LogDataStore` or another
/// backend that is a ``ChildStoreParent``):
///
/// 1. check that the store given is a child of this parent, and that neither is in a write block
///    on this thread (that would wait for itself: `.reentrantWrite`);
/// 2. wait for the writes queued on the child before the merge (issue order);
/// 3. in ONE write transaction of the parent (its writer lock): take the child's writer lock and
///    its changes since its base (``ChildStore/beginMerge()``), find the conflicts with what the
///    parent changed since that base, throw `.mergeConflict` (changing nothing) or apply the
///    changes the policy keeps;
/// 4. once that transaction is durable, rebase the child onto the parent's new state and release
///    the child's lock (``ChildStore/endMerge(rebaseOnto:)``).
///
/// Lock order: the parent's writer lock, then the child's (as a write block of the parent that
/// writes to the child would take them). The child's lock is held from 3 to 4, so no child write
/// slips in between. Runs on the calling thread.
package enum ChildMerge {
    /// Decides whether the parent changed item (`type`, `key`) since the child's `base`.
    package typealias ChangedSince = (_ base: any RecordReader, _ type: String, _ key: RecordKey) throws -> Bool
    /// Called inside the parent's transaction: returns the operations to commit, nil when the
    /// child has no changes. Throws `.mergeConflict` under `.failOnConflict`. May be called again
    /// when the parent's transaction is run again (a retried serialization failure).
    package typealias Plan = (_ changedSince: ChangedSince) throws -> [RecordOperation]?

    /// Runs steps 1 to 4. `transaction` runs its argument inside one durable write transaction of
    /// the parent (and applies the operations the plan returns there); `newBase` is the parent's
    /// committed state after it. Throws `.notAChild` (changing nothing) when `child` is not a
    /// child of `parent`, `.reentrantWrite`, `.mergeConflict`, or what the transaction throws.
    package static func run(
        child: any DataStore, parent: any ChildStoreParent, policy: MergePolicy, parentIsWriting: Bool,
        transaction: (_ plan: Plan) throws -> Void,
        newBase: () throws -> any RecordReader & Sendable
    ) throws {
        guard let child = child as? LogDataStore, case .child(let owner) = child.kind, owner === parent else {
            throw LogStoreError(
                .notAChild,
                "merge(_:) was given a store that is not a child of this store. Merge a child into the store that made it (makeChildDataStore())."
            )
        }
        guard case .child(let overlay) = try child.currentBackend() else {
            throw LogStoreError(.notAChild, "The store given to merge(_:) is not backed by a child store.")
        }
        if parentIsWriting || overlay.isWritingOnCurrentThread {
            throw LogStoreError(
                .reentrantWrite,
                "merge(_:) was called from inside a write block of the parent or the child; it would wait for itself. Merge after the block returns."
            )
        }
        // Writes queued on the child before the merge belong in it (issue order).
        child.drainAsyncQueue()
        var merging = false
        defer { if merging { overlay.endMerge(rebaseOnto: nil) } }
        // A backend whose transactions retry (PostgreSQL's serialization failures) calls the plan
        // once per attempt: the child's lock is taken and its changes listed once; the conflicts
        // are found again against the parent's state of each attempt.
        var begun: (base: any RecordReader & Sendable, changes: [ChildStore.Change])? = nil
        try transaction { changedSince in
            if begun == nil {
                begun = try overlay.beginMerge()
                merging = true
            }
            guard let (childBase, changes) = begun, !changes.isEmpty else { return nil }
            return try operations(changes, policy: policy) { type, key in try changedSince(childBase, type, key) }
        }
        // The merge is committed and durable. Rebase the child onto the parent's new state; if the
        // parent was closed meanwhile, the child is invalidated anyway, so this is not an error.
        if merging {
            merging = false
            overlay.endMerge(rebaseOnto: try? newBase())
        }
    }

    /// ``run(child:parent:policy:parentIsWriting:transaction:newBase:)`` for a backend whose write
    /// transactions hand out an accessor that checks conflicts and applies operations itself (the
    /// SQL backends): the writes queued on the parent come first, then one `transaction` finds the
    /// conflicts with `changedSince` and applies what the policy keeps.
    package static func run<Accessor: ChildMergeTarget>(
        child: any DataStore, parent: any ChildStoreParent, policy: MergePolicy,
        parentIsWriting: Bool, queue: WriteQueue,
        transaction: ((Accessor) throws -> Void) throws -> Void,
        newBase: () throws -> any RecordReader & Sendable
    ) throws {
        try run(
            child: child, parent: parent, policy: policy, parentIsWriting: parentIsWriting,
            transaction: { plan in
                // Writes queued on the parent before the merge come first (issue order).
                queue.drain()
                try withoutActuallyEscaping(plan) { plan in
                    try transaction { accessor in
                        guard let operations = try plan({ base, type, key in try accessor.changedSince(base: base, type: type, key: key) })
                        else { return }
                        try accessor.apply(operations)
                    }
                }
            }, newBase: newBase)
    }

    /// The operations that apply `changes` under `policy`: all of them (`.childWins`), those on
    /// items the parent did not change (`.parentWins`), or all of them if none conflicts
    /// (`.failOnConflict`, which throws `.mergeConflict` listing the items otherwise).
    static func operations(
        _ changes: [ChildStore.Change], policy: MergePolicy,
        changedSince: (String, RecordKey) throws -> Bool
    ) throws -> [RecordOperation] {
        var conflicting = Set<Int>()
        if policy != .childWins {
            for (i, ch) in changes.enumerated() where try changedSince(ch.type, ch.key) {
                conflicting.insert(i)
            }
        }
        if policy == .failOnConflict && !conflicting.isEmpty {
            let list = conflicting.sorted().map { LogStoreError.Conflict(itemType: changes[$0].type, id: describeKey(changes[$0].key)) }
            throw LogStoreError(
                .mergeConflict,
                "\(list.count) item(s) changed both in the child and in the parent since the child's base: \(list.prefix(10).map(\.description).joined(separator: ", "))\(list.count > 10 ? ", ..." : ""). Nothing was merged; merge with .childWins or .parentWins, or resolve the items first.",
                conflicts: list)
        }
        var operations: [RecordOperation] = []
        operations.reserveCapacity(changes.count)
        for (i, ch) in changes.enumerated() {
            if policy == .parentWins && conflicting.contains(i) { continue }
            operations.append(ch.value.map { .put(type: ch.type, key: ch.key, value: $0) } ?? .delete(type: ch.type, key: ch.key))
        }
        return operations
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

/// The write accessor of a backend that merges children with
/// ``ChildMerge/run(child:parent:policy:parentIsWriting:queue:transaction:newBase:)``.
package protocol ChildMergeTarget {
    /// Whether record (`type`, `key`) changed in the parent after the child's `base`.
    func changedSince(base: any RecordReader, type: String, key: RecordKey) throws -> Bool
    /// Applies the merged operations in the accessor's transaction.
    func apply(_ operations: [RecordOperation]) throws
}
