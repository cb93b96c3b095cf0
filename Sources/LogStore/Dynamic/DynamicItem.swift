import LogStoreEngine

/// A stored item read or written without the app's Swift type: an item type name, an id and its
/// attributes by coding key (JustPersist's `object(forKey:)` / `setObject(_:forKey:)`).
///
/// For tools and migrations: rename an attribute, fill a new one, copy data between stores.
/// The id is stored under the `"id"` attribute, as Codable items store theirs, so a dynamic item
/// and a typed item with the same id are the same record.
public struct DynamicItem: Sendable, Hashable {
    /// The item type (entity) name.
    public let itemType: String
    /// The item's id (`.string`, `.uuid`, `.int`, or any other value).
    public let id: AttributeValue
    /// Every attribute, including `"id"`.
    public private(set) var attributes: [String: AttributeValue]
    /// The record key it was read from (so writing it back replaces that record exactly).
    var storedKey: RecordKey?

    /// The record key: the one it was read from, or the one ``ItemKey`` derives from `id`.
    var key: RecordKey { storedKey ?? ItemKey.make(fromAttribute: id) }

    /// Creates an item; `attributes["id"]` is set to `id`.
    public init(itemType: String, id: AttributeValue, attributes: [String: AttributeValue] = [:]) {
        self.itemType = itemType
        self.id = id
        var a = attributes
        a["id"] = id
        self.attributes = a
    }

    /// The attribute stored under `key`, or nil.
    public func object(forKey key: String) -> AttributeValue? { attributes[key] }

    /// Sets (or, with nil, removes) the attribute `key`. The `"id"` attribute cannot be changed:
    /// make a new item instead.
    public mutating func setObject(_ value: AttributeValue?, forKey key: String) {
        guard key != "id" else { return }
        attributes[key] = value
    }
}

extension DataStoreReadAccessor {
    /// Every item of the type named `itemType`, in ascending id order, without a Swift type.
    /// Throws `.corruption` or `.decodingFailed` if a stored record is not an attribute map,
    /// `.unsupported` if the store offers no record-level access.
    public func dynamicItems(ofType itemType: String) throws -> [DynamicItem] {
        var out: [DynamicItem] = []
        try forEachRecord(ofType: itemType, after: nil) { key, bytes in
            out.append(try DynamicItem.decode(itemType: itemType, key: key, bytes: bytes))
            return true
        }
        return out
    }

    /// The item of the type named `itemType` with `id`, or nil. Throws as
    /// ``dynamicItems(ofType:)``.
    public func dynamicItem(ofType itemType: String, id: AttributeValue) throws -> DynamicItem? {
        let key = ItemKey.make(fromAttribute: id)
        guard let bytes = try record(ofType: itemType, key: key) else { return nil }
        return try DynamicItem.decode(itemType: itemType, key: key, bytes: bytes[...])
    }
}

extension DataStoreReadWriteAccessor {
    /// Inserts `item`, or replaces the stored item of its type with the same id. Throws
    /// `.encodingFailed` for an attribute nested deeper than `AttributeValue.maxDepth`,
    /// `.unsupported` if the store offers no record-level access.
    public func insert(_ item: DynamicItem) throws {
        try putRecord(ofType: item.itemType, key: item.key, value: DynamicItem.encodedAttributes(item))
    }

    /// Deletes the item of the type named `itemType` with `id`; true when it existed.
    @discardableResult
    public func deleteDynamicItem(ofType itemType: String, id: AttributeValue) throws -> Bool {
        try deleteRecord(ofType: itemType, key: ItemKey.make(fromAttribute: id))
    }
}

extension DynamicItem {
    /// The stored bytes of `item`'s attributes. Throws `.encodingFailed` (naming the path) when
    /// an attribute nests deeper than `AttributeValue.maxDepth`, before writing anything: such
    /// bytes would not decode. Bounded recursion (at most `maxDepth` levels).
    static func encodedAttributes(_ item: DynamicItem) throws -> [UInt8] {
        let w = ValueWriter(capacity: 256)
        do {
            try w.value(.map(item.attributes), depth: 0)
        } catch {
            throw CodingErrors.encodingFailed(error, type: DynamicItem.self)
        }
        return w.bytes
    }

    static func decode(itemType: String, key: RecordKey, bytes: ArraySlice<UInt8>) throws -> DynamicItem {
        let value = try bytes.withUnsafeBytes { try AttributeValue.decode($0) }
        guard case .map(let attributes) = value else {
            throw LogStoreError(.decodingFailed, "A stored \(itemType) is not an attribute map, so it has no attributes to read by key.")
        }
        var item = DynamicItem(itemType: itemType, id: attributes["id"] ?? .bytes(key.bytes), attributes: attributes)
        item.storedKey = key
        return item
    }
}
