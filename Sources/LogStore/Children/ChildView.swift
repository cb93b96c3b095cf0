import LogStoreEngine

/// An immutable view of a child store: its base (a view of its parent) plus its changes at one
/// moment. `Sendable`; reads the same data for as long as it is held (a spill file it reads stays
/// open until the last view that needs it is released). Every read throws what the base throws (a
/// parent on a database reads through queries).
struct ChildView: RecordReader, Sendable {
    let base: any RecordReader & Sendable
    let changes: ChangeSet<PersistentChangeStorage>
    /// See `RecordReader.sequence`: the child's own write counter.
    let sequence: UInt64

    var itemTypes: [String] { get throws { try changes.itemTypes(base: base) } }
    func count(ofType type: String) throws -> Int { try changes.count(type, base: base) }
    func contains(type: String, key: RecordKey) throws -> Bool { try changes.contains(type, key, base: base) }
    func value(type: String, key: RecordKey) throws -> ArraySlice<UInt8>? { try changes.value(type, key, base: base) }
    func forEach(ofType type: String, _ body: (RecordKey, ArraySlice<UInt8>) throws -> Bool) throws {
        try changes.forEach(type, base: base, body)
    }
    func keys(ofType type: String) throws -> [RecordKey] { try changes.keys(type, base: base) }
    func forEachKeyInOrder(ofType type: String, fromOffset offset: Int, _ body: (RecordKey) throws -> Bool) throws {
        try changes.forEachKeyInOrder(type, fromOffset: offset, base: base, body)
    }
    func secondaryIndexes(ofType type: String) throws -> [String: IndexDefinition] { try base.secondaryIndexes(ofType: type) }
    func forEachIndexEntry(
        ofType type: String, index: String, in range: IndexEntryRange, reverse: Bool,
        _ body: (IndexEntry, RecordKey) throws -> Bool
    ) throws {
        try changes.forEachIndexEntry(type, index: index, in: range, reverse: reverse, base: base, body)
    }
    func countIndexEntries(ofType type: String, index: String, in range: IndexEntryRange) throws -> Int {
        try changes.countIndexEntries(type, index: index, in: range, base: base)
    }
}
