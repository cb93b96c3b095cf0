/// The in-memory indexes at one sequence number: per item type, key → location, in key order.
///
/// A value type built on layered indexes (``TypeIndex``: mapped runs under a ``DeltaTree``): copying it is O(1)
/// and a copy is never affected by later changes to the original, which is how readers get
/// snapshots while the writer appends; each type's keys iterate in byte order, so requests page
/// through them without sorting.
package struct IndexState: Sendable {
    package var types: [String: TypeIndex] = [:]
    /// The sequence number of the last transaction applied.
    package var sequence: UInt64 = 0
    /// Secondary indexes: per type, per index name (``SecondaryIndex``). Derived from the records
    /// (every entry can be rebuilt from them); kept in step by commits (``secondaryChanges(for:readOld:)``),
    /// by recovery (``replayTouches``) and carried over by compaction, which moves records but
    /// changes no value.
    package var secondary: [String: [String: SecondaryIndex]] = [:]
    /// While recovery replays the log after a checkpoint: the keys of indexed types it touched,
    /// so their secondary entries can be brought up to date afterwards. Nil otherwise.
    package var replayTouches: SecondaryReplayTouches? = nil
    /// The defines of this state (type ids and names, dictionaries): what format 4 records refer to.
    package var meta = MetaTable()

    func location(_ type: String, _ key: RecordKey) throws -> RecordLocation? { try types[type]?.location(key) }

    func count(_ type: String) -> Int { types[type]?.count ?? 0 }

    /// Puts `loc` for `key` of `type`; the location it replaced is counted in `dead`.
    mutating func put(_ type: String, _ key: RecordKey, _ loc: RecordLocation, dead: inout DeadBytes) throws {
        let old = try types[type, default: TypeIndex()].updateValue(loc, forKey: key)
        dead.add(old, type: type, key: key)
        if replayTouches != nil, secondary[type] != nil { replayTouches?.touch(type, key) }
    }

    /// Removes `key` of `type`; the location it removed is counted in `dead`.
    mutating func delete(_ type: String, _ key: RecordKey, dead: inout DeadBytes) throws {
        if replayTouches != nil, secondary[type] != nil { replayTouches?.touch(type, key) }
        guard types[type] != nil else { return }
        let old = try types[type]?.removeValue(forKey: key)
        dead.add(old, type: type, key: key)
        if types[type]?.isEmpty == true { types[type] = nil }
    }

    /// Drops every record of `type`, and every entry of its secondary indexes (their definitions
    /// stay).
    mutating func deleteAll(_ type: String, dead: inout DeadBytes) {
        if types[type] != nil { dead.unknown = true }
        types[type] = nil
        if replayTouches != nil, secondary[type] != nil { replayTouches?.clear(type) }
        if var indexes = secondary[type] {
            for name in indexes.keys { indexes[name]?.entries = SecondaryEntries() }
            secondary[type] = indexes
        }
    }

    /// Total number of records.
    var totalCount: Int { types.values.reduce(0) { $0 + $1.count } }

    #if LOGSTORE_CHECK_INVARIANTS
        func _checkInvariants() {
            for (t, d) in types {
                precondition(!d.isEmpty, "empty index kept for type \(t)")
                try? d.forEach { _, loc in
                    precondition(loc.sequence <= sequence, "location newer than the state")
                    return true
                }
            }
        }
    #else
        @inline(__always) func _checkInvariants() {}
    #endif
}
