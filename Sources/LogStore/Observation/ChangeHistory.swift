import LogStoreEngine

/// A change feed's memory of its commit stream, for `changes(since:)`: the tombstones (deleted
/// keys with their commit's sequence) of every commit since the store was opened, within the
/// ``ChangeHistoryRetention``; and, for a backend whose snapshots cannot list the keys written
/// after a sequence (a child store), the written keys too.
///
/// Invariant: every tombstone (and recorded write) of a commit with a sequence above ``floor`` is
/// kept. `floor` starts at the sequence the store was opened at, and rises to the sequence of each
/// commit whose entry retention drops, or of a reset. A value inside the feed's lock.
struct ChangeHistory {
    struct Entry {
        var sequence: UInt64
        var time: ContinuousClock.Instant
        /// Per type: deletes, delete-all, and (only if `recordsWrites`) writes.
        var types: [String: CommitChanges.TypeChanges]
        /// Tombstones (and recorded writes) this entry holds, for ``ChangeHistoryRetention/maxTombstones``.
        var size: Int
    }

    /// Whether written keys are kept (the backend's snapshots cannot list them).
    let recordsWrites: Bool
    /// The sequence the store was opened at: a token of an earlier opening is trusted up to here.
    let openedAt: UInt64
    /// Changes after this sequence are complete.
    private(set) var floor: UInt64
    private var entries: [Entry] = []
    /// Index of the oldest live entry in `entries` (dropped entries are compacted away in bulk).
    private var first = 0
    private var size = 0
    /// Per type, the sequence of the newest commit that wrote a key of it.
    private var lastWrite: [String: UInt64] = [:]

    init(openedAt: UInt64, recordsWrites: Bool) {
        self.openedAt = openedAt
        self.floor = openedAt
        self.recordsWrites = recordsWrites
    }

    /// Number of tombstones (and recorded writes) kept.
    var count: Int { size }

    /// Remembers a commit. O(types it touched), plus O(written keys) when writes are recorded
    /// (the keys are shared with the commit, not copied).
    mutating func record(_ commit: CommitChanges, at time: ContinuousClock.Instant) {
        if commit.isReset {
            entries = []
            first = 0
            size = 0
            lastWrite = [:]
            floor = max(floor, commit.sequence)
            return
        }
        var kept: [String: CommitChanges.TypeChanges] = [:]
        var n = 0
        for (type, var changes) in commit.types {
            if !changes.written.isEmpty { lastWrite[type] = commit.sequence }
            if !recordsWrites { changes.written = [] }
            let m = changes.deleted.count + (changes.cleared?.count ?? 0) + changes.written.count
            if m > 0 || changes.cleared != nil {
                kept[type] = changes
                n += m
            }
        }
        guard !kept.isEmpty else { return }
        entries.append(Entry(sequence: commit.sequence, time: time, types: kept, size: n))
        size += n
    }

    /// Drops the oldest entries that `retention` no longer keeps, raising ``floor`` past them.
    mutating func prune(now: ContinuousClock.Instant, retention: ChangeHistoryRetention) {
        while first < entries.count {
            let e = entries[first]
            let tooOld = retention.maxAge.map { now - e.time > $0 } ?? false
            let tooMany = retention.maxTombstones.map { size > $0 } ?? false
            guard tooOld || tooMany else { break }
            floor = max(floor, e.sequence)
            size -= e.size
            first += 1
        }
        if first > 64 && first * 2 > entries.count {
            entries.removeFirst(first)
            first = 0
        }
    }

    /// What changed after `after` up to `through`, as the last operation per key (true: written,
    /// false: deleted), per type; and the types written in that range. Written keys are only
    /// known when `recordsWrites`; otherwise the map holds deletes only and the caller asks the
    /// snapshot for the written keys of `typesWritten`. O(entries in range + keys).
    func changes(after: UInt64, through: UInt64) -> (lastOperation: [String: [RecordKey: Bool]], typesWritten: [String]) {
        var last: [String: [RecordKey: Bool]] = [:]
        for e in entries[first...] where e.sequence > after && e.sequence <= through {
            for (type, c) in e.types {
                var ops = last[type] ?? [:]
                if let cleared = c.cleared {
                    for k in cleared.keys() { ops[k] = false }
                }
                for k in c.deleted { ops[k] = false }
                for k in c.written { ops[k] = true }
                last[type] = ops
            }
        }
        let written = lastWrite.filter { $0.value > after }.map(\.key)
        return (last, written)
    }
}
