import Foundation

/// Encodes attribute values so that their bytes compare (memcmp, a prefix first) in the order of
/// LogStore's total order of values: secondary-index entries are byte strings in an
/// ``OrderedTree``, and ranges of values are ranges of bytes.
///
/// Byte grammar of one component (Docs/FileFormat.md, section 9a):
///
///     component := 0x01                          -- null, or a missing attribute
///                | 0x02 | 0x03                   -- false | true
///                | 0x04 number                   -- .int and .double, one order
///                | 0x05 escaped                  -- string: UTF-8 of its NFC form
///                | 0x06 escaped                  -- bytes
///                | 0x07 number                   -- date: seconds since 2001-01-01
///                | 0x08 uuid:16                  -- its 16 bytes
///                | 0x09 component* 0x00          -- array: its elements, then an end byte
///                | 0x0A                          -- map: every map is equal to every other
///     number    := class:u8 exponent:u16be fraction:u64be
///                  class 0 = -inf, 1 = negative, 2 = zero (also -0.0), 3 = positive,
///                  4 = +inf, 5 = NaN (exponent and fraction zero except in classes 1 and 3);
///                  |value| = 1.fraction * 2^(exponent - 2048) exactly (fraction left-aligned,
///                  the leading one bit dropped); in class 1 exponent and fraction are inverted
///     escaped   := (0x00 0xFF | byte != 0x00)* 0x00 0x01
///     entry     := component{attributeCount} recordKey
///
/// Kinds order as `AttributeValue.sortRank` does (null, bool, number, string, bytes, date, uuid,
/// array, map). Numbers compare exactly across integers and doubles (no detour through `Double`:
/// `Int64.max` and `9.223372036854775807e18` differ), NaN after `+inf`, `-0.0 == 0.0`: the same
/// order `NumberOrder` gives sorts. Strings compare as the bytes of their NFC form, so canonically
/// equivalent strings are one value (as Swift's `==` says).
public enum IndexKeyEncoding {
    /// Component tags; part of the format (never renumber or reuse).
    enum Tag: UInt8 {
        case end = 0x00
        case null = 0x01
        case `false` = 0x02
        case `true` = 0x03
        case number = 0x04
        case string = 0x05
        case bytes = 0x06
        case date = 0x07
        case uuid = 0x08
        case array = 0x09
        case map = 0x0A
    }

    /// Appends the component for `value` to `out`.
    public static func append(_ value: AttributeValue, to out: inout [UInt8]) {
        // Arrays nest; an explicit stack keeps deep values off the call stack.
        var pending: [ArraySlice<AttributeValue>] = []
        var current: AttributeValue? = value
        while true {
            if let v = current {
                switch v {
                case .null: out.append(Tag.null.rawValue)
                case .bool(let b): out.append(b ? Tag.true.rawValue : Tag.false.rawValue)
                case .int(let i):
                    out.append(Tag.number.rawValue)
                    appendNumber(integer: i, to: &out)
                case .double(let d):
                    out.append(Tag.number.rawValue)
                    appendNumber(double: d, to: &out)
                case .string(let s):
                    out.append(Tag.string.rawValue)
                    var n = normalized(s)
                    n.withUTF8 { appendEscaped(UnsafeRawBufferPointer($0), to: &out) }
                case .bytes(let b):
                    out.append(Tag.bytes.rawValue)
                    b.withUnsafeBytes { appendEscaped($0, to: &out) }
                case .date(let d):
                    out.append(Tag.date.rawValue)
                    appendNumber(double: d.timeIntervalSinceReferenceDate, to: &out)
                case .uuid(let u):
                    out.append(Tag.uuid.rawValue)
                    withUnsafeBytes(of: u.uuid) { out.append(contentsOf: $0) }
                case .array(let a):
                    out.append(Tag.array.rawValue)
                    pending.append(a[...])
                case .map: out.append(Tag.map.rawValue)
                }
            }
            guard var top = pending.popLast() else { return }
            if let first = top.first {
                top = top.dropFirst()
                pending.append(top)
                current = first
            } else {
                out.append(Tag.end.rawValue)
                current = nil
            }
        }
    }

    /// The NFC form of `s` (ASCII is already NFC).
    static func normalized(_ s: String) -> String {
        var copy = s
        let ascii = copy.withUTF8 { utf8 in
            for b in UnsafeRawBufferPointer(utf8) where b >= 0x80 { return false }
            return true
        }
        return ascii ? s : s.precomposedStringWithCanonicalMapping
    }

    // Both loops run over raw buffers, not generic sequences: unoptimized (debug) builds iterate
    // a generic sequence through per-element generic calls, a quarter of the DataStore
    // power-loss harness's time, which builds index entries on every recovery.
    static func appendEscaped(_ bytes: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        for b in bytes {
            out.append(b)
            if b == 0 { out.append(0xFF) }
        }
        out.append(0x00)
        out.append(0x01)
    }

    /// class 0 -inf, 1 negative, 2 zero, 3 positive, 4 +inf, 5 NaN.
    static func appendNumber(negative: Bool, exponent: Int, fraction: UInt64, to out: inout [UInt8]) {
        let e = UInt16(exponent + 2048)
        out.append(negative ? 1 : 3)
        let (ee, ff) = negative ? (~e, ~fraction) : (e, fraction)
        withUnsafeBytes(of: ee.bigEndian) { out.append(contentsOf: $0) }
        withUnsafeBytes(of: ff.bigEndian) { out.append(contentsOf: $0) }
    }

    static func appendSpecial(_ numberClass: UInt8, to out: inout [UInt8]) {
        out.append(numberClass)
        out.append(contentsOf: repeatElement(0, count: 10))
    }

    static func appendNumber(integer i: Int64, to out: inout [UInt8]) {
        guard i != 0 else { return appendSpecial(2, to: &out) }
        let magnitude = i.magnitude
        let lz = magnitude.leadingZeroBitCount
        let exponent = 63 - lz
        // Drop the leading one bit and left-align what follows it.
        let fraction = exponent == 0 ? 0 : magnitude << UInt64(lz + 1)
        appendNumber(negative: i < 0, exponent: exponent, fraction: fraction, to: &out)
    }

    static func appendNumber(double d: Double, to out: inout [UInt8]) {
        if d.isNaN { return appendSpecial(5, to: &out) }
        if d.isInfinite { return appendSpecial(d < 0 ? 0 : 4, to: &out) }
        if d == 0 { return appendSpecial(2, to: &out) }
        // `significand` is in [1, 2) for normal and subnormal values alike, with `exponent` the
        // exact power of two: |d| = significand * 2^exponent.
        let fraction = UInt64(d.significand.significandBitPattern) << 12
        appendNumber(negative: d < 0, exponent: Int(d.exponent), fraction: fraction, to: &out)
    }

    // MARK: Entries

    /// The entry of a record whose index attributes hold `values` (nil: missing).
    public static func entry(_ values: [AttributeValue?], key: RecordKey) -> IndexEntry {
        var out: [UInt8] = []
        out.reserveCapacity(values.count * 12 + key.count)
        for v in values { append(v ?? .null, to: &out) }
        key.withUnsafeBytes { out.append(contentsOf: $0) }
        return IndexEntry(out)
    }

    /// The values of `definition`'s attributes in the record stored as `value`: nil for a missing
    /// one, and for every one when `value` is not a well-formed attribute map (an engine user's own
    /// bytes, or damage a read would report). Index entries are derived data: they never make a
    /// commit, a replay or a rebuild fail.
    public static func values(of definition: IndexDefinition, in value: UnsafeRawBufferPointer) -> [AttributeValue?] {
        values(ofPaths: paths(of: definition), in: value)
    }

    /// The attribute paths of `definition`, as the UTF-8 bytes of their keys.
    static func paths(of definition: IndexDefinition) -> [[[UInt8]]] {
        definition.attributes.map { path in path.map { Array($0.utf8) } }
    }

    /// ``values(of:in:)`` with the attribute paths as bytes (``paths(of:)``).
    static func values(ofPaths paths: [[[UInt8]]], in value: UnsafeRawBufferPointer) -> [AttributeValue?] {
        paths.map { path in (try? AttributeValue.lookupAttribute(path: path, in: value)) ?? nil }
    }

    /// The record key at the end of `entry`, whose first `componentCount` components are index
    /// values; nil when the entry is malformed.
    public static func recordKey(ofEntry entry: IndexEntry, componentCount: Int) -> RecordKey? {
        entry.withUnsafeBytes { recordKey(ofEntry: $0, componentCount: componentCount) }
    }

    /// ``recordKey(ofEntry:componentCount:)`` of an entry's bytes held as a ``RecordKey``.
    public static func recordKey(ofEntry entry: RecordKey, componentCount: Int) -> RecordKey? {
        entry.withUnsafeBytes { recordKey(ofEntry: $0, componentCount: componentCount) }
    }

    /// ``recordKey(ofEntry:componentCount:)`` of an entry's bytes.
    static func recordKey(ofEntry raw: UnsafeRawBufferPointer, componentCount: Int) -> RecordKey? {
        guard let i = prefixLength(ofEntry: raw, componentCount: componentCount) else { return nil }
        return RecordKey(UnsafeRawBufferPointer(rebasing: raw[i...]))
    }

    /// The prefix of `entry` holding its first `count` components (for grouping equal values).
    package static func prefixLength(ofEntry raw: UnsafeRawBufferPointer, componentCount: Int) -> Int? {
        var i = 0
        for _ in 0..<componentCount {
            guard let next = skipComponent(raw, from: i) else { return nil }
            i = next
        }
        return i
    }

    /// The offset after the component starting at `i`; nil if it is malformed or runs past the end.
    static func skipComponent(_ raw: UnsafeRawBufferPointer, from start: Int) -> Int? {
        var depth = 0
        var i = start
        repeat {
            guard i < raw.count, let tag = Tag(rawValue: raw[i]) else { return nil }
            i += 1
            switch tag {
            case .end:
                guard depth > 0 else { return nil }
                depth -= 1
            case .null, .false, .true, .map: break
            case .number, .date: i += 11
            case .uuid: i += 16
            case .array: depth += 1
            case .string, .bytes:
                while true {
                    guard i + 1 < raw.count else { return nil }
                    if raw[i] == 0 {
                        if raw[i + 1] == 0x01 { break }
                        guard raw[i + 1] == 0xFF else { return nil }
                    }
                    i += raw[i] == 0 ? 2 : 1
                }
                i += 2
            }
            guard i <= raw.count else { return nil }
        } while depth > 0
        return i
    }

    /// Whether any of the first `componentCount` components of `entry` is null (such entries never
    /// conflict in a unique index).
    static func hasNull(_ raw: UnsafeRawBufferPointer, componentCount: Int) -> Bool {
        var i = 0
        for _ in 0..<componentCount {
            guard i < raw.count else { return false }
            if raw[i] == Tag.null.rawValue { return true }
            guard let next = skipComponent(raw, from: i) else { return false }
            i = next
        }
        return false
    }

    // MARK: Ranges

    /// The first byte string after every string that starts with `prefix` (nil: none, the prefix
    /// is all 0xFF): the exclusive upper bound of "starts with `prefix`".
    public static func successor(ofPrefix prefix: [UInt8]) -> [UInt8]? {
        var p = prefix
        while let last = p.last {
            if last < 0xFF {
                p[p.count - 1] = last + 1
                return p
            }
            p.removeLast()
        }
        return nil
    }

    /// The encoded component of `value` (for building range bounds).
    public static func component(_ value: AttributeValue) -> [UInt8] {
        var out: [UInt8] = []
        append(value, to: &out)
        return out
    }

    /// The prefix every component of `value`'s kind starts with, and the first prefix after that
    /// kind's components (for ranges that must stay within one kind: `x > 4` never matches a
    /// string, a null or NaN).
    public static func kindBounds(of value: AttributeValue) -> (lower: [UInt8], upper: [UInt8]) {
        switch value {
        case .int, .double: return ([Tag.number.rawValue, 0], [Tag.number.rawValue, 5])  // -inf ..< NaN
        case .date: return ([Tag.date.rawValue, 0], [Tag.date.rawValue, 5])
        case .string: return ([Tag.string.rawValue], [Tag.string.rawValue + 1])
        case .bytes: return ([Tag.bytes.rawValue], [Tag.bytes.rawValue + 1])
        case .uuid: return ([Tag.uuid.rawValue], [Tag.uuid.rawValue + 1])
        case .bool: return ([Tag.false.rawValue], [Tag.true.rawValue + 1])
        case .null: return ([Tag.null.rawValue], [Tag.null.rawValue + 1])
        case .array: return ([Tag.array.rawValue], [Tag.array.rawValue + 1])
        case .map: return ([Tag.map.rawValue], [Tag.map.rawValue + 1])
        }
    }
}
