import Foundation
package import LogStoreEngine

/// A stored attribute a condition reads: the item's key path (what indexes are matched by) and,
/// when it could be found, the path of coding keys under which the item's Codable form stores it
/// (what conditions on encoded bytes, index extraction and SQL backends read).
///
/// `codingPath` is nil when ``KeyPathResolver`` could not tell where the property is stored (a
/// computed property, a type whose `init(from:)` rejects probe values); such an attribute is
/// evaluated on the decoded item only.
package struct QueryAttribute: Hashable, @unchecked Sendable {
    // @unchecked: `AnyKeyPath` is an immutable class whose instances are safe to share between
    // threads (the standard library marks `KeyPath` Sendable from Swift 6.1's language mode on).
    /// The key path from the item to the value, as written in the predicate; nil for an
    /// attribute named by its coding keys (``DataStoreRequest/setFilter(whereAttribute:equalsValue:)``).
    package var keyPath: AnyKeyPath?
    /// The coding keys leading to the stored value (`["address", "city"]`), or nil if unknown.
    package var codingPath: [String]?

    package init(keyPath: AnyKeyPath?, codingPath: [String]?) {
        self.keyPath = keyPath
        self.codingPath = codingPath
    }
}

/// How a ``QueryCondition/comparison(_:_:_:)`` compares the stored value with the constant.
package enum QueryComparison: String, Hashable, Sendable {
    case equal = "=="
    case notEqual = "!="
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="

    /// The operator with its operands swapped (`5 < x` is `x > 5`).
    var swapped: QueryComparison {
        switch self {
        case .equal, .notEqual: return self
        case .less: return .greater
        case .lessOrEqual: return .greaterOrEqual
        case .greater: return .less
        case .greaterOrEqual: return .lessOrEqual
        }
    }
}

/// What a request's `#Predicate` means, in terms a planner, an evaluator of encoded bytes and a
/// SQL translator can use: the one analysis of predicates every backend shares
/// (``PredicateAnalysis`` builds it).
///
/// Semantics are Swift's on the decoded item, so that any consumer that implements them gives the
/// answer `Predicate.evaluate` would:
/// - ``comparison(_:_:_:)`` with `.equal`/`.notEqual` and a `.null` constant tests for nil (a
///   missing attribute is nil). Otherwise a nil stored value is unequal to every constant and
///   fails every ordering comparison.
/// - Numbers compare by value across integers and doubles; NaN is unequal to everything (itself
///   included) and fails every ordering comparison. `-0.0 == 0.0`.
/// - Strings compare as Swift `String`s (canonical equivalence).
/// - ``oneOf(_:_:)`` is `values.contains(attribute)`; ``containsElement(_:_:)`` is
///   `attribute.contains(value)` for an array attribute.
/// - ``opaque`` is any part the analysis does not understand: only evaluating the Swift predicate
///   on the decoded item answers it. A consumer must never guess an opaque part's value.
package indirect enum QueryCondition: Hashable, Sendable {
    case constant(Bool)
    case comparison(QueryAttribute, QueryComparison, AttributeValue)
    case oneOf(QueryAttribute, [AttributeValue])
    case containsElement(QueryAttribute, AttributeValue)
    case and([QueryCondition])
    case or([QueryCondition])
    case not(QueryCondition)
    case opaque

    /// Whether any part is ``opaque`` or reads an attribute whose coding path is unknown: such a
    /// condition cannot be decided on stored bytes alone.
    package var needsDecodedItem: Bool {
        switch self {
        case .constant: return false
        case .comparison(let a, _, _), .oneOf(let a, _), .containsElement(let a, _): return a.codingPath == nil
        case .and(let cs), .or(let cs): return cs.contains { $0.needsDecodedItem }
        case .not(let c): return c.needsDecodedItem
        case .opaque: return true
        }
    }

    /// The conjuncts of a top-level conjunction (the condition itself otherwise), flattened.
    package var conjuncts: [QueryCondition] {
        switch self {
        case .and(let cs): return cs.flatMap(\.conjuncts)
        case .constant(true): return []
        default: return [self]
        }
    }

    /// `and` with nested conjunctions flattened, constants folded.
    static func all(_ parts: [QueryCondition]) -> QueryCondition {
        var out: [QueryCondition] = []
        for p in parts.flatMap(\.conjuncts) {
            if case .constant(false) = p { return .constant(false) }
            out.append(p)
        }
        return out.isEmpty ? .constant(true) : out.count == 1 ? out[0] : .and(out)
    }

    /// `or` with nested disjunctions flattened, constants folded.
    static func any(_ parts: [QueryCondition]) -> QueryCondition {
        var out: [QueryCondition] = []
        for p in parts {
            switch p {
            case .constant(true): return .constant(true)
            case .constant(false): continue
            case .or(let cs): out += cs
            default: out.append(p)
            }
        }
        return out.isEmpty ? .constant(false) : out.count == 1 ? out[0] : .or(out)
    }
}

extension QueryCondition: CustomStringConvertible {
    /// A readable form, used by `explain`: `rating >= 4 AND (cuisine IN ["thai", "lao"])`.
    package var description: String {
        func name(_ a: QueryAttribute) -> String {
            a.codingPath?.joined(separator: ".") ?? a.keyPath.map { "\($0)" } ?? "?"
        }
        switch self {
        case .constant(let b): return b ? "TRUE" : "FALSE"
        case .comparison(let a, let op, .null) where op == .equal: return "\(name(a)) == nil"
        case .comparison(let a, let op, .null) where op == .notEqual: return "\(name(a)) != nil"
        case .comparison(let a, let op, let v): return "\(name(a)) \(op.rawValue) \(v)"
        case .oneOf(let a, let vs): return "\(name(a)) IN [\(vs.map(\.description).joined(separator: ", "))]"
        case .containsElement(let a, let v): return "\(name(a)) CONTAINS \(v)"
        case .and(let cs): return cs.map { c in if case .or = c { return "(\(c))" } else { return "\(c)" } }.joined(separator: " AND ")
        case .or(let cs): return cs.map { c in if case .and = c { return "(\(c))" } else { return "\(c)" } }.joined(separator: " OR ")
        case .not(let c): return "NOT (\(c))"
        case .opaque: return "<evaluated on the decoded item>"
        }
    }
}
