import Foundation
import LogStoreEngine

// LogStore JSON -> attribute grammar (see LogStoreJSON for the mapping): a strict RFC 8259
// parser (no trailing commas, no comments, no NaN literals) that writes canonical attribute
// bytes as it goes. A map whose keys are plain and ASCII is written straight to the output and
// sorted there if its keys came in another order (`sortedObject`: LogStore's own writer sorts
// them by bytes, PostgreSQL's jsonb by length first); any other map (escaped or non-ASCII keys,
// `$` objects) takes the general path, which sorts keys and refuses duplicates and canonically
// equivalent ones. Strings without escapes are copied from the input after a UTF-8 check.

extension LogStoreJSON {
    struct Parser {
        let base: UnsafeRawBufferPointer
        var offset = 0
        init(_ base: UnsafeRawBufferPointer) { self.base = base }
        var isAtEnd: Bool { offset >= base.count }

        mutating func skipSpace() {
            while offset < base.count {
                switch base[offset] {
                case 0x20, 0x09, 0x0A, 0x0D: offset += 1
                default: return
                }
            }
        }

        func peek() throws -> UInt8 {
            guard offset < base.count else { throw Failure("unexpected end of JSON", at: offset) }
            return base[offset]
        }

        mutating func expect(_ byte: UInt8) throws {
            guard try peek() == byte else { throw Failure("expected '\(Character(UnicodeScalar(byte)))'", at: offset) }
            offset += 1
        }

        mutating func literal(_ word: String) throws {
            for b in word.utf8 { try expect(b) }
        }

        mutating func value(into out: inout _ByteWriter, depth: Int) throws {
            guard depth < AttributeValue.maxDepth else { throw Failure("value nested deeper than \(AttributeValue.maxDepth)", at: offset) }
            switch try peek() {
            case UInt8(ascii: "n"):
                try literal("null")
                out.u8(AttributeValue.Tag.null.rawValue)
            case UInt8(ascii: "t"):
                try literal("true")
                out.u8(AttributeValue.Tag.true.rawValue)
            case UInt8(ascii: "f"):
                try literal("false")
                out.u8(AttributeValue.Tag.false.rawValue)
            case UInt8(ascii: "\""):
                out.u8(AttributeValue.Tag.string.rawValue)
                try stringValue(into: &out)
            case UInt8(ascii: "["):
                offset += 1
                out.u8(AttributeValue.Tag.array.rawValue)
                let countAt = out.count
                out.u8(0)
                var count = 0
                skipSpace()
                if try peek() == UInt8(ascii: "]") {
                    offset += 1
                } else {
                    while true {
                        skipSpace()
                        try value(into: &out, depth: depth + 1)
                        count += 1
                        skipSpace()
                        if try peek() == UInt8(ascii: ",") {
                            offset += 1
                            continue
                        }
                        try expect(UInt8(ascii: "]"))
                        break
                    }
                }
                Self.patchCount(count, at: countAt, in: &out)
            case UInt8(ascii: "{"):
                try sortedObject(into: &out, depth: depth)
            default:
                try number(into: &out)
            }
        }

        /// Replaces the one-byte count placeholder at `at` by the uvarint of `count` (moving what
        /// follows when the count needs more than one byte).
        static func patchCount(_ count: Int, at: Int, in out: inout _ByteWriter) {
            if count < 0x80 {
                out.bytes[at] = UInt8(count)
                return
            }
            var v = _ByteWriter(capacity: 10)
            v.uvarint(UInt64(count))
            out.bytes.replaceSubrange(at..<at + 1, with: v.bytes)
        }

        /// A string value (the opening quote next), written as `uvarint-len utf8`: straight from
        /// the input when it has no escape (the common case), else unescaped first.
        mutating func stringValue(into out: inout _ByteWriter) throws {
            let start = offset
            var i = offset + 1
            while i < base.count {
                let b = base[i]
                if b == UInt8(ascii: "\"") { break }
                if b == UInt8(ascii: "\\") || b < 0x20 {
                    i = -1
                    break
                }
                i += 1
            }
            guard i > 0, i < base.count else {
                out.lengthPrefixed(try string())
                return
            }
            let raw = UnsafeRawBufferPointer(rebasing: base[(start + 1)..<i])
            guard Self.isValidUTF8(raw) else { throw Failure("string is not valid UTF-8", at: start) }
            out.lengthPrefixed(raw)
            offset = i + 1
        }

        /// A map whose keys are plain (no escapes), ASCII, and none of which starts with `$`
        /// (what LogStore's own writer gives for most items), written straight into `out`: in
        /// place when they come in ascending byte order (LogStore's writer, SQLite), else sorted
        /// once at the end by moving the members' bytes (PostgreSQL's `jsonb` hands keys out
        /// shortest first). ASCII keys are equal as Swift strings only when their bytes are, so a
        /// duplicate is two equal neighbours after the sort. At the first key that is anything
        /// else, the members read so far move to the general path
        /// (``objectMembers(into:depth:start:members:sorted:)``), which continues from that key:
        /// nothing is parsed twice (a retry from the object's start would re-parse every nested
        /// map once per level that fell back: 2^depth work).
        mutating func sortedObject(into out: inout _ByteWriter, depth: Int) throws {
            let start = offset
            let outStart = out.count
            offset += 1
            out.u8(AttributeValue.Tag.map.rawValue)
            let countAt = out.count
            out.u8(0)
            var count = 0
            var previous: Range<Int>? = nil
            var ascending = true
            // Each member's key in the input, and the member (key and value) and its value in `out`.
            var read: [(key: Range<Int>, member: Range<Int>, value: Range<Int>)] = []
            skipSpace()
            if try peek() == UInt8(ascii: "}") {
                offset += 1
                return
            }
            while true {
                skipSpace()
                guard try peek() == UInt8(ascii: "\"") else { throw Failure("expected a key", at: offset) }
                var i = offset + 1
                while i < base.count, base[i] != UInt8(ascii: "\""), base[i] != UInt8(ascii: "\\"), base[i] >= 0x20, base[i] < 0x80 {
                    i += 1
                }
                let key = (offset + 1)..<i
                let plain = i < base.count && base[i] == UInt8(ascii: "\"") && !(key.first.map { base[$0] == UInt8(ascii: "$") } ?? false)
                guard plain else {
                    // Not plain, or a `$` key: the general path takes over here.
                    let members = read.map { (key: Array(base[$0.key]), value: Array(out.bytes[$0.value])) }
                    out.bytes.removeSubrange(outStart...)
                    try objectMembers(into: &out, depth: depth, start: start, members: members, sorted: ascending)
                    return
                }
                if ascending, let previous, !base[previous].lexicographicallyPrecedes(base[key]) { ascending = false }
                previous = key
                offset = i + 1
                let memberStart = out.count
                out.lengthPrefixed(UnsafeRawBufferPointer(rebasing: base[key]))
                skipSpace()
                try expect(UInt8(ascii: ":"))
                skipSpace()
                let valueStart = out.count
                try value(into: &out, depth: depth + 1)
                read.append((key, memberStart..<out.count, valueStart..<out.count))
                count += 1
                skipSpace()
                if try peek() == UInt8(ascii: ",") {
                    offset += 1
                    continue
                }
                try expect(UInt8(ascii: "}"))
                break
            }
            if !ascending { try sortMembers(read, in: &out, objectStart: start) }
            Self.patchCount(count, at: countAt, in: &out)
        }

        /// Puts the members `read` (plain ASCII keys, written one after another at the end of
        /// `out`) in ascending byte order of their keys. Throws on a duplicate key.
        func sortMembers(_ read: [(key: Range<Int>, member: Range<Int>, value: Range<Int>)], in out: inout _ByteWriter, objectStart: Int)
            throws
        {
            let order = read.indices.sorted { base[read[$0].key].lexicographicallyPrecedes(base[read[$1].key]) }
            for (a, b) in zip(order, order.dropFirst()) where base[read[a].key].elementsEqual(base[read[b].key]) {
                throw Failure("duplicate key", at: objectStart)
            }
            guard let first = read.first?.member.lowerBound, let last = read.last?.member.upperBound else { return }
            var sorted: [UInt8] = []
            sorted.reserveCapacity(last - first)
            for i in order { sorted.append(contentsOf: out.bytes[read[i].member]) }
            out.bytes.replaceSubrange(first..<last, with: sorted)
        }

        /// Whether `b` is well-formed UTF-8 (no overlong forms, surrogates, or scalars past
        /// U+10FFFF), without making a String.
        static func isValidUTF8(_ b: UnsafeRawBufferPointer) -> Bool {
            var i = 0
            let n = b.count
            while i < n {
                let c = b[i]
                if c < 0x80 {
                    i += 1
                    continue
                }
                let need: Int
                var lo: UInt8 = 0x80
                var hi: UInt8 = 0xBF
                switch c {
                case 0xC2...0xDF: need = 1
                case 0xE0:
                    need = 2
                    lo = 0xA0
                case 0xE1...0xEC, 0xEE, 0xEF: need = 2
                case 0xED:
                    need = 2
                    hi = 0x9F
                case 0xF0:
                    need = 3
                    lo = 0x90
                case 0xF1...0xF3: need = 3
                case 0xF4:
                    need = 3
                    hi = 0x8F
                default: return false
                }
                guard i + need < n else { return false }
                let first = b[i + 1]
                guard first >= lo, first <= hi else { return false }
                for k in 2..<(need + 1) where !(0x80...0xBF).contains(b[i + k]) { return false }
                i += need + 1
            }
            return true
        }

        /// The members of a map, or one of the `$` objects, from the key at `offset` on: the
        /// general path. `members` are those already read (plain ASCII keys, in ascending order
        /// when `sorted`; values as attribute bytes); `start` is where the object began (for
        /// errors).
        mutating func objectMembers(
            into out: inout _ByteWriter, depth: Int, start: Int, members read: [(key: [UInt8], value: [UInt8])], sorted: Bool
        ) throws {
            var members = read
            var sorted = sorted
            while true {
                skipSpace()
                let keyAt = offset
                var key = try string()
                skipSpace()
                try expect(UInt8(ascii: ":"))
                skipSpace()
                let encodedKey = key.starts(with: Self.encodedKeyPrefix)
                if members.isEmpty, !encodedKey, key.first == UInt8(ascii: "$"), key.count < 2 || key[1] != UInt8(ascii: "$") {
                    try special(String(decoding: key, as: UTF8.self), at: keyAt, into: &out)
                    skipSpace()
                    try expect(UInt8(ascii: "}"))
                    return
                }
                if encodedKey {
                    guard let data = Data(base64Encoded: String(decoding: key.dropFirst(Self.encodedKeyPrefix.count), as: UTF8.self)),
                        String(validating: data, as: UTF8.self) != nil
                    else { throw Failure("bad $u: key (not base64 of UTF-8)", at: keyAt) }
                    key = Array(data)
                } else if key.first == UInt8(ascii: "$") {
                    guard key.count >= 2, key[1] == UInt8(ascii: "$") else {
                        throw Failure("a key starting with \"$\" is written with \"$$\" in a map", at: keyAt)
                    }
                    key.removeFirst()
                }
                var v = _ByteWriter(capacity: 32)
                try value(into: &v, depth: depth + 1)
                if let last = members.last {
                    if last.key == key { throw Failure("duplicate key", at: keyAt) }
                    if !last.key.lexicographicallyPrecedes(key) { sorted = false }
                }
                members.append((key, v.bytes))
                skipSpace()
                if try peek() == UInt8(ascii: ",") {
                    offset += 1
                    continue
                }
                try expect(UInt8(ascii: "}"))
                break
            }
            if !sorted {
                members.sort { $0.key.lexicographicallyPrecedes($1.key) }
                for i in members.indices.dropFirst() where members[i - 1].key == members[i].key {
                    throw Failure("duplicate key", at: start)
                }
            }
            // Keys equal as Swift strings but different in bytes (NFC and NFD) cannot share a map.
            if members.contains(where: { $0.key.contains { $0 >= 0x80 } }) {
                var seen = Set<String>()
                for m in members where !seen.insert(String(decoding: m.key, as: UTF8.self)).inserted {
                    throw Failure("two keys are equal as Swift strings (composed and decomposed forms)", at: start)
                }
            }
            out.u8(AttributeValue.Tag.map.rawValue)
            out.uvarint(UInt64(members.count))
            for m in members {
                out.lengthPrefixed(m.key)
                out.append(contentsOf: m.value)
            }
        }

        /// `$u:`: a map key given as the base64 of its UTF-8 (PostgreSQL dialect, for keys with a
        /// NUL, which jsonb cannot hold).
        static let encodedKeyPrefix = Array("$u:".utf8)

        /// The body of `{"$kind": ...}`.
        mutating func special(_ kind: String, at keyAt: Int, into out: inout _ByteWriter) throws {
            let at = offset
            switch kind {
            case "$double":
                guard let d = specialValue(String(decoding: try string(), as: UTF8.self)) else { throw Failure("bad $double", at: at) }
                out.u8(AttributeValue.Tag.double.rawValue)
                out.f64(d)
            case "$date":
                let d: Double
                if try peek() == UInt8(ascii: "\"") {
                    guard let n = specialValue(String(decoding: try string(), as: UTF8.self)) else { throw Failure("bad $date", at: at) }
                    d = n
                } else {
                    d = try double()
                }
                out.u8(AttributeValue.Tag.date.rawValue)
                out.f64(d)
            case "$uuid":
                guard let u = UUID(uuidString: String(decoding: try string(), as: UTF8.self)) else { throw Failure("bad $uuid", at: at) }
                out.u8(AttributeValue.Tag.uuid.rawValue)
                withUnsafeBytes(of: u.uuid) { out.append(contentsOf: $0) }
            case "$bytes":
                guard let data = Data(base64Encoded: String(decoding: try string(), as: UTF8.self)) else {
                    throw Failure("bad $bytes (not base64)", at: at)
                }
                out.u8(AttributeValue.Tag.bytes.rawValue)
                out.lengthPrefixed(data)
            case "$string":
                let s = try string()
                out.u8(AttributeValue.Tag.string.rawValue)
                out.lengthPrefixed(s)
            case "$utf8":
                guard let data = Data(base64Encoded: String(decoding: try string(), as: UTF8.self)) else {
                    throw Failure("bad $utf8 (not base64)", at: at)
                }
                guard String(validating: data, as: UTF8.self) != nil else { throw Failure("bad $utf8 (not UTF-8)", at: at) }
                out.u8(AttributeValue.Tag.string.rawValue)
                out.lengthPrefixed(data)
            default:
                throw Failure("unknown LogStore JSON object \(kind)", at: keyAt)
            }
        }

        /// A JSON string's UTF-8 bytes, unescaped; invalid UTF-8 and lone surrogates are refused.
        mutating func string() throws -> [UInt8] {
            let start = offset
            try expect(UInt8(ascii: "\""))
            var out: [UInt8] = []
            var run = offset
            var escaped = false
            while true {
                guard offset < base.count else { throw Failure("unterminated string", at: start) }
                let b = base[offset]
                if b == UInt8(ascii: "\"") { break }
                if b < 0x20 { throw Failure("control character in a string", at: offset) }
                if b != UInt8(ascii: "\\") {
                    offset += 1
                    continue
                }
                escaped = true
                out.append(contentsOf: base[run..<offset])
                offset += 1
                let e = try peek()
                offset += 1
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800..<0xDC00).contains(scalar) {
                        guard offset + 1 < base.count, base[offset] == UInt8(ascii: "\\"), base[offset + 1] == UInt8(ascii: "u") else {
                            throw Failure("lone surrogate", at: offset)
                        }
                        offset += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw Failure("lone surrogate", at: offset) }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00..<0xE000).contains(scalar) {
                        throw Failure("lone surrogate", at: offset)
                    }
                    guard let u = Unicode.Scalar(scalar) else { throw Failure("bad \\u escape", at: offset) }
                    out.append(contentsOf: String(Character(u)).utf8)
                default:
                    throw Failure("bad escape", at: offset - 1)
                }
                run = offset
            }
            let raw = UnsafeRawBufferPointer(rebasing: base[(escaped ? run : start + 1)..<offset])
            offset += 1
            if escaped {
                out.append(contentsOf: raw)
            } else {
                out = Array(raw)
            }
            guard String(validating: out, as: UTF8.self) != nil else { throw Failure("string is not valid UTF-8", at: start) }
            return out
        }

        mutating func hex4() throws -> UInt32 {
            var v: UInt32 = 0
            for _ in 0..<4 {
                let b = try peek()
                offset += 1
                let d: UInt8
                switch b {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): d = b - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): d = b - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): d = b - UInt8(ascii: "A") + 10
                default: throw Failure("bad \\u escape", at: offset - 1)
                }
                v = v << 4 | UInt32(d)
            }
            return v
        }

        /// The extent of a JSON number and whether it has a fraction or an exponent.
        mutating func numberText() throws -> (UnsafeRawBufferPointer, isReal: Bool) {
            let start = offset
            var isReal = false
            if try peek() == UInt8(ascii: "-") { offset += 1 }
            func digits() throws -> Int {
                let from = offset
                while offset < base.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(base[offset]) { offset += 1 }
                return offset - from
            }
            let intStart = offset
            let n = try digits()
            guard n > 0 else { throw Failure("expected a value", at: start) }
            if n > 1 && base[intStart] == UInt8(ascii: "0") { throw Failure("leading zero in a number", at: intStart) }
            if offset < base.count, base[offset] == UInt8(ascii: ".") {
                offset += 1
                isReal = true
                guard try digits() > 0 else { throw Failure("expected digits after '.'", at: offset) }
            }
            if offset < base.count, base[offset] == UInt8(ascii: "e") || base[offset] == UInt8(ascii: "E") {
                offset += 1
                isReal = true
                if offset < base.count, base[offset] == UInt8(ascii: "+") || base[offset] == UInt8(ascii: "-") { offset += 1 }
                guard try digits() > 0 else { throw Failure("expected digits in an exponent", at: offset) }
            }
            return (UnsafeRawBufferPointer(rebasing: base[start..<offset]), isReal)
        }

        mutating func number(into out: inout _ByteWriter) throws {
            let start = offset
            let (text, isReal) = try numberText()
            if isReal {
                guard let d = Double(String(decoding: text, as: UTF8.self)), d.isFinite else {
                    throw Failure("number out of range", at: start)
                }
                out.u8(AttributeValue.Tag.double.rawValue)
                out.f64(d)
                return
            }
            let negative = text.first == UInt8(ascii: "-")
            var magnitude: UInt64 = 0
            for b in text.dropFirst(negative ? 1 : 0) {
                let (m, o1) = magnitude.multipliedReportingOverflow(by: 10)
                let (s, o2) = m.addingReportingOverflow(UInt64(b - UInt8(ascii: "0")))
                guard !o1, !o2 else { throw Failure("integer out of the Int64 range", at: start) }
                magnitude = s
            }
            let i: Int64
            if negative {
                guard magnitude <= UInt64(Int64.max) + 1 else { throw Failure("integer out of the Int64 range", at: start) }
                i = magnitude == UInt64(Int64.max) + 1 ? .min : -Int64(magnitude)
            } else {
                guard magnitude <= UInt64(Int64.max) else { throw Failure("integer out of the Int64 range", at: start) }
                i = Int64(magnitude)
            }
            out.u8(AttributeValue.Tag.int.rawValue)
            out.uvarint(UInt64(bitPattern: (i << 1) ^ (i >> 63)))
        }

        mutating func double() throws -> Double {
            let start = offset
            let (text, _) = try numberText()
            guard let d = Double(String(decoding: text, as: UTF8.self)), d.isFinite else { throw Failure("number out of range", at: start) }
            return d
        }
    }
}
