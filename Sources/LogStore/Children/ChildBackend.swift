package import LogStoreEngine
import Logging

/// The backend of a child store: copy-on-write changes (a `ChangeSet`) over an immutable view of
/// its parent, with values moved to a temporary ``SpillFile`` past
/// ``LogStoreOptions/childSpillThreshold``.
///
/// Nothing a child store holds is durable: a crash loses it by design. The merge protocol
/// (``beginMerge()``, ``endMerge(rebaseOnto:)``, ``rebase(onto:)``) is in `ChildStore+Merge.swift`.
///
/// Thread-safe. Write bodies are serialized on the caller's thread by `writer`, like the engine's;
/// `state` is read and replaced under its own lock, so readers never wait for a write body.
package final class ChildStore: Sendable {
    struct State: Sendable {
        var base: any RecordReader & Sendable
        var changes = ChangeSet<PersistentChangeStorage>()
        /// The file `changes` moved its values to, once it outgrew memory.
        var spillFile: SpillFile? = nil
        var sequence: UInt64 = 0
        var closed = false
        var failure: LogStoreError? = nil
        /// Told of every write and rebase, under this lock (so before a view shows it).
        var feed: DataStoreChangeFeed? = nil
        /// The operations of the child's only write since its base, as that write's transaction
        /// committed them (per type: deletes, then puts, each in key order; never a delete-all),
        /// not yet applied to `changes`, which is empty while this is set. A merge hands them to
        /// the parent as they are; the first reader, writer or spill applies them
        /// (``materialize()``). Nil otherwise (issue 11: a child written once and merged pays
        /// for no persistent overlay, and for no second walk and sort of one).
        var run: [RecordOperation]? = nil

        /// Applies `run` to `changes`. Throws the base's failure (an I/O error reading the
        /// parent's snapshot, which may have answered `contains` wrongly); `run` is kept then.
        mutating func materialize() throws {
            guard let ops = run else { return }
            var applied = changes
            applied.apply(ops, base: base)
            try (base as? any FallibleRecordReader)?.checkHealthy()
            changes = applied
            run = nil
        }

        /// Bytes of values the child holds in memory (read once per write, for the spill check).
        var valueBytes: Int {
            guard let run else { return changes.valueBytes }
            return run.reduce(0) { n, op in if case .put(_, _, let v) = op { n + v.count } else { n } }
        }
    }
    let state: Protected<State>
    let writer = WriterLock()
    let options: LogStoreOptions
    /// Where spill files go: the root store's directory, on its file system.
    package let spillDirectory: String
    package let fileSystem: any FileSystem

    /// A child over `base`. O(1): nothing is copied.
    package init(base: any RecordReader & Sendable, options: LogStoreOptions, spillDirectory: String, fileSystem: any FileSystem) {
        state = Protected(State(base: base))
        self.options = options
        self.spillDirectory = spillDirectory
        self.fileSystem = fileSystem
    }

    /// Publishes every later write and rebase to `feed` (the child's ``DataStoreChangeFeed``).
    func attach(_ feed: DataStoreChangeFeed) {
        state.withLock { $0.feed = feed }
    }

    func checkUsable(_ s: State) throws {
        if let f = s.failure { throw f }
        if s.closed { throw LogStoreError(.notOpen, "The child store was torn down. Make a new child with makeChildDataStore().") }
    }

    /// The child's current state. Throws `.notOpen` after close, `.parentClosed` once orphaned.
    func readView() throws -> ChildView {
        try state.withLock { s in
            try checkUsable(s)
            try s.materialize()
            return ChildView(base: s.base, changes: s.changes, sequence: s.sequence)
        }
    }

    /// Whether the calling thread is inside a write body of this child.
    var isWritingOnCurrentThread: Bool { writer.heldByCurrentThread }

    /// Runs `body` as one transaction of the child. Nothing is durable: returns once the change is
    /// in memory (or the spill file). Throws `.reentrantWrite`, `.notOpen`, `.parentClosed`, or
    /// the body's own error (then nothing changes).
    @discardableResult
    func write<T>(_ body: (EngineTransaction) throws -> T) throws -> T {
        try writer.acquire()
        defer { writer.release() }
        let view = try readView()
        let txn = EngineTransaction(base: view, limits: options)
        defer { txn.isValid = false }
        let result = try body(txn)
        txn.isValid = false
        guard txn.hasChanges else { return result }
        let ops = try txn.operationsToCommit()
        let needsSpill = try state.withLock { s -> Bool in
            try checkUsable(s)
            try s.materialize()
            let before = ChildView(base: s.base, changes: s.changes, sequence: s.sequence)
            if s.changes.isEmpty, !ops.contains(where: { if case .deleteAll = $0 { true } else { false } }) {
                // The first write since the base: kept as it is (see `State.run`).
                s.run = ops
            } else {
                var changes = s.changes
                changes.apply(ops, base: s.base)
                // A base that failed while the changes were applied (an I/O error reading the parent's
                // snapshot) may have answered `contains` wrongly: keep the old changes and fail.
                try (s.base as? any FallibleRecordReader)?.checkHealthy()
                s.changes = changes
            }
            s.sequence += 1
            s.feed?.publish([
                CommitChanges(
                    sequence: s.sequence, operations: ops,
                    keysBefore: { type in
                        CommitChanges.ClearedKeys(count: before.count(ofType: type), keys: { before.keys(ofType: type).sorted() })
                    })
            ])
            return s.valueBytes > options.childSpillThreshold
        }
        if needsSpill {
            // The change is already applied; a failed spill (a full disk) only means the values stay
            // in memory, so it must not turn a successful write into a reported failure.
            do { try spill() } catch {
                options.logger?.warning(
                    "child store could not spill to disk; keeping its changes in memory", metadata: ["error": "\(error)"])
            }
        }
        return result
    }

    /// Moves in-memory values to the spill file (created on first use). Caller holds the writer
    /// lock, so the changes cannot move under it.
    func spill() throws {
        var (changes, file) = try state.withLock { s in
            try s.materialize()
            return (s.changes, s.spillFile)
        }
        if file == nil { file = try SpillFile(directory: spillDirectory, fs: fileSystem) }
        guard let file else { return }
        try changes.moveValues(to: file)
        state.withLock { s in
            s.changes = changes
            s.spillFile = file
        }
    }

    /// Makes every later use throw `error` (the parent was torn down), and removes the spill file.
    func invalidate(_ error: LogStoreError) {
        state.withLock { s in
            if s.failure == nil { s.failure = error }
            s.spillFile?.remove()
        }
    }

    /// Discards the changes and removes the spill file. Idempotent.
    func close() {
        state.withLock { s in
            s.closed = true
            s.spillFile?.remove()
            s.spillFile = nil
            s.changes = ChangeSet<PersistentChangeStorage>()
            s.run = nil
        }
    }
}
