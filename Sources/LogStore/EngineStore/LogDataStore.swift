public import Foundation
public import LogStoreEngine

/// LogStore's ``DataStore`` on its own engine: a store in a directory on disk, or in memory.
///
/// ```swift
/// let store = LogDataStore(directory: URL(fileURLWithPath: "Library/Store"))
/// try store.setup()
/// try store.writeSync { accessor in try accessor.insert(Restaurant(id: UUID(), name: "Rice", rating: 5)) }
/// let count = try store.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)) }
/// try store.tearDown()
/// ```
///
/// Thread safety: use one instance from any number of threads and tasks. Reads run on the calling
/// thread over a snapshot and never wait for writers; writes are serialized. One open instance
/// per directory: a second one, in this process or another, fails `setup()` with `.locked`.
public final class LogDataStore: MigratingDataStore {
    /// The options the store was created with.
    public let options: LogStoreOptions
    /// The store's migrations: register them before ``setup()``, which applies those the store
    /// has not applied yet (see ``DataStoreMigrations`` and the "Migrations" article).
    public let migrations: DataStoreMigrations
    let shell: StoreShell<EngineBackend>
    /// Where `backup(to:)` writes: the real file system, or a custom store's own.
    let backupFileSystem: any FileSystem

    /// A store in `directory` (created by ``setup()`` if missing). Does no I/O until `setup()`.
    public convenience init(directory: URL, options: LogStoreOptions = .init()) {
        self.init(path: directory.path, fileSystem: POSIXFileSystem(), options: options)
    }

    /// A store at `path` on any `FileSystem` (for example the crash harness's fault-injecting
    /// file system), backed up to the same file system. Test support, not API: `package` access,
    /// so only this package's tests and tools see it.
    package convenience init(path: String, fileSystem: any FileSystem, options: LogStoreOptions = .init()) {
        self.init(path: path, fileSystem: fileSystem, backupFileSystem: fileSystem, options: options)
    }

    /// A store at `path` on `fileSystem` whose backups go to `backupFileSystem`.
    init(path: String, fileSystem: any FileSystem, backupFileSystem: any FileSystem, options: LogStoreOptions) {
        self.options = options
        self.backupFileSystem = backupFileSystem
        let migrations = DataStoreMigrations()
        self.migrations = migrations
        shell = StoreShell(label: "LogStore.writeAsync", options: options.dataStore, migrations: migrations) {
            try EngineBackend(
                engine: LogEngine.open(directory: path, fileSystem: fileSystem, options: options.engine), options: options.dataStore)
        }
    }

    /// A store held in memory: the same semantics as a disk store, with no durability. Its data
    /// lives as long as the returned object (it survives `tearDown()` and a new `setup()`).
    public static func inMemory(options: LogStoreOptions = .init()) -> LogDataStore {
        var o = options
        o.durability = .none
        return LogDataStore(path: "/store", fileSystem: InMemoryFileSystem(), backupFileSystem: POSIXFileSystem(), options: o)
    }

    // MARK: Lifecycle

    /// See ``DataStore/setup()``: creates or opens the store and recovers it after a crash
    /// (``recoveryReport`` says what that did), then applies the registered ``migrations`` the
    /// store has not applied yet, before any other call can see the store. Throws `.locked`,
    /// `.notAStore`, `.corruption`, `.unsupportedFormatVersion`, I/O errors, and the migrations'
    /// errors (`.migrationFailed`, `.unknownMigrations`, `.migrationHistoryMismatch`,
    /// `.invalidArgument`), leaving the store closed.
    public func setup() throws { try shell.setup() }

    /// See ``DataStore/tearDown()``: waits for queued asynchronous writes, then flushes, writes a
    /// checkpoint (`LogEngineOptions.checkpointOnClose`) and releases the directory. Throws
    /// `.reentrantWrite` inside a write block of this store.
    public func tearDown() throws { try shell.tearDown() }

    /// See ``DataStore/nuke()``. The store's history (its applied migrations, `StoreHistory`)
    /// stays: the items go, the schema they had does not change.
    public func nuke() throws { try shell.nuke() }

    /// Makes every commit so far durable, whatever the durability mode (`fdatasync`), after the
    /// queued asynchronous writes. Throws `.notOpen`, `.storePoisoned`, and `.reentrantWrite`
    /// inside a write block of this store (it would wait for itself).
    public func flush() throws {
        try shell.backendForWriting("flush()").engine.flush()
    }

    /// What the last successful ``setup()`` did with the ``migrations``: the steps it applied, the
    /// ones applied before, unknown ones it was allowed to ignore, an erase, and the store's
    /// history. Nil before `setup()` and after `tearDown()`. A value; any thread.
    public var migrationReport: MigrationReport? { shell.migrationReport }

    /// What recovery did when ``setup()`` opened the store: whether the store was created, how
    /// many transactions and bytes were replayed, the torn tail cut off, damaged bytes a
    /// `.salvage` open dropped, and whether a checkpoint was used or why not. Nil before `setup()`
    /// and after `tearDown()`. A value: it does not change after it is returned. Any thread.
    public var recoveryReport: RecoveryReport? { try? shell.currentBackend().engine.recoveryReport }

    /// The store's history (`StoreHistory`): the migrations it applied and the index
    /// declarations that changed, oldest first. Throws `.notOpen` before ``setup()``, and the
    /// store's read errors. Runs one `read` on the calling thread.
    public func history() throws -> [StoreHistory.Entry] { try DataStoreMigrations.history(of: self) }

    /// Declares the secondary indexes of `types` now (``DataStoreItem/indexes``), building any
    /// that the store does not have yet, instead of at each type's first use. Call after
    /// ``setup()``, for example at launch, so that the first request of a type never waits for a
    /// build. Runs on the calling thread; building takes the store's writer lock and reads every
    /// item of the type once. A no-op for types declared already.
    ///
    /// Throws `.notOpen`, `.invalidArgument` for an index whose key path cannot be placed in the
    /// item's stored form, `.uniqueConstraintViolation` when stored items break a unique index
    /// (nothing changes then), and I/O or `.corruption` errors. Inside a write block of this store
    /// it builds under the writer lock the block holds.
    public func prepareIndexes(for types: any DataStoreItem.Type...) throws {
        let backend = try shell.currentBackend()
        for type in types { try prepare(type, on: backend) }
    }

    func prepare<Item: DataStoreItem>(_ type: Item.Type, on backend: EngineBackend) throws {
        _ = try backend.ensureIndexes(Item.self, transaction: nil)
    }

    /// The engine of this store, so that crash tests can drive `LogEngine.compact()` under a
    /// `DataStore` workload. Test support, not API (`package` access). Throws `.notOpen`; valid
    /// until the store's `tearDown()`.
    package func engineForTesting() throws -> LogEngine { try shell.currentBackend().engine }

    /// Waits until every queued asynchronous write has run (unless called from the queue itself).
    package func drainAsyncQueue() { shell.writeQueue.drain() }

    // MARK: Reading and writing

    /// See `DataStore.read(_:)`: runs `block` synchronously on the calling thread over one
    /// consistent snapshot of the committed state. Never waits for writers. The accessor is valid
    /// only inside `block`. Throws `.notOpen`, read errors, or the block's own error unchanged.
    @discardableResult
    public func read<T>(_ block: (any DataStoreReadAccessor) throws -> T) throws -> T { try shell.read(block) }

    /// `read` for Swift concurrency: the same read on a Dispatch global queue thread (off the
    /// caller's executor).
    public func read<T: Sendable>(_ block: @escaping @Sendable (any DataStoreReadAccessor) throws -> T) async throws -> T {
        try await shell.read(block)
    }

    /// See ``DataStore/writeSync(_:)``.
    @discardableResult
    public func writeSync<T>(_ block: (any DataStoreReadWriteAccessor) throws -> T) throws -> T { try shell.writeSync(block) }

    /// See ``DataStore/writeAsync(_:completion:)``. The completion runs on a Dispatch global queue.
    public func writeAsync(
        _ block: @escaping @Sendable (any DataStoreReadWriteAccessor) throws -> Void, completion: (@Sendable ((any Error)?) -> Void)?
    ) {
        shell.writeAsync(block, completion: completion)
    }

    /// See ``DataStore/write(_:)``. Queued with `writeAsync` blocks; resumes once durable.
    public func write<T: Sendable>(_ block: @escaping @Sendable (any DataStoreReadWriteAccessor) throws -> T) async throws -> T {
        try await shell.write(block)
    }

    // MARK: Children and observation

    /// See ``DataStore/makeChildDataStore()``: a ``ChildDataStore`` whose base is an engine
    /// snapshot (O(1): nothing is copied). The child is set up.
    public func makeChildDataStore() throws -> any DataStore { try shell.makeChild() }

    /// See ``DataStore/merge(_:)``.
    public func merge(_ child: any DataStore) throws { try shell.merge(child, policy: .childWins) }

    /// See ``DataStore/merge(_:policy:)``. The child's changes since its base (its creation or
    /// last merge) are replayed as one transaction of this store, durable under this store's
    /// durability. A change conflicts when this store changed the same item (insert, replace or
    /// delete) after the child's base, which the index knows exactly. A delete-all in the child
    /// is replayed as deletes of the items the child saw at its base, not of items this store
    /// added since. Afterwards the child rebases onto this store's new state.
    public func merge(_ child: any DataStore, policy: MergePolicy) throws { try shell.merge(child, policy: policy) }

    /// See ``DataStore/changeFeed()``: the engine's commits, published as readers see them.
    public func changeFeed() throws -> DataStoreChangeFeed { try shell.changeFeed() }
}
