package import Foundation
import LogStoreEngine

/// Turns a `#Predicate` into a ``QueryCondition`` by walking `Predicate.expression`.
///
/// Understood shapes (anything else becomes ``QueryCondition/opaque`` for that part only):
/// - `&&`, `||`, `!`; Boolean constants; a Boolean property on its own (`$0.isOpen`);
/// - `==`, `!=`, `<`, `<=`, `>`, `>=` between a stored property (at any depth:
///   `$0.address.city`) and a constant or captured value, either way round; `== nil`, `!= nil`;
/// - `$0.x!` (force unwrap) and `$0.x.flatMap { $0 > 3 } ?? false` (or `?? true`) on optionals;
/// - `[a, b].contains($0.x)` (one of) and `$0.tags.contains(a)` (array contains).
///
/// Constants are encoded with ``AttributeEncoder``, so they compare with stored values exactly as
/// the item's own encoding stores them (enums by raw value, dates exactly). Pure; any thread.
package enum PredicateAnalysis {
    /// The condition `predicate` expresses on items of `Item`.
    package static func condition<Item: DataStoreItem>(of predicate: Predicate<Item>) -> QueryCondition {
        let context = Context(resolve: { KeyPathResolver.codingPath(of: $0, in: Item.self) })
        return context.condition(predicate.expression)
    }

    /// One side of a comparison.
    enum Operand {
        /// A stored value: the item itself (nil key path) or a property of it.
        case attribute(AnyKeyPath?)
        case value(AttributeValue)
        case unknown
    }

    /// The state of one walk: how to resolve key paths, and what closure variables stand for.
    final class Context {
        let resolve: (AnyKeyPath) -> [String]?
        /// `flatMap` closure variables, bound to the unwrapped attribute they stand for.
        var bindings: [PredicateExpressions.VariableID: Operand] = [:]

        init(resolve: @escaping (AnyKeyPath) -> [String]?) { self.resolve = resolve }

        func condition(_ expression: Any) -> QueryCondition {
            (expression as? any ConditionExpression)?.queryCondition(self) ?? .opaque
        }

        func operand(_ expression: Any) -> Operand {
            (expression as? any OperandExpression)?.queryOperand(self) ?? .unknown
        }

        func attribute(_ keyPath: AnyKeyPath) -> QueryAttribute {
            QueryAttribute(keyPath: keyPath, codingPath: resolve(keyPath))
        }

        func value(_ v: Any) -> Operand {
            guard let e = v as? any Encodable, let a = try? AttributeEncoder().encode(e) else { return .unknown }
            return .value(a)
        }

        /// `lhs op rhs` with one side stored and the other constant.
        func compare(_ lhs: Any, _ op: QueryComparison, _ rhs: Any) -> QueryCondition {
            switch (operand(lhs), operand(rhs)) {
            case (.attribute(let k?), .value(let v)): return .comparison(attribute(k), op, v)
            case (.value(let v), .attribute(let k?)): return .comparison(attribute(k), op.swapped, v)
            default: return .opaque
            }
        }
    }
}

/// An expression that yields a Boolean the analysis understands.
protocol ConditionExpression {
    func queryCondition(_ context: PredicateAnalysis.Context) -> QueryCondition
}

/// An expression that yields a stored value or a constant.
protocol OperandExpression {
    func queryOperand(_ context: PredicateAnalysis.Context) -> PredicateAnalysis.Operand
}

/// An expression that yields an optional Boolean: the attribute it unwraps, and the condition on
/// the unwrapped value.
protocol OptionalConditionExpression {
    func queryOptionalCondition(_ context: PredicateAnalysis.Context) -> (attribute: AnyKeyPath, condition: QueryCondition)?
}

extension PredicateExpressions.Variable: OperandExpression {
    func queryOperand(_ context: PredicateAnalysis.Context) -> PredicateAnalysis.Operand {
        context.bindings[key] ?? .attribute(nil)
    }
}

extension PredicateExpressions.KeyPath: OperandExpression {
    func queryOperand(_ context: PredicateAnalysis.Context) -> PredicateAnalysis.Operand {
        guard case .attribute(let base) = context.operand(root) else { return .unknown }
        guard let base else { return .attribute(keyPath) }
        return base.appending(path: keyPath).map { .attribute($0) } ?? .unknown
    }
}

extension PredicateExpressions.KeyPath: ConditionExpression where Output == Bool {
    func queryCondition(_ context: PredicateAnalysis.Context) -> QueryCondition {
        guard case .attribute(let k?) = queryOperand(context) else { return .opaque }
        return .comparison(context.attribute(k), .equal, .bool(true))
    }
}

extension PredicateExpressions.Value: OperandExpression {
    func queryOperand(_ context: PredicateAnalysis.Context) -> PredicateAnalysis.Operand { context.value(value) }
}

extension PredicateExpressions.Value: ConditionExpression where Output == Bool {
    func queryCondition(_ context: PredicateAnalysis.Context) -> QueryCondition { .constant(value) }
}

extension PredicateExpressions.NilLiteral: OperandExpression {
    func queryOperand(_ context: PredicateAnalysis.Context) -> PredicateAnalysis.Operand { .value(.null) }
}

extension PredicateExpressions.ForcedUnwrap: OperandExpression {
    func queryOperand(_ context: PredicateAnalysis.Context) -> PredicateAnalysis.Operand { context.operand(inner) }
}

extension PredicateExpressions.Equal: ConditionExpression {
    func queryCondition(_ context: PredicateAnalysis.Context) -> QueryCondition { context.compare(lhs, .equal, rhs) }
}

extension PredicateExpressions.NotEqual: ConditionExpression {
    func queryCondition(_ context: PredicateAnalysis.Context) -> QueryCondition { context.compare(lhs, .notEqual, rhs) }
}

extension PredicateExpressions.Comparison: ConditionExpression {
    func queryCondition(_ context: PredicateAnalysis.Context) -> QueryCondition {
        let o: QueryComparison
        switch op {
        case .lessThan: o = .less
        case .lessThanOrEqual: o = .lessOrEqual
        case .greaterThan: o = .greater
        case .greaterThanOrEqual: o = .greaterOrEqual
        @unknown default: return .opaque
        }
        return context.compare(lhs, o, rhs)
    }
}

extension PredicateExpressions.Conjunction: ConditionExpression {
    func queryCondition(_ context: PredicateAnalysis.Context) -> QueryCondition {
        .all([context.condition(lhs), context.condition(rhs)])
    }
}

extension PredicateExpressions.Disjunction: ConditionExpression {
    func queryCondition(_ context: PredicateAnalysis.Context) -> QueryCondition {
        .any([context.condition(lhs), context.condition(rhs)])
    }
}

extension PredicateExpressions.Negation: ConditionExpression {
    func queryCondition(_ context: PredicateAnalysis.Context) -> QueryCondition {
        switch context.condition(wrapped) {
        case .constant(let b): return .constant(!b)
        case .opaque: return .opaque
        case .not(let c): return c
        case let c: return .not(c)
        }
    }
}

extension PredicateExpressions.OptionalFlatMap: OptionalConditionExpression {
    func queryOptionalCondition(_ context: PredicateAnalysis.Context) -> (attribute: AnyKeyPath, condition: QueryCondition)? {
        guard case .attribute(let k?) = context.operand(wrapped) else { return nil }
        context.bindings[variable.key] = .attribute(k)
        defer { context.bindings[variable.key] = nil }
        return (k, context.condition(transform))
    }
}

extension PredicateExpressions.NilCoalesce: ConditionExpression where Output == Bool {
    /// `optional.flatMap { condition } ?? fallback`: nil gives `fallback`.
    func queryCondition(_ context: PredicateAnalysis.Context) -> QueryCondition {
        guard let (k, c) = (lhs as? any OptionalConditionExpression)?.queryOptionalCondition(context),
            case .value(.bool(let fallback)) = context.operand(rhs)
        else { return .opaque }
        let attribute = context.attribute(k)
        return fallback
            ? .any([.comparison(attribute, .equal, .null), c])
            : .all([.comparison(attribute, .notEqual, .null), c])
    }
}

extension PredicateExpressions.SequenceContains: ConditionExpression {
    func queryCondition(_ context: PredicateAnalysis.Context) -> QueryCondition {
        switch (context.operand(sequence), context.operand(element)) {
        case (.value(.array(let values)), .attribute(let k?)): return .oneOf(context.attribute(k), values)
        case (.attribute(let k?), .value(let v)): return .containsElement(context.attribute(k), v)
        default: return .opaque
        }
    }
}
