import Foundation
import GRDB
import LogStore
import LogStoreSQL
import Synchronization

/// What a set-up `SQLiteDataStore` holds between `setup()` and `tearDown()`, and the backend its
/// store shell runs on (`SQLiteSession+Backend.swift`): the connection pool, the file lock, the
/// item types' tables, the number of the last commit, and the extra read-only connections of
/// nested reads and child stores.
///
/// Thread-safe: every mutable part is behind its own mutex; `sequence` and the table map change
/// only inside write transactions (serialized by the pool's writer).
final class SQLiteSession: Sendable {
    let path: String
    let options: DataStoreOptions
    /// Which threads are inside read and write blocks (reentrancy checks).
    let marks = ThreadMarks()
    let pool: DatabasePool
    let lock: SQLiteFileLock
    /// Item type -> table, for every type whose table was committed. Entries are never removed
    /// (tables are never dropped), so a reader may trust an entry whose table its snapshot has.
    let tables: Mutex<[String: String]>
    /// The number of the last commit (0 for an empty store), advanced once the commit reached
    /// ``feed``.
    let sequence: SQLitePublishedSequence
    /// Item types whose declared indexes a committed write of this session created or checked.
    let declaredIndexes = Mutex<Set<String>>([])
    /// Idle read-only connections for reads nested in reads on one thread.
    let spares = Mutex<[DatabaseQueue]>([])
    /// The open snapshots under child stores, closed at tearDown.
    let snapshots = Mutex<[WeakSnapshot]>([])
    /// The commit stream observation and change tracking read (``SQLiteDataStore/changeFeed()``):
    /// every commit is published by the writer right after it commits, still holding the writer
    /// connection, so commits are published in order and never two at once.
    let feed: DataStoreChangeFeed

    final class WeakSnapshot: Sendable {
        weak let reader: SQLiteSnapshotReader?
        init(_ r: SQLiteSnapshotReader) { reader = r }
    }

    init(path: String, options: DataStoreOptions, pool: DatabasePool, lock: SQLiteFileLock, opened: SQLiteSchema.Opened) {
        self.path = path
        self.options = options
        self.pool = pool
        self.lock = lock
        tables = Mutex(opened.tables)
        sequence = SQLitePublishedSequence(opened.sequence)
        // The feed's snapshots are new held read transactions of this session (a weak reference:
        // the session owns the feed).
        let this = WeakSession()
        feed = DataStoreChangeFeed(
            storeIdentity: opened.storeID.map { "sqlite-" + $0 }, sequence: opened.sequence, retention: options.changeHistory,
            recordsWrites: true,
            snapshot: {
                guard let session = this.session else {
                    throw LogStoreError(.notOpen, "The SQLite store was torn down. Call setup() again before observing it.")
                }
                let reader = try session.openSnapshot()
                // Rule 2 of the feed: a snapshot may hold a commit only once it was published
                // (the writer publishes right after COMMIT, which readers see at once).
                guard session.sequence.wait(for: reader.sequence, abandoned: { session.feed.isFinished }) else {
                    throw LogStoreError(.notOpen, "The SQLite store was torn down while a snapshot waited for its commit.")
                }
                return RecordReaderSnapshot(reader)
            })
        this.session = self
    }

    /// A held read transaction of the store's state now (``SQLiteSnapshotReader``), closed with the
    /// session at tearDown if still open. Throws the mapped SQLite error.
    func openSnapshot() throws -> SQLiteSnapshotReader {
        let reader = try SQLiteSnapshotReader(session: self)
        snapshots.withLock { s in
            s.removeAll { $0.reader == nil }
            s.append(WeakSnapshot(reader))
        }
        return reader
    }

    /// A weak reference to a session, set once after the session's init. The lock justifies
    /// `@unchecked Sendable`.
    final class WeakSession: @unchecked Sendable {
        private let lock = Mutex(())
        private weak var _session: SQLiteSession?
        var session: SQLiteSession? {
            get { lock.withLock { _ in _session } }
            set { lock.withLock { _ in _session = newValue } }
        }
    }

    /// Where child stores of this store spill their changes: `<file>-children/`, next to the
    /// database (emptied at setup, when no child can be alive).
    var spillDirectory: String { path + "-children" }

    /// A read-only connection to the store's file, outside the pool. Throws the mapped error.
    func makeReadOnlyConnection() throws -> DatabaseQueue {
        var config = Configuration()
        config.readonly = true
        config.label = "LogStoreSQLite.snapshot"
        config.allowsUnsafeTransactions = true
        config.busyMode = .timeout(10)
        do {
            return try DatabaseQueue(path: path, configuration: config)
        } catch {
            throw SQLiteErrors.map(error, path: path)
        }
    }

    /// Runs `body` with a spare read-only connection (reads nested in reads: GRDB's pool refuses
    /// a second read from the thread that holds one). The connection goes back to the spares.
    func withSpareConnection<T>(_ body: (DatabaseQueue) throws -> T) throws -> T {
        let spare = try spares.withLock { $0.popLast() } ?? makeReadOnlyConnection()
        defer { spares.withLock { $0.append(spare) } }
        return try body(spare)
    }

    /// Closes what the session opened besides the pool: spare connections, child snapshots.
    func closeExtras() {
        let (spare, snaps) = (
            spares.withLock { s in
                defer { s = [] }
                return s
            },
            snapshots.withLock { s in
                defer { s = [] }
                return s
            }
        )
        for q in spare { try? q.close() }
        for s in snaps { s.reader?.close() }
    }
}
