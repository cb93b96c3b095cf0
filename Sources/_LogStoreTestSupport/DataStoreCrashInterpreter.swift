import Dispatch
public import LogStore
public import LogStoreEngine
import Synchronization

/// Runs ``DataStoreCrashStep``s against a ``LogDataStore`` (and its child store) and keeps a
/// ``DataStoreCrashModel`` in step.
///
/// Used in process over a ``FaultInjectingFileSystem`` (``DataStorePowerLossHarness``) and by the
/// `logstore-crashtest` worker over a real directory. It reports each parent transaction before
/// its commit starts (`willCommit`) and after it returned (`didCommit`); a crash test records the
/// first as *attempted* and the second as *acknowledged* in its ``CrashOracle``.
///
/// Use from one thread. The stores it opens stay open until ``close()``, ``abandon()`` or a
/// ``DataStoreCrashStep/reopen``.
public final class DataStoreCrashInterpreter: CrashInterpreter {
    /// How a parent transaction is committed.
    public enum CommitKind: String, Sendable {
        /// `writeSync`.
        case write
        /// `writeAsync`, waited for.
        case writeAsync = "async"
        /// `merge(child)`.
        case merge
        /// A migration applied by `setup()` (``DataStoreCrashStep/migrate(_:)``).
        case migrate
    }

    /// Makes a new, not yet set-up store object for the store's location (called by ``open()``
    /// and by every reopen).
    public let makeStore: () -> LogDataStore
    /// The open store, if any.
    public private(set) var store: LogDataStore?
    /// The open child store, if any.
    public private(set) var child: (any DataStore)?
    /// The workload's model; the generator draws the next step from it.
    public var model: DataStoreCrashModel
    /// Compaction steps that rewrote segments (rather than finding nothing to do).
    public private(set) var compactionsPerformed = 0
    /// How long a `writeAsync` completion is waited for before the step fails as hung.
    public var asyncTimeoutSeconds = 60
    /// For stores without `.synchronous` durability: a commit is acknowledged only once a
    /// `flush()` made it durable, and the interpreter flushes after every this many commits (so a
    /// crash finds several unsynced transactions, as a group commit's batch would leave them).
    /// Nil: every commit is acknowledged when it returns.
    public var flushEvery: Int? = nil

    /// An interpreter for a store whose contents `model` describes. Opens nothing yet.
    public init(model: DataStoreCrashModel, makeStore: @escaping () -> LogDataStore) {
        self.model = model
        self.makeStore = makeStore
    }

    /// A step's block threw on purpose (``DataStoreCrashStep/abortedWrite(_:)``).
    struct Aborted: Error {}

    /// Sets up a new store object. Throws what `setup()` throws (the object is dropped then).
    ///
    /// Migrations the workload ran are registered only by the migrate step that runs each (so a
    /// crash leaves the store before or after it, and no later open finishes it): every open
    /// allows the store's history to name migrations it does not register.
    public func open() throws {
        try open { _ in }
    }

    func open(_ register: (DataStoreMigrations) -> Void) throws {
        let s = makeStore()
        s.migrations.allowsUnknownMigrations = true
        register(s.migrations)
        try s.setup()
        store = s
    }

    /// Tears down the child (if any) and the store. Throws what `tearDown()` throws; both are
    /// dropped either way.
    public func close() throws {
        defer {
            child = nil
            store = nil
        }
        if let c = child { try? c.tearDown() }
        try store?.tearDown()
    }

    /// Drops the store and child after a crash (their file system is dead), ignoring errors.
    public func abandon() {
        try? close()
    }

    /// Runs one step. A parent transaction is announced to `willCommit` (number, operations, how)
    /// before its commit starts, the model advances, and `didCommit` gets the number once the
    /// commit returned (for `writeAsync`: once its completion reported success). Reopen and
    /// verify steps compare the store with the model. Throws the store's errors unchanged, or a
    /// ``CrashOracleViolation`` for a state that differs from the model.
    public func run(
        _ step: DataStoreCrashStep,
        willCommit: (UInt64, [RecordOperation], CommitKind) -> Void = { _, _, _ in },
        didCommit: (UInt64) -> Void = { _ in }
    ) throws {
        guard let store else {
            throw LogStoreError(.notOpen, "DataStoreCrashInterpreter.run called with no open store; call open() first.")
        }
        let n = model.lastTransaction + 1
        /// A commit returned: acknowledge it now, or (``flushEvery``) once a flush made it durable.
        func committed(_ n: UInt64) throws {
            guard let every = flushEvery else { return didCommit(n) }
            if n % UInt64(max(1, every)) == 0 {
                try store.flush()
                didCommit(n)
            }
        }
        switch step {
        case .write(let ops):
            willCommit(n, ops, .write)
            model.apply(step)
            try store.writeSync { try DataStoreCrashTypes.apply(ops, to: $0) }
            try committed(n)
        case .writeAsync(let ops):
            willCommit(n, ops, .writeAsync)
            model.apply(step)
            try writeAsyncAndWait(store, ops)
            try committed(n)
        case .abortedWrite(let ops):
            do {
                try store.writeSync { a in
                    try DataStoreCrashTypes.apply(ops, to: a)
                    throw Aborted()
                }
            } catch is Aborted {}
        case .makeChild:
            if child == nil {
                child = try store.makeChildDataStore()
                model.apply(step)
            }
        case .childWrite(let ops):
            guard let child else { return }
            try child.writeSync { try DataStoreCrashTypes.apply(ops, to: $0) }
            model.apply(step)
        case .merge:
            guard let child, let ops = model.mergeOperations() else { return }
            let marker = model.mergeMarker()
            try child.writeSync { try DataStoreCrashKindMarker.insert($0, key: marker.key, value: marker.value) }
            willCommit(n, ops, .merge)
            model.apply(step)
            try store.merge(child)
            try committed(n)
        case .discardChild:
            let c = child
            child = nil
            model.apply(step)
            try c?.tearDown()
        case .verify:
            try verify()
        case .reopen:
            try close()
            model.apply(step)
            try open()
            try verify()
        case .compact(let includingTail):
            let r = try store.engineForTesting().compact(includingTail: includingTail)
            if r.performed { compactionsPerformed += 1 }
        case .recompress(let includingTail):
            let r = try store.engineForTesting().recompress(includingTail: includingTail)
            if r.performed { compactionsPerformed += 1 }
        case .migrate(let type):
            let ops = model.migrationOperations(type: type)
            try close()
            willCommit(n, ops, .migrate)
            model.apply(step)
            try open { DataStoreCrashMigration.register(type: type, transaction: n, on: $0) }
            guard let migrated = self.store, migrated.migrationReport?.applied == [DataStoreCrashMigration.name(n)] else {
                throw CrashOracleViolation(
                    "setup() did not apply the migration of transaction \(n): \(String(describing: self.store?.migrationReport))")
            }
            // Durable whatever the durability mode, then acknowledged.
            try migrated.flush()
            didCommit(n)
            try verify()
        }
    }

    /// Runs one step, recording its parent transaction in `oracle` (attempted, then acknowledged).
    public func run(_ step: DataStoreCrashStep, oracle: inout CrashOracle) throws {
        try run(step, willCommit: { _, ops, _ in oracle.begin(ops) }, didCommit: { oracle.acknowledge($0) })
    }

    func writeAsyncAndWait(_ store: LogDataStore, _ ops: [RecordOperation]) throws {
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<(any Error)?>(nil)
        store.writeAsync(
            { try DataStoreCrashTypes.apply(ops, to: $0) },
            completion: { error in
                outcome.withLock { $0 = error }
                done.signal()
            })
        if done.wait(timeout: .now() + .seconds(asyncTimeoutSeconds)) == .timedOut {
            throw CrashOracleViolation("A writeAsync completion did not arrive within \(asyncTimeoutSeconds) s (hang).")
        }
        if let e = outcome.withLock({ $0 }) { throw e }
    }

    /// The open store's state as the model sees it (see ``DataStoreCrashTypes/observe(_:)``).
    public func observe() throws -> CrashModelState {
        guard let store else { throw LogStoreError(.notOpen, "DataStoreCrashInterpreter.observe called with no open store.") }
        return try DataStoreCrashTypes.observe(store, engine: store.engineForTesting())
    }

    /// Compares the store (and the child, if any) with the model. Valid when every attempted
    /// transaction has been acknowledged (no crash since). Throws a ``CrashOracleViolation``.
    public func verify() throws {
        let observed = try observe()
        let diff = CrashOracle.differences(observed: observed, expected: model.parent)
        if !diff.isEmpty {
            throw CrashOracleViolation(
                "The store differs from the model after transactions 1...\(model.lastTransaction): "
                    + diff.prefix(8).joined(separator: "; ") + (diff.count > 8 ? "; ... \(diff.count) differences" : ""))
        }
        if let child, let expected = model.child?.state {
            let diff = CrashOracle.differences(observed: try DataStoreCrashTypes.observe(child), expected: expected)
            if !diff.isEmpty {
                throw CrashOracleViolation(
                    "The child store differs from the model: " + diff.prefix(8).joined(separator: "; ")
                        + (diff.count > 8 ? "; ... \(diff.count) differences" : ""))
            }
        }
    }
}
