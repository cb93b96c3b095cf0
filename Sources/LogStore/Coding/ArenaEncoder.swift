internal import Foundation
internal import LogStoreEngine

// The Codable encoder of `EncodingArena` and its containers.

/// The `Encoder` handed to `encode(to:)`: a destination entry in the arena (a small value, so
/// passing it as `any Encoder` allocates nothing).
struct ArenaEncoder: Encoder {
    let arena: EncodingArena
    let entry: Int
    let depth: Int

    var codingPath: [any CodingKey] { arena.codingPath(entry) }
    var userInfo: [CodingUserInfoKey: Any] { arena.userInfo }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(
            ArenaKeyedEncoder<Key>(arena: arena, container: arena.container(for: entry, isMap: true), depth: depth))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        ArenaUnkeyedEncoder(arena: arena, container: arena.container(for: entry, isMap: false), depth: depth)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        ArenaSingleValueEncoder(arena: arena, entry: entry, depth: depth)
    }
}

struct ArenaKeyedEncoder<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let arena: EncodingArena
    let container: Int
    let depth: Int

    var codingPath: [any CodingKey] { arena.codingPath(Int(arena.containers[container].entry)) }

    @inline(__always)
    private func put(_ key: Key, _ write: (ValueWriter) -> Void) {
        let keyStart = arena.writeKey(key.stringValue)
        let start = arena.scratch.count
        write(arena.scratch)
        arena.link(container, keyStart: keyStart, valueStart: start, innerDepth: 0)
    }

    mutating func encodeNil(forKey key: Key) throws { put(key) { $0.u8(TagByte.null) } }
    mutating func encode(_ value: Bool, forKey key: Key) throws { put(key) { $0.bool(value) } }
    mutating func encode(_ value: String, forKey key: Key) throws { put(key) { $0.string(value) } }
    mutating func encode(_ value: Double, forKey key: Key) throws { put(key) { $0.double(value) } }
    mutating func encode(_ value: Float, forKey key: Key) throws { put(key) { $0.double(Double(value)) } }
    mutating func encode(_ value: Int, forKey key: Key) throws { put(key) { $0.int(Int64(value)) } }
    mutating func encode(_ value: Int8, forKey key: Key) throws { put(key) { $0.int(Int64(value)) } }
    mutating func encode(_ value: Int16, forKey key: Key) throws { put(key) { $0.int(Int64(value)) } }
    mutating func encode(_ value: Int32, forKey key: Key) throws { put(key) { $0.int(Int64(value)) } }
    mutating func encode(_ value: Int64, forKey key: Key) throws { put(key) { $0.int(value) } }
    mutating func encode(_ value: UInt, forKey key: Key) throws { put(key) { $0.int(Int64(bitPattern: UInt64(value))) } }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { put(key) { $0.int(Int64(value)) } }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { put(key) { $0.int(Int64(value)) } }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { put(key) { $0.int(Int64(value)) } }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { put(key) { $0.int(Int64(bitPattern: value)) } }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        let keyStart = arena.writeKey(key.stringValue)
        let start = arena.scratch.count
        if let inner = arena.appendFast(value) {
            arena.link(container, keyStart: keyStart, valueStart: start, innerDepth: inner)
            return
        }
        let e = arena.link(container, keyStart: keyStart, valueStart: start, innerDepth: 0)
        try arena.encodeValue(value, entry: e, depth: depth + 1)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let e = arena.link(container, keyStart: arena.writeKey(key.stringValue), valueStart: arena.scratch.count, innerDepth: 0)
        return KeyedEncodingContainer(
            ArenaKeyedEncoder<NestedKey>(arena: arena, container: arena.container(for: e, isMap: true), depth: depth + 1))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let e = arena.link(container, keyStart: arena.writeKey(key.stringValue), valueStart: arena.scratch.count, innerDepth: 0)
        return ArenaUnkeyedEncoder(arena: arena, container: arena.container(for: e, isMap: false), depth: depth + 1)
    }

    mutating func superEncoder() -> any Encoder {
        let e = arena.link(container, keyStart: arena.writeKey("super"), valueStart: arena.scratch.count, innerDepth: 0)
        return ArenaEncoder(arena: arena, entry: e, depth: depth + 1)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        let e = arena.link(container, keyStart: arena.writeKey(key.stringValue), valueStart: arena.scratch.count, innerDepth: 0)
        return ArenaEncoder(arena: arena, entry: e, depth: depth + 1)
    }
}

struct ArenaUnkeyedEncoder: UnkeyedEncodingContainer, ArenaScalarEncoding {
    let arena: EncodingArena
    let container: Int
    let depth: Int

    var codingPath: [any CodingKey] { arena.codingPath(Int(arena.containers[container].entry)) }
    var count: Int { Int(arena.containers[container].count) }

    @inline(__always)
    func put(_ write: (ValueWriter) -> Void) {
        let start = arena.scratch.count
        write(arena.scratch)
        arena.link(container, keyStart: -1, valueStart: start, innerDepth: 0)
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        let start = arena.scratch.count
        if let inner = arena.appendFast(value) {
            arena.link(container, keyStart: -1, valueStart: start, innerDepth: inner)
            return
        }
        let e = arena.link(container, keyStart: -1, valueStart: start, innerDepth: 0)
        try arena.encodeValue(value, entry: e, depth: depth + 1)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let e = arena.link(container, keyStart: -1, valueStart: arena.scratch.count, innerDepth: 0)
        return KeyedEncodingContainer(
            ArenaKeyedEncoder<NestedKey>(arena: arena, container: arena.container(for: e, isMap: true), depth: depth + 1))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let e = arena.link(container, keyStart: -1, valueStart: arena.scratch.count, innerDepth: 0)
        return ArenaUnkeyedEncoder(arena: arena, container: arena.container(for: e, isMap: false), depth: depth + 1)
    }

    mutating func superEncoder() -> any Encoder {
        let e = arena.link(container, keyStart: -1, valueStart: arena.scratch.count, innerDepth: 0)
        return ArenaEncoder(arena: arena, entry: e, depth: depth + 1)
    }
}

struct ArenaSingleValueEncoder: SingleValueEncodingContainer, ArenaScalarEncoding {
    let arena: EncodingArena
    let entry: Int
    let depth: Int

    var codingPath: [any CodingKey] { arena.codingPath(entry) }

    @inline(__always)
    func put(_ write: (ValueWriter) -> Void) {
        let start = arena.scratch.count
        write(arena.scratch)
        arena.setScalar(entry, start: start, innerDepth: 0)
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        let start = arena.scratch.count
        if let inner = arena.appendFast(value) {
            arena.setScalar(entry, start: start, innerDepth: inner)
        } else {
            try arena.encodeValue(value, entry: entry, depth: depth + 1)
        }
    }
}

/// The scalar encodes the unkeyed and single-value containers share: each writes one value into
/// the arena's scratch bytes through the container's own `put`.
protocol ArenaScalarEncoding {
    /// Writes one value with `write` and links it where the container puts values.
    func put(_ write: (ValueWriter) -> Void)
}

extension ArenaScalarEncoding {
    mutating func encodeNil() throws { put { $0.u8(TagByte.null) } }
    mutating func encode(_ value: Bool) throws { put { $0.bool(value) } }
    mutating func encode(_ value: String) throws { put { $0.string(value) } }
    mutating func encode(_ value: Double) throws { put { $0.double(value) } }
    mutating func encode(_ value: Float) throws { put { $0.double(Double(value)) } }
    mutating func encode(_ value: Int) throws { put { $0.int(Int64(value)) } }
    mutating func encode(_ value: Int8) throws { put { $0.int(Int64(value)) } }
    mutating func encode(_ value: Int16) throws { put { $0.int(Int64(value)) } }
    mutating func encode(_ value: Int32) throws { put { $0.int(Int64(value)) } }
    mutating func encode(_ value: Int64) throws { put { $0.int(value) } }
    mutating func encode(_ value: UInt) throws { put { $0.int(Int64(bitPattern: UInt64(value))) } }
    mutating func encode(_ value: UInt8) throws { put { $0.int(Int64(value)) } }
    mutating func encode(_ value: UInt16) throws { put { $0.int(Int64(value)) } }
    mutating func encode(_ value: UInt32) throws { put { $0.int(Int64(value)) } }
    mutating func encode(_ value: UInt64) throws { put { $0.int(Int64(bitPattern: value)) } }
}
