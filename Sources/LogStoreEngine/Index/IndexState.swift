/// The in-memory indexes at one sequence number: per item type, key → location, in key order.
///
/// A value type built on persistent B+trees (``OrderedTree``): copying it is O(1) and a copy is
/// never affected by later changes to the original, which is how readers get snapshots while the
/// writer appends; each type's keys iterate in byte order, so requests page through them without
/// sorting (issue 11).
package struct IndexState: Sendable {
    package var types: [String: OrderedTree<RecordKey, RecordLocation>] = [:]
    /// The sequence number of the last transaction applied.
    package var sequence: UInt64 = 0

    func location(_ type: String, _ key: RecordKey) -> RecordLocation? { types[type]?[key] }

    func count(_ type: String) -> Int { types[type]?.count ?? 0 }

    mutating func put(_ type: String, _ key: RecordKey, _ loc: RecordLocation) {
        types[type, default: OrderedTree()].updateValue(loc, forKey: key)
    }

    mutating func delete(_ type: String, _ key: RecordKey) {
        guard types[type] != nil else { return }
        types[type]?.removeValue(forKey: key)
        if types[type]?.isEmpty == true { types[type] = nil }
    }

    mutating func deleteAll(_ type: String) { types[type] = nil }

    /// Total number of records.
    var totalCount: Int { types.values.reduce(0) { $0 + $1.count } }

    #if LOGSTORE_CHECK_INVARIANTS
    func _checkInvariants() {
        for (t, d) in types {
            precondition(!d.isEmpty, "empty index kept for type \(t)")
            for (_, loc) in d { precondition(loc.sequence <= sequence, "location newer than the state") }
        }
    }
    #else
    @inline(__always) func _checkInvariants() {}
    #endif
}
