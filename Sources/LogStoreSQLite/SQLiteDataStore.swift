public import Foundation
public import LogStore

/// The DataStore contract on SQLite: a `DataStore` in one SQLite file, through GRDB's
/// `DatabasePool` in WAL mode, for apps that want SQLite's file and tools, or to move their data
/// between SQLite and LogStore with `BackendMigrator` (the "Choosing and Switching Backends"
/// article).
///
/// ```swift
/// let store = SQLiteDataStore(path: "Library/Restaurants.sqlite")
/// try store.setup()
/// try store.writeSync { try $0.insert(Restaurant(id: UUID(), name: "Rice & Spice", rating: 5)) }
/// ```
///
/// Every rule of the contract holds as for `LogDataStore` (the conformance suite checks them):
/// reads run on the calling thread over a snapshot (a WAL read transaction) and never wait for
/// writers; writes are serialized, commit when their block returns and roll back when it throws;
/// results come in LogStore's id order, sorts use LogStore's total order; child stores read a
/// snapshot of this store and merge as one transaction. Items are rows of one table per item
/// type, in LogStore JSON that SQLite's JSON functions read; `#Predicate`s run in SQL where SQL
/// gives Swift's answer exactly, and in Swift on the candidate rows otherwise (Docs/SQLBackends.md,
/// "SQLite").
///
/// Options (`DataStoreOptions`): `durability` (`.synchronous`: `PRAGMA synchronous = FULL`, each
/// commit is synced; `.buffered`: `NORMAL`, the WAL is synced at checkpoints, a power loss may
/// lose the last commits but never part of one; `.none`: `OFF`), the size limits, the child
/// stores' spill threshold, change tracking's history and the logger.
///
/// Thread safety: use one instance from any number of threads and tasks. One instance per file:
/// a second `SQLiteDataStore` on the same file, in this process or another, fails `setup()` with
/// `.locked` (a `<file>-lock` file is held; other SQLite programs are not stopped by it).
public final class SQLiteDataStore: MigratingDataStore {
    /// The database file.
    public let path: String
    /// The options the store was created with.
    public let options: DataStoreOptions
    /// The store's migrations: register them before ``setup()``, which applies those the file has
    /// not applied yet, each in one transaction with its record in the store's history (see
    /// ``DataStoreMigrations`` and the "Migrations" article). Any thread.
    public let migrations: DataStoreMigrations
    let shell: StoreShell<SQLiteSession>

    /// A store in the SQLite file at `path` (created by ``setup()`` if missing, with its
    /// directory). Does no I/O until `setup()`.
    public init(path: String, options: DataStoreOptions = DataStoreOptions()) {
        self.path = path
        self.options = options
        let migrations = DataStoreMigrations()
        self.migrations = migrations
        shell = StoreShell(label: "LogStoreSQLite.writeAsync", options: options, migrations: migrations) {
            try SQLiteSession.open(path: path, options: options)
        }
    }

    /// A store in the SQLite file at `url`. See ``init(path:options:)``.
    public convenience init(url: URL, options: DataStoreOptions = DataStoreOptions()) {
        self.init(path: url.path, options: options)
    }

    /// What the last successful ``setup()`` did with ``migrations``; nil before `setup()` and
    /// after `tearDown()`. A value; any thread.
    public var migrationReport: MigrationReport? { shell.migrationReport }

    /// Creates or opens the store: takes its lock, opens the pool in WAL mode, checks (or
    /// creates) the schema, then applies the registered ``migrations`` the store has not applied.
    /// Idempotent; blocks the caller. Throws `.locked` when another store has the file open,
    /// `.notAStore` for a file that is not a SQLite database or is another application's,
    /// `.unsupportedFormatVersion`, `.corruption`, `.permissionDenied`, `.io`, and the migrations'
    /// errors (`.migrationFailed` naming the step, `.unknownMigrations`,
    /// `.migrationHistoryMismatch`): then the store is closed again, the steps before the failing
    /// one applied.
    public func setup() throws { try shell.setup() }

    /// Finishes queued asynchronous writes, closes the connections and releases the lock. Data
    /// stays. Idempotent. Child stores of this store throw `.parentClosed` afterwards. Throws
    /// `.reentrantWrite` when called from inside a read or write block of this store (it would
    /// wait for that block).
    public func tearDown() throws { try shell.tearDown() }

    /// Deletes every item of every type as one committed, durable write. The store stays usable.
    /// Throws `.notOpen`, `.reentrantWrite` inside a write block, and I/O errors.
    public func nuke() throws { try shell.nuke() }

    /// See `DataStore.changeFeed()`: the feed of this opening, which every commit of this store
    /// (writes, merges, nuke) is published to right after it commits. Throws `.notOpen` before
    /// `setup()` and after `tearDown()`. O(1), any thread.
    public func changeFeed() throws -> DataStoreChangeFeed { try shell.changeFeed() }

    /// Runs `block` synchronously on the calling thread over one consistent snapshot (a WAL read
    /// transaction, which never waits for writers) and returns its value. Throws `.notOpen`, the
    /// mapped SQLite error of starting the transaction, or the block's own error unchanged.
    @discardableResult
    public func read<T>(_ block: (any DataStoreReadAccessor) throws -> T) throws -> T { try shell.read(block) }

    /// `read` for Swift concurrency: runs `block` over one snapshot on a Dispatch global queue
    /// thread (off the caller's executor). Throws as ``read(_:)-(DataStoreReadAccessor)``.
    public func read<T: Sendable>(_ block: @escaping @Sendable (any DataStoreReadAccessor) throws -> T) async throws -> T {
        try await shell.read(block)
    }

    /// Runs `block` on the calling thread, serialized with every other write, and commits its
    /// changes atomically; returns once committed (durable under ``options``' durability). Waits
    /// first for the asynchronous writes queued before it. If the block throws, nothing is
    /// committed and its error is rethrown unchanged. Throws `.reentrantWrite` inside a write
    /// block of this store, `.notOpen`, and the mapped SQLite errors.
    @discardableResult
    public func writeSync<T>(_ block: (any DataStoreReadWriteAccessor) throws -> T) throws -> T { try shell.writeSync(block) }

    /// Queues `block` and returns at once; it runs off the calling thread, after the writes
    /// queued before it. `completion` (on a Dispatch global queue) gets nil once committed, or the
    /// error (the block's own unchanged; `.notOpen` when the store is not set up).
    public func writeAsync(
        _ block: @escaping @Sendable (any DataStoreReadWriteAccessor) throws -> Void, completion: (@Sendable ((any Error)?) -> Void)?
    ) {
        shell.writeAsync(block, completion: completion)
    }

    /// `writeSync` for Swift concurrency: queued with `writeAsync` blocks; resumes once committed.
    public func write<T: Sendable>(_ block: @escaping @Sendable (any DataStoreReadWriteAccessor) throws -> T) async throws -> T {
        try await shell.write(block)
    }

    /// A child store: reads this store's committed state as of now (a snapshot held by a
    /// read-only connection) plus its own writes, which this store sees only after
    /// ``merge(_:policy:)``. The child is LogStore's `ChildDataStore` over that snapshot (the
    /// Child Stores article, every rule), spilling past `childSpillThreshold` into
    /// `<file>-children/`. Throws `.notOpen`, or the SQLite error of opening the snapshot.
    public func makeChildDataStore() throws -> any DataStore { try shell.makeChild() }

    /// Replays `child`'s changes since its last merge into this store as one transaction, with
    /// `MergePolicy.childWins`. See ``merge(_:policy:)``.
    public func merge(_ child: any DataStore) throws { try shell.merge(child, policy: .childWins) }

    /// Replays `child`'s changes since its base (its creation or last merge) as one transaction of
    /// this store. A change conflicts when this store changed the same item after the child's
    /// base (a commit numbered after the base's wrote it, or deleted it); `policy` decides. A
    /// delete-all in the child deletes the items the child saw. Afterwards the child rebases onto
    /// this store's new state. Throws `.notAChild` (changing nothing), `.mergeConflict` under
    /// `.failOnConflict` (changing nothing), `.reentrantWrite` inside a write block of either
    /// store, `.notOpen`, and the SQLite errors of the commit (then nothing is merged).
    public func merge(_ child: any DataStore, policy: MergePolicy) throws { try shell.merge(child, policy: policy) }
}
