import Foundation
import LogStoreCommandSupport
import LogStoreEngine

/// Turns attribute values into JSON for `dump`.
///
/// Plain mode (the default) gives the most readable JSON: dates as ISO-8601 strings (UTC,
/// millisecond precision), bytes as base64 strings, UUIDs as strings, maps as objects with
/// sorted keys. Typed mode (`--typed`) wraps the values JSON has no type for, so that nothing is
/// ambiguous or rounded: `{"$date": "...", "$seconds": <seconds since 2001-01-01>}`,
/// `{"$bytes": "<base64>"}`, `{"$uuid": "..."}`, and non-finite doubles as `{"$double": "NaN"}`.
struct AttributeJSON {
    var typed: Bool
    let dates: ISO8601DateFormatter

    init(typed: Bool) {
        self.typed = typed
        dates = ISO8601DateFormatter()
        dates.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        dates.timeZone = TimeZone(identifier: "UTC")
    }

    func json(_ v: AttributeValue) -> JSON {
        switch v {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int(let i): return .int(i)
        case .double(let d):
            if typed && !d.isFinite { return .object([("$double", .double(d))]) }
            return .double(d)
        case .string(let s): return .string(s)
        case .bytes(let b):
            let s = Data(b).base64EncodedString()
            return typed ? .object([("$bytes", .string(s))]) : .string(s)
        case .date(let d):
            let s = dates.string(from: d)
            return typed ? .object([("$date", .string(s)), ("$seconds", .double(d.timeIntervalSinceReferenceDate))]) : .string(s)
        case .uuid(let u):
            return typed ? .object([("$uuid", .string(u.uuidString))]) : .string(u.uuidString)
        case .array(let a): return .array(a.map(json))
        case .map(let m):
            return .object(m.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }.map { ($0, json(m[$0] ?? .null)) })
        }
    }
}

extension RecordKey {
    /// The key as text when it is printable UTF-8 (no control characters), else as lowercase hex;
    /// and which of the two it is (`"utf8"` or `"hex"`).
    var displayed: (text: String, encoding: String) {
        let bytes = self.bytes
        if let s = String(validating: bytes, as: UTF8.self),
            !s.unicodeScalars.contains(where: { $0.properties.generalCategory == .control || $0.properties.generalCategory == .format })
        {
            return (s, "utf8")
        }
        return (description, "hex")
    }
}

extension StoreIssue {
    /// `{"severity","kind","path","file","offset","message"}`.
    var json: JSON {
        .object([
            ("severity", .string(severity.rawValue)),
            ("kind", .string(kind.rawValue)),
            ("path", .string(path)),
            ("file", .string(path.split(separator: "/").last.map(String.init) ?? path)),
            ("offset", .optional(offset)),
            ("message", .string(message)),
        ])
    }

    /// `damage  frame        000002.log @ 4,096: checksum mismatch`.
    var line: String {
        let file = path.split(separator: "/").last.map(String.init) ?? path
        let at = offset.map { " @ \(Format.count($0))" } ?? ""
        return "\(Format.pad(severity.rawValue, 8))\(Format.pad(kind.rawValue, 14))\(file)\(at): \(message)"
    }
}

extension RecoveryReport.Drop {
    /// `{"path","offset","bytes","reason"}`.
    var json: JSON {
        .object([("path", .string(path)), ("offset", .uint(offset)), ("bytes", .uint(bytes)), ("reason", .string(reason))])
    }
}

extension AttributeJSON {
    /// Standard base64 with padding.
    static func base64(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }
}
