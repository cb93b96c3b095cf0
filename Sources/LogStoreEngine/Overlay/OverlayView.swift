/// An immutable view of a child store: its base (a parent view) plus its overlay at one moment.
/// `Sendable`; valid as long as it is held.
public struct OverlayView: RecordReader, Sendable {
    let base: any RecordReader & Sendable
    let overlay: Overlay
    /// See ``RecordReader/sequence``: the child's own write counter.
    public let sequence: UInt64

    /// See ``RecordReader/itemTypes``.
    public var itemTypes: [String] { overlay.itemTypes(base: base) }
    /// See ``RecordReader/count(ofType:)``.
    public func count(ofType type: String) -> Int { overlay.count(type, base: base) }
    /// See ``RecordReader/contains(type:key:)``.
    public func contains(type: String, key: RecordKey) -> Bool { overlay.contains(type, key, base: base) }
    /// See ``RecordReader/value(type:key:)``.
    public func value(type: String, key: RecordKey) throws -> ArraySlice<UInt8>? { try overlay.value(type, key, base: base) }
    /// See ``RecordReader/forEach(ofType:_:)``.
    public func forEach(ofType type: String, _ body: (RecordKey, ArraySlice<UInt8>) throws -> Bool) throws {
        try overlay.forEach(type, base: base, body)
    }
    /// See ``RecordReader/keys(ofType:)``.
    public func keys(ofType type: String) -> [RecordKey] { overlay.keys(type, base: base) }
}
