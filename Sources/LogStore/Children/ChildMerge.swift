package import LogStoreEngine

/// The merge protocol of every child store, whatever its parent's backend:
///
/// 1. the parent finds the store given among its own children (by identity: `.notAChild`
///    otherwise, changing nothing); neither may be in a write block on this thread (that would
///    wait for itself: `.reentrantWrite`);
/// 2. the writes queued on the child, then those queued on the parent, run first (issue order);
/// 3. in ONE write transaction of the parent (``DataStoreBackend/merge(_:)``, its writer): take
///    the child's writer lock and its changes since its base (``ChildBackend/beginMerge()``), find
///    the conflicts with what the parent changed since that base, throw `.mergeConflict`
///    (changing nothing) or commit the changes the policy keeps;
/// 4. once that transaction is durable, rebase the child onto the parent's new state and release
///    the child's lock (``ChildBackend/endMerge(rebaseOnto:)``).
///
/// Lock order: the parent's writer, then the child's (as a write block of the parent that writes
/// to the child would take them). The child's lock is held from 3 to 4, so no child write slips
/// in between. Runs on the calling thread.
package enum ChildMerge {
    /// Whether the parent changed item (`type`, `key`) after `base`, the child's base (a snapshot
    /// the parent's backend made): answered inside the parent's merge transaction.
    package typealias ChangedSince = (_ base: any RecordReader, _ type: String, _ key: RecordKey) throws -> Bool

    /// Runs steps 2 to 4 for `child`, which step 1 found among the children of the store whose
    /// backend is `parent` and whose write queue is `parentQueue`. Throws `.reentrantWrite`,
    /// `.notOpen`/`.parentClosed` for a child that is not usable, `.mergeConflict`, or what the
    /// parent's transaction throws (then nothing is merged and the child keeps its changes).
    static func run<Parent: DataStoreBackend>(
        child: ChildDataStore, into parent: Parent, policy: MergePolicy, parentQueue: WriteQueue
    ) throws {
        let overlay = try child.shell.currentBackend()
        if parent.isWritingOnCurrentThread || overlay.isWritingOnCurrentThread {
            throw StoreErrors.reentrantWrite("merge(_:)")
        }
        // Writes queued before the merge belong before it (issue order): the child's, then the
        // parent's.
        child.shell.writeQueue.drain()
        parentQueue.drain()
        var merging = false
        defer { if merging { overlay.endMerge(rebaseOnto: nil) } }
        // A backend whose transactions retry (PostgreSQL's serialization failures) calls the plan
        // once per attempt: the child's lock is taken and its changes listed once; the conflicts
        // are found again against the parent's state of each attempt.
        var begun: (base: any RecordReader & Sendable, changes: [ChildBackend.Change])? = nil
        try parent.merge { changedSince in
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
            overlay.endMerge(rebaseOnto: try? parent.childBase())
        }
    }

    /// The operations that apply `changes` under `policy`: all of them (`.childWins`), those on
    /// items the parent did not change (`.parentWins`), or all of them if none conflicts
    /// (`.failOnConflict`, which throws `.mergeConflict` listing the items otherwise).
    static func operations(
        _ changes: [ChildBackend.Change], policy: MergePolicy,
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
                "\(list.count) item(s) changed both in the child and in the parent since the child's base. Nothing was merged; merge with .childWins or .parentWins, or resolve the items first (the error's conflicts list them)."
            ).with(conflicts: list)
        }
        var operations: [RecordOperation] = []
        operations.reserveCapacity(changes.count)
        for (i, ch) in changes.enumerated() {
            if policy == .parentWins && conflicting.contains(i) { continue }
            operations.append(ch.value.map { .put(type: ch.type, key: ch.key, value: $0) } ?? .delete(type: ch.type, key: ch.key))
        }
        return operations
    }

    /// An id for ``LogStoreError/Conflict``: UTF-8 when printable, else hex.
    static func describeKey(_ key: RecordKey) -> String {
        let bytes = key.bytes
        if let s = String(validating: bytes, as: UTF8.self), s.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) {
            return s
        }
        return key.description
    }

    /// The conflict test of a backend whose committed rows know the sequence of the commit that
    /// wrote them, with the child's base a snapshot of the same backend: the item changed when
    /// `writtenAt` (nil: the item is gone) is after the base, or it was deleted since.
    package static func changed(writtenAt: UInt64?, since base: any RecordReader, type: String, key: RecordKey) throws -> Bool {
        if let writtenAt { return writtenAt > base.sequence }
        return try base.contains(type: type, key: key)
    }
}
