import Dispatch
import Foundation
import LogStore
import LogStoreEngine
import LogStoreSQL
import Logging
import PostgresNIO
import Synchronization

/// Runs SQL on one leased connection and waits for the answer: the store's synchronous API over
/// postgres-nio's event-loop futures. Statements are written with `?` placeholders (as the shared
/// translation writes them), numbered `$1, $2...` here, outside quoted literals and identifiers;
/// the store's SQL never uses PostgreSQL's `?` operators. Used by one thread at a time (the
/// connection's leaseholder), never on an event loop.
struct PostgresStatements {
    let connection: PostgresConnection
    let logger: Logger
    /// The database, for errors (the URL without its password).
    let place: String
    /// For a read: the gate its first statement passes (it takes the snapshot).
    var gate: PostgresSnapshotGate? = nil
    /// How long a statement may run: the server cancels it then (`.statementTimeout`), and the
    /// connection is given up 5 s later if no answer came (`.serverUnavailable`).
    var timeout: Duration = .seconds(300)

    /// `sql` with its `?` placeholders numbered `$1...` (quoted text left alone). Walks UTF-8
    /// bytes (quotes and `?` are ASCII, so no multi-byte character is split): a query's SQL is
    /// renumbered on every call.
    static func numbered(_ sql: String) -> String {
        let question = UInt8(ascii: "?")
        guard sql.utf8.contains(question) else { return sql }
        var out: [UInt8] = []
        out.reserveCapacity(sql.utf8.count + 16)
        var n = 0
        var quote: UInt8? = nil
        for b in sql.utf8 {
            if let q = quote {
                if b == q { quote = nil }
                out.append(b)
            } else if b == UInt8(ascii: "'") || b == UInt8(ascii: "\"") {
                quote = b
                out.append(b)
            } else if b == question {
                n += 1
                out.append(UInt8(ascii: "$"))
                out.append(contentsOf: String(n).utf8)
            } else {
                out.append(b)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bindings of `arguments`: integers as `int8`, reals as `float8`, text as `text`, blobs
    /// as `bytea`.
    static func bindings(_ arguments: [SQLValue]) -> PostgresBindings {
        var b = PostgresBindings(capacity: arguments.count)
        for a in arguments {
            switch a {
            case .null: b.appendNull()
            case .integer(let i): b.append(i)
            case .real(let d): b.append(d)
            case .text(let t): b.append(String(decoding: t, as: UTF8.self))
            case .blob(let bytes): b.append(ByteBuffer(bytes: bytes))
            }
        }
        return b
    }

    /// Runs `fragment` and returns every row. Throws the mapped error (`duringCommit`: see
    /// `PostgresErrors.map`).
    @discardableResult
    func run(_ fragment: SQLFragment, duringCommit: Bool = false) throws -> PostgresQueryResult {
        try run(PostgresQuery(unsafeSQL: Self.numbered(fragment.sql), binds: Self.bindings(fragment.arguments)), duringCommit: duringCommit)
    }

    /// Runs `sql` (no placeholders) and returns every row.
    @discardableResult
    func run(_ sql: String, duringCommit: Bool = false) throws -> PostgresQueryResult {
        try run(PostgresQuery(unsafeSQL: sql), duringCommit: duringCommit)
    }

    /// Runs `query` (placeholders already `$n`) and returns every row.
    @discardableResult
    func run(_ query: PostgresQuery, duringCommit: Bool = false) throws -> PostgresQueryResult {
        if let gate, !gate.isFixed {
            return try gate.first { try execute(query, duringCommit: duringCommit) }
        }
        return try execute(query, duringCommit: duringCommit)
    }

    func execute(_ query: PostgresQuery, duringCommit: Bool) throws -> PostgresQueryResult {
        try wait(try start(query), duringCommit: duringCommit)
    }

    /// Sends `query` and returns the future of its result without waiting: statements sent one after another run in order on the server
    /// without a wait between them (pipelining). Throws `.serverUnavailable` when the connection
    /// is closed.
    func start(_ query: PostgresQuery) throws -> EventLoopFuture<PostgresQueryResult> {
        if connection.isClosed {
            throw LogStoreError(
                .serverUnavailable,
                "The connection to PostgreSQL is closed (the server ended it, or the network broke). Nothing of the current transaction was committed. Retry once the server is reachable.",
                path: place)
        }
        return connection.query(query, logger: logger)
    }

    /// The result of a statement ``start(_:)`` sent, waiting at most the timeout plus 5 s (the
    /// server cancels a statement at the timeout itself; the wait gives up later, for a server or
    /// network that stopped answering). Throws the mapped error (`duringCommit`: see
    /// `PostgresErrors.map`).
    func wait(_ future: EventLoopFuture<PostgresQueryResult>, duringCommit: Bool = false) throws -> PostgresQueryResult {
        do {
            return try Self.wait(for: future, connection: connection, timeout: timeout + .seconds(5))
        } catch {
            throw PostgresErrors.map(error, place: place, duringCommit: duringCommit)
        }
    }

    /// Runs `statement` and then COMMIT, sent together (one wait for both). Throws the
    /// statement's error (the transaction is then rolled back by the COMMIT), or COMMIT's
    /// (`.commitOutcomeUnknown` when the connection broke).
    func runThenCommit(_ statement: PostgresQuery) throws -> PostgresQueryResult {
        let first = try start(statement)
        let commit: EventLoopFuture<PostgresQueryResult>
        do {
            commit = try start("COMMIT")
        } catch {
            throw PostgresErrors.map(error, place: place, duringCommit: false)
        }
        let result: PostgresQueryResult
        do {
            result = try wait(first)
        } catch {
            _ = try? wait(commit)
            throw error
        }
        _ = try wait(commit, duringCommit: true)
        return result
    }

    /// The value of `future`, waiting at most `timeout`: then the connection is closed (a server
    /// or network that stopped answering) and the wait fails with `.serverUnavailable`.
    static func wait<T: Sendable>(for future: EventLoopFuture<T>, connection: PostgresConnection, timeout: Duration) throws -> T {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<Result<T, any Error>?>(nil)
        future.whenComplete { r in
            result.withLock { $0 = r }
            done.signal()
        }
        let nanos = Int(clamping: timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000)
        if done.wait(timeout: .now() + .nanoseconds(nanos)) == .timedOut {
            connection.closeInBackground()
            // Closing fails the statement; if even that does not come, give up on it.
            if done.wait(timeout: .now() + .seconds(5)) == .timedOut {
                throw LogStoreError(
                    .serverUnavailable,
                    "PostgreSQL did not answer a statement for \(timeout); the connection was closed. Nothing of the current transaction was committed unless it was COMMIT."
                )
            }
        }
        guard let r = result.withLock({ $0 }) else { throw LogStoreError(.serverUnavailable, "A statement ended without a result.") }
        return try r.get()
    }

    /// The integers of the first row of `fragment`'s result (0 for NULL; empty without a row).
    func integers(_ fragment: SQLFragment) throws -> [Int64] {
        let result = try run(fragment)
        guard let row = result.rows.first else { return [] }
        return row.map { cell in (try? cell.decode(Int64?.self)).flatMap { $0 } ?? 0 }
    }
}

/// A row of a query on an item table, for LogStoreSQL's shared query runner: the key column read
/// in the table's id type, the item's `jsonb`.
struct PostgresItemRow: SQLResultRow {
    let row: PostgresRandomAccessRow
    let kind: PostgresIDKind

    func key(_ column: Int32) throws -> RecordKey { try kind.key(from: row[Int(column)]) }

    func withJSON<T>(_ column: Int32, _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T {
        try PostgresJSONB.withText(row[Int(column)], body)
    }

    func verdict(_ column: Int32) -> Bool? {
        guard let b = row[Int(column)].bytes, let first = b.getInteger(at: b.readerIndex, as: UInt8.self) else { return nil }
        return first != 0
    }
}

/// Item queries of one accessor, for `SQLItemQuery`.
struct PostgresRows: SQLRowSource {
    let statements: PostgresStatements
    let kind: PostgresIDKind
    /// When set, each query's plan (`EXPLAIN`) is added to it before the query runs.
    var plans: PostgresPlans? = nil

    var dialect: SQLDialect { .postgres }

    func forEachRow(_ query: SQLFragment, _ body: (PostgresItemRow) throws -> Bool) throws {
        try plans?.explain(query, statements)
        for row in try statements.run(query).rows {
            if try !body(PostgresItemRow(row: row.makeRandomAccess(), kind: kind)) { return }
        }
    }

    func integers(_ query: SQLFragment) throws -> [Int64] {
        try plans?.explain(query, statements)
        return try statements.integers(query)
    }
}

/// The server's plans of the queries a request ran (`explain`), line by line. Used by one
/// thread.
final class PostgresPlans {
    var lines: [String] = []

    func explain(_ query: SQLFragment, _ statements: PostgresStatements) throws {
        for row in try statements.run(query.wrapped("EXPLAIN ", "")).rows {
            if let line = try? row.decode(String.self) { lines.append(line) }
        }
    }

    /// How the plans found the rows of `table`: through a declared index (its declared name),
    /// the primary key (id order), or a sequential scan.
    func access(_ table: PostgresTable) -> (DataStoreQueryPlan.Access, String?) {
        let prefix = PostgresIndexes.prefix(table)
        for line in lines {
            guard let range = line.range(of: "\"" + prefix) else { continue }
            let rest = line[range.upperBound...]
            // logstore:<table hash>:<definition hash>:<name>
            let name = rest.split(separator: ":", maxSplits: 1).dropFirst().first.map { String($0.prefix { $0 != "\"" }) } ?? String(rest)
            return (.index(name), name)
        }
        if lines.contains(where: { $0.contains("_pkey") }) { return (.idOrder, nil) }
        return (.scan, nil)
    }
}

/// `jsonb` on the wire: postgres-nio asks for results in binary, where a `jsonb` value is a version
/// byte (1) and the JSON text; parameters are sent as `text` and cast by the SQL.
enum PostgresJSONB {
    /// Calls `body` with the JSON text of a `jsonb` (or `json`, `text`) cell, without a copy.
    /// Throws `.corruption` for a NULL or a `jsonb` of an unknown version.
    static func withText<T>(_ cell: PostgresCell, _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T {
        guard let buffer = cell.bytes else {
            throw LogStoreError(.corruption, "An item's data column is NULL. Delete the row or restore the table from a backup.")
        }
        return try buffer.withUnsafeReadableBytes { raw in
            if cell.dataType == .jsonb && cell.format == .binary {
                guard raw.first == 1 else {
                    throw LogStoreError(
                        .corruption, "The server sent jsonb of version \(raw.first.map(String.init) ?? "none"); this build reads version 1."
                    )
                }
                return try body(UnsafeRawBufferPointer(rebasing: raw.dropFirst()))
            }
            return try body(raw)
        }
    }
}

extension PostgresConnection {
    /// Closes the connection without waiting for it (any thread, never blocks). The connection
    /// stays alive until it is closed (postgres-nio asserts that no open connection is freed).
    func closeInBackground() {
        let closing: EventLoopFuture<Void> = close()
        closing.whenComplete { _ in withExtendedLifetime(self) {} }
    }
}

/// The moment a read's snapshot is taken. PostgreSQL takes a transaction's snapshot at its first
/// statement, not at `BEGIN`; the contract says a read's snapshot is taken when the read starts.
/// The two differ only for commits between the two moments, and only those of this process can
/// be ordered after the read's start by its own block (a `writeSync` nested in the read, or a
/// write it waits for): before committing, a write fixes the snapshot of every read still
/// waiting for its first statement (``PostgresSession/fixPendingReads()``), with a statement of
/// its own when the read has not sent one. So a read costs no round trip for its snapshot.
/// Thread-safe: the lock serializes the read's first statement and a writer's fixing.
final class PostgresSnapshotGate: Sendable {
    let connection: PostgresConnection
    let logger: Logger
    let place: String
    let lock = NSLock()
    let fixed = Atomic<Bool>(false)

    init(connection: PostgresConnection, logger: Logger, place: String) {
        self.connection = connection
        self.logger = logger
        self.place = place
    }

    var isFixed: Bool { fixed.load(ordering: .acquiring) }

    /// Runs the read's first statement (which takes the snapshot), unless a writer fixed it first.
    func first<T>(_ statement: () throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        if fixed.load(ordering: .acquiring) { return try statement() }
        defer { fixed.store(true, ordering: .releasing) }
        return try statement()
    }

    /// Takes the snapshot now if the read has not (a writer, before it commits). A failure is
    /// left to the read's next statement, which fails the same way.
    func fix() {
        guard !isFixed else { return }
        lock.lock()
        defer { lock.unlock() }
        guard !fixed.load(ordering: .acquiring) else { return }
        _ = try? PostgresStatements.wait(for: connection.query("SELECT 1", logger: logger), connection: connection, timeout: .seconds(60))
        fixed.store(true, ordering: .releasing)
    }
}

/// LogStore JSON bytes sent as a `jsonb` parameter in the binary format (a version byte, 1, then
/// the text): no `String` is made of them, and arrays of them bind as `jsonb[]`.
struct PostgresJSONBParameter: PostgresNonThrowingEncodable, PostgresArrayEncodable {
    static var psqlType: PostgresDataType { .jsonb }
    static var psqlFormat: PostgresFormat { .binary }
    static var psqlArrayType: PostgresDataType { .jsonbArray }

    let json: [UInt8]

    func encode<JSONEncoder: PostgresJSONEncoder>(into byteBuffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        byteBuffer.writeInteger(UInt8(1))
        byteBuffer.writeBytes(json)
    }
}
