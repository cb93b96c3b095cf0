extension LogStoreError {
    /// `.invalidArgument`: a reader was asked for a secondary index it does not have.
    static func noSuchIndex(_ type: String, _ index: String) -> LogStoreError {
        LogStoreError(.invalidArgument, "\(type) has no secondary index \"\(index)\" in this view; declare it before using it.")
    }
}

extension IndexState {
    /// Calls `body` with the entries of `index` of `type` in `range`, in order (reversed with
    /// `reverse`), each with its record key. Throws `.invalidArgument` if there is no such index,
    /// `.corruption` for an entry whose record key cannot be found.
    func forEachIndexEntry(
        ofType type: String, index name: String, in range: IndexEntryRange, reverse: Bool,
        _ body: (IndexEntry, RecordKey) throws -> Bool
    ) throws {
        guard let index = secondary[type]?[name] else { throw LogStoreError.noSuchIndex(type, name) }
        let n = index.definition.attributes.count
        func emit(_ entry: IndexEntry) throws -> Bool {
            guard let key = IndexKeyEncoding.recordKey(ofEntry: entry, componentCount: n) else {
                throw LogStoreError(.corruption, "An entry of index \(index.definition) of \(type) is malformed.")
            }
            return try body(entry, key)
        }
        let lower = IndexEntry(range.lower)
        let upper = range.upper.map { IndexEntry($0) }
        if reverse {
            try index.entries.forEachReversed(below: upper) { entry in
                guard !(entry < lower) else { return false }
                return try emit(entry)
            }
        } else {
            try index.entries.forEach(from: lower) { entry in
                if let upper, !(entry < upper) { return false }
                return try emit(entry)
            }
        }
    }

    /// The number of entries of `index` of `type` in `range`: O(log n).
    func countIndexEntries(ofType type: String, index name: String, in range: IndexEntryRange) throws -> Int {
        guard let index = secondary[type]?[name] else { throw LogStoreError.noSuchIndex(type, name) }
        let lower = IndexEntry(range.lower)
        let below = try range.upper.map { try index.entries.rank(of: IndexEntry($0)) } ?? index.entries.count
        return Swift.max(0, below - (try index.entries.rank(of: lower)))
    }
}

extension EngineSnapshot {
    /// See ``RecordReader/secondaryIndexes(ofType:)``.
    public func secondaryIndexes(ofType type: String) -> [String: IndexDefinition] {
        index.secondaryIndexes(ofType: type).mapValues(\.definition)
    }

    /// See ``RecordReader/forEachIndexEntry(ofType:index:in:reverse:_:)``: walks the index's tree.
    public func forEachIndexEntry(
        ofType type: String, index name: String, in range: IndexEntryRange, reverse: Bool,
        _ body: (_ entry: IndexEntry, _ key: RecordKey) throws -> Bool
    ) throws {
        try index.forEachIndexEntry(ofType: type, index: name, in: range, reverse: reverse, body)
    }

    /// See ``RecordReader/countIndexEntries(ofType:index:in:)``: O(log n), from subtree counts.
    public func countIndexEntries(ofType type: String, index name: String, in range: IndexEntryRange) throws -> Int {
        try index.countIndexEntries(ofType: type, index: name, in: range)
    }
}
