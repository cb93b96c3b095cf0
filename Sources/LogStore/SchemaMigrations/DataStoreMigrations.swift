import Foundation
public import LogStoreEngine
public import Logging
import Synchronization

/// A store's migrations: named steps registered before `setup()` that `setup()` applies in
/// registration order, each exactly once, each as one transaction together with the record that
/// it ran (the "Migrations" article has the rules and examples).
///
/// ```swift
/// let store = LogDataStore(directory: url)
/// store.migrations.register("v2-rename-title") { tx in
///     try tx.renameAttribute("title", to: "name", ofType: "Book")
/// }
/// store.migrations.register("v3-book-to-publication") { tx in
///     try tx.renameItemType("Book", to: "Publication")
/// }
/// try store.setup()        // applies what this store has not applied yet
/// ```
///
/// The record of each step goes into the store itself (`StoreHistory`, the reserved item type
/// `logstore.history`), written in the step's own transaction: a crash leaves the store before or
/// after a step, never between, and never with a step applied but not recorded. A step works on
/// raw items (``MigrationTransaction``), so it needs none of the Swift types the store was written
/// with.
///
/// The machinery uses only the ``DataStore`` protocol (`read`, `writeSync` and record-level
/// access), so every backend runs the same migrations: a backend calls ``apply(to:logger:)`` from
/// its `setup()`, on the opened store, before handing it to the app.
///
/// Thread safety: register and configure from any thread; registration after `setup()` takes
/// effect at the next `setup()`. Steps run on the thread that calls `setup()`.
public final class DataStoreMigrations: Sendable {
    struct Step: Sendable {
        var name: String
        var migrate: @Sendable (MigrationTransaction) throws -> Void
    }

    struct State: Sendable {
        var steps: [Step] = []
        var allowsUnknownMigrations = false
        var eraseStoreOnMigrationChange = false
    }

    let state = Mutex(State())

    /// An empty list of migrations.
    public init() {}

    /// Registers a migration step. Steps run in the order they are registered, at the next
    /// `setup()` of a store that has not applied them. A name is the step's identity forever:
    /// never rename, reorder or remove a step that shipped (see the article's rules). Two steps
    /// with one name, or an empty name, make `setup()` throw `.invalidArgument`.
    ///
    /// `migrate` runs inside one write transaction of the store, on the thread that calls
    /// `setup()`; if it throws, nothing of it commits and `setup()` throws `.migrationFailed`.
    public func register(_ name: String, _ migrate: @escaping @Sendable (MigrationTransaction) throws -> Void) {
        state.withLock { $0.steps.append(Step(name: name, migrate: migrate)) }
    }

    /// The registered names, in order.
    public var names: [String] { state.withLock { $0.steps.map(\.name) } }

    /// Whether a store that has applied migrations this build does not register (one written by
    /// a newer version of the app) may be opened: its unknown migrations are then ignored and the
    /// registered ones it lacks are applied after them. Default false: `setup()` throws
    /// `.unknownMigrations`. Set it for tools that only read or copy stores.
    public var allowsUnknownMigrations: Bool {
        get { state.withLock { $0.allowsUnknownMigrations } }
        set { state.withLock { $0.allowsUnknownMigrations = newValue } }
    }

    /// **Development only.** When the store's applied migrations do not match the registered ones
    /// (unknown ones, or a registered one missing before an applied one: the usual result of
    /// editing migrations while developing), `setup()` erases every item of the store, with a
    /// loud warning on standard error and in the store's logger, and applies every migration
    /// again, instead of throwing (GRDB's `eraseDatabaseOnSchemaChange`). Never ship with it on:
    /// it deletes users' data. Default false.
    public var eraseStoreOnMigrationChange: Bool {
        get { state.withLock { $0.eraseStoreOnMigrationChange } }
        set { state.withLock { $0.eraseStoreOnMigrationChange = newValue } }
    }

    /// The migrations of `store` (its history, `StoreHistory`): what ran, when, and the index
    /// declarations that changed. Runs one `read` block on the calling thread. Throws the store's
    /// errors (`.unsupported` for a store without record-level access).
    public static func history(of store: any DataStore) throws -> [StoreHistory.Entry] {
        try history(in: DataStoreMigrationTarget(store: store))
    }

    /// ``history(of:)`` of any ``MigrationTarget``.
    static func history(in store: some MigrationTarget) throws -> [StoreHistory.Entry] {
        try store.read { try StoreHistory.entries(in: $0) }
    }

    /// Applies to `store` (open, and not yet handed to the app) every registered migration it has
    /// not applied, in order, each in one `writeSync` with its history record. What a backend's
    /// `setup()` calls; apps call `setup()`. Runs on the calling thread; `logger` gets a notice
    /// per step (and the erase warning).
    ///
    /// Throws `.invalidArgument` for an empty or repeated name; `.unknownMigrations` (the store
    /// has applied migrations not registered here, and ``allowsUnknownMigrations`` is false);
    /// `.migrationHistoryMismatch` (a registered step comes before one the store has applied, but
    /// never ran); `.migrationFailed` naming the step (`LogStoreError.migration`) with its error
    /// as `underlyingError`: that step and the ones after it are not applied, the ones before it
    /// stay applied. Unless ``eraseStoreOnMigrationChange`` is set: then the two mismatches erase
    /// the store instead.
    @discardableResult
    public func apply(to store: any DataStore, logger: Logger? = nil) throws -> MigrationReport {
        try apply(to: DataStoreMigrationTarget(store: store), logger: logger)
    }

    /// ``apply(to:logger:)`` on any ``MigrationTarget``: a `DataStore`, or a backend `setup()` has
    /// just opened and not yet published.
    @discardableResult
    package func apply(to store: some MigrationTarget, logger: Logger?) throws -> MigrationReport {
        let (steps, allowsUnknown, eraseOnChange) = state.withLock {
            ($0.steps, $0.allowsUnknownMigrations, $0.eraseStoreOnMigrationChange)
        }
        var seen = Set<String>()
        for step in steps {
            guard !step.name.isEmpty else {
                throw LogStoreError(
                    .invalidArgument,
                    "A migration is registered with an empty name. Give every migration a unique, permanent name (\"v2-split-name\").")
            }
            guard seen.insert(step.name).inserted else {
                throw LogStoreError(
                    .invalidArgument,
                    "Two migrations are registered with the name \"\(step.name)\". Every migration needs a unique, permanent name.")
            }
        }
        var report = MigrationReport()
        var history = try Self.history(in: store)
        var plan = Self.plan(steps.map(\.name), applied: history.filter { $0.kind == .migration }.map(\.name))
        if let problem = plan.problem(allowsUnknown: allowsUnknown) {
            guard eraseOnChange else { throw problem }
            try Self.erase(store, because: problem.message, logger: logger)
            history = try Self.history(in: store)
            plan = Self.plan(steps.map(\.name), applied: [])
            report.erasedBecause = problem.message
        }
        report.alreadyApplied = plan.applied
        report.unknown = plan.unknown
        for step in steps where plan.pending.contains(step.name) {
            let started = ContinuousClock.now
            let ran: Bool
            do {
                ran = try store.write { accessor -> Bool in
                    // Another process (another app server on one PostgreSQL schema) may have applied
                    // the step since the plan was read: the history is read again in the step's own
                    // transaction, so each step runs once whoever gets there first (on a backend
                    // whose writes are serializable, a race makes one of the two run again).
                    let entries = try StoreHistory.entries(in: accessor)
                    if entries.contains(where: { $0.kind == .migration && $0.name == step.name }) { return false }
                    let tx = MigrationTransaction(name: step.name, accessor: accessor)
                    defer { tx.isValid = false }
                    try step.migrate(tx)
                    tx.isValid = false
                    let elapsed = ContinuousClock.now - started
                    let ms = Int(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
                    try StoreHistory.append(after: entries, to: accessor) { ordinal in
                        StoreHistory.Entry(
                            ordinal: ordinal, kind: .migration, name: step.name, at: Date(), durationMs: ms, changes: tx.changes)
                    }
                    return true
                }
            } catch {
                throw LogStoreError(
                    .migrationFailed,
                    "The migration \"\(step.name)\" failed and was rolled back: \(error). The store is as it was before this step (\(report.applied.count) earlier step(s) of this setup stay applied). Fix the step and call setup() again.",
                    underlying: error
                ).with(migration: step.name)
            }
            guard ran else {
                report.alreadyApplied.append(step.name)
                continue
            }
            report.applied.append(step.name)
            logger?.notice("applied migration", metadata: ["migration": "\(step.name)", "elapsed": "\(ContinuousClock.now - started)"])
        }
        report.history = try Self.history(in: store)
        return report
    }

    /// What a store's applied migrations mean for the registered ones.
    struct Plan {
        /// Registered and applied, in registration order.
        var applied: [String] = []
        /// Registered and not applied, in registration order.
        var pending: [String] = []
        /// Applied but not registered, in the store's order.
        var unknown: [String] = []
        /// Pending steps registered before an applied one.
        var skippedOver: [(pending: String, applied: String)] = []

        func problem(allowsUnknown: Bool) -> LogStoreError? {
            if !unknown.isEmpty && !allowsUnknown {
                return LogStoreError(
                    .unknownMigrations,
                    "The store has applied migrations this build does not register: \(unknown.map { "\"\($0)\"" }.joined(separator: ", ")). It was written by a newer version of the app; open it with that version, or set migrations.allowsUnknownMigrations to open it anyway."
                )
            }
            if let first = skippedOver.first {
                return LogStoreError(
                    .migrationHistoryMismatch,
                    "The migration \"\(first.pending)\" is registered before \"\(first.applied)\", which the store has applied, but never ran on it: it was inserted, renamed or moved after the store was migrated. Migrations can only be appended; register new steps after the last one."
                )
            }
            return nil
        }
    }

    static func plan(_ registered: [String], applied: [String]) -> Plan {
        let appliedSet = Set(applied)
        let registeredSet = Set(registered)
        var plan = Plan()
        plan.unknown = applied.filter { !registeredSet.contains($0) }
        var lastApplied: String? = nil
        for name in registered.reversed() where appliedSet.contains(name) {
            lastApplied = name
            break
        }
        var beforeLastApplied = lastApplied != nil
        for name in registered {
            if appliedSet.contains(name) {
                plan.applied.append(name)
            } else {
                plan.pending.append(name)
                if beforeLastApplied, let lastApplied { plan.skippedOver.append((name, lastApplied)) }
            }
            if name == lastApplied { beforeLastApplied = false }
        }
        return plan
    }

    /// The development-only erase: every item of every type and the history go, in one write,
    /// which then records the erase.
    static func erase(_ store: some MigrationTarget, because reason: String, logger: Logger?) throws {
        let warning =
            "ERASING every item of a LogStore store because its migrations changed (migrations.eraseStoreOnMigrationChange is set; never ship it): \(reason)"
        logger?.critical("\(warning)")
        FileHandle.standardError.write(Data(("LogStore WARNING: " + warning + "\n").utf8))
        try store.write { accessor in
            for type in try accessor.itemTypeNames() where !StoreHistory.isReserved(type) {
                try accessor.deleteAllRecords(ofType: type)
            }
            try accessor.deleteAllRecords(ofType: StoreHistory.itemType)
            try StoreHistory.append(after: [], to: accessor) { ordinal in
                StoreHistory.Entry(ordinal: ordinal, kind: .erase, name: "", at: Date(), reason: reason)
            }
        }
    }
}

/// What ``DataStoreMigrations/apply(to:logger:)`` (and so `setup()`) did. A value; any thread.
public struct MigrationReport: Sendable, Equatable {
    /// The steps this call applied, in order.
    public var applied: [String] = []
    /// The registered steps the store had applied before.
    public var alreadyApplied: [String] = []
    /// Steps the store has applied that are not registered (allowed by
    /// ``DataStoreMigrations/allowsUnknownMigrations``).
    public var unknown: [String] = []
    /// Set when ``DataStoreMigrations/eraseStoreOnMigrationChange`` erased the store: why.
    public var erasedBecause: String?
    /// The store's history after the call (`StoreHistory`).
    public var history: [StoreHistory.Entry] = []

    /// An empty report.
    public init() {}
}

/// What migrations run against: one store's reads and durable writes. A backend that `setup()`
/// has just opened is one (``DataStoreBackend``), so migrations run before the store is published;
/// any `DataStore` is one through ``DataStoreMigrationTarget``. Package API; the calling thread.
package protocol MigrationTarget {
    /// Runs `block` over one consistent snapshot and returns its value.
    func read<T>(_ block: (any DataStoreReadAccessor) throws -> T) throws -> T
    /// Runs `block` as one write transaction and returns its value once the commit is durable.
    func write<T>(_ block: (any DataStoreReadWriteAccessor) throws -> T) throws -> T
}

/// A `DataStore` as a ``MigrationTarget``: its `read` and `writeSync`.
struct DataStoreMigrationTarget: MigrationTarget {
    let store: any DataStore

    func read<T>(_ block: (any DataStoreReadAccessor) throws -> T) throws -> T { try store.read(block) }

    func write<T>(_ block: (any DataStoreReadWriteAccessor) throws -> T) throws -> T { try store.writeSync(block) }
}
