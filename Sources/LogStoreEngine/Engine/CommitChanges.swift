/// What one committed transaction changed, by item type: the unit a store's commit stream carries
/// (Docs/Observation.md).
///
/// The engine builds one per transaction it appends (only while a publication observer is
/// installed, ``LogEngine/setPublicationObserver(_:)``) and hands it over when readers can see the
/// commit; a child store builds one per write of its own. The DataStore layer's observation
/// machinery decides from it which observers must look at a commit, and keeps the deleted keys as
/// tombstones for `changes(since:)`. A backend of another kind (SQLite, PostgreSQL) builds them
/// from its own commit hook.
///
/// A value; `Sendable`. Keys are record keys (`ItemKey` of the ids).
public struct CommitChanges: Sendable {
    /// The changes of one item type in one commit.
    public struct TypeChanges: Sendable {
        /// Keys inserted or replaced, in the order the commit wrote them.
        public var written: [RecordKey]
        /// Keys deleted one by one (a merge may delete a key the store no longer holds).
        public var deleted: [RecordKey]
        /// Set when the commit first deleted every record of the type (before ``written``): the
        /// keys that existed before the commit (what the delete-all removed).
        public var cleared: ClearedKeys?

        /// Changes of one type.
        public init(written: [RecordKey] = [], deleted: [RecordKey] = [], cleared: ClearedKeys? = nil) {
            self.written = written
            self.deleted = deleted
            self.cleared = cleared
        }

        /// Whether `key` was written or deleted (not counting a delete-all). O(changes).
        public func touches(_ key: RecordKey) -> Bool { written.contains(key) || deleted.contains(key) }
    }

    /// The keys a delete-all removed: how many (O(1)), and the keys themselves, listed when asked
    /// from the state before the commit, which this value keeps alive while it is held.
    public struct ClearedKeys: Sendable {
        /// How many keys the delete-all removed.
        public var count: Int
        /// Lists them (in key order for LogStore's backends). Any thread; O(count).
        public var keys: @Sendable () -> [RecordKey]

        /// Keys removed by a delete-all.
        public init(count: Int, keys: @escaping @Sendable () -> [RecordKey]) {
            self.count = count
            self.keys = keys
        }
    }

    /// The commit's sequence number: the state readers see once it is visible.
    public var sequence: UInt64
    /// Per item type, what changed. Types the commit did not touch are absent.
    public var types: [String: TypeChanges]
    /// The commit may have changed any item of any type, and the backend cannot say which (a child
    /// store rebased onto its parent after a merge, which shows the parent's changes since the
    /// child's base). Observers re-read; change tracking starts over at this sequence.
    public var isReset: Bool

    /// A commit's changes.
    public init(sequence: UInt64, types: [String: TypeChanges], isReset: Bool = false) {
        self.sequence = sequence
        self.types = types
        self.isReset = isReset
    }

    /// The changes of `operations` (a transaction's records: per type a delete-all, deletes, puts)
    /// committed as `sequence`. For a delete-all of type `t`, `keysBefore(t)` returns the type's
    /// keys before the commit (capture only that type's state: it lives as long as the tombstones
    /// kept for it). O(operations).
    package init(sequence: UInt64, operations: [RecordOperation], keysBefore: (String) -> ClearedKeys) {
        self.init(sequence: sequence, types: [:])
        add(operations: operations, keysBefore: keysBefore)
    }

    /// Adds the changes of `operations`, the next ones of the same commit (a large transaction
    /// commits its operations chunk by chunk, in order). See ``init(sequence:operations:keysBefore:)``.
    package mutating func add(operations: [RecordOperation], keysBefore: (String) -> ClearedKeys) {
        for op in operations {
            switch op {
            case .put(let t, let k, _): types[t, default: TypeChanges()].written.append(k)
            case .delete(let t, let k): types[t, default: TypeChanges()].deleted.append(k)
            case .deleteAll(let t): types[t, default: TypeChanges()].cleared = keysBefore(t)
            }
        }
    }
}

/// What the engine tells its publication observer (``LogEngine/setPublicationObserver(_:)``).
package enum PublicationEvent: Sendable {
    /// These commits just became visible to readers, in sequence order. Called under the engine's
    /// state lock, so it is never called twice at once and a snapshot taken after it returns
    /// includes them.
    case published([CommitChanges])
    /// The store was poisoned: no commit will be published again.
    case poisoned(LogStoreError)
}
