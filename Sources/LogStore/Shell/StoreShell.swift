import Dispatch
package import LogStoreEngine
import Synchronization

/// The one implementation of a store's life and of the DataStore rules every backend shares,
/// over a ``DataStoreBackend``: the public stores (`LogDataStore`, `SQLiteDataStore`,
/// `PostgresDataStore`, ``ChildDataStore``) are façades that forward to one of these.
///
/// It owns:
/// - the lifecycle: `setup()` opens a backend with the façade's opener and applies the registered
///   migrations before anyone can see it; `tearDown()` waits for queued writes, finishes the
///   change feed, invalidates the children and closes the backend; the "not set up" error;
/// - the write queue (`writeAsync` and the async `write`: one at a time, in the order queued) and
///   the rules that order synchronous writes after it;
/// - refusals of calls that would wait for themselves (a `writeSync`, `nuke()` or `merge` inside a
///   write block, a `tearDown()` inside a block);
/// - the child registry and merges (`StoreShell+Children.swift`).
///
/// Thread-safe: every method may be called from any thread. Reads never wait for the lifecycle
/// lock; `setup()` and `tearDown()` are serialized by it.
package final class StoreShell<Backend: DataStoreBackend>: Sendable {
    struct State: Sendable {
        /// The open backend; nil before `setup()`, after `tearDown()`, and once invalidated.
        var backend: Backend?
        /// The child stores made by this store, held weakly so that an unused child goes away.
        var children: [WeakChild] = []
        /// Set when a child store's parent was torn down: every later call throws it.
        var failure: LogStoreError?
        /// What the last `setup()` did with the migrations.
        var migrationReport: MigrationReport?
    }

    let state = Mutex(State())
    /// Held by `tearDown()` until the backend is closed, and by `setup()` while it opens one.
    let lifecycle = Mutex(())
    /// Runs `writeAsync` and async `write` blocks, one at a time, in the order they were queued.
    package let writeQueue: WriteQueue
    /// The options every backend takes.
    package let options: DataStoreOptions
    /// The migrations `setup()` applies; nil for a child store, which has none.
    package let migrations: DataStoreMigrations?
    /// Opens a new backend (the façade's: an engine, a SQLite file, an overlay of a parent).
    let open: @Sendable () throws -> Backend

    /// A shell that opens its backend with `open` at `setup()`. `label` names its write queue.
    package init(
        label: String, options: DataStoreOptions, migrations: DataStoreMigrations?, open: @escaping @Sendable () throws -> Backend
    ) {
        writeQueue = WriteQueue(label: label)
        self.options = options
        self.migrations = migrations
        self.open = open
    }

    deinit {
        let backend = state.withLock { $0.backend }
        backend?.changeFeed.finish(throwing: nil)
        try? backend?.close()
    }

    // MARK: Lifecycle

    /// The open backend. Throws `.notOpen` before `setup()` and after `tearDown()`, or the failure
    /// that invalidated the store (`.parentClosed`). O(1).
    package func currentBackend() throws -> Backend {
        try state.withLock { s in
            if let f = s.failure { throw f }
            guard let b = s.backend else { throw StoreErrors.notOpen() }
            return b
        }
    }

    /// See `DataStore.setup()`: opens a backend and applies the migrations the store has not
    /// applied yet, before any other call can see it; on their failure closes it again and
    /// throws. Returns at once when already set up (also inside a block of this store). Blocks
    /// the calling thread while a `tearDown()` is in progress.
    package func setup() throws {
        if try state.withLock({ s in
            if let f = s.failure { throw f }
            return s.backend != nil
        }) {
            return
        }
        // A tearDown() in progress may still hold the backend's files or locks: wait for it.
        try lifecycle.withLock { _ in
            let needed = try state.withLock { s -> Bool in
                if let f = s.failure { throw f }
                return s.backend == nil
            }
            guard needed else { return }
            let backend = try open()
            let report: MigrationReport?
            do {
                report = try migrations?.apply(to: backend, logger: options.logger)
            } catch {
                backend.changeFeed.finish(throwing: nil)
                try? backend.close()
                throw error
            }
            state.withLock { s in
                s.backend = backend
                s.migrationReport = report
            }
        }
    }

    /// See `DataStore.tearDown()`: waits for queued asynchronous writes, finishes the change feed
    /// (observers complete), makes the children throw `.parentClosed`, closes the backend.
    /// Idempotent. Throws `.reentrantWrite` inside a block of this store it would wait for, and
    /// the backend's errors of closing (the store is closed all the same).
    package func tearDown() throws {
        if let b = state.withLock({ $0.backend }), b.isInsideBlockOnCurrentThread { throw StoreErrors.reentrantTearDown() }
        writeQueue.drain()
        try lifecycle.withLock { _ in
            // The backend stays in `state` until it is closed (a closing backend refuses use with
            // `.notOpen`), so a `setup()` meanwhile returns at once instead of waiting here.
            defer {
                state.withLock { s in
                    s.backend = nil
                    s.migrationReport = nil
                }
            }
            // The children stay listed: a merge of one later finds it and says `.parentClosed`.
            let (backend, children) = state.withLock { s in (s.backend, s.children) }
            // Observers complete before the backend closes (their reads would fail after).
            backend?.changeFeed.finish(throwing: nil)
            let closed = StoreErrors.parentClosed()
            for c in children { c.store?.invalidate(closed) }
            try backend?.close()
        }
    }

    /// Makes this store (a child whose parent went away) and its children throw `error` from now
    /// on: its observers end with it, its backend is closed. Any thread.
    package func invalidate(_ error: LogStoreError) {
        let (backend, children) = state.withLock { s -> (Backend?, [WeakChild]) in
            if s.failure == nil { s.failure = error }
            defer { s.backend = nil }
            return (s.backend, s.children)
        }
        backend?.changeFeed.finish(throwing: error)
        for c in children { c.store?.invalidate(error) }
        try? backend?.close()
    }

    /// What the last successful `setup()` did with the migrations; nil before `setup()`, after
    /// `tearDown()`, and for a child store. A value; any thread.
    package var migrationReport: MigrationReport? {
        state.withLock { $0.backend == nil ? nil : $0.migrationReport }
    }

    /// See `DataStore.changeFeed()`. Throws `.notOpen`, `.parentClosed`. O(1), any thread.
    package func changeFeed() throws -> DataStoreChangeFeed { try currentBackend().changeFeed }

    // MARK: Reading

    /// See `DataStore.read(_:)`: the backend's read on the calling thread. Throws `.notOpen`, the
    /// backend's read errors, or the block's own error unchanged.
    package func read<T>(_ block: (any DataStoreReadAccessor) throws -> T) throws -> T {
        try currentBackend().read(block)
    }

    /// The async `read`: the same read, off the caller's executor (the backend says where).
    package func read<T: Sendable>(_ block: @escaping @Sendable (any DataStoreReadAccessor) throws -> T) async throws -> T {
        let backend = try currentBackend()
        return try await backend.runDetached { try self.read(block) }
    }

    // MARK: Writing

    /// The backend of a write that runs now on the calling thread: the writes queued before it
    /// have run. Throws `.notOpen`, and `.reentrantWrite` (naming `what`) inside a write block of
    /// this store, where waiting for the queue or the writer would wait for itself.
    package func backendForWriting(_ what: String = "writeSync") throws -> Backend {
        let backend = try currentBackend()
        if backend.isWritingOnCurrentThread { throw StoreErrors.reentrantWrite(what) }
        writeQueue.drain()
        return backend
    }

    /// See `DataStore.writeSync(_:)`.
    package func writeSync<T>(_ block: (any DataStoreReadWriteAccessor) throws -> T) throws -> T {
        try backendForWriting().write(block)
    }

    /// See `DataStore.writeAsync(_:completion:)`. The completion runs on a Dispatch global queue.
    package func writeAsync(
        _ block: @escaping @Sendable (any DataStoreReadWriteAccessor) throws -> Void, completion: (@Sendable ((any Error)?) -> Void)?
    ) {
        writeQueue.enqueue(check: { _ = try currentBackend() }, queuedWrite(block), completion: completion)
    }

    /// See `DataStore.write(_:)`: queued with `writeAsync` blocks; resumes once durable.
    package func write<T: Sendable>(_ block: @escaping @Sendable (any DataStoreReadWriteAccessor) throws -> T) async throws -> T {
        try await writeQueue.value(check: { _ = try currentBackend() }, queuedWrite(block))
    }

    /// What the write queue runs for `block`: a write of the backend current when it runs (the
    /// store may have been torn down and set up again since it was queued).
    func queuedWrite<T: Sendable>(_ block: @escaping @Sendable (any DataStoreReadWriteAccessor) throws -> T)
        -> @Sendable (_ onDurable: @escaping @Sendable ((any Error)?) -> Void) throws -> T
    {
        { onDurable in try self.currentBackend().write(block, onDurable: onDurable) }
    }

    /// See `DataStore.nuke()`: every item of every type deleted in one durable write, after the
    /// queued writes. The store's history stays. Throws `.notOpen`, `.reentrantWrite` inside a
    /// write block, and the backend's write errors.
    package func nuke() throws {
        try backendForWriting("nuke()").deleteEverything()
    }
}

/// A child store a store made, held weakly so that an unused child goes away.
final class WeakChild: Sendable {
    weak let store: ChildDataStore?
    init(_ store: ChildDataStore) { self.store = store }
}
