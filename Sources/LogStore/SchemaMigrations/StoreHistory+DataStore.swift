import Foundation
public import LogStoreEngine

// The store's history (``StoreHistory``: migrations run, index declarations changed, erases)
// read and written through the DataStore protocol's record-level access, so that every backend
// keeps it the same way: LogDataStore, SQLiteDataStore and PostgresDataStore alike.

extension StoreHistory {
    /// Every event of the store `accessor` reads, in order (the reserved item type
    /// ``StoreHistory/itemType``). Throws `.corruption` for a record LogStore did not write,
    /// `.unsupported` for a store without record-level access. On the accessor's thread.
    public static func entries(in accessor: any DataStoreReadAccessor) throws -> [Entry] {
        var out: [Entry] = []
        try accessor.forEachRecord(ofType: itemType, after: nil) { key, value in
            out.append(try Entry(key: key, value: value))
            return true
        }
        return out.sorted { $0.ordinal < $1.ordinal }
    }

    /// Appends the event `make` returns for the next ordinal (after `history`, the store's events
    /// as ``entries(in:)`` read them in the same transaction) to the write `accessor`: it commits
    /// with whatever else the transaction does. Returns the event. Throws the accessor's errors.
    @discardableResult
    static func append(
        after history: [Entry], to accessor: any DataStoreReadWriteAccessor,
        _ make: (_ ordinal: UInt64) -> Entry
    ) throws -> Entry {
        let entry = make((history.last?.ordinal ?? 0) + 1)
        try accessor.putRecord(ofType: itemType, key: entry.key, value: entry.encoded)
        return entry
    }

    /// The indexes the last ``Kind/indexes`` event of `type` in `history` recorded as declared
    /// (empty when there is none).
    static func recordedIndexes(ofType type: String, in history: [Entry]) -> [IndexRecord] {
        history.last { $0.kind == .indexes && $0.name == type }?.indexes ?? []
    }

    /// Records in `accessor`'s transaction that `type` now declares `definitions` (built: the
    /// entries of each index built for it; dropped: the indexes no longer declared), unless the
    /// store's history already says so: one ``Kind/indexes`` event per change of a type's index
    /// declarations, however often the indexes are rebuilt (after a replay without a checkpoint
    /// they are rebuilt, not changed). Returns the event, or nil when nothing changed. Throws the
    /// accessor's errors. For every backend that keeps declared indexes.
    @discardableResult
    public static func recordIndexes(
        ofType type: String, definitions: [IndexDefinition], built: [String: Int],
        in accessor: any DataStoreReadWriteAccessor
    ) throws -> Entry? {
        let history = try entries(in: accessor)
        let previous = recordedIndexes(ofType: type, in: history)
        let declared = definitions.sorted { $0.name < $1.name }
        let same = Set(previous.map { "\($0.name)\u{0}\($0.hash)" }) == Set(declared.map { "\($0.name)\u{0}\($0.definitionHash)" })
        if same { return nil }
        let names = Set(declared.map(\.name))
        let dropped = previous.map(\.name).filter { !names.contains($0) }.sorted()
        return try append(after: history, to: accessor) { ordinal in
            Entry(
                ordinal: ordinal, kind: .indexes, name: type, at: Date(),
                indexes: declared.map { IndexRecord($0, entries: built[$0.name]) }, dropped: dropped.isEmpty ? nil : dropped)
        }
    }
}
