/// How long a store remembers deleted ids for `changes(since:)` (the DataStore layer's change
/// tracking; Docs/Observation.md).
///
/// Inserted and replaced ids need no history: every index entry knows the sequence of the commit
/// that wrote it. A delete leaves no entry, so the store keeps a tombstone (type, key, sequence) in
/// memory, from when it was opened, until it is older than ``maxAge`` or more than
/// ``maxTombstones`` are kept (oldest dropped first; a delete-all counts one per id it removed).
/// A token older than the newest tombstone dropped makes `changes(since:)` throw
/// `.historyTruncated`, and the caller resynchronizes fully. Tombstones are not persisted: a token
/// from before the store was opened is accepted only if nothing was committed between it and the
/// open.
///
/// A value type; the default keeps a day, at most a million tombstones (about 80 MB at most).
public struct ChangeHistoryRetention: Sendable, Hashable {
    /// Tombstones older than this are dropped. nil: no age limit. Default 24 hours.
    public var maxAge: Duration?
    /// At most this many tombstones are kept (the oldest commits' go first). nil: no limit (memory
    /// grows with every delete). Default 1,000,000.
    public var maxTombstones: Int?

    /// A retention policy; the defaults keep a day, at most a million tombstones.
    public init(maxAge: Duration? = .seconds(86_400), maxTombstones: Int? = 1_000_000) {
        self.maxAge = maxAge
        self.maxTombstones = maxTombstones
    }

    /// Keeps every tombstone while the store is open (memory grows with every delete).
    public static let unlimited = ChangeHistoryRetention(maxAge: nil, maxTombstones: nil)
}
