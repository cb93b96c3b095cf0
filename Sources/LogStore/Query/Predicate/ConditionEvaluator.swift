import Foundation
import LogStoreEngine

/// Evaluates a ``QueryCondition`` on an item's stored bytes, without decoding the item.
///
/// Three answers: `true` and `false` are what `Predicate.evaluate` would return on the decoded
/// item (the semantics in ``QueryCondition``'s documentation); `nil` means "decode the item and
/// evaluate the Swift predicate": an ``QueryCondition/opaque`` part decided nothing, an attribute
/// has no known coding path, or the stored kinds are ones Swift would not compare that way (a
/// string where the predicate compares a number: decoding then reports the mismatch, as before).
///
/// Each attribute is looked up on the stored bytes at most once per item. A value type that
/// holds no state between items; one per request, on the request's thread.
struct ConditionEvaluator {
    let condition: QueryCondition
    /// Every distinct attribute path the condition reads, as UTF-8 bytes.
    let paths: [[String]: [[UInt8]]]

    init(_ condition: QueryCondition) {
        self.condition = condition
        var paths: [[String]: [[UInt8]]] = [:]
        func visit(_ c: QueryCondition) {
            switch c {
            case .comparison(let a, _, _), .oneOf(let a, _), .containsElement(let a, _):
                if let p = a.codingPath { paths[p] = p.map { Array($0.utf8) } }
            case .and(let cs), .or(let cs): cs.forEach(visit)
            case .not(let c): visit(c)
            case .constant, .opaque: break
            }
        }
        visit(condition)
        self.paths = paths
    }

    /// The condition's answer for the item stored as `bytes`. Throws `.corruption` for
    /// malformed bytes.
    func evaluate(_ bytes: ArraySlice<UInt8>) throws -> Bool? {
        try bytes.withUnsafeBytes { raw in
            var values: [[String]: AttributeValue] = [:]
            func stored(_ a: QueryAttribute) throws -> AttributeValue? {
                guard let p = a.codingPath, let utf8 = paths[p] else { return nil }
                if let v = values[p] { return v }
                let v = try AttributeValue.lookupAttribute(path: utf8, in: raw) ?? .null
                values[p] = v
                return v
            }
            func eval(_ c: QueryCondition) throws -> Bool? {
                switch c {
                case .constant(let b): return b
                case .opaque: return nil
                case .comparison(let a, let op, let v):
                    guard let s = try stored(a) else { return nil }
                    return Self.compare(s, op, v)
                case .oneOf(let a, let vs):
                    guard let s = try stored(a) else { return nil }
                    var sawUnknown = false
                    for v in vs {
                        switch Self.compare(s, .equal, v) {
                        case true?: return true
                        case nil: sawUnknown = true
                        case false?: continue
                        }
                    }
                    return sawUnknown ? nil : false
                case .containsElement(let a, let v):
                    guard let s = try stored(a), case .array(let elements) = s else { return nil }
                    var sawUnknown = false
                    for e in elements {
                        switch Self.compare(e, .equal, v) {
                        case true?: return true
                        case nil: sawUnknown = true
                        case false?: continue
                        }
                    }
                    return sawUnknown ? nil : false
                case .and(let cs):
                    var unknown = false
                    for c in cs {
                        switch try eval(c) {
                        case false?: return false
                        case nil: unknown = true
                        case true?: continue
                        }
                    }
                    return unknown ? nil : true
                case .or(let cs):
                    var unknown = false
                    for c in cs {
                        switch try eval(c) {
                        case true?: return true
                        case nil: unknown = true
                        case false?: continue
                        }
                    }
                    return unknown ? nil : false
                case .not(let c):
                    return try eval(c).map { !$0 }
                }
            }
            return try eval(condition)
        }
    }

    /// `stored op constant` with Swift's semantics on the decoded values; nil when Swift would not
    /// compare these kinds this way.
    static func compare(_ stored: AttributeValue, _ op: QueryComparison, _ constant: AttributeValue) -> Bool? {
        // nil: `== nil` / `!= nil`, and a nil stored value against a constant.
        switch (stored, constant) {
        case (.null, .null):
            switch op {
            case .equal: return true
            case .notEqual: return false
            default: return nil
            }
        case (_, .null):
            switch op {
            case .equal: return false
            case .notEqual: return true
            default: return nil
            }
        case (.null, _):
            return op == .notEqual
        default: break
        }
        let order: Int
        switch (stored, constant) {
        case (.int, .int), (.int, .double), (.double, .int), (.double, .double):
            if case .double(let d) = stored, d.isNaN { return op == .notEqual }
            if case .double(let d) = constant, d.isNaN { return op == .notEqual }
            order = AttributeValue.compareScalars(stored, constant)
        case (.string(let x), .string(let y)):
            order = x == y ? 0 : (x < y ? -1 : 1)
        case (.date(let x), .date(let y)):
            let a = x.timeIntervalSinceReferenceDate, b = y.timeIntervalSinceReferenceDate
            if a.isNaN || b.isNaN { return op == .notEqual }
            order = a == b ? 0 : (a < b ? -1 : 1)
        case (.bool, .bool), (.uuid, .uuid), (.bytes, .bytes):
            switch op {
            case .equal: return stored == constant
            case .notEqual: return stored != constant
            default: return nil
            }
        default:
            return nil
        }
        switch op {
        case .equal: return order == 0
        case .notEqual: return order != 0
        case .less: return order < 0
        case .lessOrEqual: return order <= 0
        case .greater: return order > 0
        case .greaterOrEqual: return order >= 0
        }
    }
}
