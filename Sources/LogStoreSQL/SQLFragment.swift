/// A value bound to a `?` of a SQL statement.
package enum SQLValue: Hashable, Sendable {
    case null
    case integer(Int64)
    case real(Double)
    /// UTF-8 text (may contain NUL bytes: bind it with its length).
    case text([UInt8])
    case blob([UInt8])
}

/// A piece of SQL and the values of its `?` placeholders, in order.
package struct SQLFragment: Hashable, Sendable, CustomStringConvertible {
    /// The SQL text.
    package var sql: String
    /// One value per `?` in ``sql``, in order.
    package var arguments: [SQLValue]

    package init(_ sql: String, _ arguments: [SQLValue] = []) {
        self.sql = sql
        self.arguments = arguments
    }

    /// The SQL with its arguments, for logs and tests.
    package var description: String { arguments.isEmpty ? sql : "\(sql) -- \(arguments)" }

    /// `lhs` followed by `rhs` (arguments in order).
    package static func + (lhs: SQLFragment, rhs: SQLFragment) -> SQLFragment {
        SQLFragment(lhs.sql + rhs.sql, lhs.arguments + rhs.arguments)
    }

    /// `sql` wrapped around this fragment: `prefix(self)suffix`.
    package func wrapped(_ prefix: String, _ suffix: String) -> SQLFragment {
        SQLFragment(prefix + sql + suffix, arguments)
    }
}

extension String {
    /// A SQL string literal: single quotes, doubled inside.
    package var sqlLiteral: String { quoted(by: UInt8(ascii: "'")) }
    /// A SQL identifier: double quotes, doubled inside.
    package var sqlIdentifier: String { quoted(by: UInt8(ascii: "\"")) }

    /// The string between two `quote`s (ASCII), each `quote` byte inside doubled (a quote that
    /// starts a grapheme cluster too). Builds queries on every call, so it avoids Foundation's
    /// `replacingOccurrences` (a bridged string search).
    func quoted(by quote: UInt8) -> String {
        let q = String(decoding: [quote], as: UTF8.self)
        guard utf8.contains(quote) else { return q + self + q }
        var bytes: [UInt8] = [quote]
        bytes.reserveCapacity(utf8.count + 8)
        for b in utf8 {
            bytes.append(b)
            if b == quote { bytes.append(b) }
        }
        bytes.append(quote)
        return String(decoding: bytes, as: UTF8.self)
    }
}
