import Foundation
import LogStoreEngine

/// LogStore JSON: how the SQL backends store an item, as JSON text that the database's own JSON
/// functions read, and that transcodes exactly to and from the attribute grammar (Docs/SQLBackends.md,
/// "SQLite").
///
/// Plain JSON for what JSON holds exactly; a one-member object whose key starts with `$` for the
/// rest (the convention of MongoDB's Extended JSON):
///
///     null, true, false                 -> null, true, false
///     int      (Int64)                  -> integer literal: 42, -7
///     double   finite                   -> literal with a '.' or an exponent (shortest that reads
///                                          back exactly): 1.0, 0.1, 1e+300, -0.0
///     double   NaN, +-infinity          -> {"$double": "NaN" | "Infinity" | "-Infinity" | "0x<16 hex>"}
///                                          (hex: the bits of a NaN other than 0x7ff8000000000000)
///              PostgreSQL dialect:         finite: positional, never an exponent: 1e+300 -> 1000...0.0,
///                                          1e-7 -> 0.0000001; -0.0 -> {"$double": "-0.0"}
///     string   NFC (as Swift compares)  -> "text" (escapes: \" \\ \b \f \n \r \t \u00XX)
///     string   not NFC, or with a NUL   -> {"$string": "text"} (so a plain string is always NFC,
///                                          and SQL may compare it byte for byte; SQLite's JSON
///                                          functions cut a string at its first NUL)
///              PostgreSQL dialect:         with a NUL -> {"$utf8": "<base64 of the UTF-8 bytes>"}
///     bytes                             -> {"$bytes": "<base64>"}
///     date     finite                   -> {"$date": <seconds since 2001-01-01 as a double literal>}
///     date     non-finite               -> {"$date": "NaN" | "Infinity" | "-Infinity" | "0x<16 hex>"}
///              PostgreSQL dialect:         positional seconds; -0.0 -> {"$date": "-0.0"}
///     uuid                              -> {"$uuid": "E621E1F8-C36C-4951-B6B5-7A5F2B6A1C3F"}
///     array                             -> [ ... ]
///     map                               -> {"key": value, ...}, keys in ascending UTF-8 byte order;
///                                          a key that starts with "$" is written with one more "$"
///              PostgreSQL dialect:         a key with a NUL -> "$u:<base64 of its UTF-8>"
///
/// Transcoding is exact both ways: `decode(encode(v)) == v` byte for byte for every value of the
/// grammar (NaN payloads, -0.0, non-NFC strings included). Pure functions; any thread.
package enum LogStoreJSON {
    /// The JSON text of the attribute value that fills `value`. Throws `.corruption` when `value`
    /// is not one value of the grammar (or nests deeper than `AttributeValue.maxDepth`).
    ///
    /// `dialect` chooses the few forms that differ (see the mapping above): PostgreSQL's `jsonb`
    /// keeps a number's decimal digits but not an exponent's form nor a negative zero, and refuses
    /// NUL characters, so its reals are written positionally, -0.0 as `{"$double": "-0.0"}`, and
    /// strings holding a NUL as `{"$utf8": "<base64 of the UTF-8>"}`. ``decode(_:)`` reads both.
    package static func encode(_ value: UnsafeRawBufferPointer, dialect: SQLDialect = .sqlite) throws -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(value.count + value.count / 4 + 16)
        var r = Reader(value)
        do {
            try encodeValue(&r, into: &out, depth: 0, dialect: dialect)
            guard r.isAtEnd else { throw Failure("\(r.remaining) trailing bytes after the value", at: r.offset) }
        } catch let f as Failure {
            throw LogStoreError(.corruption, "Malformed attribute value: \(f.reason).", offset: UInt64(f.offset))
        }
        return out
    }

    /// See ``encode(_:dialect:)-(UnsafeRawBufferPointer,_)``.
    package static func encode(_ value: [UInt8], dialect: SQLDialect = .sqlite) throws -> [UInt8] {
        try value.withUnsafeBytes { try encode($0, dialect: dialect) }
    }

    /// The canonical attribute bytes of the LogStore JSON text `json`. Throws `.corruption`
    /// naming the offset when `json` is not LogStore JSON (not JSON, an unknown `$` object, a
    /// number out of range, invalid UTF-8, nesting deeper than `AttributeValue.maxDepth`,
    /// duplicate keys).
    package static func decode(_ json: UnsafeRawBufferPointer) throws -> [UInt8] {
        var out = _ByteWriter(capacity: json.count + 16)
        var p = Parser(json)
        do {
            p.skipSpace()
            try p.value(into: &out, depth: 0)
            p.skipSpace()
            guard p.isAtEnd else { throw Failure("unexpected text after the value", at: p.offset) }
        } catch let f as Failure {
            throw LogStoreError(.corruption, "Malformed LogStore JSON: \(f.reason).", offset: UInt64(f.offset))
        }
        return out.bytes
    }

    /// See ``decode(_:)-(UnsafeRawBufferPointer)``.
    package static func decode(_ json: [UInt8]) throws -> [UInt8] {
        try json.withUnsafeBytes { try decode($0) }
    }

    /// A decoding failure: what and where (an offset into the input).
    struct Failure: Error {
        var reason: String
        var offset: Int
        init(_ reason: String, at offset: Int) {
            self.reason = reason
            self.offset = offset
        }
    }

    // MARK: Shared pieces

    /// The text of a double that reads back as exactly the same double (Swift's shortest
    /// round-trip form), always with a '.' or an exponent so that JSON readers take it as real.
    static func doubleText(_ d: Double) -> String {
        var s = d.description
        if !s.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) { s += ".0" }
        return s
    }

    /// `"NaN"`, `"Infinity"`, `"-Infinity"`, or `"0x<16 hex digits>"` for a NaN other than the
    /// canonical quiet NaN; `"-0.0"` for negative zero (PostgreSQL dialect).
    static func specialText(_ d: Double) -> String {
        if d == 0 { return "-0.0" }
        if d == .infinity { return "Infinity" }
        if d == -.infinity { return "-Infinity" }
        if d.bitPattern == Double.nan.bitPattern { return "NaN" }
        let hex = String(d.bitPattern, radix: 16)
        return "0x" + String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The inverse of ``specialText(_:)``; nil for any other text.
    static func specialValue(_ text: String) -> Double? {
        switch text {
        case "-0.0": return -0.0
        case "NaN": return .nan
        case "Infinity": return .infinity
        case "-Infinity": return -.infinity
        default:
            guard text.utf8.count == 18, text.hasPrefix("0x"), let bits = UInt64(text.dropFirst(2), radix: 16) else { return nil }
            let d = Double(bitPattern: bits)
            return d.isFinite ? nil : d
        }
    }

    /// A finite `d` other than -0.0, written positionally with at least one digit
    /// after the point, from Swift's shortest round-trip digits: `1e+300` -> `1000...0.0`,
    /// `1.5e-07` -> `0.00000015`. PostgreSQL's `jsonb` keeps these digits as written, and they
    /// read back as exactly `d`.
    static func positionalText(_ d: Double) -> String {
        let s = d.description
        guard let e = s.firstIndex(where: { $0 == "e" || $0 == "E" }), let exponent = Int(s[s.index(after: e)...]) else {
            return doubleText(d)
        }
        var mantissa = s[..<e]
        let negative = mantissa.first == "-"
        if negative { mantissa = mantissa.dropFirst() }
        let point = mantissa.firstIndex(of: ".")
        let whole = point.map { mantissa[..<$0] } ?? mantissa
        let fraction = point.map { mantissa[mantissa.index(after: $0)...] } ?? ""
        var digits = String(whole + fraction)
        while digits.count > 1, digits.last == "0" { digits.removeLast() }
        let at = whole.count + exponent
        var out = negative ? "-" : ""
        if at <= 0 {
            out += "0." + String(repeating: "0", count: -at) + digits
        } else if at >= digits.count {
            out += digits + String(repeating: "0", count: at - digits.count) + ".0"
        } else {
            let i = digits.index(digits.startIndex, offsetBy: at)
            out += digits[..<i] + "." + digits[i...]
        }
        return out
    }

    /// Whether `utf8` is in NFC as Swift compares strings (`String._nfcCodeUnits`, the standard
    /// library's own normalization, so a plain JSON string compares byte for byte exactly as
    /// Swift compares it). Scalars below U+0300 (UTF-8 bytes below 0xCC) never change under NFC
    /// nor compose with what follows, so such strings need no check.
    static func isNFC(_ utf8: UnsafeRawBufferPointer, _ string: String) -> Bool {
        if !utf8.contains(where: { $0 >= 0xCC }) { return true }
        var i = 0
        var same = true
        string._withNFCCodeUnits { b in
            if i >= utf8.count || utf8[i] != b { same = false }
            i += 1
        }
        return same && i == utf8.count
    }
}
