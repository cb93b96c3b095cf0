// Byte-level fast paths of the attribute coders.
//
// These read and write the engine's value grammar directly, so that storing an item does not
// build an `AttributeValue` tree and loading one does not build hashed dictionaries. The grammar
// is the one `AttributeValue.encoded()` writes (Docs/FileFormat.md, "Values"):
//
//     value  := tag:u8 body
//     body   := (null|false|true: empty) | int: zigzag-uvarint | double: f64le
//             | string: uvarint-len utf8 | bytes: uvarint-len bytes | date: f64le
//             | uuid: 16 bytes | array: uvarint-count value* | map: uvarint-count (string value)*
//
// Map keys are written strictly ascending by their UTF-8 bytes. Tags are `AttributeValue.Tag`.
// CodingTests checks that these bytes equal `AttributeValue.encoded()` and that
// `AttributeValue.decode` reads them.

internal import Foundation
internal import LogStoreEngine

// MARK: - Tags

/// `AttributeValue.Tag` raw values, as plain constants for `switch` over raw bytes.
enum TagByte {
    static let null: UInt8 = AttributeValue.Tag.null.rawValue
    static let `false`: UInt8 = AttributeValue.Tag.false.rawValue
    static let `true`: UInt8 = AttributeValue.Tag.true.rawValue
    static let int: UInt8 = AttributeValue.Tag.int.rawValue
    static let double: UInt8 = AttributeValue.Tag.double.rawValue
    static let string: UInt8 = AttributeValue.Tag.string.rawValue
    static let bytes: UInt8 = AttributeValue.Tag.bytes.rawValue
    static let date: UInt8 = AttributeValue.Tag.date.rawValue
    static let uuid: UInt8 = AttributeValue.Tag.uuid.rawValue
    static let array: UInt8 = AttributeValue.Tag.array.rawValue
    static let map: UInt8 = AttributeValue.Tag.map.rawValue

    /// A human name for a tag byte, for error messages.
    static func name(_ tag: UInt8) -> String {
        switch tag {
        case null: "null"
        case `false`, `true`: "Bool"
        case int: "integer"
        case double: "floating-point number"
        case string: "string"
        case bytes: "bytes (Data)"
        case date: "Date"
        case uuid: "UUID"
        case array: "array"
        case map: "map (keyed container)"
        default: "unknown tag 0x\(String(tag, radix: 16))"
        }
    }
}

// MARK: - Writer

/// A growable byte buffer in manually managed memory that appends values in the value grammar
/// (see the top of this file). Freed in `deinit`; encoding arenas keep theirs for reuse.
///
/// Used by one thread at a time (whoever owns it for the duration of an encode call); its stored
/// properties opt out of dynamic exclusivity checks because no access to them ever overlaps
/// another (every method finishes its access before returning and calls no user code).
final class ValueWriter {
    @exclusivity(unchecked) private(set) var base: UnsafeMutablePointer<UInt8>
    @exclusivity(unchecked) var count = 0
    @exclusivity(unchecked) private(set) var capacity: Int

    init(capacity: Int) {
        self.capacity = Swift.max(capacity, 16)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    /// A copy of the bytes written so far.
    var bytes: [UInt8] { Array(UnsafeBufferPointer(start: base, count: count)) }

    /// Makes room for `n` more bytes.
    @inline(__always) func reserve(_ n: Int) {
        if n > capacity - count { grow(count + n) }
    }

    @inline(never) private func grow(_ needed: Int) {
        let newCapacity = Swift.max(capacity * 2, needed)
        let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        newBase.update(from: base, count: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    @inline(__always) func u8(_ v: UInt8) {
        reserve(1)
        base[count] = v
        count += 1
    }

    @inline(__always) func uvarint(_ v: UInt64) {
        reserve(10)
        var v = v
        var i = count
        while v >= 0x80 {
            base[i] = UInt8(truncatingIfNeeded: v) | 0x80
            v >>= 7
            i += 1
        }
        base[i] = UInt8(truncatingIfNeeded: v)
        count = i + 1
    }

    @inline(__always) func f64(_ v: Double) {
        reserve(8)
        UnsafeMutableRawPointer(base + count).storeBytes(of: v.bitPattern.littleEndian, as: UInt64.self)
        count += 8
    }

    /// Appends raw bytes.
    @inline(__always) func append(_ p: UnsafeRawBufferPointer) {
        guard let src = p.baseAddress, p.count > 0 else { return }
        reserve(p.count)
        UnsafeMutableRawPointer(base + count).copyMemory(from: src, byteCount: p.count)
        count += p.count
    }

    /// Appends `other[start..<end]`.
    @inline(__always) func append(from other: ValueWriter, start: Int, end: Int) {
        let n = end - start
        reserve(n)
        (base + count).update(from: other.base + start, count: n)
        count += n
    }

    /// `uvarint(utf8 count) utf8` (no tag).
    @inline(__always) func rawString(_ s: String) {
        var s = s
        s.withUTF8 { buf in
            uvarint(UInt64(buf.count))
            append(UnsafeRawBufferPointer(buf))
        }
    }

    @inline(__always) func int(_ i: Int64) {
        u8(TagByte.int)
        uvarint(UInt64(bitPattern: (i << 1) ^ (i >> 63)))
    }

    @inline(__always) func bool(_ b: Bool) { u8(b ? TagByte.true : TagByte.false) }

    @inline(__always) func double(_ d: Double) {
        u8(TagByte.double)
        f64(d)
    }

    @inline(__always) func string(_ s: String) {
        u8(TagByte.string)
        rawString(s)
    }

    @inline(__always) func date(_ d: Date) {
        u8(TagByte.date)
        f64(d.timeIntervalSinceReferenceDate)
    }

    @inline(__always) func uuid(_ u: UUID) {
        u8(TagByte.uuid)
        withUnsafeBytes(of: u.uuid) { append($0) }
    }

    @inline(__always) func bytes(_ d: Data) {
        u8(TagByte.bytes)
        uvarint(UInt64(d.count))
        d.withUnsafeBytes { append($0) }
    }

    /// An array of scalars; returns the levels nested in it (0 when empty, else 1).
    @inline(__always) func array<E>(_ a: [E], _ element: (ValueWriter, E) -> Void) -> Int32 {
        u8(TagByte.array)
        uvarint(UInt64(a.count))
        for e in a { element(self, e) }
        return a.isEmpty ? 0 : 1
    }

    /// Writes a complete `AttributeValue` (the same bytes as `AttributeValue.encoded()`).
    /// Throws `TooDeep` past `AttributeValue.maxDepth`.
    func value(_ v: AttributeValue, depth: Int) throws(TooDeep) {
        guard depth < AttributeValue.maxDepth else { throw TooDeep(path: []) }
        switch v {
        case .null: u8(TagByte.null)
        case .bool(let b): bool(b)
        case .int(let i): int(i)
        case .double(let d): double(d)
        case .string(let s): string(s)
        case .bytes(let b):
            u8(TagByte.bytes)
            uvarint(UInt64(b.count))
            b.withUnsafeBytes { append($0) }
        case .date(let d): date(d)
        case .uuid(let u): uuid(u)
        case .array(let a):
            u8(TagByte.array)
            uvarint(UInt64(a.count))
            for (i, e) in a.enumerated() {
                do { try value(e, depth: depth + 1) } catch { throw error.prepending(.index(i)) }
            }
        case .map(let m):
            u8(TagByte.map)
            uvarint(UInt64(m.count))
            for k in m.keys.sorted(by: { _utf8Compare($0, $1) < 0 }) {
                rawString(k)
                do { try value(m[k].unsafelyUnwrapped, depth: depth + 1) } catch {
                    throw error.prepending(.key(k, nil))
                }
            }
        }
    }
}

/// A value nested deeper than `AttributeValue.maxDepth`; `path` is filled in while unwinding.
struct TooDeep: Error {
    var path: [PathComponent]
    /// Set when the value is not too deep but a map has two keys that differ in bytes and are
    /// equal as Swift strings (canonically equivalent): this key, the second of them.
    var equivalentKey: String? = nil
    func prepending(_ c: PathComponent) -> TooDeep { TooDeep(path: [c] + path, equivalentKey: equivalentKey) }
}

/// Compares `a` and `b` by their UTF-8 bytes (the on-disk map key order): <0, 0 or >0.
@inline(__always)
func _utf8Compare(_ a: String, _ b: String) -> Int32 {
    var a = a
    var b = b
    return a.withUTF8 { pa in
        b.withUTF8 { pb in
            let n = Swift.min(pa.count, pb.count)
            if n > 0, let x = pa.baseAddress, let y = pb.baseAddress {
                let c = memcmp(x, y, n)
                if c != 0 { return c }
            }
            return pa.count < pb.count ? -1 : (pa.count > pb.count ? 1 : 0)
        }
    }
}

// MARK: - Reader

/// Malformed bytes (a value that does not follow the grammar); `offset` is within the item.
struct Malformed: Error, CustomStringConvertible {
    let reason: String
    let offset: Int
    var description: String { "malformed attribute value: \(reason) at byte \(offset)" }
}

/// Bounds-checked reads over one item's bytes. Every function takes the offset of what it reads
/// and never traps: out-of-range or malformed input throws `Malformed`.
enum BoundedRead {
    @inline(__always)
    static func u8(_ b: UnsafeRawBufferPointer, _ off: Int) throws(Malformed) -> UInt8 {
        guard off >= 0, off < b.count else { throw Malformed(reason: "truncated value", offset: off) }
        return b[off]
    }

    /// Unsigned LEB128 at `off`; advances `off`.
    @inline(__always)
    static func uvarint(_ b: UnsafeRawBufferPointer, _ off: inout Int) throws(Malformed) -> UInt64 {
        let start = off
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard off < b.count else { throw Malformed(reason: "truncated varint", offset: start) }
            let byte = b[off]
            off += 1
            if shift == 63 && byte > 1 { throw Malformed(reason: "varint overflows 64 bits", offset: start) }
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return result }
            shift += 7
            if shift > 63 { throw Malformed(reason: "varint longer than 10 bytes", offset: start) }
        }
    }

    /// A length (uvarint) checked against the bytes left; advances `off`.
    @inline(__always)
    static func length(_ b: UnsafeRawBufferPointer, _ off: inout Int) throws(Malformed) -> Int {
        let start = off
        let n = try uvarint(b, &off)
        guard n <= UInt64(b.count - off) else {
            throw Malformed(reason: "length \(n) exceeds the \(b.count - off) bytes left", offset: start)
        }
        return Int(n)
    }

    @inline(__always)
    static func f64(_ b: UnsafeRawBufferPointer, _ off: Int) throws(Malformed) -> Double {
        guard off >= 0, b.count - off >= 8 else { throw Malformed(reason: "truncated 8-byte value", offset: off) }
        return Double(bitPattern: UInt64(littleEndian: b.loadUnaligned(fromByteOffset: off, as: UInt64.self)))
    }

    @inline(__always)
    static func zigzag(_ z: UInt64) -> Int64 { Int64(bitPattern: (z >> 1) ^ (0 &- (z & 1))) }

    /// The offset just after the value starting at `off` (validates tags, lengths and depth).
    static func skip(_ b: UnsafeRawBufferPointer, _ off: Int, depth: Int) throws(Malformed) -> Int {
        guard depth < AttributeValue.maxDepth else {
            throw Malformed(reason: "value nested deeper than \(AttributeValue.maxDepth)", offset: off)
        }
        var o = off
        let tag = try u8(b, o)
        o += 1
        switch tag {
        case TagByte.null, TagByte.false, TagByte.true: return o
        case TagByte.int:
            _ = try uvarint(b, &o)
            return o
        case TagByte.double, TagByte.date:
            guard b.count - o >= 8 else { throw Malformed(reason: "truncated 8-byte value", offset: o) }
            return o + 8
        case TagByte.uuid:
            guard b.count - o >= 16 else { throw Malformed(reason: "truncated UUID", offset: o) }
            return o + 16
        case TagByte.string, TagByte.bytes:
            let n = try length(b, &o)
            return o + n
        case TagByte.array:
            let n = try length(b, &o)
            for _ in 0..<n { o = try skip(b, o, depth: depth + 1) }
            return o
        case TagByte.map:
            let n = try length(b, &o)
            for _ in 0..<n {
                let k = try length(b, &o)
                o += k
                o = try skip(b, o, depth: depth + 1)
            }
            return o
        default:
            throw Malformed(reason: "unknown value tag 0x\(String(tag, radix: 16))", offset: off)
        }
    }

    /// Whether the `ac` bytes at `a` sort strictly before the `cc` bytes at `c` (memcmp order).
    @inline(__always)
    static func less(_ b: UnsafeRawBufferPointer, _ a: Int, _ ac: Int, _ c: Int, _ cc: Int) -> Bool {
        let n = Swift.min(ac, cc)
        if n > 0, let base = b.baseAddress {
            let r = memcmp(base + a, base + c, n)
            if r != 0 { return r < 0 }
        }
        return ac < cc
    }

    /// Whether the `count` bytes at `off` are all ASCII. Distinct ASCII keys are never equal as
    /// Swift strings, so only maps with a non-ASCII key need ``rejectCanonicallyEquivalentKeys(_:_:)``.
    @inline(__always)
    static func isASCII(_ b: UnsafeRawBufferPointer, _ off: Int, _ count: Int) -> Bool {
        guard count > 0, let base = b.baseAddress else { return true }
        // `off..<off + count` is within `b` (its length was checked by `length`).
        var high: UInt64 = 0
        var i = 0
        while i + 8 <= count {
            high |= (base + off + i).loadUnaligned(as: UInt64.self)
            i += 8
        }
        while i < count {
            high |= UInt64(base.load(fromByteOffset: off + i, as: UInt8.self))
            i += 1
        }
        return high & 0x8080_8080_8080_8080 == 0
    }

    /// Throws when two keys of one map differ in bytes but are equal as Swift strings (canonically
    /// equivalent, such as NFC and NFD "é"). Such a map is invalid (Docs/FileFormat.md §8): the
    /// encoders never write one, and decoding it into a `[String: _]` would keep one of the two.
    static func rejectCanonicallyEquivalentKeys(_ b: UnsafeRawBufferPointer, _ entries: ContiguousArray<MapEntry>) throws(Malformed) {
        var seen = Set<String>(minimumCapacity: entries.count)
        for e in entries {
            let key = String(decoding: UnsafeRawBufferPointer(rebasing: b[e.keyStart..<(e.keyStart + e.keyCount)]), as: UTF8.self)
            if !seen.insert(key).inserted {
                throw Malformed(reason: "map key is canonically equivalent to an earlier key with different bytes", offset: e.keyStart)
            }
        }
    }

    /// Whether the `count` bytes at `off` equal `key`.
    @inline(__always)
    static func equal(_ b: UnsafeRawBufferPointer, _ off: Int, _ count: Int, _ key: UnsafeBufferPointer<UInt8>) -> Bool {
        guard count == key.count else { return false }
        guard count > 0, let base = b.baseAddress, let k = key.baseAddress else { return true }
        return memcmp(base + off, k, count) == 0
    }

    /// A String from UTF-8 bytes, or nil when they are not valid UTF-8.
    @inline(__always)
    static func string(_ raw: UnsafeRawBufferPointer) -> String? {
        // ASCII (the common case) needs no validation beyond the high-bit check.
        var i = 0
        var high: UInt64 = 0
        while i + 8 <= raw.count {
            high |= raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            i += 8
        }
        while i < raw.count {
            high |= UInt64(raw[i])
            i += 1
        }
        let s = String(decoding: raw, as: UTF8.self)
        if high & 0x8080_8080_8080_8080 == 0 { return s }
        // Decoding repairs invalid sequences; the bytes survive unchanged only when they were valid.
        var copy = s
        let unchanged = copy.withUTF8 { u in
            guard u.count == raw.count else { return false }
            guard let x = u.baseAddress, let y = raw.baseAddress else { return true }
            return memcmp(x, y, u.count) == 0
        }
        return unchanged ? s : nil
    }

    /// Compares the `count` bytes at `off` with `key`'s UTF-8 (memcmp order: <0, 0, >0).
    @inline(__always)
    static func compare(_ b: UnsafeRawBufferPointer, _ off: Int, _ count: Int, _ key: UnsafeBufferPointer<UInt8>) -> Int32 {
        let n = Swift.min(count, key.count)
        if n > 0, let base = b.baseAddress, let k = key.baseAddress {
            let c = memcmp(base + off, k, n)
            if c != 0 { return c }
        }
        return count < key.count ? -1 : (count > key.count ? 1 : 0)
    }
}

// MARK: - Fast paths for the DataStore layer

/// Byte-level entry points the DataStore layer calls to store and load items. Runs on the
/// caller's thread; stateless. Package API: the other backends encode and decode items with it.
package enum AttributeCoding {
    /// Encodes `value` straight into the value grammar (the same bytes as
    /// `AttributeEncoder().encode(value).encoded()`, without building the `AttributeValue` tree).
    ///
    /// Throws `LogStoreError(.encodingFailed)` with the `EncodingError` (or the error the value's
    /// `encode(to:)` threw) as underlying cause.
    package static func encodeBytes<T: Encodable>(
        _ value: T, userInfo: [CodingUserInfoKey: any Sendable] = [:]
    ) throws -> [UInt8] {
        do {
            return try EncodingArena.withEncoded(value, userInfo: userInfo) { try $0.bytes() }
        } catch {
            throw CodingErrors.encodingFailed(error, type: T.self)
        }
    }

    /// Decodes a `T` from one item's bytes (as written by ``encodeBytes(_:userInfo:)`` or
    /// `AttributeValue.encoded()`), reading the bytes in place.
    ///
    /// Throws `LogStoreError(.decodingFailed)` naming the coding path, with the `DecodingError` as
    /// underlying cause; `LogStoreError(.corruption)` when the bytes do not follow the grammar.
    package static func decode<T: Decodable>(
        _ type: T.Type, fromBytes bytes: ArraySlice<UInt8>,
        userInfo: [CodingUserInfoKey: any Sendable] = [:]
    ) throws -> T {
        do {
            return try ByteDecoder.decode(T.self, from: bytes, userInfo: userInfo)
        } catch {
            throw CodingErrors.decodingFailed(error, type: T.self, malformedIsCorruption: true)
        }
    }

    /// ``decode(_:fromBytes:userInfo:)`` from bytes it does not own (a record in a mapped segment,
    /// or a scratch buffer): the decoder reads them in place, only during the call (its input is
    /// invalidated when the call returns), and the decoded value owns all its storage.
    package static func decode<T: Decodable>(
        _ type: T.Type, fromRaw bytes: UnsafeRawBufferPointer,
        userInfo: [CodingUserInfoKey: any Sendable] = [:]
    ) throws -> T {
        do {
            return try ByteDecoder.decode(T.self, fromRaw: bytes, userInfo: userInfo)
        } catch {
            throw CodingErrors.decodingFailed(error, type: T.self, malformedIsCorruption: true)
        }
    }
}
