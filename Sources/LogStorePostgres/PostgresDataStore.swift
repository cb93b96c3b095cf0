import Foundation
public import LogStore
import LogStoreEngine
import LogStoreSQL
import Logging
import NIOPosix
import PostgresNIO
import Synchronization

/// The DataStore contract on PostgreSQL (and the engines that speak its protocol: CockroachDB,
/// YugabyteDB), through postgres-nio: the same app code, now shared by several app servers.
///
/// ```swift
/// let store = try PostgresDataStore(url: "postgres://app:secret@db.internal/app?sslmode=require")
/// try store.setup()
/// try store.writeSync { try $0.insert(Restaurant(id: UUID(), name: "Rice & Spice", rating: 5)) }
/// ```
///
/// Every rule of the contract holds within one process as for `LogDataStore` (the conformance
/// suite checks them): reads run on the calling thread over a snapshot (a read-only REPEATABLE
/// READ transaction) and never wait for writers; writes commit when their block returns and roll
/// back when it throws; results come in LogStore's id order; child stores read a snapshot of the
/// store and merge as one transaction. Across processes and servers, writes are SERIALIZABLE:
/// each behaves as if it ran alone. What changes (the "Scaling Out with PostgreSQL" article):
/// - a write block may run more than once: a write that conflicts with a concurrent one
///   (SQLSTATE 40001, 40P01) is rolled back and run again (``RetryPolicy``), so keep side effects
///   other than its writes out of the block;
/// - the network can fail: `.serverUnavailable`, and `.commitOutcomeUnknown` when the connection
///   broke during a commit;
/// - there is no lock: any number of stores, in any number of processes, may open one schema;
/// - within a process, writes run one at a time (as on every backend); a write that must create
///   a table or declared indexes first runs its block again after doing so.
///
/// Items are rows of one table per item type (`id` in the id's natural SQL type, `version`, the
/// item as `jsonb`); `#Predicate`s run in SQL where SQL gives Swift's answer exactly, and in Swift
/// on the candidate rows otherwise (Docs/Design.md, "The PostgreSQL mapping").
///
/// Options: `durability` (`.synchronous`: the server's `synchronous_commit`; `.buffered` and
/// `.none`: `synchronous_commit = off`, a server crash may lose the last commits but never part of
/// one), the size limits, `changeHistory`, `childSpillThreshold`. The engine's options do not apply.
///
/// Thread safety: use one instance from any number of threads and tasks; the synchronous API
/// blocks its caller (never call it on a SwiftNIO event loop: it throws `.invalidArgument`), the
/// async twins run it on the store's own threads.
public final class PostgresDataStore: MigratingDataStore, ChildStoreParent {
    /// Where the data lives and how the store connects.
    public let configuration: Configuration
    /// The options the store was created with.
    public let options: LogStoreOptions

    struct State: Sendable {
        var session: PostgresSession?
        var feed: DataStoreChangeFeed?
        var poller: PostgresPoller?
        var threads: NIOThreadPool?
        var children: [LogDataStore.WeakChild] = []
        var migrationReport: MigrationReport?
    }
    let state = Mutex(State())
    /// Held by `tearDown()` until the session is closed, and by `setup()` while it opens one.
    let lifecycle = Mutex(())
    /// Held by a write transaction, from its first attempt to its commit: writes of this process
    /// run one at a time (a blocking lock: a transaction holds it across network round trips).
    let writer = NSLock()
    /// Runs `writeAsync` and async `write` blocks in the order they were queued.
    let writeQueue = WriteQueue(label: "LogStorePostgres.writeAsync")
    /// Which threads are inside read and write blocks (reentrancy checks).
    let marks = _ThreadMarks()
    /// The store's migrations: register them before ``setup()``, which applies those the schema
    /// has not applied yet, each in one SERIALIZABLE transaction with its record in the store's
    /// history. Several servers may set up at once: each step runs once, whichever commits it
    /// first (the others find it in the history and skip it). Steps run again on serialization
    /// failures, like every write block. Any thread.
    public let migrations = DataStoreMigrations()

    /// What the last successful ``setup()`` did with ``migrations``; nil before `setup()` and
    /// after `tearDown()`. A value; any thread.
    public var migrationReport: MigrationReport? { state.withLock { $0.session == nil ? nil : $0.migrationReport } }

    /// A store in the database and schema `configuration` names. Does no I/O until `setup()`.
    public init(configuration: Configuration, options: LogStoreOptions = LogStoreOptions()) {
        self.configuration = configuration
        self.options = options
    }

    /// A store at `url` (`postgres://user:password@host:port/database?sslmode=...&schema=...`,
    /// see ``Configuration/init(url:)``). Does no I/O until `setup()`. Throws `.invalidArgument`
    /// for a URL that is not a PostgreSQL one.
    public convenience init(url: String, options: LogStoreOptions = LogStoreOptions()) throws {
        self.init(configuration: try Configuration(url: url), options: options)
    }

    /// A set-up store at `url` for a command-line tool: created when `create`, else
    /// `.notAStore` when the URL's schema holds no store. Throws what `init(url:)` and `setup()`
    /// throw. Blocks the caller.
    public static func openForTools(url: String, create: Bool) throws -> PostgresDataStore {
        var configuration = try Configuration(url: url)
        configuration.createIfMissing = create
        configuration.logger.logLevel = .error
        let store = PostgresDataStore(configuration: configuration)
        try store.setup()
        return store
    }

    deinit {
        let s = state.withLock { $0 }
        s.poller?.stop()
        s.feed?.finish(throwing: nil)
        s.session?.closeExtras()
        s.session?.pool.close()
        s.threads?.shutdownGracefully { _ in }
    }

    static func notOpenError() -> LogStoreError {
        LogStoreError(.notOpen, "The store is not set up. Call setup() before using it (and not after tearDown()).")
    }

    func currentSession() throws -> PostgresSession {
        guard let s = state.withLock({ $0.session }) else { throw Self.notOpenError() }
        return s
    }

    var isWritingOnCurrentThread: Bool { marks.isWritingOnCurrentThread }

    // MARK: Lifecycle

    /// Connects and checks (or creates) the store's schema and tables, then applies the registered
    /// ``migrations`` the schema has not applied. Idempotent; blocks the caller. Several processes
    /// may set up the same store at once. Throws `.serverUnavailable` when the server cannot be
    /// reached, `.permissionDenied` for a refused login or missing rights, `.notAStore` for a
    /// schema holding another application's tables or a missing database,
    /// `.unsupportedFormatVersion`, `.corruption`, `.invalidArgument` on an event loop, and the
    /// migrations' errors (`.migrationFailed` naming the step, `.unknownMigrations`,
    /// `.migrationHistoryMismatch`): then the store is closed again, the steps before the failing
    /// one applied.
    public func setup() throws {
        if state.withLock({ $0.session != nil }) { return }
        try lifecycle.withLock { _ in
            if state.withLock({ $0.session != nil }) { return }
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
                    guard let session else { throw Self.notOpenError() }
                    return try PostgresStateSnapshot(session: session)
                })
            session.publisher.attach(feed)
            let threads = NIOThreadPool(numberOfThreads: max(2, configuration.maximumConnections))
            threads.start()
            let poller = PostgresPoller(session: session, interval: configuration.pollInterval)
            state.withLock { s in
                s.session = session
                s.feed = feed
                s.threads = threads
                s.poller = poller
            }
            do {
                // Before setup() returns: this process never sees the schema half migrated.
                let report = try migrations.apply(to: self, logger: configuration.logger)
                state.withLock { $0.migrationReport = report }
            } catch {
                closeLocked()
                throw error
            }
        }
    }

    /// Finishes queued asynchronous writes, closes the connections, ends observations. Data
    /// stays. Idempotent. Child stores of this store throw `.parentClosed` afterwards. Throws
    /// `.reentrantWrite` when called from inside a read or write block of this store (it would
    /// wait for that block).
    public func tearDown() throws {
        if marks.isInsideBlockOnCurrentThread { throw _ThreadMarks.reentrantTearDownError() }
        writeQueue.drain()
        lifecycle.withLock { _ in closeLocked() }
    }

    /// Closes the session, if any: the work of ``tearDown()``, run while holding `lifecycle`.
    func closeLocked() {
        let s = state.withLock { s -> State in
            defer { s = State() }
            return s
        }
        let closed = LogDataStore.parentClosedError()
        for c in s.children { c.store?.invalidate(closed) }
        s.poller?.stop()
        s.feed?.finish(throwing: nil)
        guard let session = s.session else { return }
        // Writes of other threads finish first (they hold the writer).
        writer.lock()
        session.closeExtras()
        session.pool.close()
        writer.unlock()
        s.threads?.shutdownGracefully { _ in }
    }

    /// Deletes every item of every type as one committed, durable write. The store stays usable.
    /// Throws `.notOpen`, `.reentrantWrite` inside a write block, and the server's errors.
    public func nuke() throws {
        try writeSync { accessor in
            guard let a = accessor as? PostgresWriteAccessor else { return }
            try a.step { try a.deleteEverything() }
        }
    }

    /// See ``DataStore/changeFeed()``: the store's commits, this process's and other servers'
    /// (read from the commit log while something observes the store). Throws `.notOpen` when the
    /// store is not set up. O(1), any thread.
    public func changeFeed() throws -> DataStoreChangeFeed {
        guard let feed = state.withLock({ $0.feed }) else { throw Self.notOpenError() }
        return feed
    }

    // MARK: Reading

    /// Runs `block` synchronously on the calling thread over one consistent snapshot (a read-only
    /// REPEATABLE READ transaction, which never waits for writers) and returns its value. Throws
    /// `.notOpen`, `.serverUnavailable`, `.invalidArgument` on an event loop, the server's errors,
    /// or the block's own error unchanged.
    @discardableResult
    public func read<T>(_ block: (any DataStoreReadAccessor) throws -> T) throws -> T {
        let session = try currentSession()
        return try marks.reading { _ in
            try session.inSnapshot { s in
                let accessor = PostgresReadAccessor(statements: s, session: session)
                defer { accessor.isValid = false }
                return try block(accessor)
            }
        }
    }

    /// `read` for Swift concurrency: runs `block` over one snapshot on one of the store's threads
    /// (off the caller's executor, never on the cooperative pool). Throws as ``read(_:)-(DataStoreReadAccessor)``.
    public func read<T: Sendable>(_ block: @escaping @Sendable (any DataStoreReadAccessor) throws -> T) async throws -> T {
        guard let threads = state.withLock({ $0.threads }) else { throw Self.notOpenError() }
        return try await threads.runIfActive { try self.read(block) }
    }

    // MARK: Writing

    /// Runs `body` as one SERIALIZABLE transaction on the calling thread, holding the process's
    /// writer, and returns its value once committed; on a serialization failure or deadlock, or
    /// when the schema needs a new table or index first, rolls back and runs `body` again (after
    /// a backoff for conflicts). Throws `.reentrantWrite` inside a write block of this store,
    /// `.notOpen`, `.writeConflict` when conflicts outlast the retry timeout, the server's errors
    /// (`.commitOutcomeUnknown` when the connection broke during COMMIT), or `body`'s error
    /// unchanged (rolled back).
    func transaction<T>(_ body: (PostgresWriteAccessor) throws -> T) throws -> T {
        let session = try currentSession()
        if isWritingOnCurrentThread { throw _ThreadMarks.reentrantWriteError() }
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
                    try doSchemaWork(work, session)
                    work = []
                }
                let result: Attempt<T>
                do {
                    result = try attemptTransaction(body, session)
                } catch let e as LogStoreError where e.code == .serverUnavailable && reconnects < 2 && !session.pool.isClosed {
                    // A connection the server ended (a restart, a failover, an idle connection it
                    // dropped): nothing was committed; run the block again on a new connection.
                    reconnects += 1
                    configuration.logger.debug("connection lost, attempt \(attempt): \(e)")
                    continue
                }
                switch result {
                case .committed(let value):
                    return value
                case .again(let schemaWork, let conflict):
                    work = schemaWork
                    guard let conflict else { continue }
                    if ContinuousClock.now - start > configuration.retry.timeout {
                        throw LogStoreError(
                            .writeConflict,
                            "The write kept conflicting with concurrent writes for \(configuration.retry.timeout) (\(attempt) attempts). Nothing was committed; retry later, or make writers touch fewer shared items.",
                            path: session.place, underlying: conflict)
                    }
                    configuration.logger.debug("write conflict, attempt \(attempt): \(conflict)")
                    let pause = configuration.retry.backoff(after: attempt)
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
    func attemptTransaction<T>(_ body: (PostgresWriteAccessor) throws -> T, _ session: PostgresSession) throws -> Attempt<T> {
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
            if let commit { afterCommit(commit, session: session, statements: s) }
            return .committed(value)
        }
    }

    /// Tells the feed of a commit just made: from memory when it is next in line, else (when
    /// something observes the store) with the other servers' commits before it from the log.
    /// Failures are left to the next snapshot or poll, which publish what is missing. Every 128th
    /// commit also drops commit log entries older than the retention.
    func afterCommit(_ commit: CommitChanges, session: PostgresSession, statements s: PostgresStatements) {
        let publisher = session.publisher
        if publisher.published + 1 == commit.sequence || publisher.isObserved {
            try? publisher.publish(through: commit.sequence, own: commit) { from, through in
                try PostgresStateSnapshot.readLog(s, session: session, after: from, through: through)
            }
        }
        if commit.sequence % 128 == 0 {
            var binds = PostgresBindings()
            binds.append(Int64(commit.sequence) - 128)
            binds.append(Double(configuration.commitLogRetention.components.seconds))
            _ = try? s.run(
                PostgresQuery(
                    unsafeSQL:
                        "DELETE FROM \(session.own(PostgresSchema.commits)) WHERE sequence <= $1 AND committed_at < now() - make_interval(secs => $2)",
                    binds: binds))
        }
    }

    /// Creates tables and declared indexes a write needs, outside any data transaction.
    func doSchemaWork(_ work: [PostgresSchemaWork], _ session: PostgresSession) throws {
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

    /// Runs `block` on the calling thread as one write transaction (SERIALIZABLE), after the
    /// asynchronous writes queued before it, and returns its value once committed (durable under
    /// ``options``' durability). The block may run more than once (see ``RetryPolicy``). If the
    /// block throws, nothing is committed and its error is rethrown unchanged. Throws
    /// `.reentrantWrite` inside a write block of this store, `.notOpen`, `.writeConflict`,
    /// `.serverUnavailable`, `.commitOutcomeUnknown`, `.uniqueConstraintViolation`, and the
    /// server's other errors.
    @discardableResult
    public func writeSync<T>(_ block: (any DataStoreReadWriteAccessor) throws -> T) throws -> T {
        _ = try currentSession()
        if isWritingOnCurrentThread { throw _ThreadMarks.reentrantWriteError() }
        writeQueue.drain()
        return try transaction { try block($0) }
    }

    /// Queues `block` and returns at once; it runs off the calling thread, after the writes
    /// queued before it (and may run more than once, see ``RetryPolicy``). `completion` (on a
    /// Dispatch global queue) gets nil once committed, or the error (the block's own unchanged;
    /// `.notOpen` when the store is not set up).
    public func writeAsync(
        _ block: @escaping @Sendable (any DataStoreReadWriteAccessor) throws -> Void,
        completion: (@Sendable ((any Error)?) -> Void)?
    ) {
        writeQueue.enqueue(
            check: { _ = try currentSession() }, durableTransaction: { try self.transaction { try block($0) } }, completion: completion)
    }

    /// `writeSync` for Swift concurrency: queued with `writeAsync` blocks (on the queue's thread,
    /// never the cooperative pool); resumes once committed.
    public func write<T: Sendable>(_ block: @escaping @Sendable (any DataStoreReadWriteAccessor) throws -> T) async throws -> T {
        try await writeQueue.value(check: { _ = try currentSession() }, durableTransaction: { try self.transaction { try block($0) } })
    }
}
