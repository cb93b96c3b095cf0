public import Foundation

/// A self-describing attribute value: the value tree every record carries, readable by tools
/// without the app's Swift types.
///
/// On disk: see ``AttributeValue/Tag`` and Docs/FileFormat.md, "Values".
public enum AttributeValue: Sendable, Hashable {
    /// No value (a Swift `nil`).
    case null
    /// A Boolean.
    case bool(Bool)
    /// A signed 64-bit integer (every Swift integer width is stored here; `UInt64` values above
    /// `Int64.max` are stored by bit pattern).
    case int(Int64)
    /// A 64-bit IEEE 754 floating-point number.
    case double(Double)
    /// A Unicode string.
    case string(String)
    /// Raw bytes.
    case bytes([UInt8])
    /// A point in time (exact: the `Date`'s `timeIntervalSinceReferenceDate` bits are stored).
    case date(Date)
    /// A UUID (16 bytes).
    case uuid(UUID)
    /// An ordered list.
    case array([AttributeValue])
    /// String-keyed attributes (stored with keys sorted by their UTF-8 bytes).
    case map([String: AttributeValue])

    /// The value's type tag on disk. Raw values are part of the file format: never renumber or reuse.
    public enum Tag: UInt8, Sendable {
        /// `null`
        case null = 0x00
        /// `false`
        case `false` = 0x01
        /// `true`
        case `true` = 0x02
        /// zigzag uvarint
        case int = 0x03
        /// f64le
        case double = 0x04
        /// uvarint length, UTF-8
        case string = 0x05
        /// uvarint length, bytes
        case bytes = 0x06
        /// f64le seconds since 2001-01-01T00:00:00Z
        case date = 0x07
        /// 16 bytes, RFC 4122 order
        case uuid = 0x08
        /// uvarint count, values
        case array = 0x09
        /// uvarint count, (string key, value) pairs, keys strictly ascending by UTF-8 bytes and
        /// no two canonically equivalent (equal as Swift strings)
        case map = 0x0A
    }

    /// For `.map`: the attribute at `key` (JustPersist's `object(forKey:)`); nil otherwise.
    public subscript(key: String) -> AttributeValue? {
        if case .map(let m) = self { return m[key] }
        return nil
    }
}

extension AttributeValue {
    /// Maximum nesting depth accepted by the decoder (and produced by the encoder).
    public static let maxDepth = 128

    /// Encodes the value in the on-disk value grammar (Docs/FileFormat.md, "Values"):
    ///
    ///     value  := tag:u8 body
    ///     body   := (null|false|true: empty) | int: zigzag-uvarint | double: f64le
    ///             | string: uvarint-len utf8 | bytes: uvarint-len bytes | date: f64le
    ///             | uuid: 16 bytes | array: uvarint-count value* | map: uvarint-count (string value)*
    ///
    /// Iterative (an explicit stack, not recursion), so any nesting encodes without exhausting the
    /// thread's stack; a value nested deeper than ``maxDepth`` encodes to bytes the decoders reject,
    /// so code that stores values checks ``exceedsMaxDepth`` first.
    public func encoded() -> [UInt8] {
        var w = _ByteWriter(capacity: 128)
        encode(into: &w)
        return w.bytes
    }

    /// A container being written by `encode(into:)`: its remaining elements, in write order.
    private enum PendingElements {
        case array(ArraySlice<AttributeValue>)
        case map(ArraySlice<(String, AttributeValue)>)
    }

    func encode(into w: inout _ByteWriter) {
        var stack: [PendingElements] = []
        var next: AttributeValue? = self
        while true {
            if let v = next {
                next = nil
                switch v {
                case .null: w.u8(Tag.null.rawValue)
                case .bool(let b): w.u8(b ? Tag.true.rawValue : Tag.false.rawValue)
                case .int(let i):
                    w.u8(Tag.int.rawValue)
                    w.uvarint(UInt64(bitPattern: (i << 1) ^ (i >> 63)))
                case .double(let d):
                    w.u8(Tag.double.rawValue)
                    w.f64(d)
                case .string(let s):
                    w.u8(Tag.string.rawValue)
                    w.string(s)
                case .bytes(let b):
                    w.u8(Tag.bytes.rawValue)
                    w.lengthPrefixed(b)
                case .date(let d):
                    w.u8(Tag.date.rawValue)
                    w.f64(d.timeIntervalSinceReferenceDate)
                case .uuid(let u):
                    w.u8(Tag.uuid.rawValue)
                    withUnsafeBytes(of: u.uuid) { w.append(contentsOf: $0) }
                case .array(let a):
                    w.u8(Tag.array.rawValue)
                    w.uvarint(UInt64(a.count))
                    stack.append(.array(a[...]))
                case .map(let m):
                    w.u8(Tag.map.rawValue)
                    w.uvarint(UInt64(m.count))
                    let sorted = m.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }.map { ($0.key, $0.value) }
                    stack.append(.map(sorted[...]))
                }
            }
            guard let top = stack.popLast() else { return }
            switch top {
            case .array(var rest):
                guard let first = rest.popFirst() else { continue }
                stack.append(.array(rest))
                next = first
            case .map(var rest):
                guard let (key, value) = rest.popFirst() else { continue }
                stack.append(.map(rest))
                w.string(key)
                next = value
            }
        }
    }

    /// Whether the value nests deeper than ``maxDepth`` (an array or map counts as one level, as
    /// the decoder counts). Iterative; stops looking once the limit is passed. Any thread.
    public var exceedsMaxDepth: Bool {
        var pending: [(AttributeValue, Int)] = [(self, 1)]
        while let (v, depth) = pending.popLast() {
            if depth > Self.maxDepth { return true }
            switch v {
            case .array(let a): for e in a { pending.append((e, depth + 1)) }
            case .map(let m): for e in m.values { pending.append((e, depth + 1)) }
            default: continue
            }
        }
        return false
    }

    /// Decodes one value that must fill `bytes` exactly. Throws ``LogStoreError`` `.corruption`
    /// on any malformed input; never traps.
    public static func decode(_ bytes: [UInt8]) throws -> AttributeValue {
        try bytes.withUnsafeBytes { try decode($0) }
    }

    /// Decodes one value that must fill `bytes` exactly.
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws -> AttributeValue {
        var r = _ByteReader(bytes)
        do throws(_DecodeError) {
            let v = try decode(from: &r, depth: 0)
            guard r.isAtEnd else { throw _DecodeError("\(r.remaining) trailing bytes after value", at: r.offset) }
            return v
        } catch {
            throw LogStoreError(.corruption, "Malformed attribute value: \(error.reason).", offset: UInt64(error.offset))
        }
    }

    static func decode(from r: inout _ByteReader, depth: Int) throws(_DecodeError) -> AttributeValue {
        guard depth < maxDepth else { throw _DecodeError("value nested deeper than \(maxDepth)", at: r.offset) }
        let at = r.offset
        let raw = try r.u8()
        guard let tag = Tag(rawValue: raw) else { throw _DecodeError("unknown value tag 0x\(String(raw, radix: 16))", at: at) }
        switch tag {
        case .null: return .null
        case .false: return .bool(false)
        case .true: return .bool(true)
        case .int:
            let z = try r.uvarint()
            return .int(Int64(bitPattern: (z >> 1) ^ (0 &- (z & 1))))
        case .double: return .double(try r.f64())
        case .string: return .string(try r.string())
        case .bytes: return .bytes(Array(try r.lengthPrefixed()))
        case .date: return .date(Date(timeIntervalSinceReferenceDate: try r.f64()))
        case .uuid:
            let b = try r.bytes(16)
            let u = (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])
            return .uuid(UUID(uuid: u))
        case .array:
            let n = try r.length()  // every element takes at least one byte
            var a: [AttributeValue] = []
            a.reserveCapacity(n)
            for _ in 0..<n { a.append(try decode(from: &r, depth: depth + 1)) }
            return .array(a)
        case .map:
            let n = try r.length()
            var m: [String: AttributeValue] = [:]
            m.reserveCapacity(n)
            var previous: String? = nil
            for _ in 0..<n {
                let keyAt = r.offset
                let k = try r.string()
                if let p = previous, !p.utf8.lexicographicallyPrecedes(k.utf8) {
                    throw _DecodeError("map keys not strictly ascending", at: keyAt)
                }
                previous = k
                // Strictly ascending bytes rule out byte-equal keys, so a hit here is a key equal
                // to an earlier one only as a Swift string (NFC vs NFD): a `[String: _]` cannot
                // hold both, and keeping either would depend on the order. Rejected (FileFormat §8).
                if m[k] != nil {
                    throw _DecodeError(
                        "map key \"\(k.unicodeScalars.map { $0.escaped(asASCII: true) }.joined())\" is canonically equivalent to an earlier key with different bytes",
                        at: keyAt)
                }
                m[k] = try decode(from: &r, depth: depth + 1)
            }
            return .map(m)
        }
    }

    /// The attribute `key` of an encoded top-level map, decoded without decoding the rest of the
    /// value (used by attribute filters and sorts). Returns nil when the value is not a map or has
    /// no such key. Throws `.corruption` on malformed bytes. Pure; any thread.
    public static func lookupAttribute(_ key: String, in bytes: UnsafeRawBufferPointer) throws -> AttributeValue? {
        try lookupAttribute(path: [Array(key.utf8)], in: bytes)
    }

    static func skip(_ r: inout _ByteReader, depth: Int) throws(_DecodeError) {
        guard depth < maxDepth else { throw _DecodeError("value nested deeper than \(maxDepth)", at: r.offset) }
        let at = r.offset
        let raw = try r.u8()
        guard let tag = Tag(rawValue: raw) else { throw _DecodeError("unknown value tag 0x\(String(raw, radix: 16))", at: at) }
        switch tag {
        case .null, .false, .true: return
        case .int: _ = try r.uvarint()
        case .double, .date: _ = try r.bytes(8)
        case .string, .bytes: _ = try r.lengthPrefixed()
        case .uuid: _ = try r.bytes(16)
        case .array:
            let n = try r.length()
            for _ in 0..<n { try skip(&r, depth: depth + 1) }
        case .map:
            let n = try r.length()
            for _ in 0..<n {
                _ = try r.lengthPrefixed()
                try skip(&r, depth: depth + 1)
            }
        }
    }
}
