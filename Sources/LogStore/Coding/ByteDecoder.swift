// The machinery behind AttributeDecoder and AttributeCoding.decode: a `Decoder` that reads an
// item's bytes in place (value grammar: AttributeBytes.swift, Docs/FileFormat.md "Values").
//
// A decoder is just a position in the bytes, so nesting allocates nothing; keyed containers index
// their map's entries once. Coding paths are not tracked while decoding: when an error (or a
// caller) needs one, it is rebuilt by walking from the root to the value's offset.

internal import Foundation
internal import LogStoreEngine

/// The `Decoder` handed to `init(from:)`. Runs on the caller's thread within one decode call.
struct ByteDecoder: Decoder {
    let input: DecodingInput
    /// Offset of the value's tag; negative for an absent value (reads as null).
    let offset: Int
    /// Nested `init(from:)` calls so far (bounds types that decode themselves in place).
    let nesting: Int

    var userInfo: [CodingUserInfoKey: Any] { input.userInfo }
    var codingPath: [any CodingKey] { input.path(to: offset) }

    static func decode<T: Decodable>(
        _ type: T.Type, from bytes: ArraySlice<UInt8>, userInfo: [CodingUserInfoKey: any Sendable]
    ) throws -> T {
        let input = DecodingInput(bytes: bytes, userInfo: userInfo.isEmpty ? [:] : userInfo.mapValues { $0 as Any })
        return try ByteDecoder(input: input, offset: 0, nesting: 0).decodeValue(T.self, at: 0)
    }

    /// Decodes the value at `off`. The types stored natively, the primitives (which reach generic
    /// `decode` through arrays and dictionaries) and arrays of common scalars are read directly,
    /// without calling their `init(from:)`.
    func decodeValue<T: Decodable>(_ type: T.Type, at off: Int) throws -> T {
        // `unsafeBitCast` is an identity conversion here: each branch runs only when T is that type.
        if T.self == String.self {
            return unsafeBitCast(try input.read(off) { b throws(DecodeProblem) in try ScalarReads.string(b, off).0 }, to: T.self)
        }
        if T.self == Int.self {
            return unsafeBitCast(try input.read(off) { b throws(DecodeProblem) in try ScalarReads.integer(Int.self, b, off).0 }, to: T.self)
        }
        if T.self == Double.self {
            return unsafeBitCast(try input.read(off) { b throws(DecodeProblem) in try ScalarReads.double(b, off).0 }, to: T.self)
        }
        if T.self == Bool.self {
            return unsafeBitCast(try input.read(off) { b throws(DecodeProblem) in try ScalarReads.bool(b, off).0 }, to: T.self)
        }
        if T.self == Date.self {
            return unsafeBitCast(try input.read(off) { b throws(DecodeProblem) in try ScalarReads.date(b, off).0 }, to: T.self)
        }
        if T.self == UUID.self {
            return unsafeBitCast(try input.read(off) { b throws(DecodeProblem) in try ScalarReads.uuid(b, off).0 }, to: T.self)
        }
        if T.self == Data.self, let d = try input.read(off, { b throws(DecodeProblem) in try ScalarReads.data(b, off) }) {
            return unsafeBitCast(d, to: T.self)
        }
        if T.self == Int64.self {
            return unsafeBitCast(try input.read(off) { b throws(DecodeProblem) in try ScalarReads.integer(Int64.self, b, off).0 }, to: T.self)
        }
        if T.self == [String].self { return unsafeBitCast(try input.array(at: off, ScalarReads.string), to: T.self) }
        if T.self == URL.self, let u = try input.read(off, { b throws(DecodeProblem) in try ScalarReads.url(b, off) }) {
            return unsafeBitCast(u, to: T.self)
        }
        if T.self == Decimal.self, let d = try input.read(off, { b throws(DecodeProblem) in try ScalarReads.decimal(b, off) }) {
            return unsafeBitCast(d, to: T.self)
        }
        if T.self == Float.self {
            return unsafeBitCast(try input.read(off) { b throws(DecodeProblem) in try ScalarReads.float(b, off).0 }, to: T.self)
        }
        if T.self == Int32.self { return unsafeBitCast(try input.integer(Int32.self, at: off), to: T.self) }
        if T.self == UInt64.self { return unsafeBitCast(try input.integer(UInt64.self, at: off), to: T.self) }
        if T.self == UInt.self { return unsafeBitCast(try input.integer(UInt.self, at: off), to: T.self) }
        if T.self == UInt8.self { return unsafeBitCast(try input.integer(UInt8.self, at: off), to: T.self) }
        if T.self == Int16.self { return unsafeBitCast(try input.integer(Int16.self, at: off), to: T.self) }
        if T.self == Int8.self { return unsafeBitCast(try input.integer(Int8.self, at: off), to: T.self) }
        if T.self == UInt16.self { return unsafeBitCast(try input.integer(UInt16.self, at: off), to: T.self) }
        if T.self == UInt32.self { return unsafeBitCast(try input.integer(UInt32.self, at: off), to: T.self) }
        if T.self == [Int].self {
            return unsafeBitCast(try input.array(at: off) { b, o throws(DecodeProblem) in try ScalarReads.integer(Int.self, b, o) }, to: T.self)
        }
        if T.self == [Double].self { return unsafeBitCast(try input.array(at: off, ScalarReads.double), to: T.self) }
        if T.self == [Int64].self {
            return unsafeBitCast(
                try input.array(at: off) { b, o throws(DecodeProblem) in try ScalarReads.integer(Int64.self, b, o) }, to: T.self)
        }
        if T.self == [Bool].self { return unsafeBitCast(try input.array(at: off, ScalarReads.bool), to: T.self) }
        if T.self == [UUID].self { return unsafeBitCast(try input.array(at: off, ScalarReads.uuid), to: T.self) }
        if T.self == [Date].self { return unsafeBitCast(try input.array(at: off, ScalarReads.date), to: T.self) }
        guard nesting < 2 * AttributeValue.maxDepth else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: input.path(to: off),
                    debugDescription: "\(T.self) decodes itself more than \(2 * AttributeValue.maxDepth) levels deep."))
        }
        return try T(from: ByteDecoder(input: input, offset: off, nesting: nesting + 1))
    }

    /// A decoder for the value at `off`, one level down.
    func child(at off: Int) -> ByteDecoder { ByteDecoder(input: input, offset: off, nesting: nesting + 1) }

    /// Indexes the map at this decoder's value (validating its structure).
    func mapEntries() throws -> ContiguousArray<MapEntry> {
        let off = offset
        return try input.read(off) { b throws(DecodeProblem) in
            let t = try ScalarReads.tag(b, off)
            guard t == TagByte.map else {
                if t == TagByte.null { throw .null([String: Any].self) }
                throw .mismatch([String: Any].self, expected: "a map (keyed container)", found: t)
            }
            do throws(Malformed) {
                var o = off + 1
                let n = try BoundedRead.length(b, &o)
                var entries = ContiguousArray<MapEntry>()
                entries.reserveCapacity(n)
                var previous = -1
                var previousCount = 0
                var nonASCII = false
                for _ in 0..<n {
                    let kc = try BoundedRead.length(b, &o)
                    let ks = o
                    o += kc
                    if previous >= 0, !BoundedRead.less(b, previous, previousCount, ks, kc) {
                        throw Malformed(reason: "map keys not strictly ascending", offset: ks)
                    }
                    if !nonASCII { nonASCII = !BoundedRead.isASCII(b, ks, kc) }
                    previous = ks
                    previousCount = kc
                    let vs = o
                    o = try BoundedRead.skip(b, o, depth: 0)
                    entries.append(MapEntry(keyStart: ks, keyCount: kc, value: vs))
                }
                if nonASCII { try BoundedRead.rejectCanonicallyEquivalentKeys(b, entries) }
                return entries
            } catch {
                throw .malformed(error)
            }
        }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(KeyedByteDecoder<Key>(decoder: self, entries: try mapEntries()))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let off = offset
        let (n, first) = try input.read(off) { b throws(DecodeProblem) -> (Int, Int) in
            let t = try ScalarReads.tag(b, off)
            guard t == TagByte.array else {
                if t == TagByte.null { throw .null([Any].self) }
                throw .mismatch([Any].self, expected: "an array (unkeyed container)", found: t)
            }
            var o = off + 1
            do throws(Malformed) {
                let n = try BoundedRead.length(b, &o)
                return (n, o)
            } catch { throw .malformed(error) }
        }
        return UnkeyedByteDecoder(decoder: self, count: n, cursor: first)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { SingleValueByteDecoder(decoder: self) }
}

// MARK: - Reads and paths

extension DecodingInput {
    /// Runs `body` over the item's bytes; a `DecodeProblem` becomes a `DecodingError` at the coding
    /// path of the value at `pathOffset`.
    @inline(__always)
    func read<R>(_ pathOffset: Int, _ body: (UnsafeRawBufferPointer) throws(DecodeProblem) -> R) throws -> R {
        do {
            return try bytes.withUnsafeBytes { b throws(DecodeProblem) in try body(b) }
        } catch let p as DecodeProblem {
            throw error(p, codingPath: path(to: pathOffset))
        }
    }

    @inline(__always)
    func tag(at off: Int) throws -> UInt8 {
        try read(off) { b throws(DecodeProblem) in try ScalarReads.tag(b, off) }
    }

    @inline(__always)
    func integer<I: FixedWidthInteger>(_ type: I.Type, at off: Int) throws -> I {
        try read(off) { b throws(DecodeProblem) in try ScalarReads.integer(I.self, b, off).0 }
    }

    /// An array of scalars read with `element`; an element's problem is reported at its own path.
    @inline(__always)
    func array<E>(at off: Int, _ element: (UnsafeRawBufferPointer, Int) throws(DecodeProblem) -> (E, Int)) throws -> [E] {
        var at = off
        do {
            return try bytes.withUnsafeBytes { b throws(DecodeProblem) -> [E] in
                let t = try ScalarReads.tag(b, off)
                guard t == TagByte.array else {
                    if t == TagByte.null { throw .null([E].self) }
                    throw .mismatch([E].self, expected: "an array", found: t)
                }
                var o = off + 1
                let n: Int
                do throws(Malformed) { n = try BoundedRead.length(b, &o) } catch { throw .malformed(error) }
                var out: [E] = []
                out.reserveCapacity(n)
                for _ in 0..<n {
                    at = o
                    let (v, next) = try element(b, o)
                    out.append(v)
                    o = next
                }
                return out
            }
        } catch let p as DecodeProblem {
            throw error(p, codingPath: path(to: at))
        }
    }

    /// Registers an absent value's coding path; returns the (negative) offset standing for it.
    func absent(codingPath: [any CodingKey]) -> Int {
        absentPaths.append(codingPath)
        return -absentPaths.count
    }

    /// The `DecodingError` for `problem`.
    func error(_ problem: DecodeProblem, codingPath path: [any CodingKey]) -> DecodingError {
        switch problem {
        case .mismatch(let type, let expected, let found):
            return .typeMismatch(
                type, .init(codingPath: path, debugDescription: "Expected \(expected) but found \(TagByte.name(found))."))
        case .null(let type):
            return .valueNotFound(type, .init(codingPath: path, debugDescription: "Expected \(type) but found null."))
        case .notRepresentable(let type, let why):
            return .typeMismatch(type, .init(codingPath: path, debugDescription: why))
        case .invalid(let why):
            return .dataCorrupted(.init(codingPath: path, debugDescription: why))
        case .malformed(let m):
            return .dataCorrupted(.init(codingPath: path, debugDescription: m.description, underlyingError: m))
        }
    }

    /// The coding path of the value whose tag is at `target`, found by walking down from the root.
    func path(to target: Int) -> [any CodingKey] {
        if target < 0 {
            let i = -target - 1
            return i < absentPaths.count ? absentPaths[i] : []
        }
        return bytes.withUnsafeBytes { b in
            var path: [any CodingKey] = []
            var off = 0
            descend: while off < target {
                do throws(Malformed) {
                    let tag = try BoundedRead.u8(b, off)
                    var o = off + 1
                    guard tag == TagByte.map || tag == TagByte.array else { break descend }
                    let n = try BoundedRead.length(b, &o)
                    for i in 0..<n {
                        var key: String?
                        if tag == TagByte.map {
                            let kc = try BoundedRead.length(b, &o)
                            key = BoundedRead.string(UnsafeRawBufferPointer(rebasing: b[o..<(o + kc)])) ?? "?"
                            o += kc
                        }
                        let end = try BoundedRead.skip(b, o, depth: 0)
                        if o <= target && target < end {
                            path.append(key.map { PathKey(stringValue: $0) } ?? PathKey(index: i))
                            off = o
                            continue descend
                        }
                        o = end
                    }
                    break descend
                } catch {
                    break descend
                }
            }
            return path
        }
    }
}

// MARK: - Containers

struct KeyedByteDecoder<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: ByteDecoder
    let entries: ContiguousArray<MapEntry>

    var codingPath: [any CodingKey] { decoder.codingPath }

    var allKeys: [Key] {
        decoder.input.bytes.withUnsafeBytes { b in
            entries.compactMap { e in
                BoundedRead.string(UnsafeRawBufferPointer(rebasing: b[e.keyStart..<(e.keyStart + e.keyCount)]))
                    .flatMap { Key(stringValue: $0) }
            }
        }
    }

    /// The value offset of the attribute named `name`, or nil when the item has none.
    @inline(__always)
    func find(_ name: String) -> Int? {
        let n = entries.count
        if n == 0 { return nil }
        var k = name
        return k.withUTF8 { kb in
            decoder.input.bytes.withUnsafeBytes { b -> Int? in
                if n <= 12 {
                    for e in entries where BoundedRead.equal(b, e.keyStart, e.keyCount, kb) { return e.value }
                    return nil
                }
                var lo = 0
                var hi = n
                while lo < hi {
                    let mid = (lo &+ hi) >> 1
                    let e = entries[mid]
                    let c = BoundedRead.compare(b, e.keyStart, e.keyCount, kb)
                    if c == 0 { return e.value }
                    if c < 0 { lo = mid + 1 } else { hi = mid }
                }
                return nil
            }
        }
    }

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

    @inline(__always)
    private func scalar<R>(_ key: Key, _ body: (UnsafeRawBufferPointer, Int) throws(DecodeProblem) -> (R, Int)) throws -> R {
        let off = try require(key)
        return try decoder.input.read(off) { b throws(DecodeProblem) in try body(b, off).0 }
    }

    @inline(__always)
    private func scalarIfPresent<R>(_ key: Key, _ body: (UnsafeRawBufferPointer, Int) throws(DecodeProblem) -> (R, Int)) throws -> R? {
        guard let off = find(key.stringValue) else { return nil }
        return try decoder.input.read(off) { b throws(DecodeProblem) -> R? in
            if try ScalarReads.tag(b, off) == TagByte.null { return nil }
            return try body(b, off).0
        }
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try scalar(key, ScalarReads.bool) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try scalar(key, ScalarReads.string) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try scalar(key, ScalarReads.double) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try scalar(key, ScalarReads.float) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int {
        try scalar(key) { b, o throws(DecodeProblem) in try ScalarReads.integer(Int.self, b, o) }
    }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 {
        try scalar(key) { b, o throws(DecodeProblem) in try ScalarReads.integer(Int8.self, b, o) }
    }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 {
        try scalar(key) { b, o throws(DecodeProblem) in try ScalarReads.integer(Int16.self, b, o) }
    }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 {
        try scalar(key) { b, o throws(DecodeProblem) in try ScalarReads.integer(Int32.self, b, o) }
    }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 {
        try scalar(key) { b, o throws(DecodeProblem) in try ScalarReads.integer(Int64.self, b, o) }
    }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt {
        try scalar(key) { b, o throws(DecodeProblem) in try ScalarReads.integer(UInt.self, b, o) }
    }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 {
        try scalar(key) { b, o throws(DecodeProblem) in try ScalarReads.integer(UInt8.self, b, o) }
    }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 {
        try scalar(key) { b, o throws(DecodeProblem) in try ScalarReads.integer(UInt16.self, b, o) }
    }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 {
        try scalar(key) { b, o throws(DecodeProblem) in try ScalarReads.integer(UInt32.self, b, o) }
    }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 {
        try scalar(key) { b, o throws(DecodeProblem) in try ScalarReads.integer(UInt64.self, b, o) }
    }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try scalarIfPresent(key, ScalarReads.bool) }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try scalarIfPresent(key, ScalarReads.string) }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try scalarIfPresent(key, ScalarReads.double) }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try scalarIfPresent(key, ScalarReads.float) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
        try scalarIfPresent(key) { b, o throws(DecodeProblem) in try ScalarReads.integer(Int.self, b, o) }
    }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? {
        try scalarIfPresent(key) { b, o throws(DecodeProblem) in try ScalarReads.integer(Int8.self, b, o) }
    }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? {
        try scalarIfPresent(key) { b, o throws(DecodeProblem) in try ScalarReads.integer(Int16.self, b, o) }
    }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? {
        try scalarIfPresent(key) { b, o throws(DecodeProblem) in try ScalarReads.integer(Int32.self, b, o) }
    }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? {
        try scalarIfPresent(key) { b, o throws(DecodeProblem) in try ScalarReads.integer(Int64.self, b, o) }
    }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? {
        try scalarIfPresent(key) { b, o throws(DecodeProblem) in try ScalarReads.integer(UInt.self, b, o) }
    }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? {
        try scalarIfPresent(key) { b, o throws(DecodeProblem) in try ScalarReads.integer(UInt8.self, b, o) }
    }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? {
        try scalarIfPresent(key) { b, o throws(DecodeProblem) in try ScalarReads.integer(UInt16.self, b, o) }
    }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? {
        try scalarIfPresent(key) { b, o throws(DecodeProblem) in try ScalarReads.integer(UInt32.self, b, o) }
    }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? {
        try scalarIfPresent(key) { b, o throws(DecodeProblem) in try ScalarReads.integer(UInt64.self, b, o) }
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try decoder.decodeValue(T.self, at: try require(key))
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let off = find(key.stringValue), try decoder.input.tag(at: off) != TagByte.null else { return nil }
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
    mutating func decode(_ type: Int.Type) throws -> Int {
        try scalar(Int.self) { b, o throws(DecodeProblem) in try ScalarReads.integer(Int.self, b, o) }
    }
    mutating func decode(_ type: Int8.Type) throws -> Int8 {
        try scalar(Int8.self) { b, o throws(DecodeProblem) in try ScalarReads.integer(Int8.self, b, o) }
    }
    mutating func decode(_ type: Int16.Type) throws -> Int16 {
        try scalar(Int16.self) { b, o throws(DecodeProblem) in try ScalarReads.integer(Int16.self, b, o) }
    }
    mutating func decode(_ type: Int32.Type) throws -> Int32 {
        try scalar(Int32.self) { b, o throws(DecodeProblem) in try ScalarReads.integer(Int32.self, b, o) }
    }
    mutating func decode(_ type: Int64.Type) throws -> Int64 {
        try scalar(Int64.self) { b, o throws(DecodeProblem) in try ScalarReads.integer(Int64.self, b, o) }
    }
    mutating func decode(_ type: UInt.Type) throws -> UInt {
        try scalar(UInt.self) { b, o throws(DecodeProblem) in try ScalarReads.integer(UInt.self, b, o) }
    }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 {
        try scalar(UInt8.self) { b, o throws(DecodeProblem) in try ScalarReads.integer(UInt8.self, b, o) }
    }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 {
        try scalar(UInt16.self) { b, o throws(DecodeProblem) in try ScalarReads.integer(UInt16.self, b, o) }
    }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 {
        try scalar(UInt32.self) { b, o throws(DecodeProblem) in try ScalarReads.integer(UInt32.self, b, o) }
    }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 {
        try scalar(UInt64.self) { b, o throws(DecodeProblem) in try ScalarReads.integer(UInt64.self, b, o) }
    }

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
    private func scalar<R>(_ body: (UnsafeRawBufferPointer, Int) throws(DecodeProblem) -> (R, Int)) throws -> R {
        let off = decoder.offset
        return try decoder.input.read(off) { b throws(DecodeProblem) in try body(b, off).0 }
    }

    func decodeNil() -> Bool { (try? decoder.input.tag(at: decoder.offset)) == TagByte.null }

    func decode(_ type: Bool.Type) throws -> Bool { try scalar(ScalarReads.bool) }
    func decode(_ type: String.Type) throws -> String { try scalar(ScalarReads.string) }
    func decode(_ type: Double.Type) throws -> Double { try scalar(ScalarReads.double) }
    func decode(_ type: Float.Type) throws -> Float { try scalar(ScalarReads.float) }
    func decode(_ type: Int.Type) throws -> Int { try scalar { b, o throws(DecodeProblem) in try ScalarReads.integer(Int.self, b, o) } }
    func decode(_ type: Int8.Type) throws -> Int8 { try scalar { b, o throws(DecodeProblem) in try ScalarReads.integer(Int8.self, b, o) } }
    func decode(_ type: Int16.Type) throws -> Int16 { try scalar { b, o throws(DecodeProblem) in try ScalarReads.integer(Int16.self, b, o) } }
    func decode(_ type: Int32.Type) throws -> Int32 { try scalar { b, o throws(DecodeProblem) in try ScalarReads.integer(Int32.self, b, o) } }
    func decode(_ type: Int64.Type) throws -> Int64 { try scalar { b, o throws(DecodeProblem) in try ScalarReads.integer(Int64.self, b, o) } }
    func decode(_ type: UInt.Type) throws -> UInt { try scalar { b, o throws(DecodeProblem) in try ScalarReads.integer(UInt.self, b, o) } }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try scalar { b, o throws(DecodeProblem) in try ScalarReads.integer(UInt8.self, b, o) } }
    func decode(_ type: UInt16.Type) throws -> UInt16 {
        try scalar { b, o throws(DecodeProblem) in try ScalarReads.integer(UInt16.self, b, o) }
    }
    func decode(_ type: UInt32.Type) throws -> UInt32 {
        try scalar { b, o throws(DecodeProblem) in try ScalarReads.integer(UInt32.self, b, o) }
    }
    func decode(_ type: UInt64.Type) throws -> UInt64 {
        try scalar { b, o throws(DecodeProblem) in try ScalarReads.integer(UInt64.self, b, o) }
    }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try decoder.decodeValue(T.self, at: decoder.offset)
    }
}
