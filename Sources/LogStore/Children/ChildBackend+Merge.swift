import HashTreeCollections
import LogStoreEngine

/// The merge protocol: how a parent takes a child's changes (``ChildMerge``).
///
/// 1. The parent starts a write transaction (its writer lock).
/// 2. Inside it, ``ChildBackend/beginMerge()`` takes the child's writer lock and returns the child's
///    base and its changes; the parent replays them (minus conflicts, by policy) as that one
///    transaction.
/// 3. Once the transaction is durable, ``ChildBackend/endMerge(rebaseOnto:)`` rebases the child onto
///    the parent's new state and releases the child's lock.
///
/// Lock order: the parent's writer lock, then the child's (as a parent write body that writes to
/// the child would take them). The child's lock is held from step 2 to 3, so no child write slips
/// in between. Both locks are taken and released in this module.
extension ChildBackend {
    /// One change of the child relative to its base, as the parent should replay it.
    struct Change: Sendable {
        /// The item type.
        var type: String
        /// The record key.
        var key: RecordKey
        /// The new value, or nil for a delete.
        var value: [UInt8]?
    }

    /// Every change since the base, with delete-all expanded to deletes of the keys the base held
    /// (what the child saw), in (type, key) order.
    static func changes(base: any RecordReader, changes set: ChangeSet<PersistentChangeStorage>) throws -> [Change] {
        var changes: [Change] = []
        for type in set.types.keys.sorted() {
            guard let c = set.types[type] else { continue }
            var deleted: [RecordKey] = []
            if c.cleared {
                deleted = try base.keys(ofType: type).filter { c.puts[$0] == nil }
            } else {
                deleted = c.deletedKeys
            }
            for k in deleted.sorted() { changes.append(Change(type: type, key: k, value: nil)) }
            for k in c.puts.keys.sorted() {
                guard let v = c.puts[k] else { continue }
                // In-memory values are handed over without a copy (arrays share their storage).
                if case .inline(let bytes) = v {
                    changes.append(Change(type: type, key: k, value: bytes))
                } else {
                    changes.append(Change(type: type, key: k, value: Array(try set.read(v))))
                }
            }
        }
        return changes
    }

    /// The changes of a child written once since its base (`State.run`): its transaction's
    /// operations, which are already the changes since the base in (type, key) order (deletes of
    /// keys the base holds, then puts, per type; no delete-all).
    static func changes(run: [RecordOperation]) -> [Change] {
        run.map { op in
            switch op {
            case .put(let t, let k, let v): Change(type: t, key: k, value: v)
            case .delete(let t, let k): Change(type: t, key: k, value: nil)
            case .deleteAll(let t): Change(type: t, key: RecordKey([]), value: nil)  // never in a run
            }
        }
    }

    /// Starts a merge: takes this child's writer lock (so it cannot change until
    /// ``endMerge(rebaseOnto:)``) and returns its base and its changes. Throws `.reentrantWrite`
    /// if the calling thread is inside a write of this child, `.notOpen`/`.parentClosed` if it is
    /// unusable (then the lock is not held). Every successful call must be paired with
    /// ``endMerge(rebaseOnto:)`` on the same thread.
    func beginMerge() throws -> (base: any RecordReader & Sendable, changes: [Change]) {
        try writer.acquire()
        do {
            let (base, set, run) = try state.withLock { s in
                if s.closed { throw StoreErrors.notOpen() }
                return (s.base, s.changes, s.run)
            }
            let changes = try run.map(Self.changes(run:)) ?? Self.changes(base: base, changes: set)
            return (base, changes)
        } catch {
            writer.release()
            throw error
        }
    }

    /// Ends a merge started by ``beginMerge()``: rebases onto `newBase` (when given) and releases
    /// the writer lock.
    func endMerge(rebaseOnto newBase: (any RecordReader & Sendable)?) {
        if let newBase { rebase(onto: newBase) }
        writer.release()
    }

    /// Replaces the base with `newBase` and empties the changes (after a merge, or to start over).
    /// Views taken before keep reading the old changes; the spill file goes away with the last one.
    func rebase(onto newBase: any RecordReader & Sendable) {
        state.withLock { s in
            s.base = newBase
            s.changes = ChangeSet<PersistentChangeStorage>()
            s.run = nil
            s.spillFile = nil
            s.sequence += 1
            // The view now shows the parent's changes since the old base too: observers re-read.
            changeFeed.publish([CommitChanges(sequence: s.sequence, types: [:], isReset: true)])
        }
    }
}
