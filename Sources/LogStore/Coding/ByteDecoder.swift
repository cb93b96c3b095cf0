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
        try bytes.withUnsafeBytes { try decode(T.self, fromRaw: $0, userInfo: userInfo) }
    }

    /// Decodes a `T` from `bytes` in place (mapped or owned). The decoders of this call read
    /// `bytes` only until it returns: then their input is invalidated (``DecodingInput``), so one
    /// that a `Decodable` kept reads nothing, never the bytes after their owner let them go.
    static func decode<T: Decodable>(
        _ type: T.Type, fromRaw bytes: UnsafeRawBufferPointer, userInfo: [CodingUserInfoKey: any Sendable]
    ) throws -> T {
        let input = DecodingInput(bytes: bytes, userInfo: userInfo.isEmpty ? [:] : userInfo.mapValues { $0 as Any })
        defer { input.invalidate() }
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
            return unsafeBitCast(
                try input.read(off) { b throws(DecodeProblem) in try ScalarReads.integer(Int64.self, b, off).0 }, to: T.self)
        }
        if T.self == NativeArrayTypes.strings { return unsafeBitCast(try input.array(at: off, ScalarReads.string), to: T.self) }
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
        if T.self == NativeArrayTypes.ints {
            return unsafeBitCast(
                try input.array(at: off) { b, o throws(DecodeProblem) in try ScalarReads.integer(Int.self, b, o) }, to: T.self)
        }
        if T.self == NativeArrayTypes.doubles { return unsafeBitCast(try input.array(at: off, ScalarReads.double), to: T.self) }
        if T.self == NativeArrayTypes.int64s {
            return unsafeBitCast(
                try input.array(at: off) { b, o throws(DecodeProblem) in try ScalarReads.integer(Int64.self, b, o) }, to: T.self)
        }
        if T.self == NativeArrayTypes.bools { return unsafeBitCast(try input.array(at: off, ScalarReads.bool), to: T.self) }
        if T.self == NativeArrayTypes.uuids { return unsafeBitCast(try input.array(at: off, ScalarReads.uuid), to: T.self) }
        if T.self == NativeArrayTypes.dates { return unsafeBitCast(try input.array(at: off, ScalarReads.date), to: T.self) }
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
        do throws(DecodeProblem) {
            return try body(bytes)
        } catch {
            throw self.error(error, codingPath: path(to: pathOffset))
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
        do throws(DecodeProblem) {
            return try { (b: UnsafeRawBufferPointer) throws(DecodeProblem) -> [E] in
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
            }(bytes)
        } catch {
            throw self.error(error, codingPath: path(to: at))
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
        return { (b: UnsafeRawBufferPointer) -> [any CodingKey] in
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
        }(bytes)
    }
}
