import Foundation
package import LogStore
package import LogStoreEngine

/// A request's condition (its `#Predicate`, analysed by LogStore's shared ``QueryCondition``, and
/// its attribute filter) translated to SQL over items stored as LogStore JSON.
///
/// The SQL gives, per row, a three-valued verdict: 1 (the item matches, exactly as
/// `Predicate.evaluate` would say), 0 (it does not), or NULL (SQL cannot tell: an opaque part of
/// the predicate, a value kind SQL cannot compare exactly, a real number too close to the
/// constant). A backend selects candidates with `verdict IS NOT 0` and decides the NULL ones in
/// Swift (`QueryExecutor.Matcher`), so it never answers differently from Swift. SQL's AND, OR
/// and NOT on NULL are exactly the three-valued logic of LogStore's `ConditionEvaluator`.
///
/// What SQL decides, and why it can be trusted there:
/// - nil (`== nil`, `!= nil`, and a missing or null value against any constant);
/// - integers exactly (an `Int64` against an integer, or against a double turned into the
///   equivalent integer bound, so no comparison goes through a rounded `Double`);
/// - reals (and dates, stored as seconds since 2001) only when they are farther from the constant
///   than 2^-40 of its magnitude: a database may parse a decimal literal a few units in the last
///   place away from the double it stands for (SQLite before 3.43 does), so rows in that band
///   are decided in Swift;
/// - strings byte for byte, because a plain JSON string is always NFC and the constant is
///   normalized the same way (Swift compares strings by canonical equivalence, which is byte
///   order of NFC); non-NFC strings are `{"$string": ...}` objects and are decided in Swift;
/// - Booleans, UUIDs (==, !=), array membership (`contains`) and `IN` lists element by element.
/// Everything else (bytes, arrays and maps as constants, key paths without a known coding path,
/// keys holding a `"` in SQLite) is left to Swift. The same translation serves every
/// ``SQLDialect``: only the phrasing of paths, kinds and truth values differs. Pure; any thread.
package struct SQLCondition: Sendable, CustomStringConvertible {
    /// The verdict expression: 1, 0 or NULL per row.
    package var verdict: SQLFragment
    /// Whether the verdict can never be NULL: then `WHERE verdict` is the exact answer and no row
    /// needs checking in Swift.
    package var isExact: Bool

    /// The SQL.
    package var description: String { "\(verdict)\(isExact ? "" : " (NULL: decided in Swift)")" }

    /// The translation of `condition` (nil: no predicate) and an attribute `filter` (nil: none)
    /// for items stored as LogStore JSON in column `column`, in `dialect`. nil when there is
    /// nothing to filter.
    package static func translate(
        _ condition: QueryCondition?, filter: (attribute: String, value: AttributeValue)?, column: String,
        dialect: SQLDialect = .sqlite
    ) -> SQLCondition? {
        let t = Translator(column: column, dialect: dialect)
        var parts: [Expr] = []
        if let filter { parts.append(t.filter(filter.attribute, filter.value)) }
        if let condition { parts.append(t.condition(condition)) }
        guard !parts.isEmpty else { return nil }
        let e = t.all(parts)
        return SQLCondition(verdict: e.fragment, isExact: e.exact)
    }
}

/// A three-valued SQL expression: its fragment, whether it is never NULL, and which constant it
/// is, if it is one (constants fold away in AND, OR and NOT).
struct Expr {
    var fragment: SQLFragment
    var exact: Bool
    var constant: Bool? = nil

    init(fragment: SQLFragment, exact: Bool, constant: Bool? = nil) {
        self.fragment = fragment
        self.exact = exact
        self.constant = constant
    }

    init(_ sql: String, _ arguments: [SQLValue] = [], exact: Bool = true) {
        self.init(fragment: SQLFragment(sql, arguments), exact: exact)
    }

    var isYes: Bool { constant == true }
    var isNo: Bool { constant == false }
}

/// Where a value is: a path in the item's JSON column, or an element of a JSON array being
/// walked. Gives the SQL for its kind, its value and its members, in its dialect.
package struct Subject {
    let dialect: SQLDialect
    /// 'null', 'true', 'false', 'integer', 'real', 'text', 'array', 'object'; SQL NULL if absent.
    var kind: String
    /// The value as a SQL number (in a branch where the kind is 'integer' or 'real').
    var number: String
    /// The value as SQL text, compared byte for byte (in a branch where the kind is 'text').
    var text: String
    /// The subject one map key deeper; nil when the key cannot be written in a path.
    var member: (String) -> Subject?
    /// The array's elements as a FROM item named by its argument (path subjects only): its rows'
    /// `value` column holds one element each.
    var elements: ((String) -> String)?

    /// The value at `keys` of the SQLite JSON `source` (a column, or an element's JSON text).
    /// `keys` are keys as the JSON text has them (see ``jsonKey(_:)``).
    static func path(_ source: String, _ keys: [String]) -> Subject? {
        SQLDialect.sqlite.path(source, keys)
    }

    /// `json_extract(column, '<path>')` for a coding path (a SQLite index column); nil when a
    /// key holds a `"`. The same expression as a path subject's value, so SQLite can match the two.
    package static func columnExpression(_ column: String, _ codingPath: [String]) -> String? {
        SQLDialect.sqlite.indexExpression(column, codingPath)
    }

    /// A map key of the attribute grammar as LogStore JSON writes it: one more "$" in front of a
    /// key that starts with "$" (the `$` objects' own keys are not map keys).
    static func jsonKey(_ key: String) -> String { key.hasPrefix("$") ? "$" + key : key }

    /// `CASE IFNULL(kind, 'null') WHEN ... END`: one branch per kind, `otherwise` for the rest.
    func byKind(_ branches: [(String, Expr)], otherwise: Expr) -> Expr {
        var f = SQLFragment("(CASE \(dialect == .sqlite ? "IFNULL" : "COALESCE")(\(kind), 'null')")
        var exact = otherwise.exact
        for (k, e) in branches {
            f.sql += " WHEN \(k.sqlLiteral) THEN "
            f = f + e.fragment
            exact = exact && e.exact
        }
        f.sql += " ELSE "
        f = f + otherwise.fragment
        f.sql += " END)"
        return Expr(fragment: f, exact: exact)
    }
}

struct Translator {
    let column: String
    let dialect: SQLDialect
    /// Aliases of nested array walks must differ.
    static let elementAlias = "logstore_e"

    var yes: Expr { Expr(fragment: SQLFragment(dialect.trueLiteral), exact: true, constant: true) }
    var no: Expr { Expr(fragment: SQLFragment(dialect.falseLiteral), exact: true, constant: false) }
    /// Typed in PostgreSQL, where a CASE whose branches are all NULL would otherwise be text.
    var unknown: Expr { Expr(fragment: SQLFragment(dialect == .sqlite ? "NULL" : "NULL::boolean"), exact: false) }

    func constant(_ b: Bool) -> Expr { b ? yes : no }

    func all(_ parts: [Expr]) -> Expr {
        var kept: [Expr] = []
        for p in parts {
            if p.isNo { return no }
            if !p.isYes { kept.append(p) }
        }
        if kept.isEmpty { return yes }
        if kept.count == 1 { return kept[0] }
        return join(kept, " AND ")
    }

    func any(_ parts: [Expr]) -> Expr {
        var kept: [Expr] = []
        for p in parts {
            if p.isYes { return yes }
            if !p.isNo { kept.append(p) }
        }
        if kept.isEmpty { return no }
        if kept.count == 1 { return kept[0] }
        return join(kept, " OR ")
    }

    func join(_ parts: [Expr], _ op: String) -> Expr {
        var f = SQLFragment("(")
        for (i, p) in parts.enumerated() {
            if i > 0 { f.sql += op }
            f = f + p.fragment
        }
        f.sql += ")"
        return Expr(fragment: f, exact: parts.allSatisfy(\.exact))
    }

    func negated(_ e: Expr) -> Expr {
        if e.isYes { return no }
        if e.isNo { return yes }
        return Expr(fragment: e.fragment.wrapped("(NOT ", ")"), exact: e.exact)
    }

    func condition(_ c: QueryCondition) -> Expr {
        switch c {
        case .constant(let b): return constant(b)
        case .opaque: return unknown
        case .and(let cs): return all(cs.map(condition))
        case .or(let cs): return any(cs.map(condition))
        case .not(let c): return negated(condition(c))
        case .comparison(let a, let op, let v):
            guard let s = subject(a) else { return unknown }
            return comparison(s, op, v)
        case .oneOf(let a, let vs):
            guard let s = subject(a) else { return unknown }
            return any(vs.map { comparison(s, .equal, $0) })
        case .containsElement(let a, let v):
            guard let s = subject(a), let elements = s.elements?(Self.elementAlias) else { return unknown }
            let e = dialect.element(Self.elementAlias)
            let test = comparison(e, .equal, v)
            if test.isNo { return s.byKind([("array", no)], otherwise: unknown) }
            var sure = SQLFragment("EXISTS (SELECT 1 FROM \(elements) WHERE ")
            sure = sure + test.fragment
            sure.sql += " \(dialect.isTrue))"
            var walk = Expr(fragment: sure, exact: true)
            if !test.exact {
                var maybe = SQLFragment("EXISTS (SELECT 1 FROM \(elements) WHERE ")
                maybe = maybe + test.fragment
                maybe.sql += " IS NULL)"
                var f = SQLFragment("(CASE WHEN ") + sure
                f.sql += " THEN \(dialect.trueLiteral) WHEN "
                f = f + maybe
                f.sql += " THEN NULL ELSE \(dialect.falseLiteral) END)"
                walk = Expr(fragment: f, exact: false)
            }
            // Swift's evaluator decides `contains` on arrays only; anything else is decoded.
            return s.byKind([("array", walk)], otherwise: unknown)
        }
    }

    func subject(_ a: QueryAttribute) -> Subject? {
        guard let path = a.codingPath, !path.isEmpty else { return nil }
        return dialect.path(column, path.map(Subject.jsonKey))
    }

    /// `stored op constant` with `ConditionEvaluator.compare`'s semantics.
    func comparison(_ s: Subject, _ op: QueryComparison, _ c: AttributeValue) -> Expr {
        // A nil stored value: `== nil` is true, `!= anything non-nil` is true, the rest false.
        let whenNull: Expr
        switch (c, op) {
        case (.null, .equal): whenNull = yes
        case (.null, .notEqual): whenNull = no
        case (.null, _): whenNull = unknown
        case (_, .notEqual): whenNull = yes
        default: whenNull = no
        }
        switch c {
        case .null:
            if op == .equal || op == .notEqual { return s.byKind([("null", whenNull)], otherwise: constant(op == .notEqual)) }
            return unknown
        case .bool(let b):
            guard op == .equal || op == .notEqual else { return s.byKind([("null", whenNull)], otherwise: unknown) }
            let same = constant(op == .equal)
            let other = constant(op == .notEqual)
            return s.byKind([("null", whenNull), ("true", b ? same : other), ("false", b ? other : same)], otherwise: unknown)
        case .int, .double:
            return number(s, op, c, whenNull: whenNull)
        case .string(let str):
            let nfc = Array(str._nfcCodeUnits)
            // PostgreSQL text parameters cannot hold NUL (and stored strings with one are `$utf8`
            // objects, decided in Swift).
            if dialect == .postgres && nfc.contains(0) { return s.byKind([("null", whenNull)], otherwise: unknown) }
            return s.byKind([("null", whenNull), ("text", Expr("(\(s.text) \(sqlOperator(op)) ?)", [.text(nfc)]))], otherwise: unknown)
        case .date(let d):
            let t = d.timeIntervalSinceReferenceDate
            guard t.isFinite, let member = s.member("$date") else { return s.byKind([("null", whenNull)], otherwise: unknown) }
            let real = approximate(member.number, op, t)
            return s.byKind(
                [("null", whenNull), ("object", member.byKind([("real", real), ("integer", real)], otherwise: unknown))], otherwise: unknown
            )
        case .uuid(let u):
            guard op == .equal || op == .notEqual, let member = s.member("$uuid") else {
                return s.byKind([("null", whenNull)], otherwise: unknown)
            }
            let test = Expr("(upper(\(member.text)) \(sqlOperator(op)) ?)", [.text(Array(u.uuidString.utf8))])
            return s.byKind([("null", whenNull), ("object", member.byKind([("text", test)], otherwise: unknown))], otherwise: unknown)
        case .bytes, .array, .map:
            return s.byKind([("null", whenNull)], otherwise: unknown)
        }
    }

    /// A number comparison: integers exactly, reals outside the uncertainty band.
    func number(_ s: Subject, _ op: QueryComparison, _ c: AttributeValue, whenNull: Expr) -> Expr {
        let constant: Double
        switch c {
        case .int(let i): constant = Double(i)
        case .double(let d): constant = d
        default: return unknown
        }
        if constant.isNaN {
            // NaN is unequal to every number and fails every ordering.
            let x = self.constant(op == .notEqual)
            return s.byKind([("null", x), ("integer", x), ("real", x)], otherwise: unknown)
        }
        return s.byKind(
            [("null", whenNull), ("integer", integer(s.number, op, c)), ("real", approximate(s.number, op, constant))], otherwise: unknown)
    }

    /// `Int64 value op c`, exact: an integer constant as is; a double turned into the integer
    /// bound that gives the same answer for every integer.
    func integer(_ value: String, _ op: QueryComparison, _ c: AttributeValue) -> Expr {
        let k: Int64
        var integral = true
        switch c {
        case .int(let i): k = i
        case .double(let d):
            if d >= 9_223_372_036_854_775_808.0 { return constant(op == .notEqual || op == .less || op == .lessOrEqual) }
            if d < -9_223_372_036_854_775_808.0 { return constant(op == .notEqual || op == .greater || op == .greaterOrEqual) }
            let f = d.rounded(.down)
            k = Int64(f)
            integral = f == d
        default: return unknown
        }
        let bound = [SQLValue.integer(k)]
        if integral { return Expr("(\(value) \(sqlOperator(op)) ?)", bound) }
        // c = k + fraction: x < c and x <= c mean x <= k; x > c and x >= c mean x > k.
        switch op {
        case .equal: return no
        case .notEqual: return yes
        case .less, .lessOrEqual: return Expr("(\(value) <= ?)", bound)
        case .greater, .greaterOrEqual: return Expr("(\(value) > ?)", bound)
        }
    }

    /// `real value op c` where the database's `value` may be a few units in the last place off
    /// the stored double: decided only outside `c ± max(|c| * 2^-40, 2^-1000)`.
    func approximate(_ value: String, _ op: QueryComparison, _ c: Double) -> Expr {
        if c.isInfinite {
            // A plain JSON real is finite.
            let above = c > 0
            switch op {
            case .equal: return no
            case .notEqual: return yes
            case .less, .lessOrEqual: return constant(above)
            case .greater, .greaterOrEqual: return constant(!above)
            }
        }
        let margin = Swift.max(Swift.abs(c) * 0x1p-40, 0x1p-1000)
        let lo = SQLValue.real(c - margin)
        let hi = SQLValue.real(c + margin)
        let below = "\(value) < ?"
        let over = "\(value) > ?"
        let t = dialect.trueLiteral
        let f = dialect.falseLiteral
        switch op {
        case .equal:
            return Expr("(CASE WHEN \(below) OR \(over) THEN \(f) END)", [lo, hi], exact: false)
        case .notEqual:
            return Expr("(CASE WHEN \(below) OR \(over) THEN \(t) END)", [lo, hi], exact: false)
        case .less, .lessOrEqual:
            return Expr("(CASE WHEN \(below) THEN \(t) WHEN \(over) THEN \(f) END)", [lo, hi], exact: false)
        case .greater, .greaterOrEqual:
            return Expr("(CASE WHEN \(over) THEN \(t) WHEN \(below) THEN \(f) END)", [hi, lo], exact: false)
        }
    }

    func sqlOperator(_ op: QueryComparison) -> String {
        switch op {
        case .equal: return "="
        case .notEqual: return "<>"
        case .less: return "<"
        case .lessOrEqual: return "<="
        case .greater: return ">"
        case .greaterOrEqual: return ">="
        }
    }

    /// An attribute filter (`setFilter(whereAttribute:equalsValue:)`): `AttributeValue.filterEquals`
    /// on the top-level attribute `attribute` (a missing attribute is null; numbers by value
    /// across integers and doubles; strings as Swift compares them; other values by `==`).
    func filter(_ attribute: String, _ wanted: AttributeValue) -> Expr {
        guard let s = dialect.path(column, [Subject.jsonKey(attribute)]) else { return unknown }
        switch wanted {
        case .null:
            return s.byKind([("null", yes)], otherwise: no)
        case .bool(let b):
            return s.byKind([(b ? "true" : "false", yes)], otherwise: no)
        case .int(let i):
            return s.byKind(
                [
                    ("integer", Expr("(\(s.number) = ?)", [.integer(i)])), ("real", approximate(s.number, .equal, Double(i))),
                    ("object", unknown),
                ],
                otherwise: no)
        case .double(let d):
            if d.isNaN { return no }
            if d.isInfinite { return s.byKind([("object", unknown)], otherwise: no) }
            return s.byKind(
                [("integer", integer(s.number, .equal, wanted)), ("real", approximate(s.number, .equal, d)), ("object", unknown)],
                otherwise: no)
        case .string(let str):
            let nfc = Array(str._nfcCodeUnits)
            if dialect == .postgres && nfc.contains(0) { return s.byKind([("text", no)], otherwise: unknown) }
            return s.byKind([("text", Expr("(\(s.text) = ?)", [.text(nfc)])), ("object", unknown)], otherwise: no)
        default:
            return s.byKind([("null", no)], otherwise: unknown)
        }
    }
}
