public import LogStore

/// Makes the stores the conformance suite tests: one backend, in one configuration (on disk, in
/// memory, as a child store...). A backend's tests give one factory per configuration to
/// ``DataStoreConformance/run(_:on:report:)``.
///
/// The suite calls it from any thread, one case at a time per factory.
public protocol DataStoreFactory: Sendable {
    /// A short name for failure reports: `"LogDataStore (disk)"`.
    var name: String { get }
    /// What the backend offers beyond the core contract. Cases that need more are skipped (and
    /// say so through ``ConformanceContext/skip(_:)``).
    var capabilities: DataStoreCapabilities { get }
    /// A new, empty place for one store (a directory, a file, a database schema; for a child
    /// store, a new parent). Throws if it cannot be made. The suite calls
    /// ``DataStoreLocation/destroy()`` when the case ends.
    func makeLocation() throws -> any DataStoreLocation
}

/// One place where a store lives, made by ``DataStoreFactory/makeLocation()``.
public protocol DataStoreLocation: AnyObject, Sendable {
    /// A store object for this place. Several calls give several objects on the same place (a
    /// reopen; two objects fighting over a lock), except where the backend has no such notion
    /// (an in-memory store, a child store) and returns the same object. The store may or may not
    /// be set up; the suite calls `setup()` before using it.
    func makeStore() throws -> any DataStore
    /// ``makeStore()`` typed as a store that applies migrations, for the cases of
    /// ``DataStoreCapabilities/migrations``; nil (the default) when this place's stores do not.
    func makeMigratingStore() throws -> (any MigratingDataStore)?
    /// Tears down what is still open and deletes the place's data. Called once, at the end of
    /// the case. Never throws: it is cleanup.
    func destroy()
}

extension DataStoreLocation {
    /// See ``DataStoreLocation/makeMigratingStore()``: none.
    public func makeMigratingStore() throws -> (any MigratingDataStore)? { nil }
}

/// What a backend offers beyond the contract every `DataStore` keeps.
public struct DataStoreCapabilities: OptionSet, Sendable {
    /// The raw bits.
    public let rawValue: Int
    /// Creates a set from raw bits.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// A store reopened on the same place (`tearDown()`, a new ``DataStoreLocation/makeStore()``,
    /// `setup()`) holds every committed write: disk stores, and in-memory stores reopened as the
    /// same object. Not child stores (a child's writes are scratch until merged).
    public static let persistsAcrossReopen = DataStoreCapabilities(rawValue: 1 << 0)
    /// A second store object on a place whose store is open fails `setup()` with `.locked`
    /// (Concurrency rule: one open store per place), and opens once the first is torn down.
    public static let exclusiveLock = DataStoreCapabilities(rawValue: 1 << 1)
    /// `makeChildDataStore()` and `merge(_:policy:)` work (ChildStores article).
    public static let childStores = DataStoreCapabilities(rawValue: 1 << 2)
    /// Record-level access: `itemTypeNames()`, `forEachRecord`, `record`, `putRecord`,
    /// `deleteRecord` (what BackendMigrator and DynamicItem need).
    public static let recordAccess = DataStoreCapabilities(rawValue: 1 << 3)
    /// The store is a child store (its parent's tearDown makes it throw `.parentClosed`).
    public static let isChildStore = DataStoreCapabilities(rawValue: 1 << 4)

    /// `observe(request)`, `observeItem`, `observeCount` and `changes(since:)` work: the backend
    /// publishes its commits to a `DataStoreChangeFeed` (the "Observing Changes" article). The
    /// `observation` and `changes` cases need it.
    public static let observation = DataStoreCapabilities(rawValue: 1 << 8)

    /// Secondary indexes declared on item types are kept and enforced: a unique index refuses
    /// equal values with `.uniqueConstraintViolation`. Not child stores: a child keeps
    /// what it is given, and its merge is checked by the root store's commit.
    public static let secondaryIndexes = DataStoreCapabilities(rawValue: 1 << 9)

    /// The stores are ``MigratingDataStore``s (their `setup()` applies registered migrations), and
    /// each ``DataStoreLocation/makeStore()`` gives a new store object, with its own list of
    /// migrations. The `migrations` cases need it, with `.persistsAcrossReopen` and `.recordAccess`.
    public static let migrations = DataStoreCapabilities(rawValue: 1 << 10)
    /// What `LogDataStore` on disk offers (and the SQLite backend).
    public static let durableStore: DataStoreCapabilities = [
        .persistsAcrossReopen, .exclusiveLock, .childStores, .recordAccess, .observation, .secondaryIndexes, .migrations,
    ]
}

/// A place for a child store: a child of a store set up on another place, for backends whose
/// factories test their child stores (the child is the one store of the place). Destroying it
/// tears the child down, then destroys the parent's place.
public final class ChildStoreLocation: DataStoreLocation {
    /// The parent's place.
    public let parent: any DataStoreLocation
    /// The child store.
    public let child: any DataStore

    /// A child of a store made (and set up) on `parent`. Throws what the parent's `setup()` and
    /// `makeChildDataStore()` throw; `parent` is destroyed then.
    public init(childOf parent: any DataStoreLocation) throws {
        self.parent = parent
        do {
            let store = try parent.makeStore()
            try store.setup()
            child = try store.makeChildDataStore()
        } catch {
            parent.destroy()
            throw error
        }
    }

    /// The child (the same object every time).
    public func makeStore() throws -> any DataStore { child }

    /// Tears the child down and destroys the parent's place.
    public func destroy() {
        try? child.tearDown()
        parent.destroy()
    }
}
