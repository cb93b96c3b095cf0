import Logging

/// The backend of a child store: a copy-on-write overlay over an immutable snapshot of its parent,
/// with its own operation log (in memory, spilled to a temporary file past
/// ``LogStoreOptions/childSpillThreshold``).
///
/// Nothing an overlay store holds is durable: a crash loses it by design. ``beginMerge()`` (which
/// hands the parent the changes to replay as one transaction), ``endMerge(rebaseOnto:)`` and
/// ``rebase(onto:)`` are the merge protocol.
///
/// Thread-safe; write bodies are serialized on the caller's thread like ``LogEngine``'s.
public final class OverlayStore: StoreBackend {
    struct State: Sendable {
        var base: any RecordReader & Sendable
        var overlay = Overlay()
        var sequence: UInt64 = 0
        var closed = false
        var failure: LogStoreError? = nil
    }
    let state: Protected<State>
    let writer = WriterLock()
    let options: LogStoreOptions
    let spillDirectory: String
    let fileSystem: any FileSystem

    /// Creates an overlay over `base`. O(1). Spill files go to `spillDirectory` on `fileSystem`.
    public init(base: any RecordReader & Sendable, options: LogStoreOptions, spillDirectory: String, fileSystem: any FileSystem) {
        state = Protected(State(base: base))
        self.options = options
        self.spillDirectory = spillDirectory
        self.fileSystem = fileSystem
    }

    func checkUsable(_ s: State) throws {
        if let f = s.failure { throw f }
        if s.closed { throw LogStoreError(.notOpen, "The child store was torn down. Make a new child with makeChildDataStore().") }
    }

    /// See ``StoreBackend/readView()``.
    public func readView() throws -> any RecordReader & Sendable {
        try state.withLock { s in
            try checkUsable(s)
            return OverlayView(base: s.base, overlay: s.overlay, sequence: s.sequence)
        }
    }

    /// The base the overlay currently sits on.
    public func baseView() throws -> any RecordReader & Sendable {
        try state.withLock { s in
            try checkUsable(s)
            return s.base
        }
    }

    /// See ``StoreBackend/isWritingOnCurrentThread``.
    public var isWritingOnCurrentThread: Bool { writer.heldByCurrentThread }

    /// See ``StoreBackend/write(_:)``. Nothing is durable: `write` returns once the change is in
    /// the overlay.
    @discardableResult
    public func write<T>(_ body: (EngineTransaction) throws -> T) throws -> T {
        try writer.acquire()
        defer { writer.release() }
        let view = try readView()
        let txn = EngineTransaction(base: view, limits: options)
        defer { txn.isValid = false }
        let result = try body(txn)
        txn.isValid = false
        guard txn.hasChanges else { return result }
        let ops = try txn.overlay.operations()
        let needsSpill = try state.withLock { s -> Bool in
            try checkUsable(s)
            s.overlay.apply(ops, base: s.base)
            s.sequence += 1
            return s.overlay.valueBytes > options.childSpillThreshold
        }
        if needsSpill {
            // The change is already applied; a failed spill (a full disk) only means the values stay
            // in memory, so it must not turn a successful write into a reported failure.
            do { try spill() } catch {
                options.logger?.warning("child store could not spill to disk; keeping its changes in memory", metadata: ["error": "\(error)"])
            }
        }
        return result
    }

    /// See ``StoreBackend/write(_:onDurable:)``; `onDurable` is called at once.
    @discardableResult
    public func write<T>(_ body: (EngineTransaction) throws -> T, onDurable: @escaping @Sendable ((any Error)?) -> Void) throws -> T {
        let r = try write(body)
        onDurable(nil)
        return r
    }

    /// Moves in-memory values to the spill file. Caller holds the writer lock.
    func spill() throws {
        let existing = state.withLock { $0.overlay.spill }
        let file = try existing ?? SpillFile(directory: spillDirectory, fs: fileSystem)
        var overlay = state.withLock { $0.overlay }
        try overlay.spillValues(to: file)
        state.withLock { $0.overlay = overlay }
    }

    /// Bytes of values the overlay holds in memory.
    public var inMemoryBytes: Int { state.withLock { $0.overlay.valueBytes } }
    /// Whether the overlay has spilled to a temporary file.
    public var hasSpilled: Bool { state.withLock { $0.overlay.spill != nil } }

    /// One change of the overlay relative to its base, as the parent should replay it.
    public struct Change: Sendable {
        /// The item type.
        public var type: String
        /// The record key.
        public var key: RecordKey
        /// The new value, or nil for a delete.
        public var value: [UInt8]?
    }

    /// Every change since the base, with delete-all expanded to deletes of the keys the base held
    /// (what the child saw), in (type, key) order.
    func changes(base: any RecordReader, overlay: Overlay) throws -> [Change] {
        var changes: [Change] = []
        for type in overlay.types.keys.sorted() {
            guard let c = overlay.types[type] else { continue }
            var deleted: [RecordKey] = []
            if c.cleared {
                deleted = base.keys(ofType: type).filter { c.puts[$0] == nil }
            } else {
                deleted = c.shadowed.filter { c.puts[$0] == nil }
            }
            for k in deleted.sorted() { changes.append(Change(type: type, key: k, value: nil)) }
            for k in c.puts.keys.sorted() {
                if let v = c.puts[k] { changes.append(Change(type: type, key: k, value: Array(try overlay.read(v)))) }
            }
        }
        return changes
    }

    /// Starts a merge: takes this overlay's writer lock (so it cannot change until ``endMerge()``)
    /// and returns its base and its changes. Throws `.reentrantWrite` if the calling thread is
    /// inside a write of this overlay. Every successful call must be paired with ``endMerge()``.
    /// Lock order: the parent's writer lock first, then this one.
    public func beginMerge() throws -> (base: any RecordReader & Sendable, changes: [Change]) {
        try writer.acquire()
        do {
            let (base, overlay) = try state.withLock { s in
                try checkUsable(s)
                return (s.base, s.overlay)
            }
            return (base, try changes(base: base, overlay: overlay))
        } catch {
            writer.release()
            throw error
        }
    }

    /// Ends a merge started by ``beginMerge()``: rebases onto `newBase` (when given) and releases
    /// the writer lock.
    public func endMerge(rebaseOnto newBase: (any RecordReader & Sendable)?) {
        if let newBase { rebase(onto: newBase) }
        writer.release()
    }

    /// Replaces the base with `newBase` and empties the overlay (after a merge, or to start over).
    public func rebase(onto newBase: any RecordReader & Sendable) {
        state.withLock { s in
            s.base = newBase
            s.overlay = Overlay()
            s.sequence += 1
        }
    }

    /// Makes every later use throw `error` (the parent was torn down).
    public func invalidate(_ error: LogStoreError) {
        state.withLock { s in
            if s.failure == nil { s.failure = error }
            s.overlay.spill?.remove()
        }
    }

    /// Discards the overlay and removes its spill file. Idempotent.
    public func close() throws {
        state.withLock { s in
            s.closed = true
            s.overlay.spill?.remove()
            s.overlay = Overlay()
        }
    }
}
