/// The SQL a backend's database speaks where the SQL backends differ: how a value is found in a
/// stored item (SQLite's JSON functions over LogStore JSON text, PostgreSQL's `jsonb` operators),
/// how truth values are written, and how limits and counts are phrased. Everything else (the
/// translation of a `#Predicate`, the query plans) is written once over it. Pure; any thread.
package enum SQLDialect: Sendable {
    /// SQLite 3.38 or later: JSON functions over `TEXT`, truth values as the integers 1 and 0.
    case sqlite
    /// PostgreSQL 12 or later (and engines that speak its dialect): `jsonb`, `boolean` truth
    /// values, `COLLATE "C"` for byte order.
    case postgres

    /// The SQL of a true verdict.
    package var trueLiteral: String { self == .sqlite ? "1" : "TRUE" }
    /// The SQL of a false verdict.
    package var falseLiteral: String { self == .sqlite ? "0" : "FALSE" }
    /// `verdict IS <this>` holds for the rows SQL says match.
    package var isTrue: String { self == .sqlite ? "IS 1" : "IS TRUE" }
    /// `verdict IS <this>` holds for the rows SQL does not rule out (matching or undecided).
    package var isNotFalse: String { self == .sqlite ? "IS NOT 0" : "IS NOT FALSE" }

    /// ` LIMIT <limit> OFFSET <offset>` (no limit: every row after the offset).
    package func limit(_ limit: Int?, offset: Int) -> SQLFragment {
        switch self {
        case .sqlite: return SQLFragment(" LIMIT ? OFFSET ?", [.integer(limit.map(Int64.init) ?? -1), .integer(Int64(offset))])
        case .postgres:
            guard let limit else { return SQLFragment(" OFFSET ?", [.integer(Int64(offset))]) }
            return SQLFragment(" LIMIT ? OFFSET ?", [.integer(Int64(limit)), .integer(Int64(offset))])
        }
    }

    /// A query giving one row: how many rows of `from` (a table, and a WHERE clause) have a
    /// true `verdict`, and how many an undecided (NULL) one, computing the verdict once per row.
    package func countByVerdict(_ verdict: SQLFragment, from: SQLFragment) -> SQLFragment {
        switch self {
        case .sqlite:
            // The subquery's LIMIT keeps SQLite from flattening it into both sums: 16 % fewer
            // instructions than two FILTER clauses (Performance.md, "Measured choices").
            return SQLFragment("SELECT IFNULL(sum(v IS 1), 0), IFNULL(sum(v IS NULL), 0) FROM (SELECT ") + verdict
                + from.wrapped(" AS v FROM ", " LIMIT -1)")
        case .postgres:
            return SQLFragment("SELECT count(*) FILTER (WHERE v), count(*) FILTER (WHERE v IS NULL) FROM (SELECT ") + verdict
                + from.wrapped(" AS v FROM ", ") AS logstore_v")
        }
    }

    // MARK: Values in stored items

    /// The value at `keys` (keys as LogStore JSON writes them, see ``Subject/jsonKey(_:)``) of
    /// the stored item in column or expression `source`; nil when this dialect cannot name such
    /// a path (a key holding a `"` in SQLite's JSON paths).
    package func path(_ source: String, _ keys: [String]) -> Subject? {
        switch self {
        case .sqlite:
            var path = "$"
            for k in keys {
                guard !k.contains("\"") else { return nil }
                path += ".\"" + k + "\""
            }
            let p = path.sqlLiteral
            let value = "json_extract(\(source), \(p))"
            return Subject(
                dialect: self, kind: "json_type(\(source), \(p))", number: value, text: value,
                member: { m in SQLDialect.sqlite.path(source, keys + [m]) },
                elements: { alias in "json_each(\(source), \(p)) AS \(alias)" })
        case .postgres:
            // jsonb cannot hold NUL: LogStore JSON writes such keys escaped (`$u:`).
            guard !keys.contains(where: { $0.utf8.contains(0) }) else { return nil }
            let json = Self.postgresPath(source, keys)
            return Self.postgresSubject(
                json, member: { m in SQLDialect.postgres.path(source, keys + [m]) },
                elements: { alias in "jsonb_array_elements(\(json)) AS \(alias)(value)" })
        }
    }

    /// `source -> 'k1' -> 'k2'`: the `jsonb` value at `keys` (PostgreSQL), the expression of
    /// declared indexes and of every condition on the path.
    static func postgresPath(_ source: String, _ keys: [String]) -> String {
        keys.isEmpty ? source : "(" + ([source] + keys.map(\.sqlLiteral)).joined(separator: " -> ") + ")"
    }

    /// A subject over the `jsonb` expression `json` (PostgreSQL). Numbers are told apart by their
    /// text: LogStore JSON writes every real with a '.', every integer without (and `jsonb` keeps
    /// a number's digits as written).
    static func postgresSubject(
        _ json: String, member: @escaping (String) -> Subject?,
        elements: ((String) -> String)?
    ) -> Subject {
        let text = "(\(json) #>> '{}')"
        let kind =
            "(CASE jsonb_typeof(\(json)) WHEN 'number' THEN (CASE WHEN strpos(\(text), '.') > 0 THEN 'real' ELSE 'integer' END)"
            + " WHEN 'boolean' THEN \(text) WHEN 'string' THEN 'text' ELSE jsonb_typeof(\(json)) END)"
        return Subject(
            dialect: .postgres, kind: kind, number: "\(text)::numeric", text: "(\(text) COLLATE \"C\")", member: member, elements: elements)
    }

    /// The element `alias` of an array walk (``Subject/elements``).
    package func element(_ alias: String) -> Subject {
        switch self {
        case .sqlite:
            return Subject(
                dialect: self, kind: "\(alias).type", number: "\(alias).value", text: "\(alias).value",
                member: { m in
                    guard !m.contains("\"") else { return nil }
                    let p = ("$.\"" + m + "\"").sqlLiteral
                    let value = "json_extract(\(alias).value, \(p))"
                    return Subject(
                        dialect: .sqlite, kind: "json_type(\(alias).value, \(p))", number: value, text: value, member: { _ in nil },
                        elements: nil)
                },
                elements: nil)
        case .postgres:
            return Self.postgresSubject(
                "\(alias).value",
                member: { m in
                    Self.postgresSubject(Self.postgresPath("\(alias).value", [m]), member: { _ in nil }, elements: nil)
                }, elements: nil)
        }
    }

    /// The expression a declared index on `codingPath` indexes, in column `column`: the same
    /// expression the translation compares (SQLite), or the `jsonb` value with JSON null as SQL
    /// NULL (PostgreSQL: unique indexes treat SQL NULLs as distinct, as LogStore's own indexes
    /// never find nil values in conflict). nil when a key cannot be named.
    package func indexExpression(_ column: String, _ codingPath: [String]) -> String? {
        let keys = codingPath.map(Subject.jsonKey)
        switch self {
        case .sqlite: return path(column, keys)?.number
        case .postgres: return "(NULLIF(\(Self.postgresPath(column, keys)), 'null'::jsonb))"
        }
    }
}
