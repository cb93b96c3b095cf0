import LogStoreEngine

extension RecordReader {
    /// Calls `body` with the records of `type` in ascending key order, starting after `key` (nil:
    /// from the first), until it returns false: the record-level walk behind
    /// ``DataStoreReadAccessor/forEachRecord(ofType:after:_:)`` on every LogStore view.
    ///
    /// A committed snapshot walks its ordered index: it finds where to start by binary search over
    /// positions (O(log² n) key lookups), then reads each record by key. A write transaction over
    /// a snapshot walks the snapshot the same way and merges in its own changes after `key` (so a
    /// tool that pages through a type it rewrites, as migrations do, costs O(changes) per page, not
    /// a sort of the whole type). Other views (a child store) sort their keys once. Throws
    /// `.corruption` or `body`'s error.
    package func forEachRecordInKeyOrder(
        ofType type: String, after key: RecordKey?,
        _ body: (RecordKey, ArraySlice<UInt8>) throws -> Bool
    ) throws {
        if let snapshot = self as? EngineSnapshot {
            try snapshot.forEachRecordInOrder(ofType: type, fromOffset: firstOffset(ofType: type, after: key), body)
            return
        }
        if let txn = self as? EngineTransaction, txn.baseView is EngineSnapshot {
            try txn.forEachRecordMerged(ofType: type, after: key, body)
            return
        }
        let keys = keys(ofType: type).sorted()
        var i = 0
        if let key {
            var hi = keys.count
            while i < hi {
                let mid = (i + hi) / 2
                if keys[mid] <= key { i = mid + 1 } else { hi = mid }
            }
        }
        while i < keys.count {
            if let v = try value(type: type, key: keys[i]), try !body(keys[i], v) { return }
            i += 1
        }
    }

    /// The position in key order of the first key of `type` after `key` (0 for nil), by binary
    /// search over positions of this reader's ordered walk.
    func firstOffset(ofType type: String, after key: RecordKey?) -> Int {
        guard let key else { return 0 }
        var start = 0
        var hi = count(ofType: type)
        while start < hi {
            let mid = (start + hi) / 2
            var probe: RecordKey? = nil
            forEachKeyInOrder(ofType: type, fromOffset: mid) { k in
                probe = k
                return false
            }
            if let probe, probe <= key { start = mid + 1 } else { hi = mid }
        }
        return start
    }
}

extension EngineTransaction {
    /// The key-order walk of a write transaction over a committed snapshot: the snapshot's
    /// ordered walk after `key` without the keys the transaction deleted or replaced, merged with
    /// the transaction's own puts after `key` (sorted per call; none to sort when every put lies
    /// at or before `key`, as in a walk that rewrites what it passed).
    func forEachRecordMerged(ofType type: String, after key: RecordKey?, _ body: (RecordKey, ArraySlice<UInt8>) throws -> Bool) throws {
        let base = baseView
        resolveHiddenKeys()
        guard let c = changes.types[type] else {
            try base.forEachRecordInKeyOrder(ofType: type, after: key, body)
            return
        }
        // The puts after `key`, sorted: none when the largest put is not after it (a walk that
        // writes behind itself), without looking at each.
        var puts: [RecordKey] = []
        if let key {
            if let maxPut = c.maxPutKey, maxPut > key { puts = c.puts.keys.filter { $0 > key }.sorted() }
        } else {
            puts = c.puts.keys.sorted()
        }
        var next = 0
        var stopped = false
        /// Hands out the puts before `limit` (all when nil); false when `body` stopped.
        func drain(before limit: RecordKey?) throws -> Bool {
            while next < puts.count, limit == nil || puts[next] < limit! {
                let k = puts[next]
                next += 1
                if let v = try value(type: type, key: k), try !body(k, v) { return false }
            }
            return true
        }
        if !c.cleared, let snapshot = base as? EngineSnapshot {
            try snapshot.forEachRecordInOrder(ofType: type, fromOffset: base.firstOffset(ofType: type, after: key)) { k, v in
                guard try drain(before: k) else {
                    stopped = true
                    return false
                }
                if c.shadowed.contains(k) { return true }
                if try !body(k, v) {
                    stopped = true
                    return false
                }
                return true
            }
        }
        if !stopped { _ = try drain(before: nil) }
    }
}
