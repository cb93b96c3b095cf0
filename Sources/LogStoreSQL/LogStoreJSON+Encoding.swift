import Foundation
import LogStoreEngine

// Attribute grammar -> LogStore JSON (see LogStoreJSON for the mapping). The grammar, from
// Docs/FileFormat.md, "Values":
//
//     value  := tag:u8 body
//     body   := (null|false|true: empty) | int: zigzag-uvarint | double: f64le
//             | string: uvarint-len utf8 | bytes: uvarint-len bytes | date: f64le
//             | uuid: 16 bytes | array: uvarint-count value* | map: uvarint-count (string value)*

extension LogStoreJSON {
    /// A bounds-checked reader of the attribute grammar: every read may meet damaged bytes.
    struct Reader {
        let base: UnsafeRawBufferPointer
        var offset = 0
        init(_ base: UnsafeRawBufferPointer) { self.base = base }
        var remaining: Int { base.count - offset }
        var isAtEnd: Bool { offset >= base.count }

        mutating func u8() throws -> UInt8 {
            guard offset < base.count else { throw Failure("truncated", at: offset) }
            defer { offset += 1 }
            return base[offset]
        }

        mutating func uvarint() throws -> UInt64 {
            var result: UInt64 = 0
            var shift: UInt64 = 0
            let start = offset
            while true {
                let b = try u8()
                if shift == 63 && b > 1 { throw Failure("varint overflows 64 bits", at: start) }
                result |= UInt64(b & 0x7F) << shift
                if b & 0x80 == 0 { return result }
                shift += 7
                if shift > 63 { throw Failure("varint longer than 10 bytes", at: start) }
            }
        }

        mutating func length() throws -> Int {
            let start = offset
            let n = try uvarint()
            guard n <= UInt64(remaining) else { throw Failure("length \(n) exceeds the \(remaining) bytes left", at: start) }
            return Int(n)
        }

        mutating func bytes(_ n: Int) throws -> UnsafeRawBufferPointer {
            guard n >= 0, n <= remaining else { throw Failure("truncated: need \(n) bytes", at: offset) }
            defer { offset += n }
            return UnsafeRawBufferPointer(rebasing: base[offset..<offset + n])
        }

        mutating func f64() throws -> Double {
            let b = try bytes(8)
            return Double(bitPattern: UInt64(littleEndian: b.loadUnaligned(as: UInt64.self)))
        }

        /// A length-prefixed string: its bytes and, validated, its value.
        mutating func string() throws -> (UnsafeRawBufferPointer, String) {
            let at = offset
            let raw = try bytes(try length())
            guard let s = String(validating: raw, as: UTF8.self) else { throw Failure("string is not valid UTF-8", at: at) }
            return (raw, s)
        }
    }

    static func encodeValue(_ r: inout Reader, into out: inout [UInt8], depth: Int, dialect: SQLDialect) throws {
        guard depth < AttributeValue.maxDepth else { throw Failure("value nested deeper than \(AttributeValue.maxDepth)", at: r.offset) }
        let at = r.offset
        let tag = try r.u8()
        switch tag {
        case AttributeValue.Tag.null.rawValue: append("null", to: &out)
        case AttributeValue.Tag.false.rawValue: append("false", to: &out)
        case AttributeValue.Tag.true.rawValue: append("true", to: &out)
        case AttributeValue.Tag.int.rawValue:
            let z = try r.uvarint()
            append(String(Int64(bitPattern: (z >> 1) ^ (0 &- (z & 1)))), to: &out)
        case AttributeValue.Tag.double.rawValue:
            let d = try r.f64()
            if let text = numberText(d, dialect) {
                append(text, to: &out)
            } else {
                wrapped("$double", to: &out) { quote(specialText(d), into: &$0) }
            }
        case AttributeValue.Tag.string.rawValue:
            let (raw, s) = try r.string()
            if raw.contains(0) && dialect == .postgres {
                // jsonb refuses \u0000 anywhere.
                wrapped("$utf8", to: &out) { quote(Data(raw).base64EncodedString(), into: &$0) }
            } else if !raw.contains(0), isNFC(raw, s) {
                quote(raw, into: &out)
            } else {
                wrapped("$string", to: &out) { quote(raw, into: &$0) }
            }
        case AttributeValue.Tag.bytes.rawValue:
            let raw = try r.bytes(try r.length())
            wrapped("$bytes", to: &out) { quote(Data(raw).base64EncodedString(), into: &$0) }
        case AttributeValue.Tag.date.rawValue:
            let d = try r.f64()
            wrapped("$date", to: &out) { o in
                if let text = numberText(d, dialect) { append(text, to: &o) } else { quote(specialText(d), into: &o) }
            }
        case AttributeValue.Tag.uuid.rawValue:
            let b = try r.bytes(16)
            let u = UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
            wrapped("$uuid", to: &out) { quote(u.uuidString, into: &$0) }
        case AttributeValue.Tag.array.rawValue:
            let n = try r.length()
            out.append(UInt8(ascii: "["))
            for i in 0..<n {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                try encodeValue(&r, into: &out, depth: depth + 1, dialect: dialect)
            }
            out.append(UInt8(ascii: "]"))
        case AttributeValue.Tag.map.rawValue:
            let n = try r.length()
            out.append(UInt8(ascii: "{"))
            var previous: UnsafeRawBufferPointer? = nil
            for i in 0..<n {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                let keyAt = r.offset
                let (key, _) = try r.string()
                if let previous, !previous.lexicographicallyPrecedes(key) {
                    throw Failure("map keys are not in strictly ascending byte order", at: keyAt)
                }
                previous = key
                if dialect == .postgres && key.contains(0) {
                    // jsonb cannot hold NUL, in keys either.
                    quote("$u:" + Data(key).base64EncodedString(), into: &out)
                } else if key.first == UInt8(ascii: "$") {
                    out.append(UInt8(ascii: "\""))
                    out.append(UInt8(ascii: "$"))
                    escape(key, into: &out)
                    out.append(UInt8(ascii: "\""))
                } else {
                    quote(key, into: &out)
                }
                out.append(UInt8(ascii: ":"))
                try encodeValue(&r, into: &out, depth: depth + 1, dialect: dialect)
            }
            out.append(UInt8(ascii: "}"))
        default:
            throw Failure("unknown value tag 0x\(String(tag, radix: 16))", at: at)
        }
    }

    /// A double as a JSON number literal in `dialect`, or nil when it needs a `$` object: a
    /// non-finite value; -0.0 for PostgreSQL, whose `numeric` has no negative zero.
    static func numberText(_ d: Double, _ dialect: SQLDialect) -> String? {
        guard d.isFinite else { return nil }
        switch dialect {
        case .sqlite: return doubleText(d)
        case .postgres: return d == 0 && d.sign == .minus ? nil : positionalText(d)
        }
    }

    static func append(_ s: String, to out: inout [UInt8]) { out.append(contentsOf: s.utf8) }

    /// `{"<key>":<body>}`.
    static func wrapped(_ key: String, to out: inout [UInt8], _ body: (inout [UInt8]) -> Void) {
        out.append(UInt8(ascii: "{"))
        quote(key, into: &out)
        out.append(UInt8(ascii: ":"))
        body(&out)
        out.append(UInt8(ascii: "}"))
    }

    static func quote(_ s: String, into out: inout [UInt8]) {
        var s = s
        s.withUTF8 { quote(UnsafeRawBufferPointer($0), into: &out) }
    }

    static func quote(_ raw: UnsafeRawBufferPointer, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        escape(raw, into: &out)
        out.append(UInt8(ascii: "\""))
    }

    static let hexDigits = Array("0123456789abcdef".utf8)

    /// JSON string escaping: `"` and `\`, and control characters; every other byte as is.
    static func escape(_ raw: UnsafeRawBufferPointer, into out: inout [UInt8]) {
        var start = 0
        for (i, b) in raw.enumerated() where b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") {
            out.append(contentsOf: raw[start..<i])
            start = i + 1
            out.append(UInt8(ascii: "\\"))
            switch b {
            case UInt8(ascii: "\""): out.append(UInt8(ascii: "\""))
            case UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\"))
            case 0x0A: out.append(UInt8(ascii: "n"))
            case 0x0D: out.append(UInt8(ascii: "r"))
            case 0x09: out.append(UInt8(ascii: "t"))
            case 0x08: out.append(UInt8(ascii: "b"))
            case 0x0C: out.append(UInt8(ascii: "f"))
            default:
                out.append(contentsOf: "u00".utf8)
                out.append(hexDigits[Int(b >> 4)])
                out.append(hexDigits[Int(b & 0xF)])
            }
        }
        out.append(contentsOf: raw[start..<raw.count])
    }
}
