import LogStoreEngine

/// What a write transaction changed, per item type, reduced to each key's final state (the
/// commit log's entry and the change feed's `CommitChanges`). O(1) per change.
struct ChangeTracker {
    struct TypeState {
        /// Written keys in first-write order; an index per key still written.
        var written: [RecordKey] = []
        var writtenAt: [RecordKey: Int] = [:]
        var deleted: Set<RecordKey> = []
        var deletedOrder: [RecordKey] = []
        /// What delete-alls removed (the keys before them, and the transaction's own).
        var cleared: Set<RecordKey>? = nil
    }
    var states: [String: TypeState] = [:]

    var isEmpty: Bool { states.isEmpty }

    /// Records a write of `key`; whether it is the first change of `key` in the transaction.
    @discardableResult
    mutating func wrote(_ type: String, _ key: RecordKey) -> Bool {
        states[type, default: TypeState()].write(key)
    }

    mutating func deleted(_ type: String, _ key: RecordKey) {
        states[type, default: TypeState()].delete(key)
    }

    mutating func cleared(_ type: String, _ keys: [RecordKey]) {
        var t = states[type] ?? TypeState()
        var all = t.cleared ?? []
        all.formUnion(keys)
        all.formUnion(t.deleted)
        t = TypeState()
        t.cleared = all
        states[type] = t
    }

    /// The changes as the feed takes them.
    var types: [String: CommitChanges.TypeChanges] {
        states.mapValues { t in
            CommitChanges.TypeChanges(
                written: t.written.enumerated().filter { t.writtenAt[$0.element] == $0.offset }.map(\.element),
                deleted: t.deletedOrder.filter { t.deleted.contains($0) },
                cleared: t.cleared.map { c in
                    let keys = c.sorted()
                    return CommitChanges.ClearedKeys(count: keys.count, keys: { keys })
                })
        }
    }
}

extension ChangeTracker.TypeState {
    /// Whether `key` had no change in the transaction before.
    mutating func write(_ key: RecordKey) -> Bool {
        if deleted.remove(key) != nil {
            deletedOrder.removeAll { $0 == key }
            writtenAt[key] = written.count
            written.append(key)
            return false
        }
        if writtenAt[key] != nil { return false }
        writtenAt[key] = written.count
        written.append(key)
        return true
    }

    mutating func delete(_ key: RecordKey) {
        writtenAt[key] = nil
        if deleted.insert(key).inserted { deletedOrder.append(key) }
    }
}
