import Foundation
public import LogStoreEngine

/// How item ids become record keys (Docs/FileFormat.md, "Keys"). Byte order of keys is id order:
///
///     String  -> UTF-8 bytes
///     UUID    -> its 16 bytes
///     integer -> 8 bytes big-endian of the value as Int64 with the sign bit flipped;
///                an unsigned value above Int64.max -> 8 bytes FF, then 8 bytes big-endian of
///                (value - 2^63), so it sorts after every signed value
///     other   -> the id's encoded AttributeValue bytes (stable, but not a meaningful order)
public enum ItemKey {
    /// The record key for an id. Throws `.encodingFailed` if an unusual id type cannot be encoded.
    public static func make<ID: Encodable>(_ id: ID) throws -> RecordKey {
        // The common id types by metadata identity first: an `as?` cast from a generic value
        // costs a dynamic cast per call (about 400 instructions of a point read, callgrind).
        if ID.self == Int.self { return integer(Int64(unsafeBitCast(id, to: Int.self))) }
        if ID.self == String.self { return RecordKey(unsafeBitCast(id, to: String.self).utf8) }
        if ID.self == UUID.self { return uuid(unsafeBitCast(id, to: UUID.self)) }
        switch id {
        case let s as String: return RecordKey(s.utf8)
        case let u as UUID: return uuid(u)
        case let i as Int: return integer(Int64(i))
        case let i as Int64: return integer(i)
        case let i as Int32: return integer(Int64(i))
        case let i as Int16: return integer(Int64(i))
        case let i as Int8: return integer(Int64(i))
        case let i as UInt32: return integer(Int64(i))
        case let i as UInt16: return integer(Int64(i))
        case let i as UInt8: return integer(Int64(i))
        case let i as UInt64: return unsigned(i)
        case let i as UInt: return unsigned(UInt64(i))
        default:
            return make(fromAttribute: try AttributeEncoder().encode(id))
        }
    }

    /// The record key for an id given as an attribute value (dynamic access). Gives the same key
    /// as ``make(_:)`` for the same id.
    public static func make(fromAttribute value: AttributeValue) -> RecordKey {
        switch value {
        case .string(let s): return RecordKey(s.utf8)
        case .uuid(let u): return uuid(u)
        case .int(let i): return integer(i)
        default: return RecordKey(value.encoded())
        }
    }

    static func uuid(_ u: UUID) -> RecordKey {
        withUnsafeBytes(of: u.uuid) { RecordKey($0) }
    }

    static func unsigned(_ u: UInt64) -> RecordKey {
        if u <= UInt64(Int64.max) { return integer(Int64(u)) }
        var bytes = [UInt8](repeating: 0xFF, count: 8)
        withUnsafeBytes(of: (u - (1 << 63)).bigEndian) { bytes.append(contentsOf: $0) }
        return RecordKey(bytes)
    }

    static func integer(_ i: Int64) -> RecordKey {
        let flipped = UInt64(bitPattern: i) ^ (1 << 63)
        return withUnsafeBytes(of: flipped.bigEndian) { RecordKey($0) }
    }
}
