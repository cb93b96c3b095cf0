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
    /// The condition with each attribute replaced by its slot in ``paths`` (nil: no coding path,
    /// decided by decoding), so that evaluating an item hashes no path.
    indirect enum Compiled {
        case constant(Bool)
        case opaque
        case comparison(Int?, QueryComparison, AttributeValue)
        case oneOf(Int?, [AttributeValue])
        case containsElement(Int?, AttributeValue)
        case and([Compiled])
        case or([Compiled])
        case not(Compiled)
    }

    let condition: QueryCondition
    let compiled: Compiled
    /// Every distinct attribute path the condition reads, as UTF-8 bytes, by slot.
    let paths: [[[UInt8]]]

    init(_ condition: QueryCondition) {
        self.condition = condition
        var slots: [[String]: Int] = [:]
        var paths: [[[UInt8]]] = []
        func slot(_ a: QueryAttribute) -> Int? {
            guard let p = a.codingPath else { return nil }
            if let s = slots[p] { return s }
            slots[p] = paths.count
            paths.append(p.map { Array($0.utf8) })
            return paths.count - 1
        }
        func compile(_ c: QueryCondition) -> Compiled {
            switch c {
            case .constant(let b): return .constant(b)
            case .opaque: return .opaque
            case .comparison(let a, let op, let v): return .comparison(slot(a), op, v)
            case .oneOf(let a, let vs): return .oneOf(slot(a), vs)
            case .containsElement(let a, let v): return .containsElement(slot(a), v)
            case .and(let cs): return .and(cs.map(compile))
            case .or(let cs): return .or(cs.map(compile))
            case .not(let c): return .not(compile(c))
            }
        }
        compiled = compile(condition)
        self.paths = paths
    }

    /// The condition's answer for the item stored as `bytes`. Throws `.corruption` for
    /// malformed bytes.
    func evaluate(_ bytes: ArraySlice<UInt8>) throws -> Bool? {
        try bytes.withUnsafeBytes { raw in
            // Each slot's stored value, looked up on first use (nil: not yet).
            try withUnsafeTemporaryAllocation(of: AttributeValue?.self, capacity: Swift.max(paths.count, 1)) { values in
                values.initialize(repeating: nil)
                defer { values.deinitialize() }
                return try Self.eval(compiled, raw, paths, values)
            }
        }
    }

    static func eval(
        _ c: Compiled, _ raw: UnsafeRawBufferPointer, _ paths: [[[UInt8]]], _ values: UnsafeMutableBufferPointer<AttributeValue?>
    ) throws
        -> Bool?
    {
        func stored(_ slot: Int?) throws -> AttributeValue? {
            guard let slot else { return nil }
            if let v = values[slot] { return v }
            let v = try AttributeValue.lookupAttribute(path: paths[slot], in: raw) ?? .null
            values[slot] = v
            return v
        }
        switch c {
        case .constant(let b): return b
        case .opaque: return nil
        case .comparison(let a, let op, let v):
            guard let s = try stored(a) else { return nil }
            return compare(s, op, v)
        case .oneOf(let a, let vs):
            guard let s = try stored(a) else { return nil }
            return anyEqual(vs) { compare(s, .equal, $0) }
        case .containsElement(let a, let v):
            guard let s = try stored(a), case .array(let elements) = s else { return nil }
            return anyEqual(elements) { compare($0, .equal, v) }
        case .and(let cs):
            var unknown = false
            for c in cs {
                switch try eval(c, raw, paths, values) {
                case false?: return false
                case nil: unknown = true
                case true?: continue
                }
            }
            return unknown ? nil : true
        case .or(let cs):
            var unknown = false
            for c in cs {
                switch try eval(c, raw, paths, values) {
                case true?: return true
                case nil: unknown = true
                case false?: continue
                }
            }
            return unknown ? nil : false
        case .not(let c):
            return try eval(c, raw, paths, values).map { !$0 }
        }
    }

    /// Whether `equal` holds for one of `values`: true as soon as it does, nil if it could not
    /// tell for one and held for none, false otherwise.
    static func anyEqual(_ values: [AttributeValue], _ equal: (AttributeValue) -> Bool?) -> Bool? {
        var sawUnknown = false
        for v in values {
            switch equal(v) {
            case true?: return true
            case nil: sawUnknown = true
            case false?: continue
            }
        }
        return sawUnknown ? nil : false
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
            let a = x.timeIntervalSinceReferenceDate
            let b = y.timeIntervalSinceReferenceDate
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
