import Foundation
package import LogStoreEngine
import Logging

/// The backend of a child store (``ChildDataStore``): copy-on-write changes (a `ChangeSet`) over
/// an immutable view of its parent (what the parent's backend made with
/// ``DataStoreBackend/childBase()``), with values moved to a temporary ``SpillFile`` past
/// ``DataStoreOptions/childSpillThreshold``.
///
/// Nothing a child store holds is durable: a crash loses it by design. The merge protocol
/// (``beginMerge()``, ``endMerge(rebaseOnto:)``, ``rebase(onto:)``) is in
/// `ChildBackend+Merge.swift`; as a parent of its own children it merges in
/// ``merge(_:)``.
///
/// Thread-safe. Write bodies are serialized on the caller's thread by `writer`; `state` is read
/// and replaced under its own lock, so readers never wait for a write body.
package final class ChildBackend: DataStoreBackend {
    struct State: Sendable {
        var base: any RecordReader & Sendable
        var changes = ChangeSet<PersistentChangeStorage>()
        /// The file `changes` moved its values to, once it outgrew memory.
        var spillFile: SpillFile? = nil
        var sequence: UInt64 = 0
        var closed = false
        /// The operations of the child's only write since its base, as that write's transaction
        /// committed them (per type: deletes, then puts, each in key order; never a delete-all),
        /// not yet applied to `changes`, which is empty while this is set. A merge hands them to
        /// the parent as they are; the first reader, writer or spill applies them
        /// (``materialize()``). Nil otherwise: a child written once and merged pays for no
        /// persistent overlay, nor for a second walk and sort of one.
        var run: [RecordOperation]? = nil

        /// Applies `run` to `changes`. Throws the base's failure (an I/O error reading the
        /// parent's snapshot); `run` and `changes` are kept as they were then.
        mutating func materialize() throws {
            guard let ops = run else { return }
            var applied = changes
            try applied.apply(ops, base: base)
            changes = applied
            run = nil
        }

        /// The child's state now. Throws `.notOpen` once closed, and the base's failures.
        mutating func view() throws -> ChildView {
            if closed { throw StoreErrors.notOpen() }
            try materialize()
            return ChildView(base: base, changes: changes, sequence: sequence)
        }

        /// Bytes of values the child holds in memory (read once per write, for the spill check).
        var valueBytes: Int {
            guard let run else { return changes.valueBytes }
            return run.reduce(0) { n, op in if case .put(_, _, let v) = op { n + v.count } else { n } }
        }
    }
    let state: Protected<State>
    let writer = WriterLock()
    let options: DataStoreOptions
    /// The limits of the parent's backend, which every write is checked against.
    package let limits: RecordLimits
    /// Where spill files go: the root store's spill location.
    package let spillLocation: SpillLocation
    /// The child's commit stream: its writes and rebases, published under `state`'s lock.
    package let changeFeed: DataStoreChangeFeed

    /// A child over `base`. O(1): nothing is copied.
    package init(base: any RecordReader & Sendable, limits: RecordLimits, options: DataStoreOptions, spillLocation: SpillLocation) {
        let state = Protected(State(base: base))
        self.state = state
        self.limits = limits
        self.options = options
        self.spillLocation = spillLocation
        changeFeed = DataStoreChangeFeed(
            storeIdentity: "child-\(UUID().uuidString)", sequence: 0, retention: options.changeHistory, recordsWrites: true,
            snapshot: { RecordReaderSnapshot(try state.withLock { try $0.view() }) })
    }

    /// The child's current state. Throws `.notOpen` after close, and the base's failures.
    func readView() throws -> ChildView {
        try state.withLock { try $0.view() }
    }

    // MARK: DataStoreBackend

    /// See ``DataStoreBackend/read(_:)``: a read of the child's state now.
    package func read<T>(_ block: (any DataStoreReadAccessor) throws -> T) throws -> T {
        let accessor = ReadAccessor(view: try readView())
        defer { accessor.isValid = false }
        return try block(accessor)
    }

    /// See ``DataStoreBackend/write(_:)``: a child's writes are never durable and return at once.
    package func write<T>(_ block: (any DataStoreReadWriteAccessor) throws -> T) throws -> T {
        try transaction { txn in
            let accessor = ReadWriteAccessor(txn: txn)
            defer { accessor.invalidate() }
            return try block(accessor)
        }
    }

    /// See ``DataStoreBackend/write(_:onDurable:)``: `onDurable` is called at once.
    package func write<T>(_ block: (any DataStoreReadWriteAccessor) throws -> T, onDurable: @escaping @Sendable ((any Error)?) -> Void)
        throws -> T
    {
        let result = try write(block)
        onDurable(nil)
        return result
    }

    /// See ``DataStoreBackend/merge(_:)``: a grandchild's changes, in one write of this child.
    /// An item changed since the grandchild's base when its bytes differ (a child keeps no commit
    /// sequence per item).
    package func merge(_ plan: (_ changedSince: ChildMerge.ChangedSince) throws -> [RecordOperation]?) throws {
        try transaction { txn in
            let now = txn.baseView
            let changed: ChildMerge.ChangedSince = { base, type, key in
                try now.value(type: type, key: key) != base.value(type: type, key: key)
            }
            guard let operations = try plan(changed) else { return }
            try txn.commitAsIs(operations)
        }
    }

    /// See ``DataStoreBackend/deleteEverything()``.
    package func deleteEverything() throws {
        try transaction { txn in
            for t in try txn.itemTypes where !StoreHistory.isReserved(t) { try txn.deleteAll(type: t) }
        }
    }

    /// See ``DataStoreBackend/childBase()``: the child's state now.
    package func childBase() throws -> any RecordReader & Sendable { try readView() }

    /// Whether the calling thread is inside a write body of this child.
    package var isWritingOnCurrentThread: Bool { writer.heldByCurrentThread }

    /// Discards the changes and removes the spill file. Idempotent.
    package func close() {
        state.withLock { s in
            s.closed = true
            s.spillFile?.remove()
            s.spillFile = nil
            s.changes = ChangeSet<PersistentChangeStorage>()
            s.run = nil
        }
    }

    // MARK: Writing

    /// Runs `body` as one transaction of the child. Nothing is durable: returns once the change is
    /// in memory (or the spill file). Throws `.reentrantWrite`, `.notOpen`, the base's failures,
    /// or the body's own error (then nothing changes).
    @discardableResult
    func transaction<T>(_ body: (EngineTransaction) throws -> T) throws -> T {
        try writer.acquire()
        defer { writer.release() }
        let view = try readView()
        let txn = EngineTransaction(base: view, limits: limits)
        defer { txn.isValid = false }
        let result = try body(txn)
        txn.isValid = false
        guard txn.hasChanges else { return result }
        let ops = try txn.operationsToCommit()
        let needsSpill = try state.withLock { s -> Bool in
            let before = try s.view()
            // The keys a delete-all clears, read before anything changes: a base that fails here
            // fails the write with nothing changed.
            var cleared: [String: CommitChanges.ClearedKeys] = [:]
            for case .deleteAll(let t) in ops {
                let keys = try before.keys(ofType: t).sorted()
                cleared[t] = CommitChanges.ClearedKeys(count: keys.count, keys: { keys })
            }
            if s.changes.isEmpty, cleared.isEmpty {
                // The first write since the base: kept as it is (see `State.run`).
                s.run = ops
            } else {
                // Applied to a copy: a base that fails meanwhile (an I/O error reading the
                // parent's snapshot) leaves the old changes in place.
                var changes = s.changes
                try changes.apply(ops, base: s.base)
                s.changes = changes
            }
            s.sequence += 1
            changeFeed.publish([
                CommitChanges(
                    sequence: s.sequence, operations: ops,
                    keysBefore: { cleared[$0] ?? CommitChanges.ClearedKeys(count: 0, keys: { [] }) })
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
        if file == nil {
            file = try SpillFile(directory: spillLocation.directory, fs: spillLocation.fileSystem, cipher: spillLocation.cipher)
        }
        guard let file else { return }
        try changes.moveValues(to: file)
        state.withLock { s in
            s.changes = changes
            s.spillFile = file
        }
    }
}
