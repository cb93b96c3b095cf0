import Foundation
import LogStore
import LogStoreEngine
import LogStoreSQL
import Logging
import NIOPosix
import PostgresNIO

/// What a set-up `PostgresDataStore` runs on between `setup()` and `tearDown()`, as its store
/// shell's backend: the session (pool, schema, tables, commit numbering), the change feed and the
/// poller that publishes other servers' commits to it, the thread pool of the async twins, and the
/// process's writer.
///
/// Reads are read-only REPEATABLE READ transactions; writes are SERIALIZABLE transactions run
/// one at a time per process (``writer``) and again on a serialization failure. Thread-safe.
final class PostgresBackend: TransactionalBackend {
    /// The connection pool, schema and commit numbering of this opening.
    let session: PostgresSession
    /// See `DataStoreBackend.changeFeed`: this process's commits from memory, other servers'
    /// polled (``poller``) while something observes the store.
    let changeFeed: DataStoreChangeFeed
    /// Publishes other servers' commits while the store is observed.
    let poller: PostgresPoller
    /// Where the async twins block on the network, off the cooperative pool.
    let threads: NIOThreadPool
    /// One write transaction at a time in this process.
    let writer = NSLock()
    /// Which threads are inside read and write blocks (reentrancy checks).
    let marks = ThreadMarks()

    /// Connects to `configuration`'s server and checks (or creates) the store's schema and tables.
    /// Throws `.serverUnavailable`, `.permissionDenied`, `.notAStore`, `.unsupported` (a database
    /// that is not UTF8), `.unsupportedFormatVersion`, `.corruption`, `.invalidArgument` on an
    /// event loop.
    init(configuration: PostgresDataStore.Configuration, options: DataStoreOptions) throws {
        try PostgresConnectionPool.checkNotOnEventLoop()
        var connection = configuration.connection
        if options.durability != .synchronous {
            connection.options.additionalStartupParameters.append(("synchronous_commit", "off"))
        }
        connection.options.additionalStartupParameters.append(("statement_timeout", configuration.statementTimeoutSetting))
        let pool = PostgresConnectionPool(
            configuration: connection, group: configuration.eventLoopGroup, maximum: configuration.maximumConnections,
            leaseTimeout: configuration.leaseTimeout, logger: configuration.logger, place: configuration.place)
        let opened: PostgresSchema.Opened
        do {
            let c = try pool.leaseClean()
            let s = PostgresStatements(
                connection: c, logger: configuration.logger, place: configuration.place, timeout: configuration.statementTimeout)
            do {
                let encoding = try s.run("SHOW server_encoding").rows.first.flatMap { try? $0.decode(String.self) }
                guard encoding?.uppercased() == "UTF8" else {
                    throw LogStoreError(
                        .unsupported,
                        "The database's encoding is \(encoding ?? "unknown"); LogStore needs UTF8 (jsonb text). Create the database with ENCODING 'UTF8'.",
                        path: configuration.place)
                }
                opened = try PostgresSchema.open(s, schema: configuration.schema, create: configuration.createIfMissing)
                // PostgreSQL 12+: one statement ends a read and begins the next.
                try s.run("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                pool.chains.store((try? s.run("ROLLBACK AND CHAIN")) != nil, ordering: .relaxed)
                _ = try? s.run("ROLLBACK")
                pool.release(c, reusable: true)
            } catch {
                pool.release(c, reusable: false)
                throw error
            }
        } catch {
            pool.close()
            throw error
        }
        let session = PostgresSession(configuration: configuration, options: options, pool: pool, opened: opened)
        let feed = DataStoreChangeFeed(
            storeIdentity: "postgres:" + opened.storeID, sequence: opened.sequence, retention: options.changeHistory,
            recordsWrites: false,
            snapshot: { [weak session] in
                guard let session else { throw StoreErrors.notOpen() }
                return try PostgresStateSnapshot(session: session)
            })
        session.publisher.attach(feed)
        self.session = session
        changeFeed = feed
        threads = NIOThreadPool(numberOfThreads: max(2, configuration.maximumConnections))
        threads.start()
        poller = PostgresPoller(session: session, interval: configuration.pollInterval)
    }

    deinit {
        poller.stop()
        threads.shutdownGracefully { _ in }
    }

    /// See `DataStoreBackend.limits`: the options'.
    var limits: RecordLimits { session.options.limits }

    /// See `DataStoreBackend.spillLocation`: a directory per store in the temporary directory.
    var spillLocation: SpillLocation {
        SpillLocation(
            directory: FileManager.default.temporaryDirectory.appendingPathComponent("logstore-postgres-children-\(session.storeID)").path,
            fileSystem: POSIXFileSystem())
    }

    /// See `DataStoreBackend.isWritingOnCurrentThread`.
    var isWritingOnCurrentThread: Bool { marks.isWritingOnCurrentThread }

    /// See `DataStoreBackend.isInsideBlockOnCurrentThread`: a read or a write block (both hold a
    /// connection).
    var isInsideBlockOnCurrentThread: Bool { marks.isInsideBlockOnCurrentThread }

    /// See `DataStoreBackend.read(_:)`: a read-only REPEATABLE READ transaction on a leased
    /// connection.
    func read<T>(_ block: (any DataStoreReadAccessor) throws -> T) throws -> T {
        try marks.reading { _ in
            try session.inSnapshot { s in
                let accessor = PostgresReadAccessor(statements: s, session: session)
                defer { accessor.isValid = false }
                return try block(accessor)
            }
        }
    }

    /// See `DataStoreBackend.runDetached(_:)`: on the store's own threads (a read blocks on the
    /// network), never the cooperative pool.
    func runDetached<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await threads.runIfActive { try work() }
    }

    /// See `DataStoreBackend.childBase()`: a held read transaction, closed at tearDown.
    func childBase() throws -> any RecordReader & Sendable {
        let reader = try PostgresSnapshotReader(session: session)
        session.snapshots.withLock { s in
            s.removeAll { $0.reader == nil }
            s.append(PostgresSession.WeakSnapshot(reader))
        }
        return reader
    }

    /// See `DataStoreBackend.close()`: stops the poller, waits for this process's write in
    /// progress, closes the connections and the thread pool.
    func close() {
        poller.stop()
        // Writes of other threads finish first (they hold the writer).
        writer.lock()
        session.closeExtras()
        session.pool.close()
        writer.unlock()
        threads.shutdownGracefully { _ in }
    }

    /// Runs `body` as one SERIALIZABLE transaction on the calling thread, holding the process's
    /// writer, and returns its value once committed; on a serialization failure or deadlock, or
    /// when the schema needs a new table or index first, rolls back and runs `body` again (after
    /// a backoff for conflicts). Throws `.reentrantWrite` inside a write block of this store,
    /// `.notOpen`, `.writeConflict` when conflicts outlast the retry timeout, the server's errors
    /// (`.commitOutcomeUnknown` when the connection broke during COMMIT), or `body`'s error
    /// unchanged (rolled back).
    func transaction<T>(_ body: (PostgresWriteAccessor) throws -> T) throws -> T {
        if isWritingOnCurrentThread { throw StoreErrors.reentrantWrite() }
        try PostgresConnectionPool.checkNotOnEventLoop()
        writer.lock()
        defer { writer.unlock() }
        do {
            let start = ContinuousClock.now
            var work: [PostgresSchemaWork] = []
            var attempt = 0
            var reconnects = 0
            while true {
                attempt += 1
                if !work.isEmpty {
                    try doSchemaWork(work)
                    work = []
                }
                let result: Attempt<T>
                do {
                    result = try attemptTransaction(body)
                } catch let e as LogStoreError where e.code == .serverUnavailable && reconnects < 2 && !session.pool.isClosed {
                    // A connection the server ended (a restart, a failover, an idle connection it
                    // dropped): nothing was committed; run the block again on a new connection.
                    reconnects += 1
                    session.configuration.logger.debug("connection lost, attempt \(attempt): \(e)")
                    continue
                }
                switch result {
                case .committed(let value):
                    return value
                case .again(let schemaWork, let conflict):
                    work = schemaWork
                    guard let conflict else { continue }
                    if ContinuousClock.now - start > session.configuration.retry.timeout {
                        throw LogStoreError(
                            .writeConflict,
                            "The write kept conflicting with concurrent writes for \(session.configuration.retry.timeout) (\(attempt) attempts). Nothing was committed; retry later, or make writers touch fewer shared items.",
                            path: session.place, underlying: conflict)
                    }
                    session.configuration.logger.debug("write conflict, attempt \(attempt): \(conflict)")
                    let pause = session.configuration.retry.backoff(after: attempt)
                    Thread.sleep(forTimeInterval: Double(pause.components.seconds) + Double(pause.components.attoseconds) * 1e-18)
                }
            }
        }
    }

    enum Attempt<T> {
        case committed(T)
        /// Run again: after `schemaWork`, and after a backoff when `conflict` is set.
        case again([PostgresSchemaWork], conflict: LogStoreError?)
    }

    /// One attempt of ``transaction(_:)``.
    func attemptTransaction<T>(_ body: (PostgresWriteAccessor) throws -> T) throws -> Attempt<T> {
        try session.withConnection { s in
            let accessor = PostgresWriteAccessor(statements: s, session: session)
            func rollBack() {
                if accessor.began, (try? s.run("ROLLBACK")) == nil { s.connection.closeInBackground() }
            }
            func again() -> Attempt<T> {
                rollBack()
                session.declaredIndexes.withLock { $0.formUnion(accessor.declaredIndexes) }
                return .again(accessor.schemaWork, conflict: accessor.conflict)
            }
            let outcome = marks.writing { Result { try body(accessor) } }
            if accessor.restart != nil { return again() }
            let value: T
            switch outcome {
            case .failure(let error):
                rollBack()
                throw error
            case .success(let v):
                value = v
            }
            if let failure = accessor.failure {
                rollBack()
                throw failure
            }
            let commit: CommitChanges?
            do {
                commit = try accessor.commit()
            } catch {
                accessor.isValid = false
                if accessor.restart != nil { return again() }
                rollBack()
                throw error
            }
            accessor.isValid = false
            session.declaredIndexes.withLock { $0.formUnion(accessor.declaredIndexes) }
            if let commit { afterCommit(commit, statements: s) }
            return .committed(value)
        }
    }

    /// Tells the feed of a commit just made: from memory when it is next in line, else (when
    /// something observes the store) with the other servers' commits before it from the log.
    /// Failures are left to the next snapshot or poll, which publish what is missing. Every 128th
    /// commit also drops commit log entries older than the retention.
    func afterCommit(_ commit: CommitChanges, statements s: PostgresStatements) {
        let publisher = session.publisher
        if publisher.published + 1 == commit.sequence || publisher.isObserved {
            try? publisher.publish(through: commit.sequence, own: commit) { from, through in
                try PostgresStateSnapshot.readLog(s, session: session, after: from, through: through)
            }
        }
        if commit.sequence % 128 == 0 {
            var binds = PostgresBindings()
            binds.append(Int64(commit.sequence) - 128)
            binds.append(Double(session.configuration.commitLogRetention.components.seconds))
            _ = try? s.run(
                PostgresQuery(
                    unsafeSQL:
                        "DELETE FROM \(session.own(PostgresSchema.commits)) WHERE sequence <= $1 AND committed_at < now() - make_interval(secs => $2)",
                    binds: binds))
        }
    }

    /// Creates tables and declared indexes a write needs, outside any data transaction.
    func doSchemaWork(_ work: [PostgresSchemaWork]) throws {
        try session.withConnection { s in
            for w in work {
                switch w {
                case .indexes(let type, let creates, let drops):
                    try PostgresIndexes.apply(s, creates: creates, drops: drops, schema: session.schema, type: type)
                    session.declaredIndexes.withLock { _ = $0.insert(type) }
                }
            }
        }
    }
}
