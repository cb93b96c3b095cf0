import LogStoreEngine

extension RecordReader {
    /// Calls `body` with the records of `type` in ascending key order, starting after `key` (nil:
    /// from the first), until it returns false: the record-level walk behind
    /// ``DataStoreReadAccessor/forEachRecord(ofType:after:_:)`` on every LogStore view.
    ///
    /// A committed snapshot walks its ordered index: it finds where to start by binary search over
    /// positions (O(log² n) key lookups), then reads each record by key. Other views (a write
    /// transaction, a child store) sort their keys once. Throws `.corruption` or `body`'s error.
    package func forEachRecordInKeyOrder(ofType type: String, after key: RecordKey?,
                                         _ body: (RecordKey, ArraySlice<UInt8>) throws -> Bool) throws {
        if self is EngineSnapshot {
            var start = 0
            if let key {
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
            }
            try forEachKeyInOrder(ofType: type, fromOffset: start) { k in
                guard let v = try value(type: type, key: k) else { return true }
                return try body(k, v)
            }
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
}
