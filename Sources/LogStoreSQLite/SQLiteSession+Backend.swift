import Foundation
import GRDB
import LogStore
import LogStoreEngine
import LogStoreSQL

// SQLiteSession as the store shell's backend: what `SQLiteDataStore` runs on between `setup()`
// and `tearDown()`. Reads are WAL read transactions of the pool (a read nested in a read on one
// thread takes a spare connection); writes are `BEGIN IMMEDIATE` transactions of the pool's
// writer, published to the change feed while the writer is still held.

extension SQLiteSession: TransactionalBackend {
    /// Opens the store at `path`: creates its directory, takes its lock, opens the pool in WAL
    /// mode, sets the durability's `PRAGMA synchronous`, checks (or creates) the schema, and
    /// removes spill files of an earlier run's children. Throws `.locked`, `.notAStore`,
    /// `.unsupportedFormatVersion`, `.corruption`, `.permissionDenied`, `.io`.
    static func open(path: String, options: DataStoreOptions) throws -> SQLiteSession {
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

    /// See `DataStoreBackend.limits`: the options'.
    var limits: RecordLimits { options.limits }

    /// See `DataStoreBackend.spillLocation`: `<file>-children/`, next to the database.
    var spillLocation: SpillLocation { SpillLocation(directory: spillDirectory, fileSystem: POSIXFileSystem()) }

    /// See `DataStoreBackend.changeFeed`.
    var changeFeed: DataStoreChangeFeed { feed }

    /// See `DataStoreBackend.isWritingOnCurrentThread`.
    var isWritingOnCurrentThread: Bool { marks.isWritingOnCurrentThread }

    /// See `DataStoreBackend.isInsideBlockOnCurrentThread`: a read or a write block (both hold a
    /// connection that closing the pool waits for).
    var isInsideBlockOnCurrentThread: Bool { marks.isInsideBlockOnCurrentThread }

    /// See `DataStoreBackend.read(_:)`: a WAL read transaction, which never waits for writers. A
    /// read nested in a read on this thread takes its own snapshot, on a spare connection. Throws
    /// the mapped SQLite error of starting the transaction, or the block's own error unchanged.
    func read<T>(_ block: (any DataStoreReadAccessor) throws -> T) throws -> T {
        try marks.reading { depth in
            var blockError: (any Error)? = nil
            func run(_ db: Database) throws -> T {
                let accessor = SQLiteReadAccessor(db: db, session: self)
                defer { accessor.isValid = false }
                do {
                    return try block(accessor)
                } catch {
                    blockError = error
                    throw error
                }
            }
            do {
                if depth == 1 { return try pool.read(run) }
                return try withSpareConnection { try $0.read(run) }
            } catch {
                // The block's own error, unchanged (GRDB rethrows it after ending the transaction).
                if let blockError { throw blockError }
                throw SQLiteErrors.map(error, path: path)
            }
        }
    }

    /// See `DataStoreBackend.childBase()`: a held read transaction (``openSnapshot()``).
    func childBase() throws -> any RecordReader & Sendable { try openSnapshot() }

    /// See `DataStoreBackend.close()`: closes spare connections and child snapshots, checkpoints
    /// the WAL into the database file, closes the pool and releases the lock.
    func close() throws {
        closeExtras()
        defer { lock.unlock() }
        // Everything into the database file, the WAL emptied: a closed store is one file (which
        // a copy of the file alone keeps whole). SQLite checkpoints when its last connection
        // closes, but only if that one may write, and the pool may close a read-only one last.
        // A failure leaves the WAL to the next open's recovery: nothing is lost.
        _ = try? pool.writeWithoutTransaction { try $0.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        do {
            try pool.close()
        } catch {
            throw SQLiteErrors.map(error, path: path)
        }
    }

    /// Runs `body` as one write transaction (`BEGIN IMMEDIATE` ... `COMMIT`) on the calling
    /// thread and returns its value once committed (and, with `.synchronous` durability, synced).
    /// Throws `.reentrantWrite` inside a write block of this store, the mapped SQLite error of the
    /// commit (`.diskFull`: rolled back, nothing committed lost), or `body`'s error unchanged
    /// (rolled back).
    func transaction<T>(_ body: (SQLiteWriteAccessor) throws -> T) throws -> T {
        if isWritingOnCurrentThread { throw StoreErrors.reentrantWrite() }
        var blockError: (any Error)? = nil
        var result: T? = nil
        do {
            try pool.writeWithoutTransaction { db in
                try marks.writing {
                    var created: [String: String] = [:]
                    var declared: Set<String> = []
                    var committed: UInt64? = nil
                    var changes: [String: CommitChanges.TypeChanges] = [:]
                    try db.inTransaction(.immediate) {
                        let sequence = self.sequence.current + 1
                        let accessor = SQLiteWriteAccessor(db: db, session: self, sequence: sequence)
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
                        if !created.isEmpty { tables.withLock { $0.merge(created) { a, _ in a } } }
                        // Still holding the writer: commits reach the feed in order, one at a time.
                        // Readers may see the commit a moment before this (SQLite shows it at
                        // COMMIT); the feed's snapshots wait for `sequence` to reach it.
                        feed.publish([CommitChanges(sequence: committed, types: changes)])
                        self.sequence.advance(to: committed)
                    }
                    if !declared.isEmpty { declaredIndexes.withLock { $0.formUnion(declared) } }
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
}
