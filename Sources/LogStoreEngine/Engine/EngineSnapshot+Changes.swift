// Change tracking from the index: every entry knows the sequence of the commit that wrote it
// (``RecordLocation/sequence``, kept exact by compaction), so "what was written after token t" is
// a walk of the type's entries. Deletes leave no entry; the DataStore layer keeps them as tombstones.

extension EngineSnapshot {
    /// The keys of `type` whose record was written (inserted or replaced) by a commit with a
    /// sequence number above `sequence`, in key order. O(records of the type): walks the type's
    /// index entries without reading any value. Any thread. Throws `.corruption` for a damaged
    /// index run.
    package func keys(ofType type: String, writtenAfter sequence: UInt64) throws -> [RecordKey] {
        var out: [RecordKey] = []
        try index.types[type]?.forEach { key, location in
            if location.sequence > sequence { out.append(key) }
            return true
        }
        return out
    }
}
