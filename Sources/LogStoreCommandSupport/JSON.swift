import Foundation

/// A JSON value with ordered object members, rendered compactly and deterministically (the tool's
/// `--json` output; shapes in Docs/CLI.md). Non-finite doubles, which JSON cannot express, are
/// rendered as the strings `"NaN"`, `"Infinity"`, `"-Infinity"`.
package enum JSON: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case uint(UInt64)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([(String, JSON)])

    package static func == (a: JSON, b: JSON) -> Bool { a.rendered == b.rendered }

    package static func optional(_ v: UInt64?) -> JSON { v.map { .uint($0) } ?? .null }
    package static func integer<I: BinaryInteger>(_ v: I) -> JSON { .int(Int64(v)) }

    package var rendered: String {
        var s = ""
        render(into: &s)
        return s
    }

    package func render(into s: inout String) {
        switch self {
        case .null: s += "null"
        case .bool(let b): s += b ? "true" : "false"
        case .int(let i): s += String(i)
        case .uint(let u): s += String(u)
        case .double(let d):
            if d.isNaN {
                s += "\"NaN\""
            } else if d.isInfinite {
                s += d < 0 ? "\"-Infinity\"" : "\"Infinity\""
            } else {
                s += "\(d)"
            }
        case .string(let str): Self.quote(str, into: &s)
        case .array(let a):
            s += "["
            for (i, v) in a.enumerated() {
                if i > 0 { s += "," }
                v.render(into: &s)
            }
            s += "]"
        case .object(let members):
            s += "{"
            for (i, (k, v)) in members.enumerated() {
                if i > 0 { s += "," }
                Self.quote(k, into: &s)
                s += ":"
                v.render(into: &s)
            }
            s += "}"
        }
    }

    package static func quote(_ str: String, into s: inout String) {
        s += "\""
        for u in str.unicodeScalars {
            switch u {
            case "\"": s += "\\\""
            case "\\": s += "\\\\"
            case "\n": s += "\\n"
            case "\r": s += "\\r"
            case "\t": s += "\\t"
            case _ where u.value < 0x20 || u.value == 0x7F || u.value == 0x2028 || u.value == 0x2029:
                let hex = String(u.value, radix: 16)
                s += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: s.unicodeScalars.append(u)
            }
        }
        s += "\""
    }
}
