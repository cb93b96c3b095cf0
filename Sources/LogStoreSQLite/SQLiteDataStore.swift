public import Foundation
import GRDB
public import LogStore
import LogStoreEngine
import LogStoreSQL
import Synchronization

/// The DataStore contract on SQLite: a `DataStore` in one SQLite file, through GRDB's
/// `DatabasePool` in WAL mode, for apps that want SQLite's file and tools, or to move their data
/// between SQLite and LogStore with `DataStoreMigrator` (the "Choosing and Switching Backends"
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
/// Options: `durability` (`.synchronous`: `PRAGMA synchronous = FULL`, each commit is synced;
/// `.buffered`: `NORMAL`, the WAL is synced at checkpoints, a power loss may lose the last
/// commits but never part of one; `.none`: `OFF`), the size limits (`maxItemSize`,
/// `maxKeySize`, `maxTypeNameSize`) and `childSpillThreshold`. The engine's options (segments,
/// frames, compaction, checkpoints) do not apply.
///
/// Thread safety: use one instance from any number of threads and tasks. One instance per file:
/// a second `SQLiteDataStore` on the same file, in this process or another, fails `setup()` with
/// `.locked` (a `<file>-lock` file is held; other SQLite programs are not stopped by it).
public final class SQLiteDataStore: MigratingDataStore, ChildStoreParent {
    /// The database file.
    public let path: String
    /// The options the store was created with.
    public let options: LogStoreOptions

    struct State: Sendable {
        var session: SQLiteSession?
        var children: [LogDataStore.WeakChild] = []
        var migrationReport: MigrationReport?
    }
    let state = Mutex(State())
    /// Held by `tearDown()` until the session is closed, and by `setup()` while it opens one.
    let lifecycle = Mutex(())
    /// Runs `writeAsync` and async `write` blocks in the order they were queued.
    let writeQueue = WriteQueue(label: "LogStoreSQLite.writeAsync")
    /// Which threads are inside read and write blocks (reentrancy checks).
    let marks = _ThreadMarks()
    /// The store's migrations: register them before ``setup()``, which applies those the file has
    /// not applied yet, each in one transaction with its record in the store's history (see
    /// ``DataStoreMigrations`` and the "Migrations" article). Any thread.
    public let migrations = DataStoreMigrations()

    /// What the last successful ``setup()`` did with ``migrations``; nil before `setup()` and
    /// after `tearDown()`. A value; any thread.
    public var migrationReport: MigrationReport? { state.withLock { $0.session == nil ? nil : $0.migrationReport } }

    /// A store in the SQLite file at `path` (created by ``setup()`` if missing, with its
    /// directory). Does no I/O until `setup()`.
    public init(path: String, options: LogStoreOptions = LogStoreOptions()) {
        self.path = path
        self.options = options
    }

    /// A store in the SQLite file at `url`. See ``init(path:options:)``.
    public convenience init(url: URL, options: LogStoreOptions = LogStoreOptions()) {
        self.init(path: url.path, options: options)
    }

    deinit {
        let session = state.withLock { $0.session }
        if let session {
            session.feed.finish(throwing: nil)
            session.closeExtras()
            try? session.pool.close()
            session.lock.unlock()
        }
    }

    static func notOpenError() -> LogStoreError {
        LogStoreError(.notOpen, "The store is not set up. Call setup() before using it (and not after tearDown()).")
    }

    func currentSession() throws -> SQLiteSession {
        guard let s = state.withLock({ $0.session }) else { throw Self.notOpenError() }
        return s
    }

    var isWritingOnCurrentThread: Bool { marks.isWritingOnCurrentThread }

    // MARK: Lifecycle

    /// Creates or opens the store: takes its lock, opens the pool in WAL mode, checks (or
    /// creates) the schema, then applies the registered ``migrations`` the store has not applied.
    /// Idempotent; blocks the caller. Throws `.locked` when another store has the file open,
    /// `.notAStore` for a file that is not a SQLite database or is another application's,
    /// `.unsupportedFormatVersion`, `.corruption`, `.permissionDenied`, `.io`, and the migrations'
    /// errors (`.migrationFailed` naming the step, `.unknownMigrations`,
    /// `.migrationHistoryMismatch`): then the store is closed again, the steps before the failing
    /// one applied.
    public func setup() throws {
        if state.withLock({ $0.session != nil }) { return }
        try lifecycle.withLock { _ in
            if state.withLock({ $0.session != nil }) { return }
            let session = try open()
            state.withLock { $0.session = session }
            do {
                // Before setup() returns: the app never sees the store half migrated.
                let report = try migrations.apply(to: self, logger: options.logger)
                state.withLock { $0.migrationReport = report }
            } catch {
                try? closeLocked()
                throw error
            }
        }
    }

    func open() throws -> SQLiteSession {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty && !FileManager.default.fileExists(atPath: directory) {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                throw LogStoreError(
                    .permissionDenied,
                    "Cannot create the store's directory: \(error.localizedDescription). Check that its parent is writable.",
                    path: directory, underlying: error)
            }
        }
        let lock = try SQLiteFileLock(databasePath: path)
        do {
            var config = Configuration()
            config.label = "LogStoreSQLite"
            config.busyMode = .timeout(10)
            let pool = try DatabasePool(path: path, configuration: config)
            do {
                let synchronous: String
                switch options.durability {
                case .synchronous: synchronous = "FULL"
                case .buffered: synchronous = "NORMAL"
                default: synchronous = "OFF"
                }
                // After the pool's own set-up, which sets NORMAL on the writer when it turns WAL on.
                let opened = try pool.writeWithoutTransaction { db -> SQLiteSchema.Opened in
                    try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
                    return try SQLiteSchema.open(db, path: path)
                }
                let session = SQLiteSession(path: path, options: options, pool: pool, lock: lock, opened: opened)
                // Spill files of children of an earlier run (none can be alive: we hold the lock).
                try? FileManager.default.removeItem(atPath: session.spillDirectory)
                return session
            } catch {
                try? pool.close()
                throw error
            }
        } catch {
            lock.unlock()
            throw SQLiteErrors.map(error, path: path)
        }
    }

    /// Finishes queued asynchronous writes, closes the connections and releases the lock. Data
    /// stays. Idempotent. Child stores of this store throw `.parentClosed` afterwards. Throws
    /// `.reentrantWrite` when called from inside a read or write block of this store (it would
    /// wait for that block).
    public func tearDown() throws {
        if marks.isInsideBlockOnCurrentThread { throw _ThreadMarks.reentrantTearDownError() }
        writeQueue.drain()
        try lifecycle.withLock { _ in try closeLocked() }
    }

    /// Closes the session, if any: the work of ``tearDown()``, run while holding `lifecycle`.
    func closeLocked() throws {
        let (session, children) = state.withLock { s -> (SQLiteSession?, [LogDataStore.WeakChild]) in
            defer {
                s.session = nil
                s.children = []
                s.migrationReport = nil
            }
            return (s.session, s.children)
        }
        let closed = LogDataStore.parentClosedError()
        for c in children { c.store?.invalidate(closed) }
        guard let session else { return }
        session.feed.finish(throwing: nil)
        session.closeExtras()
        defer { session.lock.unlock() }
        // Everything into the database file, the WAL emptied: a closed store is one file (which
        // a copy of the file alone keeps whole). SQLite checkpoints when its last connection
        // closes, but only if that one may write, and the pool may close a read-only one last.
        // A failure leaves the WAL to the next open's recovery: nothing is lost.
        _ = try? session.pool.writeWithoutTransaction { try $0.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        do {
            try session.pool.close()
        } catch {
            throw SQLiteErrors.map(error, path: path)
        }
    }

    /// Deletes every item of every type as one committed, durable write. The store stays usable.
    /// Throws `.notOpen`, `.reentrantWrite` inside a write block, and I/O errors.
    public func nuke() throws {
        try writeSync { accessor in
            guard let a = accessor as? SQLiteWriteAccessor else { return }
            try a.deleteEverything()
        }
    }

    /// See `DataStore.changeFeed()`: the feed of this opening, which every commit of this store
    /// (writes, merges, nuke) is published to right after it commits. Throws `.notOpen` before
    /// `setup()` and after `tearDown()`. O(1), any thread.
    public func changeFeed() throws -> DataStoreChangeFeed {
        try currentSession().feed
    }

    // MARK: Reading

    /// Runs `block` synchronously on the calling thread over one consistent snapshot (a WAL read
    /// transaction, which never waits for writers) and returns its value. Throws `.notOpen`, the
    /// mapped SQLite error of starting the transaction, or the block's own error unchanged.
    @discardableResult
    public func read<T>(_ block: (any DataStoreReadAccessor) throws -> T) throws -> T {
        let session = try currentSession()
        return try marks.reading { depth in try read(block, session: session, depth: depth) }
    }

    /// ``read(_:)-(DataStoreReadAccessor)`` at nesting `depth` of the calling thread.
    func read<T>(_ block: (any DataStoreReadAccessor) throws -> T, session: SQLiteSession, depth: Int) throws -> T {
        var blockError: (any Error)? = nil
        func run(_ db: Database) throws -> T {
            let accessor = SQLiteReadAccessor(db: db, session: session)
            defer { accessor.isValid = false }
            do {
                return try block(accessor)
            } catch {
                blockError = error
                throw error
            }
        }
        do {
            if depth == 1 {
                return try session.pool.read(run)
            }
            // A read nested in a read on this thread takes its own snapshot, on a spare connection.
            return try session.withSpareConnection { try $0.read(run) }
        } catch {
            // The block's own error, unchanged (GRDB rethrows it after ending the transaction).
            if let blockError { throw blockError }
            throw SQLiteErrors.map(error, path: path)
        }
    }

    /// `read` for Swift concurrency: runs `block` over one snapshot on a Dispatch global queue
    /// thread (off the caller's executor). Throws as ``read(_:)-(DataStoreReadAccessor)``.
    public func read<T: Sendable>(_ block: @escaping @Sendable (any DataStoreReadAccessor) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (cont: CheckedContinuation<T, any Error>) in
            DispatchQueue.global().async {
                cont.resume(with: Result { try self.read(block) })
            }
        }
    }

    // MARK: Writing

    /// Runs `body` as one write transaction (`BEGIN IMMEDIATE` ... `COMMIT`) on the calling
    /// thread and returns its value once committed (and, with `.synchronous` durability, synced).
    /// Throws `.reentrantWrite` inside a write block of this store, `.notOpen`, the mapped SQLite
    /// error of the commit (`.diskFull`: rolled back, nothing committed lost), or `body`'s error
    /// unchanged (rolled back).
    func transaction<T>(_ body: (SQLiteWriteAccessor) throws -> T) throws -> T {
        let session = try currentSession()
        if isWritingOnCurrentThread { throw _ThreadMarks.reentrantWriteError() }
        var blockError: (any Error)? = nil
        var result: T? = nil
        do {
            try session.pool.writeWithoutTransaction { db in
                try marks.writing {
                    var created: [String: String] = [:]
                    var declared: Set<String> = []
                    var committed: UInt64? = nil
                    var changes: [String: CommitChanges.TypeChanges] = [:]
                    try db.inTransaction(.immediate) {
                        let sequence = session.sequence.current + 1
                        let accessor = SQLiteWriteAccessor(db: db, session: session, sequence: sequence)
                        defer { accessor.isValid = false }
                        do {
                            result = try body(accessor)
                        } catch {
                            blockError = error
                            throw error
                        }
                        accessor.isValid = false
                        declared = accessor.declaredIndexes
                        if accessor.changed {
                            try SQLiteStatement(
                                db, "UPDATE \(SQLiteSchema.meta) SET value = ? WHERE key = 'sequence'", [.integer(Int64(sequence))],
                                path: path
                            ).execute()
                            committed = sequence
                            created = accessor.createdTables
                            changes = accessor.changes
                        }
                        return .commit
                    }
                    if let committed {
                        if !created.isEmpty { session.tables.withLock { $0.merge(created) { a, _ in a } } }
                        // Still holding the writer: commits reach the feed in order, one at a time.
                        // Readers may see the commit a moment before this (SQLite shows it at COMMIT);
                        // the feed's snapshots wait for `sequence` to reach it (SQLiteSession).
                        session.feed.publish([CommitChanges(sequence: committed, types: changes)])
                        session.sequence.advance(to: committed)
                    }
                    if !declared.isEmpty { session.declaredIndexes.withLock { $0.formUnion(declared) } }
                }
            }
        } catch {
            // The block's own error, unchanged (GRDB rethrows it after rolling back).
            if let blockError { throw blockError }
            throw SQLiteErrors.map(error, path: path)
        }
        guard let result else { throw LogStoreError(.io, "The write transaction finished without a result.", path: path) }
        return result
    }

    /// Runs `block` on the calling thread, serialized with every other write, and commits its
    /// changes atomically; returns once committed (durable under ``options``' durability). Waits
    /// first for the asynchronous writes queued before it. If the block throws, nothing is
    /// committed and its error is rethrown unchanged. Throws `.reentrantWrite` inside a write
    /// block of this store, `.notOpen`, and the mapped SQLite errors.
    @discardableResult
    public func writeSync<T>(_ block: (any DataStoreReadWriteAccessor) throws -> T) throws -> T {
        _ = try currentSession()
        if isWritingOnCurrentThread { throw _ThreadMarks.reentrantWriteError() }
        writeQueue.drain()
        return try transaction { try block($0) }
    }

    /// Queues `block` and returns at once; it runs off the calling thread, after the writes
    /// queued before it. `completion` (on a Dispatch global queue) gets nil once committed, or the
    /// error (the block's own unchanged; `.notOpen` when the store is not set up).
    public func writeAsync(
        _ block: @escaping @Sendable (any DataStoreReadWriteAccessor) throws -> Void,
        completion: (@Sendable ((any Error)?) -> Void)?
    ) {
        writeQueue.enqueue(
            check: { _ = try currentSession() }, durableTransaction: { try self.transaction { try block($0) } }, completion: completion)
    }

    /// `writeSync` for Swift concurrency: queued with `writeAsync` blocks; resumes once committed.
    public func write<T: Sendable>(_ block: @escaping @Sendable (any DataStoreReadWriteAccessor) throws -> T) async throws -> T {
        try await writeQueue.value(check: { _ = try currentSession() }, durableTransaction: { try self.transaction { try block($0) } })
    }
}
