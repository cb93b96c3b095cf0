import Foundation

// Equality, hashing and printing of `AttributeValue`, written so that no nesting, however deep,
// recurses without a bound: an app can build a value thousands of levels deep in memory (the
// decoders refuse such bytes), and the synthesized implementations would recurse once per level.

extension AttributeValue {
    /// Structural equality (as the synthesized one: doubles by `==`, so `-0.0 == 0.0` and NaN is
    /// unequal to itself; strings by Swift's `==`). Iterative: any nesting compares without
    /// deep recursion. Any thread.
    public static func == (lhs: AttributeValue, rhs: AttributeValue) -> Bool {
        var pending: [(AttributeValue, AttributeValue)] = []
        var pair = (lhs, rhs)
        while true {
            switch pair {
            case (.null, .null): break
            case (.bool(let x), .bool(let y)): if x != y { return false }
            case (.int(let x), .int(let y)): if x != y { return false }
            case (.double(let x), .double(let y)): if !(x == y) { return false }
            case (.string(let x), .string(let y)): if x != y { return false }
            case (.bytes(let x), .bytes(let y)): if x != y { return false }
            case (.date(let x), .date(let y)): if x != y { return false }
            case (.uuid(let x), .uuid(let y)): if x != y { return false }
            case (.array(let x), .array(let y)):
                guard x.count == y.count else { return false }
                for i in x.indices { pending.append((x[i], y[i])) }
            case (.map(let x), .map(let y)):
                guard x.count == y.count else { return false }
                for (k, v) in x {
                    guard let w = y[k] else { return false }
                    pending.append((v, w))
                }
            default: return false
            }
            guard let next = pending.popLast() else { return true }
            pair = next
        }
    }

    /// Hashes the value consistently with ``==(_:_:)``. Looks at most ``maxDepth`` levels deep
    /// (deeper levels are not hashed; equal values still hash equally), so it recurses at most
    /// that far. Any thread.
    public func hash(into hasher: inout Hasher) {
        hash(into: &hasher, depth: 1)
    }

    private func hash(into hasher: inout Hasher, depth: Int) {
        switch self {
        case .null: hasher.combine(0 as UInt8)
        case .bool(let b):
            hasher.combine(1 as UInt8)
            hasher.combine(b)
        case .int(let i):
            hasher.combine(2 as UInt8)
            hasher.combine(i)
        case .double(let d):
            hasher.combine(3 as UInt8)
            hasher.combine(d)
        case .string(let s):
            hasher.combine(4 as UInt8)
            hasher.combine(s)
        case .bytes(let b):
            hasher.combine(5 as UInt8)
            hasher.combine(b)
        case .date(let d):
            hasher.combine(6 as UInt8)
            hasher.combine(d)
        case .uuid(let u):
            hasher.combine(7 as UInt8)
            hasher.combine(u)
        case .array(let a):
            hasher.combine(8 as UInt8)
            hasher.combine(a.count)
            guard depth < Self.maxDepth else { return }
            for e in a { e.hash(into: &hasher, depth: depth + 1) }
        case .map(let m):
            hasher.combine(9 as UInt8)
            hasher.combine(m.count)
            guard depth < Self.maxDepth else { return }
            // Order-independent, as dictionaries hash.
            var combined = 0
            for (k, v) in m {
                var h = Hasher()
                h.combine(k)
                v.hash(into: &h, depth: depth + 1)
                combined ^= h.finalize()
            }
            hasher.combine(combined)
        }
    }
}

extension AttributeValue: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// A compact, JSON-like rendering: `null`, `true`, `42`, `1.5`, `"text"`, `bytes(3)`,
    /// `date(…)`, the UUID string, `[1, 2]`, `["key": 1]` (keys in UTF-8 byte order). Levels
    /// deeper than ``maxDepth`` print as `…`, so printing never recurses further than that.
    public var description: String {
        var out = ""
        write(into: &out, depth: 1)
        return out
    }

    /// The same as ``description``.
    public var debugDescription: String { description }

    /// A mirror with no children (the ``description`` says everything), so `dump(_:)` and other
    /// reflection do not walk a deeply nested value level by level.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .enum) }

    private func write(into out: inout String, depth: Int) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .double(let d): out += "\(d)"
        case .string(let s): out += s.debugDescription
        case .bytes(let b): out += "bytes(\(b.count))"
        case .date(let d): out += "date(\(d.timeIntervalSinceReferenceDate))"
        case .uuid(let u): out += u.uuidString
        case .array(let a):
            guard depth < Self.maxDepth || a.isEmpty else {
                out += "[…]"
                return
            }
            out += "["
            for (i, e) in a.enumerated() {
                if i > 0 { out += ", " }
                e.write(into: &out, depth: depth + 1)
            }
            out += "]"
        case .map(let m):
            guard !m.isEmpty else {
                out += "[:]"
                return
            }
            guard depth < Self.maxDepth else {
                out += "[…]"
                return
            }
            out += "["
            for (i, k) in m.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }).enumerated() {
                if i > 0 { out += ", " }
                out += k.debugDescription + ": "
                m[k].unsafelyUnwrapped.write(into: &out, depth: depth + 1)
            }
            out += "]"
        }
    }
}
