extension EngineTransaction {
    /// See ``RecordReader/forEachRecordInKeyOrder(ofType:after:_:)``: the base's walk in key order
    /// with this transaction's puts merged in and the keys it hides left out. The puts after `key`
    /// are sorted once; a walk that writes behind itself (a migration rewriting each record it
    /// visits) learns from ``ChangeSet/TypeChanges/maxPutKey`` that none lies ahead without looking
    /// at each. Throws `.accessorExpired` after the body returned, and what the base throws.
    public func forEachRecordInKeyOrder(
        ofType type: String, after key: RecordKey?, _ body: (RecordKey, ArraySlice<UInt8>) throws -> Bool
    ) throws {
        try check()
        try resolveHiddenKeys()
        guard let c = changes.types[type] else {
            try base.forEachRecordInKeyOrder(ofType: type, after: key, body)
            return
        }
        var puts: [RecordKey] = []
        if let key {
            if let maxPut = c.maxPutKey, maxPut > key { puts = c.puts.keys.filter { $0 > key }.sorted() }
        } else {
            puts = c.puts.keys.sorted()
        }
        var next = 0
        var stopped = false
        // Emits the puts before `limit` (all of them when nil); false once `body` stopped.
        func drain(before limit: RecordKey?) throws -> Bool {
            while next < puts.count {
                let k = puts[next]
                if let limit, k >= limit { break }
                next += 1
                if let v = try value(type: type, key: k), try !body(k, v) { return false }
            }
            return true
        }
        if !c.cleared {
            try base.forEachRecordInKeyOrder(ofType: type, after: key) { k, v in
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
