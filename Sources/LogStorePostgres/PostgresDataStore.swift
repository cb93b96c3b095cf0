import Foundation
public import LogStore

/// The DataStore contract on PostgreSQL, through postgres-nio: the same app code, now shared by
/// several app servers. Tested on PostgreSQL 15; other engines that speak its protocol
/// (CockroachDB, YugabyteDB) are untested.
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
/// on the candidate rows otherwise (Docs/SQLBackends.md, "PostgreSQL").
///
/// Options (`DataStoreOptions`): `durability` (`.synchronous`: the server's `synchronous_commit`;
/// `.buffered` and `.none`: `synchronous_commit = off`, a server crash may lose the last commits
/// but never part of one), the size limits, `changeHistory`, `childSpillThreshold`; the
/// connection, pool, timeouts and retries are the ``Configuration``'s.
///
/// Thread safety: use one instance from any number of threads and tasks; the synchronous API
/// blocks its caller (never call it on a SwiftNIO event loop: it throws `.invalidArgument`), the
/// async twins run it on the store's own threads.
public final class PostgresDataStore: MigratingDataStore {
    /// Where the data lives and how the store connects.
    public let configuration: Configuration
    /// The options the store was created with.
    public let options: DataStoreOptions
    /// The store's migrations: register them before ``setup()``, which applies those the schema
    /// has not applied yet; servers that start together apply each step once (see
    /// ``DataStoreMigrations`` and the "Migrations" article). Any thread.
    public let migrations: DataStoreMigrations
    let shell: StoreShell<PostgresBackend>

    /// A store on `configuration`'s server and schema. Does no I/O until `setup()`.
    public init(configuration: Configuration, options: DataStoreOptions = DataStoreOptions()) {
        self.configuration = configuration
        self.options = options
        let migrations = DataStoreMigrations()
        self.migrations = migrations
        var dataStoreOptions = options
        if dataStoreOptions.logger == nil { dataStoreOptions.logger = configuration.logger }
        shell = StoreShell(label: "LogStorePostgres.writeAsync", options: dataStoreOptions, migrations: migrations) {
            try PostgresBackend(configuration: configuration, options: options)
        }
    }

    /// A store at `url` (`postgres://user:password@host:port/database?sslmode=...&schema=...`,
    /// see ``Configuration/init(url:)``). Does no I/O until `setup()`. Throws `.invalidArgument`
    /// for a URL that is not a PostgreSQL one.
    public convenience init(url: String, options: DataStoreOptions = DataStoreOptions()) throws {
        self.init(configuration: try Configuration(url: url), options: options)
    }

    /// A set-up store at `url` for this package's command-line tools: created when `create`, else
    /// `.notAStore` when the URL's schema holds no store. Throws what `init(url:)` and `setup()`
    /// throw. Blocks the caller.
    package static func openForTools(url: String, create: Bool) throws -> PostgresDataStore {
        var configuration = try Configuration(url: url)
        configuration.createIfMissing = create
        configuration.logger.logLevel = .error
        let store = PostgresDataStore(configuration: configuration)
        try store.setup()
        return store
    }

    /// What the last successful ``setup()`` did with ``migrations``; nil before `setup()` and
    /// after `tearDown()`. A value; any thread.
    public var migrationReport: MigrationReport? { shell.migrationReport }

    /// Connects and checks (or creates) the store's schema and tables, then applies the registered
    /// ``migrations`` the schema has not applied. Idempotent; blocks the caller. Several processes
    /// may set up the same store at once. Throws `.serverUnavailable` when the server cannot be
    /// reached, `.permissionDenied` for a refused login or missing rights, `.notAStore` for a
    /// schema holding another application's tables or a missing database,
    /// `.unsupportedFormatVersion`, `.corruption`, `.invalidArgument` on an event loop, and the
    /// migrations' errors (`.migrationFailed` naming the step, `.unknownMigrations`,
    /// `.migrationHistoryMismatch`): then the store is closed again, the steps before the failing
    /// one applied.
    public func setup() throws { try shell.setup() }

    /// Finishes queued asynchronous writes, stops polling, closes the connections. Data stays.
    /// Idempotent. Child stores of this store throw `.parentClosed` afterwards. Throws
    /// `.reentrantWrite` inside a read or write block of this store (it would wait for it).
    public func tearDown() throws { try shell.tearDown() }

    /// Deletes every item of every type as one committed write. The store's history stays.
    /// Throws `.notOpen`, `.reentrantWrite` inside a write block, and the server's errors.
    public func nuke() throws { try shell.nuke() }

    /// See `DataStore.changeFeed()`: this process's commits as they commit, and other servers'
    /// commits as the poller or a snapshot finds them (``Configuration/pollInterval``), in
    /// sequence order. Throws `.notOpen`. O(1), any thread.
    public func changeFeed() throws -> DataStoreChangeFeed { try shell.changeFeed() }

    /// Runs `block` on the calling thread over one snapshot (a read-only REPEATABLE READ
    /// transaction) and returns its value. Throws `.notOpen`, `.serverUnavailable`,
    /// `.invalidArgument` on an event loop, or the block's own error unchanged.
    @discardableResult
    public func read<T>(_ block: (any DataStoreReadAccessor) throws -> T) throws -> T { try shell.read(block) }

    /// `read` for Swift concurrency, on the store's own threads (never the cooperative pool, which
    /// a read would block on the network).
    public func read<T: Sendable>(_ block: @escaping @Sendable (any DataStoreReadAccessor) throws -> T) async throws -> T {
        try await shell.read(block)
    }

    /// Runs `block` on the calling thread as one SERIALIZABLE transaction, serialized with this
    /// process's other writes, and returns once committed (durable under ``options``'
    /// durability). The block may run more than once (see ``RetryPolicy``). If the block throws,
    /// nothing is committed and its error is rethrown unchanged. Throws `.reentrantWrite` inside a
    /// write block of this store, `.notOpen`, `.writeConflict`, `.serverUnavailable`,
    /// `.commitOutcomeUnknown`, `.uniqueConstraintViolation`, and the server's other errors.
    @discardableResult
    public func writeSync<T>(_ block: (any DataStoreReadWriteAccessor) throws -> T) throws -> T { try shell.writeSync(block) }

    /// Queues `block` and returns at once; it runs on the store's write queue, after the writes
    /// queued before it. `completion` (on a Dispatch global queue) gets nil once committed, or the
    /// error (the block's own unchanged).
    public func writeAsync(
        _ block: @escaping @Sendable (any DataStoreReadWriteAccessor) throws -> Void, completion: (@Sendable ((any Error)?) -> Void)?
    ) {
        shell.writeAsync(block, completion: completion)
    }

    /// `writeSync` for Swift concurrency: queued with `writeAsync` blocks (on the queue's thread,
    /// never the cooperative pool); resumes once committed.
    public func write<T: Sendable>(_ block: @escaping @Sendable (any DataStoreReadWriteAccessor) throws -> T) async throws -> T {
        try await shell.write(block)
    }

    /// A child store over a snapshot of this store (a read transaction held on a connection of
    /// its own until the child is merged, torn down or released), spilling into a temporary
    /// directory. Throws `.notOpen`, `.serverUnavailable`.
    public func makeChildDataStore() throws -> any DataStore { try shell.makeChild() }

    /// Replays `child`'s changes as one transaction of this store with `.childWins`. See
    /// ``merge(_:policy:)``.
    public func merge(_ child: any DataStore) throws { try shell.merge(child, policy: .childWins) }

    /// Replays `child`'s changes since its base as one SERIALIZABLE transaction of this store. A
    /// change conflicts when a commit (of any server) numbered after the child's base wrote or
    /// deleted the item; `policy` decides. Throws `.notAChild`, `.mergeConflict`, `.reentrantWrite`,
    /// `.notOpen`, and the errors of ``writeSync(_:)``.
    public func merge(_ child: any DataStore, policy: MergePolicy) throws { try shell.merge(child, policy: policy) }
}
