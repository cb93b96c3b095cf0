public import LogStoreEngine

/// A position in a store's commit stream: the state after one commit. Every observation element
/// carries one, ``DataStore/changeToken()`` returns the current one, and
/// ``DataStore/changes(since:)`` takes one and returns what changed after it.
///
/// `Codable`: a sync engine or cache stores it (as JSON, in a preferences file, in another store)
/// and passes it back later, in this process or the next. A token names its store and the
/// opening of the store that handed it out, so a token of another store, or of a state a crash
/// took back, is refused with `.historyTruncated` instead of answering wrongly (see the
/// "Observing Changes" article).
public struct DataStoreChangeToken: Hashable, Codable, Sendable, CustomStringConvertible {
    /// The sequence number of the commit whose state the token stands for.
    public let sequence: UInt64
    /// The store's identity (LogStore: MANIFEST's store id; a child store: its own id); nil for a
    /// store that has none (format version 1).
    let store: String?
    /// Which opening of the store handed the token out (random per opening).
    let epoch: String

    init(sequence: UInt64, store: String?, epoch: String) {
        self.sequence = sequence
        self.store = store
        self.epoch = epoch
    }

    /// `#<sequence>`, e.g. `#42`.
    public var description: String { "#\(sequence)" }
}

/// What changed in a store after a ``DataStoreChangeToken`` (``DataStore/changes(since:)``): per
/// item type, the keys of items inserted or replaced and of items deleted.
///
/// An id is in at most one of the two lists: an item deleted and then inserted again is in
/// ``ItemChanges/insertedOrUpdated``; an item inserted and deleted after the token (which the
/// caller may never have seen) is in ``ItemChanges/deleted``. A value; any thread.
public struct DataStoreChanges: Sendable {
    /// The token of the state these changes lead to: pass it to the next `changes(since:)`.
    public let token: DataStoreChangeToken
    /// Per item type, keys inserted or replaced after the old token, in key (id) order.
    public let insertedOrUpdatedKeys: [String: [RecordKey]]
    /// Per item type, keys deleted after the old token (and not inserted again), in key order.
    public let deletedKeys: [String: [RecordKey]]

    /// The item types with any change, sorted.
    public var itemTypes: [String] { Set(insertedOrUpdatedKeys.keys).union(deletedKeys.keys).sorted() }

    /// Whether nothing changed.
    public var isEmpty: Bool { insertedOrUpdatedKeys.isEmpty && deletedKeys.isEmpty }

    /// The changes of one item type, as ids. Throws `.decodingFailed` if a key is not one of an
    /// `Item.ID` (records of another id type stored under the same item type).
    public func changes<Item: DataStoreItem>(of type: Item.Type) throws -> ItemChanges<Item.ID> {
        ItemChanges(
            insertedOrUpdated: try (insertedOrUpdatedKeys[Item.itemType] ?? []).map { try ItemKey.id(Item.ID.self, from: $0) },
            deleted: try (deletedKeys[Item.itemType] ?? []).map { try ItemKey.id(Item.ID.self, from: $0) })
    }
}

/// The ids of one item type that changed after a token (``DataStoreChanges/changes(of:)``), in id
/// order.
public struct ItemChanges<ID: Hashable & Sendable>: Hashable, Sendable {
    /// Ids of items inserted or replaced: read them to bring a copy up to date.
    public var insertedOrUpdated: [ID]
    /// Ids of items that no longer exist: remove them from a copy.
    public var deleted: [ID]

    /// Whether nothing changed.
    public var isEmpty: Bool { insertedOrUpdated.isEmpty && deleted.isEmpty }
}
