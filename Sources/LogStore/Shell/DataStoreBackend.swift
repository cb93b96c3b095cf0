import Dispatch
package import LogStoreEngine

/// One opened store of one kind, as the store shell (``StoreShell``) runs it: the LogStore engine
/// (``EngineBackend``), a child store's overlay (``ChildBackend``), a SQLite file or a PostgreSQL
/// schema. The shell owns everything the kinds share (the lifecycle, the write queue and its
/// ordering rules, the async twins, migrations, the child registry and merges, the errors of a
/// store that is not set up); a backend only reads, writes and closes.
///
/// Every read a backend hands out throws its failures, counts and membership included
/// (``RecordReader``): nothing reports a failure sideways. A backend is made by its façade's
/// opener when `setup()` runs, used from any thread until ``close()``, and never reopened (the next
/// `setup()` makes a new one). Package API.
package protocol DataStoreBackend: MigrationTarget, AnyObject, Sendable {
    /// Runs `block` on the calling thread over one consistent snapshot of the committed state and
    /// returns its value. Never waits for writers. Throws the backend's read errors, or the block's
    /// own error unchanged.
    func read<T>(_ block: (any DataStoreReadAccessor) throws -> T) throws -> T

    /// Runs `block` on the calling thread as one write transaction, serialized with every other
    /// write, and returns its value once the commit is durable (under the backend's durability).
    /// If the block throws, nothing is committed and its error is rethrown unchanged.
    func write<T>(_ block: (any DataStoreReadWriteAccessor) throws -> T) throws -> T

    /// ``write(_:)`` that returns once committed and calls `onDurable` once the commit is durable
    /// (or with the error), before or after it returns, on any thread. Used by the write queue, so
    /// that queued writes share syncs.
    func write<T>(_ block: (any DataStoreReadWriteAccessor) throws -> T, onDurable: @escaping @Sendable ((any Error)?) -> Void) throws
        -> T

    /// Runs one durable write transaction that commits the operations `plan` returns (nothing when
    /// it returns nil), for a merge of a child store. `plan` gets a test, answered inside this
    /// transaction, of whether an item changed after a child's base (a snapshot this backend made
    /// with ``childBase()``). A backend whose transactions retry calls `plan` once per attempt.
    /// Throws what `plan` throws (nothing is committed then) and the backend's commit errors.
    func merge(_ plan: (_ changedSince: ChildMerge.ChangedSince) throws -> [RecordOperation]?) throws

    /// Deletes every item of every type (not the store's own records, ``StoreHistory``) as one
    /// durable write. Throws the backend's write errors.
    func deleteEverything() throws

    /// An immutable snapshot of the committed state, usable from any thread for as long as it is
    /// held: the base of a new child store. Throws the backend's read errors.
    func childBase() throws -> any RecordReader & Sendable

    /// The limits every write is checked against; a child store of this backend checks the same.
    var limits: RecordLimits { get }

    /// Where the child stores of this backend move their changes once they outgrow memory.
    var spillLocation: SpillLocation { get }

    /// The backend's commit stream, made when it opened and finished when it closes.
    var changeFeed: DataStoreChangeFeed { get }

    /// Whether the calling thread is inside a write block of this backend (where another write
    /// would wait for itself).
    var isWritingOnCurrentThread: Bool { get }

    /// Whether the calling thread is inside a block that `tearDown()` would wait for.
    var isInsideBlockOnCurrentThread: Bool { get }

    /// Runs `work` off the caller's executor, for the async `read`: on a Dispatch global queue,
    /// or on a pool of the backend's own (PostgreSQL's, whose reads block a thread on the network).
    func runDetached<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T

    /// Closes the backend: waits for writes in progress, releases files, connections and locks.
    /// Idempotent. The change feed is finished first, by the shell.
    func close() throws
}

/// Where a child store spills: a directory on a file system.
package struct SpillLocation: Sendable {
    /// The directory spill files go to (created when needed).
    package var directory: String
    /// The file system of that directory.
    package var fileSystem: any FileSystem
    /// The cipher of an encrypted store: spill files are sealed, each under a random key of its
    /// own that is never written. Nil: spill files are clear.
    package var cipher: (any StoreCipher)?

    /// A location in `directory` on `fileSystem`, sealing spill files with `cipher` when given.
    package init(directory: String, fileSystem: any FileSystem, cipher: (any StoreCipher)? = nil) {
        self.directory = directory
        self.fileSystem = fileSystem
        self.cipher = cipher
    }
}

extension DataStoreBackend {
    /// See ``DataStoreBackend/runDetached(_:)``: a Dispatch global queue thread.
    package func runDetached<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (cont: CheckedContinuation<T, any Error>) in
            DispatchQueue.global().async { cont.resume(with: Result { try work() }) }
        }
    }

    /// See ``DataStoreBackend/isInsideBlockOnCurrentThread``: inside a write block.
    package var isInsideBlockOnCurrentThread: Bool { isWritingOnCurrentThread }
}
