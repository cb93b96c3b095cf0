internal import Foundation
internal import LogStoreEngine

// The keyed, unkeyed and single-value containers of `ByteDecoder`.

struct KeyedByteDecoder<Key: CodingKey>: KeyedDecodingContainerProtocol {
    /// Everything that does not depend on `Key` (see ``KeyedByteDecoderCore``).
    let core: KeyedByteDecoderCore

    init(decoder: ByteDecoder, entries: ContiguousArray<MapEntry>) {
        core = KeyedByteDecoderCore(decoder: decoder, entries: entries)
    }

    var decoder: ByteDecoder { core.decoder }

    var codingPath: [any CodingKey] { decoder.codingPath }

    var allKeys: [Key] {
        let b = decoder.input.bytes
        return core.entries.compactMap { e in
            BoundedRead.string(UnsafeRawBufferPointer(rebasing: b[e.keyStart..<(e.keyStart + e.keyCount)]))
                .flatMap { Key(stringValue: $0) }
        }
    }

    /// The value offset of the attribute named `name`, or nil when the item has none.
    @inline(__always)
    func find(_ name: String) -> Int? { core.find(name) }

    @inline(__always)
    func require(_ key: Key) throws -> Int {
        guard let off = find(key.stringValue) else {
            throw DecodingError.keyNotFound(
                key, .init(codingPath: codingPath, debugDescription: "No attribute for key \"\(key.stringValue)\"."))
        }
        return off
    }

    func contains(_ key: Key) -> Bool { find(key.stringValue) != nil }

    func decodeNil(forKey key: Key) throws -> Bool {
        guard let off = find(key.stringValue) else { return true }
        return try decoder.input.tag(at: off) == TagByte.null
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try core.bool(at: require(key)) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try core.string(at: require(key)) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try core.double(at: require(key)) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try core.float(at: require(key)) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try core.int(at: require(key)) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try core.int8(at: require(key)) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try core.int16(at: require(key)) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try core.int32(at: require(key)) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try core.int64(at: require(key)) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try core.uint(at: require(key)) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try core.uint8(at: require(key)) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try core.uint16(at: require(key)) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try core.uint32(at: require(key)) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try core.uint64(at: require(key)) }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try core.present(key.stringValue).map(core.bool) }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try core.present(key.stringValue).map(core.string) }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try core.present(key.stringValue).map(core.double) }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try core.present(key.stringValue).map(core.float) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try core.present(key.stringValue).map(core.int) }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try core.present(key.stringValue).map(core.int8) }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try core.present(key.stringValue).map(core.int16) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try core.present(key.stringValue).map(core.int32) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try core.present(key.stringValue).map(core.int64) }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try core.present(key.stringValue).map(core.uint) }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try core.present(key.stringValue).map(core.uint8) }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try core.present(key.stringValue).map(core.uint16) }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try core.present(key.stringValue).map(core.uint32) }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try core.present(key.stringValue).map(core.uint64) }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try decoder.decodeValue(T.self, at: try require(key))
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let off = try core.present(key.stringValue) else { return nil }
        return try decoder.decodeValue(T.self, at: off)
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try decoder.child(at: try require(key)).container(keyedBy: NestedKey.self)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try decoder.child(at: try require(key)).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        decoder.child(
            at: find("super") ?? decoder.input.absent(codingPath: codingPath + [PathKey(stringValue: "super")]))
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        decoder.child(at: find(key.stringValue) ?? decoder.input.absent(codingPath: codingPath + [key]))
    }
}

struct UnkeyedByteDecoder: UnkeyedDecodingContainer {
    let decoder: ByteDecoder
    let elementCount: Int
    /// Offset of the current element.
    var cursor: Int
    private(set) var currentIndex = 0

    init(decoder: ByteDecoder, count: Int, cursor: Int) {
        self.decoder = decoder
        self.elementCount = count
        self.cursor = cursor
    }

    var codingPath: [any CodingKey] { decoder.codingPath }
    var count: Int? { elementCount }
    var isAtEnd: Bool { currentIndex >= elementCount }

    private func atEnd(_ type: Any.Type) -> DecodingError {
        .valueNotFound(
            type,
            .init(
                codingPath: codingPath + [PathKey(index: currentIndex)],
                debugDescription: "The array has only \(elementCount) elements."))
    }

    /// The offset after the current element.
    private func end() throws -> Int {
        let off = cursor
        return try decoder.input.read(off) { b throws(DecodeProblem) in
            do throws(Malformed) { return try BoundedRead.skip(b, off, depth: 0) } catch { throw .malformed(error) }
        }
    }

    @inline(__always)
    private mutating func integer<T: FixedWidthInteger>() throws -> T {
        try scalar(T.self) { b, o throws(DecodeProblem) in try ScalarReads.integer(T.self, b, o) }
    }

    private mutating func scalar<R>(_ type: R.Type, _ body: (UnsafeRawBufferPointer, Int) throws(DecodeProblem) -> (R, Int)) throws -> R {
        guard !isAtEnd else { throw atEnd(R.self) }
        let off = cursor
        let (v, next) = try decoder.input.read(off) { b throws(DecodeProblem) in try body(b, off) }
        cursor = next
        currentIndex += 1
        return v
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else { throw atEnd(Any?.self) }
        if try decoder.input.tag(at: cursor) == TagByte.null {
            cursor += 1
            currentIndex += 1
            return true
        }
        return false
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try scalar(Bool.self, ScalarReads.bool) }
    mutating func decode(_ type: String.Type) throws -> String { try scalar(String.self, ScalarReads.string) }
    mutating func decode(_ type: Double.Type) throws -> Double { try scalar(Double.self, ScalarReads.double) }
    mutating func decode(_ type: Float.Type) throws -> Float { try scalar(Float.self, ScalarReads.float) }
    mutating func decode(_ type: Int.Type) throws -> Int { try integer() }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try integer() }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try integer() }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try integer() }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try integer() }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try integer() }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try integer() }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try integer() }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try integer() }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try integer() }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        guard !isAtEnd else { throw atEnd(T.self) }
        let next = try end()
        let v = try decoder.decodeValue(T.self, at: cursor)
        cursor = next
        currentIndex += 1
        return v
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        guard !isAtEnd else { throw atEnd(KeyedDecodingContainer<NestedKey>.self) }
        let next = try end()
        let c = try decoder.child(at: cursor).container(keyedBy: NestedKey.self)
        cursor = next
        currentIndex += 1
        return c
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard !isAtEnd else { throw atEnd((any UnkeyedDecodingContainer).self) }
        let next = try end()
        let c = try decoder.child(at: cursor).unkeyedContainer()
        cursor = next
        currentIndex += 1
        return c
    }

    mutating func superDecoder() throws -> any Decoder {
        guard !isAtEnd else { throw atEnd((any Decoder).self) }
        let next = try end()
        let d = decoder.child(at: cursor)
        cursor = next
        currentIndex += 1
        return d
    }
}

struct SingleValueByteDecoder: SingleValueDecodingContainer {
    let decoder: ByteDecoder

    var codingPath: [any CodingKey] { decoder.codingPath }

    @inline(__always)
    private func integer<T: FixedWidthInteger>() throws -> T {
        try scalar { b, o throws(DecodeProblem) in try ScalarReads.integer(T.self, b, o) }
    }

    private func scalar<R>(_ body: (UnsafeRawBufferPointer, Int) throws(DecodeProblem) -> (R, Int)) throws -> R {
        let off = decoder.offset
        return try decoder.input.read(off) { b throws(DecodeProblem) in try body(b, off).0 }
    }

    func decodeNil() -> Bool { (try? decoder.input.tag(at: decoder.offset)) == TagByte.null }

    func decode(_ type: Bool.Type) throws -> Bool { try scalar(ScalarReads.bool) }
    func decode(_ type: String.Type) throws -> String { try scalar(ScalarReads.string) }
    func decode(_ type: Double.Type) throws -> Double { try scalar(ScalarReads.double) }
    func decode(_ type: Float.Type) throws -> Float { try scalar(ScalarReads.float) }
    func decode(_ type: Int.Type) throws -> Int { try integer() }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer() }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer() }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer() }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer() }
    func decode(_ type: UInt.Type) throws -> UInt { try integer() }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer() }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer() }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer() }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer() }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try decoder.decodeValue(T.self, at: decoder.offset)
    }
}
