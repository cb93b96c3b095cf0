extension ChangeSet {
    /// Secondary-index entries as the change set's reader sees them: the base's entries of records
    /// it did not change, merged in entry order with the entries of the values it holds (computed
    /// from those values). A transaction's reads and a child store's views therefore include
    /// their own changes, with no index of their own to keep up to date. O(changes of the type)
    /// per call on top of the base's scan.
    package func forEachIndexEntry(
        _ type: String, index name: String, in range: IndexEntryRange, reverse: Bool, base: any RecordReader,
        _ body: (IndexEntry, RecordKey) throws -> Bool
    ) throws {
        guard let c = types[type] else {
            return try base.forEachIndexEntry(ofType: type, index: name, in: range, reverse: reverse, body)
        }
        guard let definition = try base.secondaryIndexes(ofType: type)[name] else { throw LogStoreError.noSuchIndex(type, name) }
        // The entries of this change set's own values in the range, in scan order.
        var own: [(entry: IndexEntry, key: RecordKey)] = []
        let paths = IndexKeyEncoding.paths(of: definition)
        for (k, v) in c.puts {
            let entry = try IndexState.entry(paths, key: k, value: try read(v))
            if range.contains(entry) { own.append((entry, k)) }
        }
        own.sort { reverse ? $1.entry < $0.entry : $0.entry < $1.entry }
        var next = 0
        var stopped = false
        func before(_ a: IndexEntry, _ b: IndexEntry) -> Bool { reverse ? b < a : a < b }
        if !c.cleared {
            try base.forEachIndexEntry(ofType: type, index: name, in: range, reverse: reverse) { entry, key in
                if c.shadowed.contains(key) { return true }
                while next < own.count, before(own[next].entry, entry) {
                    if try !body(own[next].entry, own[next].key) {
                        stopped = true
                        return false
                    }
                    next += 1
                }
                if try !body(entry, key) {
                    stopped = true
                    return false
                }
                return true
            }
        }
        guard !stopped else { return }
        while next < own.count {
            if try !body(own[next].entry, own[next].key) { return }
            next += 1
        }
    }

    /// The number of entries ``forEachIndexEntry(_:index:in:reverse:base:_:)`` visits: the base's
    /// count when the change set has no change of `type`, else counted by visiting.
    package func countIndexEntries(_ type: String, index name: String, in range: IndexEntryRange, base: any RecordReader) throws -> Int {
        guard types[type] != nil else { return try base.countIndexEntries(ofType: type, index: name, in: range) }
        var n = 0
        try forEachIndexEntry(type, index: name, in: range, reverse: false, base: base) { _, _ in
            n += 1
            return true
        }
        return n
    }
}

extension EngineTransaction {
    /// See ``RecordReader/secondaryIndexes(ofType:)``: the base's.
    public func secondaryIndexes(ofType type: String) throws -> [String: IndexDefinition] { try base.secondaryIndexes(ofType: type) }

    /// See ``RecordReader/forEachIndexEntry(ofType:index:in:reverse:_:)``: includes this
    /// transaction's own changes.
    public func forEachIndexEntry(
        ofType type: String, index: String, in range: IndexEntryRange, reverse: Bool,
        _ body: (_ entry: IndexEntry, _ key: RecordKey) throws -> Bool
    ) throws {
        try check()
        // Puts that hide base keys must be known before the base's entries are filtered.
        try resolveHiddenKeys()
        try changes.forEachIndexEntry(type, index: index, in: range, reverse: reverse, base: base, body)
    }

    /// See ``RecordReader/countIndexEntries(ofType:index:in:)``.
    public func countIndexEntries(ofType type: String, index: String, in range: IndexEntryRange) throws -> Int {
        try check()
        try resolveHiddenKeys()
        return try changes.countIndexEntries(type, index: index, in: range, base: base)
    }
}

extension ChangeSet {
    /// The keys of `type` as the change set's reader sees them, in key order from position
    /// `offset`: the base's ordered walk (without the keys this change set hides) merged with the
    /// keys it holds values for, sorted. O(changes of the type · log) plus the walk; positions
    /// before `offset` are walked, not skipped, when the type has changes.
    package func forEachKeyInOrder(_ type: String, fromOffset offset: Int, base: any RecordReader, _ body: (RecordKey) throws -> Bool)
        throws
    {
        guard let c = types[type] else { return try base.forEachKeyInOrder(ofType: type, fromOffset: offset, body) }
        let own = c.puts.keys.sorted()
        var next = 0
        var skip = Swift.max(0, offset)
        var stopped = false
        func emit(_ k: RecordKey) throws -> Bool {
            if skip > 0 {
                skip -= 1
                return true
            }
            return try body(k)
        }
        if !c.cleared {
            try base.forEachKeyInOrder(ofType: type, fromOffset: 0) { k in
                if c.shadowed.contains(k) && c.puts[k] == nil { return true }
                while next < own.count, own[next] < k {
                    if try !emit(own[next]) {
                        stopped = true
                        return false
                    }
                    next += 1
                }
                if next < own.count, own[next] == k { next += 1 }
                if try !emit(k) {
                    stopped = true
                    return false
                }
                return true
            }
        }
        guard !stopped else { return }
        while next < own.count {
            if try !emit(own[next]) { return }
            next += 1
        }
    }
}

extension EngineTransaction {
    /// See ``RecordReader/forEachKeyInOrder(ofType:fromOffset:_:)``: the base's ordered walk
    /// merged with this transaction's own keys.
    public func forEachKeyInOrder(ofType type: String, fromOffset offset: Int, _ body: (RecordKey) throws -> Bool) throws {
        try resolveHiddenKeys()
        try changes.forEachKeyInOrder(type, fromOffset: offset, base: base, body)
    }
}
