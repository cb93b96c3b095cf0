/// The changes of one write transaction, readable together with the state they apply to
/// (reads inside a write see the write's own changes).
///
/// Handed to the body of ``LogEngine/write(_:)`` and valid only inside it: after the body returns
/// or throws, every method throws `.accessorExpired`. Not thread-safe: use it from the thread
/// that runs the body.
public final class EngineTransaction: RecordReader {
    let base: any RecordReader
    /// The base when it is a snapshot of the engine itself (a transaction of ``LogEngine/write(_:)``),
    /// nil for the transactions of a child store: what knows each record's commit sequence.
    package let engineBase: EngineSnapshot?
    /// What the body changed so far.
    package private(set) var changes = ChangeSet<FlatChangeStorage>()
    let limits: RecordLimits
    /// Cleared when the body returns: every later call throws `.accessorExpired`.
    package var isValid = true
    /// Where values go once the changes hold more than ``RecordLimits/transactionSpillThreshold``
    /// bytes of them (nil: they stay in memory).
    let spillDirectory: (path: String, fileSystem: any FileSystem)?
    /// The cipher of an encrypted store: its spill file is sealed (under a key of its own).
    let spillCipher: (any StoreCipher)?
    /// The spill file, once values were moved to it. Removed when the transaction goes away.
    private(set) var spillFile: SpillFile? = nil

    /// A transaction over `base`, checking values against `limits`. For the engine, and for
    /// backends of the DataStore layer (child stores) that run write bodies of their own.
    /// `spillDirectory`: where a large transaction moves its values (see
    /// ``RecordLimits/transactionSpillThreshold``); nil keeps them in memory. `spillCipher`: an
    /// encrypted store's cipher, which seals the spill file.
    package init(
        base: any RecordReader, limits: RecordLimits, spillDirectory: (path: String, fileSystem: any FileSystem)? = nil,
        spillCipher: (any StoreCipher)? = nil
    ) {
        self.base = base
        self.engineBase = nil
        self.limits = limits
        self.spillDirectory = spillDirectory
        self.spillCipher = spillCipher
    }

    /// A transaction of the engine over its head `snapshot` (``engineBase`` is set).
    init(
        snapshot: EngineSnapshot, limits: RecordLimits, spillDirectory: (path: String, fileSystem: any FileSystem),
        spillCipher: (any StoreCipher)?
    ) {
        self.base = snapshot
        self.engineBase = snapshot
        self.limits = limits
        self.spillDirectory = spillDirectory
        self.spillCipher = spillCipher
    }

    /// Whether values were moved out of memory: the engine then commits the transaction in
    /// chunks (``LogEngine/appendLargeLocked(_:)``).
    package var hasSpilled: Bool { spillFile != nil }

    /// Moves the in-memory values to the spill file once they pass the threshold.
    private func spillIfNeeded() throws {
        let threshold = limits.transactionSpillThreshold
        guard let spillDirectory, threshold > 0, changes.valueBytes > threshold else { return }
        let file =
            try spillFile ?? SpillFile(directory: spillDirectory.path, fs: spillDirectory.fileSystem, prefix: "txn", cipher: spillCipher)
        try changes.moveValues(to: file)
        spillFile = file
    }

    /// Operations handed over whole (``commitAsIs(_:)``), committed instead of the change set's.
    private var handedOver: [RecordOperation]? = nil

    func check() throws {
        guard isValid else {
            throw LogStoreError(
                .accessorExpired,
                "A write accessor was used after its block returned. Use accessors only inside the block that received them.")
        }
        guard handedOver == nil else {
            throw LogStoreError(
                .invalidArgument, "The transaction's operations were handed over with commitAsIs(_:); it takes no other reads or writes.")
        }
    }

    /// Makes `operations` (already in the order a commit writes: per type, delete-all, deletes,
    /// puts, each in key order) this transaction's whole change, committed as given: no change set
    /// is built and nothing is sorted again. For merges, which hand over a child's sorted changes.
    /// Throws `.invalidArgument` if the transaction already changed something or is used again
    /// afterwards, and the limit errors of ``put(type:key:value:)``.
    package func commitAsIs(_ operations: [RecordOperation]) throws {
        try check()
        guard changes.isEmpty else {
            throw LogStoreError(.invalidArgument, "commitAsIs(_:) needs a transaction with no other changes.")
        }
        for op in operations {
            switch op {
            case .put(let t, let k, let v): try limits.validate(type: t, key: k, valueSize: v.count)
            case .delete(let t, let k): try limits.validate(type: t, key: k, valueSize: 0)
            case .deleteAll(let t): try limits.validate(type: t, key: RecordKey([]), valueSize: 0)
            }
        }
        handedOver = operations
    }

    /// What the transaction commits: the operations handed over, or the change set's.
    package func operationsToCommit() throws -> [RecordOperation] {
        try handedOver ?? changes.operations()
    }

    /// The sequence number of the state the transaction started from.
    public var sequence: UInt64 { base.sequence }
    /// See ``RecordReader/itemTypes``.
    public var itemTypes: [String] {
        get throws {
            try changes.resolveShadowed(base: base)
            return try changes.itemTypes(base: base)
        }
    }
    /// See ``RecordReader/count(ofType:)``.
    public func count(ofType type: String) throws -> Int {
        try changes.resolveShadowed(base: base)
        return try changes.count(type, base: base)
    }
    /// See ``RecordReader/contains(type:key:)``.
    public func contains(type: String, key: RecordKey) throws -> Bool { try changes.contains(type, key, base: base) }
    /// See ``RecordReader/value(type:key:)``.
    public func value(type: String, key: RecordKey) throws -> ArraySlice<UInt8>? {
        try check()
        return try changes.value(type, key, base: base)
    }
    /// See ``RecordReader/forEach(ofType:_:)``.
    public func forEach(ofType type: String, _ body: (RecordKey, ArraySlice<UInt8>) throws -> Bool) throws {
        try check()
        try changes.resolveShadowed(base: base)
        try changes.forEach(type, base: base, body)
    }
    /// See ``RecordReader/keys(ofType:)``.
    public func keys(ofType type: String) throws -> [RecordKey] {
        try changes.resolveShadowed(base: base)
        return try changes.keys(type, base: base)
    }

    /// Inserts or replaces record `key` of `type`. Throws `.itemTooLarge`, `.keyTooLarge` or
    /// `.invalidArgument` when a limit of ``LogEngineOptions`` is exceeded, and the file system's
    /// errors when the values are moved to the spill file (the put is kept, in memory).
    public func put(type: String, key: RecordKey, value: [UInt8]) throws {
        try check()
        try limits.validate(type: type, key: key, valueSize: value.count)
        try changes.put(type, key, value, base: base)
        try spillIfNeeded()
    }

    /// Deletes record `key` of `type`; returns whether it existed.
    @discardableResult
    public func delete(type: String, key: RecordKey) throws -> Bool {
        try check()
        try limits.validate(type: type, key: key, valueSize: 0)
        return try changes.delete(type, key, base: base)
    }

    /// Deletes every record of `type`; returns how many there were.
    @discardableResult
    public func deleteAll(type: String) throws -> Int {
        try check()
        try limits.validate(type: type, key: RecordKey([]), valueSize: 0)
        return try changes.deleteAll(type, base: base)
    }

    /// The state the transaction started from (without its own changes): the store's head
    /// snapshot, or a child's view. Used by merges to detect conflicts.
    public var baseView: any RecordReader { base }

    /// Looks up the base keys this transaction's puts hide (puts defer it, ``ChangeSet``), so
    /// that `changes`' `shadowed` lists every hidden base key: call it before filtering a walk of
    /// the base by `shadowed` (the key-order walk of `forEachRecord(ofType:after:)`).
    package func resolveHiddenKeys() throws { try changes.resolveShadowed(base: base) }

    /// Whether the transaction changed anything.
    public var hasChanges: Bool { !changes.isEmpty || !(handedOver?.isEmpty ?? true) }
}
