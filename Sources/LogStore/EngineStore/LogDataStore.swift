public import Foundation
public import LogStoreEngine
import Synchronization

/// LogStore's ``DataStore``: a store in a directory on disk, in memory, or a child of another
/// `LogDataStore`.
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
/// thread over a snapshot and never wait for writers; writes are serialized.
public final class LogDataStore: DataStore {
    enum Kind: Sendable {
        case directory(URL)
        case memory(InMemoryFileSystem)
        case custom(path: String, fileSystem: any FileSystem)
        case child(parent: any ChildStoreParent)
    }

    /// A child store this store made, held weakly so that an unused child goes away.
    package final class WeakChild: Sendable {
        package weak let store: LogDataStore?
        package init(_ s: LogDataStore) { store = s }
    }

    struct State: Sendable {
        var backend: StoreBackend?
        /// The backend's commit stream (observation, change tracking); set with `backend`.
        var feed: DataStoreChangeFeed?
        var children: [WeakChild] = []
        /// Set when a parent was torn down under this child.
        var failure: LogStoreError?
        /// What the last `setup()` did with the migrations.
        var migrationReport: MigrationReport?
    }

    let kind: Kind
    /// The options the store was created with.
    public let options: LogStoreOptions
    let state = Mutex(State())
    /// Held by `tearDown()` until the backend is closed, and by `setup()` while it opens one.
    let lifecycle = Mutex(())
    /// Runs `writeAsync` and async `write` blocks, one at a time, in the order they were queued.
    let writeQueue = WriteQueue(label: "LogStore.writeAsync")
    /// Declares item types' secondary indexes on first use.
    let indexRegistry = IndexRegistry()
    /// The store's migrations: register them before ``setup()``, which applies those the store
    /// has not applied yet (see ``DataStoreMigrations`` and the "Migrations" article). A child
    /// store has none (its root store's are applied at the root's `setup()`).
    public let migrations = DataStoreMigrations()

    /// A store in `directory` (created by ``setup()`` if missing). Does no I/O until `setup()`.
    public init(directory: URL, options: LogStoreOptions = .init()) {
        kind = .directory(directory)
        self.options = options
    }

    init(kind: Kind, options: LogStoreOptions) {
        self.kind = kind
        self.options = options
    }

    /// A store at `path` on any `FileSystem` (for example the crash harness's
    /// fault-injecting file system). Test support, not API: `package` access, so only this package's
    /// tests and tools see it.
    package convenience init(path: String, fileSystem: any FileSystem, options: LogStoreOptions = .init()) {
        self.init(kind: .custom(path: path, fileSystem: fileSystem), options: options)
    }

    /// A store held in memory: the same semantics as a disk store, with no durability. Its data
    /// lives as long as the returned object (it survives `tearDown()` and a new `setup()`).
    public static func inMemory(options: LogStoreOptions = .init()) -> LogDataStore {
        var o = options
        o.durability = .none
        return LogDataStore(kind: .memory(InMemoryFileSystem()), options: o)
    }

    deinit {
        let backend = state.withLock { $0.backend }
        try? backend?.close()
    }

    // MARK: Lifecycle

    /// See ``DataStore/setup()``. Then applies the registered ``migrations`` the store has not
    /// applied yet, before any other call can see the store; throws their errors
    /// (`.migrationFailed`, `.unknownMigrations`, `.migrationHistoryMismatch`, `.invalidArgument`),
    /// leaving the store closed. For a child store, `setup()` is allowed and harmless (migrations
    /// registered on a child throw `.invalidArgument`); after the child's `tearDown()` it starts a
    /// new, empty overlay over the parent's current state.
    public func setup() throws {
        // Already set up: return without waiting (also inside a write block, where waiting for a
        // concurrent tearDown() that waits for this block would deadlock).
        if try state.withLock({ s in
            if let f = s.failure { throw f }
            return s.backend != nil
        }) {
            return
        }
        // A tearDown() in progress still holds the engine's lock: wait for it, or the new open
        // would fail with `.locked` blaming "another LogDataStore".
        try lifecycle.withLock { _ in
            let needed = try state.withLock { s -> Bool in
                if let f = s.failure { throw f }
                return s.backend == nil
            }
            guard needed else { return }
            let backend = try makeBackend()
            let report: MigrationReport?
            let feed: DataStoreChangeFeed
            do {
                // Migrations first: their commits are part of the state observers start from.
                report = try applyMigrations(on: backend)
                feed = try makeFeed(for: backend)
            } catch {
                try? backend.close()
                throw error
            }
            state.withLock { s in
                s.backend = backend
                s.feed = feed
                s.migrationReport = report
            }
        }
    }

    func makeBackend() throws -> StoreBackend {
        switch kind {
        case .directory(let url):
            return .engine(try LogEngine.open(directory: url.path, fileSystem: POSIXFileSystem(), options: options))
        case .memory(let fs):
            return .engine(try LogEngine.open(directory: "/store", fileSystem: fs, options: options))
        case .custom(let path, let fs):
            return .engine(try LogEngine.open(directory: path, fileSystem: fs, options: options))
        case .child(let parent):
            return .child(try parent.makeChildStore(options: options))
        }
    }

    /// The engine at the root of this store's tree (for a child, its root parent's). Throws
    /// `.notOpen` or `.parentClosed` if a store on the way is not usable.
    package func rootEngine() throws -> LogEngine {
        if case .child(let parent) = kind {
            guard let parent = parent as? LogDataStore else {
                throw LogStoreError(.unsupported, "This child store's root is not a LogStore engine store.")
            }
            return try parent.rootEngine()
        }
        guard case .engine(let e) = try currentBackend() else { throw Self.notOpenError() }
        return e
    }

    static func notOpenError() -> LogStoreError {
        LogStoreError(.notOpen, "The store is not set up. Call setup() before using it (and not after tearDown()).")
    }

    func currentBackend() throws -> StoreBackend {
        try state.withLock { s in
            if let f = s.failure { throw f }
            guard let b = s.backend else { throw Self.notOpenError() }
            return b
        }
    }

    /// See ``DataStore/tearDown()``. Waits for queued asynchronous writes first.
    public func tearDown() throws {
        if let b = state.withLock({ $0.backend }), b.isWritingOnCurrentThread {
            throw LogStoreError(.reentrantWrite, "tearDown() was called from inside a write block of the same store.")
        }
        drainAsyncQueue()
        try lifecycle.withLock { _ in
            // The backend stays in `state` until it is closed (a closing engine refuses use with
            // `.notOpen`), so a `setup()` meanwhile returns at once instead of waiting here.
            defer {
                state.withLock { $0.backend = nil }
                // A later setup() opens a new engine, which knows only what its checkpoint had.
                indexRegistry.reset()
            }
            let (backend, children, feed) = state.withLock { s -> (StoreBackend?, [WeakChild], DataStoreChangeFeed?) in
                defer {
                    s.children = []
                    s.feed = nil
                }
                return (s.backend, s.children, s.feed)
            }
            // Observers complete before the backend closes (their reads would fail after).
            feed?.finish(throwing: nil)
            let closed = Self.parentClosedError()
            for c in children { c.store?.invalidate(closed) }
            try backend?.close()
        }
    }

    /// Makes this store (a child whose parent went away) and its children throw `error` from now
    /// on. Any thread.
    package func invalidate(_ error: LogStoreError) {
        let (backend, children, feed) = state.withLock { s -> (StoreBackend?, [WeakChild], DataStoreChangeFeed?) in
            if s.failure == nil { s.failure = error }
            defer { s.children = [] }
            return (s.backend, s.children, s.feed)
        }
        feed?.finish(throwing: error)
        backend?.invalidate(error)
        for c in children { c.store?.invalidate(error) }
    }

    /// Waits until every queued asynchronous write has run (unless called from the queue itself).
    package func drainAsyncQueue() {
        writeQueue.drain()
    }

    /// See ``DataStore/nuke()``. The store's history (its applied migrations, `StoreHistory`)
    /// stays: the items go, the schema they had does not change.
    public func nuke() throws {
        try writeTransaction { txn in
            for t in txn.itemTypes where !StoreHistory.isReserved(t) { try txn.deleteAll(type: t) }
        }
    }

    /// Makes every commit so far durable, whatever the durability mode (`fdatasync`).
    /// Throws `.notOpen`, `.storePoisoned`. A no-op for child stores.
    public func flush() throws {
        if try currentBackend().isWritingOnCurrentThread {
            throw LogStoreError(
                .reentrantWrite,
                "flush() was called from inside a write block of the same store; it would wait for itself. Flush after the block returns.")
        }
        drainAsyncQueue()
        try currentBackend().flush()
    }

    // MARK: Reading

    /// Runs `block` synchronously on the calling thread over one consistent snapshot of the
    /// committed state and returns its value. Never waits for writers. The accessor is valid only
    /// inside `block`. Throws `.notOpen` when the store is not set up, or the block's own error
    /// unchanged.
    @discardableResult
    public func read<T>(_ block: (any DataStoreReadAccessor) throws -> T) throws -> T {
        let backend = try currentBackend()
        let (view, health) = try backend.readAccess()
        let accessor = ReadAccessor(view: view, health: health, indexes: readIndexes, latest: backend)
        defer { accessor.isValid = false }
        return try block(accessor)
    }

    /// `read` for Swift concurrency: runs `block` over one consistent snapshot on a Dispatch global
    /// queue thread (off the caller's executor) and returns its value. Throws `.notOpen` when the
    /// store is not set up, or the block's own error unchanged.
    public func read<T: Sendable>(_ block: @escaping @Sendable (any DataStoreReadAccessor) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (cont: CheckedContinuation<T, any Error>) in
            DispatchQueue.global().async {
                cont.resume(with: Result { try self.read(block) })
            }
        }
    }

    // MARK: Writing

    /// Runs an engine transaction with the DataStore ordering rules (after queued async writes).
    @discardableResult
    func writeTransaction<T>(_ body: (EngineTransaction) throws -> T) throws -> T {
        let backend = try currentBackend()
        if backend.isWritingOnCurrentThread {
            throw LogStoreError(
                .reentrantWrite,
                "A write block called writeSync on the same store; it would wait for itself forever. Do the work in the outer block, or use writeAsync."
            )
        }
        drainAsyncQueue()
        return try backend.write(body)
    }

    /// Declares the secondary indexes of `types` now (``DataStoreItem/indexes``), building any
    /// that the store does not have yet, instead of at each type's first use. Call after
    /// ``setup()``, for example at launch, so that the first request of a type never waits for a
    /// build. Runs on the calling thread; building takes the store's writer lock and reads every
    /// item of the type once. A no-op for types declared already, and for a child store (its
    /// root store declares).
    ///
    /// Throws `.notOpen`, `.invalidArgument` for an index whose key path cannot be placed in the
    /// item's stored form, `.uniqueConstraintViolation` when stored items break a unique index
    /// (nothing changes then), and I/O or `.corruption` errors. Inside a write block of this store
    /// it builds under the writer lock the block holds.
    public func prepareIndexes(for types: any DataStoreItem.Type...) throws {
        if case .child = kind { return }
        for type in types { try prepare(type) }
    }

    func prepare<Item: DataStoreItem>(_ type: Item.Type) throws {
        try indexRegistry.ensure(Item.self, engine: { try self.rootEngine() })
    }

    /// What reads declare indexes with: the root engine; nil for a child store of another backend
    /// (a SQLite store's child plans over its own view, without engine indexes).
    var readIndexes: IndexDeclarer? {
        hasEngineRoot ? IndexDeclarer(registry: indexRegistry, store: self) : nil
    }

    /// Whether the root of this store's tree is a LogStore engine (not another backend).
    var hasEngineRoot: Bool {
        guard case .child(let parent) = kind else { return true }
        return (parent as? LogDataStore)?.hasEngineRoot ?? false
    }

    /// The accessor a write body gets for `txn`. A store writing to its own engine declares
    /// indexes with it (under the writer lock the body holds) and reads an engine snapshot; a
    /// child declares none (its merges are indexed by the parent's commit) and reads its
    /// parent's view, whose failure report it checks.
    func writeAccessor(_ txn: EngineTransaction) -> ReadWriteAccessor {
        if case .child = kind { return ReadWriteAccessor(txn: txn) }
        return ReadWriteAccessor(txn: txn, indexes: IndexDeclarer(registry: indexRegistry, store: self), baseIsEngine: true)
    }

    /// See ``DataStore/writeSync(_:)``.
    @discardableResult
    public func writeSync<T>(_ block: (any DataStoreReadWriteAccessor) throws -> T) throws -> T {
        try writeTransaction { txn in
            let accessor = self.writeAccessor(txn)
            defer { accessor.invalidate() }
            return try block(accessor)
        }
    }

    /// See ``DataStore/writeAsync(_:completion:)``. The completion runs on a Dispatch global queue.
    public func writeAsync(
        _ block: @escaping @Sendable (any DataStoreReadWriteAccessor) throws -> Void,
        completion: (@Sendable ((any Error)?) -> Void)?
    ) {
        writeQueue.enqueue(check: { _ = try currentBackend() }, queuedWrite(block), completion: completion)
    }

    /// See ``DataStore/write(_:)``. Queued with `writeAsync` blocks; resumes once durable.
    public func write<T: Sendable>(_ block: @escaping @Sendable (any DataStoreReadWriteAccessor) throws -> T) async throws -> T {
        try await writeQueue.value(check: { _ = try currentBackend() }, queuedWrite(block))
    }

    /// What the write queue runs for `block`: a write of the backend current when it runs (the
    /// store may have been torn down and set up again since it was queued).
    func queuedWrite<T: Sendable>(_ block: @escaping @Sendable (any DataStoreReadWriteAccessor) throws -> T)
        -> @Sendable (_ onDurable: @escaping @Sendable ((any Error)?) -> Void) throws -> T
    {
        { onDurable in
            let backend = try self.currentBackend()
            return try backend.write(
                { txn in
                    let accessor = self.writeAccessor(txn)
                    defer { accessor.invalidate() }
                    return try block(accessor)
                }, onDurable: onDurable)
        }
    }
}
