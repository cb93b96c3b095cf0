import Foundation
import LogStore
import LogStoreEngine
import PostgresNIO

/// The SQL type of an item table's `id` column: the id's natural type, whose order is LogStore's
/// id order (the byte order of record keys, `ItemKey`):
///
///     text COLLATE "C"   String ids: byte order of UTF-8 is the key order. PostgreSQL text
///                        cannot hold NUL, so U+0000 is written as U+0001 U+0001 and U+0001 as
///                        U+0001 U+0002 (an escape that keeps the byte order: ids without
///                        either character read as themselves)
///     uuid               UUID ids: PostgreSQL compares uuids as their 16 bytes, as keys do
///     bigint             Int, Int64, Int32, Int16, Int8, UInt32, UInt16, UInt8 ids: the key is
///                        the value with its sign bit flipped, big-endian: numeric order
///     bytea              any other id (UInt64, composite Codable ids): the record key itself,
///                        compared byte for byte
///
/// A table's kind is chosen when the table is created (from the item type's `ID`, or for a
/// record written without its Swift type, from its `id` attribute when that attribute gives the
/// record's key) and kept in `logstore_types`. Pure; any thread.
enum PostgresIDKind: String, Sendable {
    case text, uuid, bigint, bytea

    /// The column's SQL type.
    var columnType: String {
        switch self {
        case .text: return "text COLLATE \"C\""
        case .uuid: return "uuid"
        case .bigint: return "bigint"
        case .bytea: return "bytea"
        }
    }

    /// The column's SQL type without its collation (for casts).
    var sqlType: String { self == .text ? "text" : columnType }

    /// The SQL type of an array of ids (for `unnest` and `= ANY`).
    var arrayType: String {
        switch self {
        case .text: return "text[]"
        case .uuid: return "uuid[]"
        case .bigint: return "bigint[]"
        case .bytea: return "bytea[]"
        }
    }

    /// The kind for item types whose ids are `ID`.
    static func of<ID>(_ type: ID.Type) -> PostgresIDKind {
        switch type {
        case is String.Type: return .text
        case is UUID.Type: return .uuid
        case is Int.Type, is Int64.Type, is Int32.Type, is Int16.Type, is Int8.Type, is UInt32.Type, is UInt16.Type, is UInt8.Type:
            return .bigint
        default: return .bytea
        }
    }

    /// The kind for a record written without its Swift type: from its top-level `id` attribute
    /// when `ItemKey` of that attribute is the record's key (the id is then that attribute), else
    /// `bytea`. A type whose ids are UInt64 and whose first record has an id that fits an Int64 is
    /// taken for an Int type; such a type's larger ids are refused later with `.invalidArgument`
    /// (Docs/SQLBackends.md: create the table from the typed API first).
    static func inferred(key: RecordKey, value: [UInt8]) -> PostgresIDKind {
        guard case .map(let m)? = try? AttributeValue.decode(value), let id = m["id"], ItemKey.make(fromAttribute: id) == key else {
            return .bytea
        }
        switch id {
        case .string: return .text
        case .uuid: return .uuid
        case .int: return .bigint
        default: return .bytea
        }
    }

    /// Binds `key` as a value of this kind. Throws `.invalidArgument` when the key cannot be one
    /// (a key of another id type for this table).
    func bind(_ key: RecordKey, into b: inout PostgresBindings) throws {
        switch self {
        case .bytea: b.append(key.withUnsafeBytes { ByteBuffer(bytes: $0) })
        case .text: b.append(try text(key))
        case .uuid: b.append(try uuid(key))
        case .bigint: b.append(try integer(key))
        }
    }

    /// Binds `keys` as one array of this kind.
    func bind(_ keys: [RecordKey], into b: inout PostgresBindings) throws {
        switch self {
        case .bytea: b.append(keys.map { k in k.withUnsafeBytes { ByteBuffer(bytes: $0) } })
        case .text: b.append(try keys.map(text))
        case .uuid: b.append(try keys.map(uuid))
        case .bigint: b.append(try keys.map(integer))
        }
    }

    func refused(_ key: RecordKey, _ why: String) -> LogStoreError {
        LogStoreError(
            .invalidArgument,
            "The id \(key) cannot be stored in a PostgreSQL id column of type \(columnType): \(why). Ids of one item type must all be of one Swift type."
        )
    }

    func text(_ key: RecordKey) throws -> String {
        try key.withUnsafeBytes { raw in
            guard let s = String(validating: raw, as: UTF8.self) else { throw refused(key, "it is not UTF-8 text") }
            guard raw.contains(where: { $0 <= 1 }) else { return s }
            var escaped: [UInt8] = []
            escaped.reserveCapacity(raw.count + 4)
            for b in raw {
                if b <= 1 { escaped.append(1) }
                escaped.append(b <= 1 ? b + 1 : b)
            }
            return String(decoding: escaped, as: UTF8.self)
        }
    }

    /// The key of a text id as the column holds it (see the escape above). Throws `.corruption`
    /// for a U+0001 not followed by U+0001 or U+0002.
    static func unescapedText(_ raw: UnsafeRawBufferPointer) throws -> RecordKey {
        guard raw.contains(1) else { return RecordKey(raw) }
        var out: [UInt8] = []
        out.reserveCapacity(raw.count)
        var i = 0
        while i < raw.count {
            if raw[i] == 1 {
                guard i + 1 < raw.count, raw[i + 1] == 1 || raw[i + 1] == 2 else {
                    throw LogStoreError(
                        .corruption,
                        "A text id holds U+0001 outside LogStore's escape for U+0000 and U+0001; it was not written by LogStore.")
                }
                out.append(raw[i + 1] - 1)
                i += 2
            } else {
                out.append(raw[i])
                i += 1
            }
        }
        return RecordKey(out)
    }

    func uuid(_ key: RecordKey) throws -> UUID {
        try key.withUnsafeBytes { b in
            guard b.count == 16 else { throw refused(key, "a uuid has 16 bytes") }
            return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
        }
    }

    func integer(_ key: RecordKey) throws -> Int64 {
        try key.withUnsafeBytes { b in
            guard b.count == 8 else { throw refused(key, "it is not an integer id that fits 64 bits") }
            let flipped = b.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            return Int64(bitPattern: flipped ^ (1 << 63))
        }
    }

    /// The record key of an id cell of this kind. Throws `.corruption` for a NULL or a cell of
    /// another type.
    func key(from cell: PostgresCell) throws -> RecordKey {
        guard var buffer = cell.bytes else { throw LogStoreError(.corruption, "An item's id is NULL.") }
        switch self {
        case .bytea:
            return buffer.withUnsafeReadableBytes { RecordKey($0) }
        case .text:
            return try buffer.withUnsafeReadableBytes { try Self.unescapedText($0) }
        case .uuid:
            guard buffer.readableBytes == 16 else {
                throw LogStoreError(.corruption, "An item's uuid id has \(buffer.readableBytes) bytes.")
            }
            return buffer.withUnsafeReadableBytes { RecordKey($0) }
        case .bigint:
            guard let i = buffer.readInteger(as: Int64.self) else {
                throw LogStoreError(.corruption, "An item's bigint id has \(buffer.readableBytes) bytes.")
            }
            let flipped = UInt64(bitPattern: i) ^ (1 << 63)
            return withUnsafeBytes(of: flipped.bigEndian) { RecordKey($0) }
        }
    }
}
