import Foundation
public import LogStoreEngine

extension ItemKey {
    /// The id of type `ID` whose record key is `key`: the inverse of ``make(_:)`` (Docs/FileFormat.md,
    /// "Keys"). Used where the store knows keys and the caller wants ids: observation and
    /// `changes(since:)`.
    ///
    ///     String  <- UTF-8 bytes
    ///     UUID    <- 16 bytes
    ///     integer <- 8 bytes (sign bit flipped, big-endian); unsigned above Int64.max <- FF x 8, 8 bytes
    ///     other   <- the id's encoded AttributeValue bytes
    ///
    /// Pure; any thread. Throws `.decodingFailed` when `key` is not a key `make(_:)` gives for an
    /// `ID` (a record written with another id type under the same item type).
    public static func id<ID: Decodable>(_ type: ID.Type, from key: RecordKey) throws -> ID {
        let bytes = key.bytes
        func wrong(_ why: String) -> LogStoreError {
            LogStoreError(
                .decodingFailed,
                "The record key \(key) is not a key of a \(ID.self) id: \(why). Was the item type written with another id type?")
        }
        if ID.self == String.self {
            guard let s = String(validating: bytes, as: UTF8.self), let id = s as? ID else { throw wrong("not UTF-8") }
            return id
        }
        if ID.self == UUID.self {
            guard bytes.count == 16 else { throw wrong("\(bytes.count) bytes, not 16") }
            let u = UUID(
                uuid: (
                    bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                    bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
                ))
            guard let id = u as? ID else { throw wrong("not a UUID") }
            return id
        }
        if let integer = try integerID(ID.self, bytes, wrong) { return integer }
        do {
            return try AttributeCoding.decode(ID.self, fromBytes: bytes[...])
        } catch {
            throw wrong("\(error)")
        }
    }

    /// The integer id of an integer `ID` type (nil for other types).
    static func integerID<ID>(_ type: ID.Type, _ bytes: [UInt8], _ wrong: (String) -> LogStoreError) throws -> ID? {
        func signed() throws -> Int64 {
            guard bytes.count == 8 else { throw wrong("\(bytes.count) bytes, not 8") }
            let flipped = bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            return Int64(bitPattern: flipped ^ (1 << 63))
        }
        func unsigned() throws -> UInt64 {
            if bytes.count == 16 && bytes.prefix(8).allSatisfy({ $0 == 0xFF }) {
                return bytes.suffix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } + (1 << 63)
            }
            let v = try signed()
            guard v >= 0 else { throw wrong("a negative value for an unsigned id") }
            return UInt64(v)
        }
        func exactly<T: BinaryInteger>(_ v: some BinaryInteger, _: T.Type) throws -> ID? {
            guard let t = T(exactly: v) else { throw wrong("\(v) is out of range for \(T.self)") }
            return t as? ID
        }
        switch type {
        case is Int.Type: return try exactly(signed(), Int.self)
        case is Int64.Type: return try exactly(signed(), Int64.self)
        case is Int32.Type: return try exactly(signed(), Int32.self)
        case is Int16.Type: return try exactly(signed(), Int16.self)
        case is Int8.Type: return try exactly(signed(), Int8.self)
        case is UInt32.Type: return try exactly(signed(), UInt32.self)
        case is UInt16.Type: return try exactly(signed(), UInt16.self)
        case is UInt8.Type: return try exactly(signed(), UInt8.self)
        case is UInt64.Type: return try exactly(unsigned(), UInt64.self)
        case is UInt.Type: return try exactly(unsigned(), UInt.self)
        default: return nil
        }
    }
}
