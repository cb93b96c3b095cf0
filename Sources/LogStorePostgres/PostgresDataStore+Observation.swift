import Dispatch
import Foundation
import LogStore
import LogStoreEngine
import LogStoreSQL
import PostgresNIO
import Synchronization

// PostgresDataStore as a provider of the change feed that observation and change tracking read
// (DataStoreChangeFeed's rules) without LISTEN/NOTIFY, which CockroachDB and YugabyteDB do not all
// offer: every changing commit, on any server, writes what it changed to `logstore_commits` in
// its own transaction, numbered by `logstore_sequence`; each store publishes those entries in
// order (its own from memory, the others' polled while something observes it), and every
// snapshot observation reads publishes what it includes first.

/// A committed state of the store for observation and `changes(since:)`: a pooled connection in a
/// read-only REPEATABLE READ transaction, held until the snapshot is released (then rolled back
/// and given back, without blocking). Taking it publishes every commit it includes (rule 1 of
/// `DataStoreSnapshot`). `read` calls are serialized on the connection.
final class PostgresStateSnapshot: DataStoreSnapshot, Sendable {
    let session: PostgresSession
    let connection: PostgresConnection
    let statements: PostgresStatements
    let sequence: UInt64
    /// Serializes the users of the connection.
    let busy = Mutex(())

    /// Takes a snapshot of the store now and publishes the commits up to it. Throws
    /// `.serverUnavailable`, `.notOpen`, and what reading the commit log throws.
    init(session: PostgresSession) throws {
        try PostgresConnectionPool.checkNotOnEventLoop()
        self.session = session
        connection = try session.pool.leaseForReading()
        statements = PostgresStatements(
            connection: connection, logger: session.configuration.logger, place: session.place,
            timeout: session.configuration.statementTimeout)
        do {
            sequence = UInt64(
                max(
                    0,
                    try statements.integers(SQLFragment("SELECT sequence FROM \(session.own(PostgresSchema.sequence)) WHERE id = 1")).first
                        ?? 0))
            let s = statements
            try session.publisher.publish(through: sequence, own: nil) { from, through in
                try Self.readLog(s, session: session, after: from, through: through)
            }
        } catch {
            connection.closeInBackground()
            session.pool.release(connection, reusable: false)
            throw error
        }
    }

    deinit { session.pool.releaseAfterReading(connection) }

    func read<T>(_ block: (any DataStoreReadAccessor) throws -> T) throws -> T {
        try busy.withLock { _ in
            let accessor = PostgresReadAccessor(statements: statements, session: session)
            defer { accessor.isValid = false }
            return try block(accessor)
        }
    }

    /// The keys of `itemType` that commits after `sequence` wrote (their `version` is newer) and
    /// this state holds. Any thread.
    func keys(ofType itemType: String, writtenAfter sequence: UInt64) throws -> [RecordKey]? {
        try busy.withLock { _ in
            guard let t = try session.table(for: itemType, statements) else { return [] }
            var binds = PostgresBindings()
            binds.append(Int64(clamping: sequence))
            return try statements.run(PostgresQuery(unsafeSQL: "SELECT id FROM \(t.sql) WHERE version > $1", binds: binds)).rows
                .map { try t.kind.key(from: $0.makeRandomAccess()[0]) }
        }
    }

    /// The commit log's entries with `from < sequence <= through`, in order (fewer when the log
    /// dropped some: the publisher then publishes a reset).
    static func readLog(_ s: PostgresStatements, session: PostgresSession, after from: UInt64, through: UInt64) throws -> [CommitChanges] {
        var binds = PostgresBindings()
        binds.append(Int64(clamping: from))
        binds.append(Int64(clamping: through))
        let rows = try s.run(
            PostgresQuery(
                unsafeSQL:
                    "SELECT sequence, changes FROM \(session.own(PostgresSchema.commits)) WHERE sequence > $1 AND sequence <= $2 ORDER BY sequence",
                binds: binds)
        ).rows
        return try rows.map { row in
            let r = row.makeRandomAccess()
            let sequence = try r[0].decode(Int64.self)
            guard var bytes = r[1].bytes else { throw LogStoreError(.corruption, "The commit log entry of commit #\(sequence) is NULL.") }
            return try bytes.readWithUnsafeReadableBytes { raw in
                (raw.count, try PostgresCommitLog.decode(raw, sequence: UInt64(sequence)))
            }
        }
    }
}

/// Looks for commits of other servers while something observes the store: every `interval`, one
/// query of `logstore_sequence`, and of the commit log when it moved. Idle (no query) while
/// nothing observes. Runs on a Dispatch queue of its own; ``stop()`` ends it.
final class PostgresPoller: Sendable {
    /// The timer (a Dispatch object, used through the mutex only to satisfy Sendable).
    let timer: Mutex<any DispatchSourceTimer>

    init(session: PostgresSession, interval: Duration) {
        let queue = DispatchQueue(label: "LogStorePostgres.poller")
        let timer = DispatchSource.makeTimerSource(queue: queue)
        let nanos = Int(clamping: interval.components.seconds * 1_000_000_000 + interval.components.attoseconds / 1_000_000_000)
        timer.schedule(deadline: .now() + .nanoseconds(nanos), repeating: .nanoseconds(max(1_000_000, nanos)))
        timer.setEventHandler { [weak session] in
            guard let session, session.publisher.isObserved else { return }
            _ = try? session.withConnection { s in
                let newest = UInt64(
                    max(
                        0,
                        try s.integers(SQLFragment("SELECT sequence FROM \(session.own(PostgresSchema.sequence)) WHERE id = 1")).first ?? 0)
                )
                guard newest > session.publisher.published else { return }
                try session.publisher.publish(through: newest, own: nil) { from, through in
                    try PostgresStateSnapshot.readLog(s, session: session, after: from, through: through)
                }
            }
        }
        timer.resume()
        self.timer = Mutex(timer)
    }

    func stop() { timer.withLock { $0.cancel() } }
}
