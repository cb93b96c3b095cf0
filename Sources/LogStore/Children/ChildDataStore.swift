import LogStoreEngine

/// A child store: a scratch overlay of its parent's committed state, made by
/// ``DataStore/makeChildDataStore()`` on any store (a `LogDataStore`, a `SQLiteDataStore`, a
/// `PostgresDataStore`, or another child), whose writes its parent sees only after
/// ``DataStore/merge(_:)``.
///
/// ```swift
/// let basket = try store.makeChildDataStore()
/// try basket.writeSync { try $0.insert(Restaurant(id: UUID(), name: "Draft", rating: 3)) }
/// try store.merge(basket)        // one transaction of the parent
/// ```
///
/// Reads see the parent's state when the child was made (or last merged) plus the child's own
/// writes. Writes return at once and are never durable: a crash loses them by design; past
/// ``DataStoreOptions/childSpillThreshold`` bytes they move to a temporary file beside the parent.
/// `setup()` is harmless; after `tearDown()` it starts a new, empty overlay over the parent's
/// current state. Once the parent is torn down, every call throws `.parentClosed`. The rules are
/// the "Child Stores" article's.
///
/// Thread safety: use one instance from any number of threads and tasks.
public final class ChildDataStore: DataStore {
    let shell: StoreShell<ChildBackend>

    /// A child of `parent`, not yet set up (``StoreShell/makeChild()`` sets it up and adopts it).
    init(parent: any ChildParent) {
        shell = StoreShell(label: "LogStore.child.writeAsync", options: parent.options, migrations: nil) {
            try parent.makeOverlay()
        }
    }

    /// Makes this child and its children throw `error` from now on (its parent was torn down).
    func invalidate(_ error: LogStoreError) { shell.invalidate(error) }

    /// See ``DataStore/setup()``: harmless when set up; after ``tearDown()``, a new empty overlay
    /// over the parent's state now. Throws `.parentClosed` once the parent was torn down,
    /// `.notOpen` when it is not set up.
    public func setup() throws { try shell.setup() }

    /// See ``DataStore/tearDown()``: discards the child's changes (and its spill file); its
    /// children throw `.parentClosed` afterwards.
    public func tearDown() throws { try shell.tearDown() }

    /// See ``DataStore/nuke()``: deletes every item the child shows, as one write of the child.
    public func nuke() throws { try shell.nuke() }

    /// See `DataStore.read(_:)`: a snapshot of the child's state (its base plus its writes).
    @discardableResult
    public func read<T>(_ block: (any DataStoreReadAccessor) throws -> T) throws -> T { try shell.read(block) }

    /// The async `read`: the same read, off the caller's executor.
    public func read<T: Sendable>(_ block: @escaping @Sendable (any DataStoreReadAccessor) throws -> T) async throws -> T {
        try await shell.read(block)
    }

    /// See ``DataStore/writeSync(_:)``: returns once the change is in the child (never durable).
    @discardableResult
    public func writeSync<T>(_ block: (any DataStoreReadWriteAccessor) throws -> T) throws -> T { try shell.writeSync(block) }

    /// See ``DataStore/writeAsync(_:completion:)``.
    public func writeAsync(
        _ block: @escaping @Sendable (any DataStoreReadWriteAccessor) throws -> Void, completion: (@Sendable ((any Error)?) -> Void)?
    ) {
        shell.writeAsync(block, completion: completion)
    }

    /// See ``DataStore/write(_:)``.
    public func write<T: Sendable>(_ block: @escaping @Sendable (any DataStoreReadWriteAccessor) throws -> T) async throws -> T {
        try await shell.write(block)
    }

    /// See ``DataStore/makeChildDataStore()``: a grandchild over this child's state now.
    public func makeChildDataStore() throws -> any DataStore { try shell.makeChild() }

    /// See ``DataStore/merge(_:)``: a grandchild's changes, as one write of this child.
    public func merge(_ child: any DataStore) throws { try shell.merge(child, policy: .childWins) }

    /// See ``DataStore/merge(_:policy:)``. An item conflicts when its bytes in this child differ
    /// from the grandchild's base.
    public func merge(_ child: any DataStore, policy: MergePolicy) throws { try shell.merge(child, policy: policy) }

    /// See ``DataStore/changeFeed()``: the child's own writes and rebases.
    public func changeFeed() throws -> DataStoreChangeFeed { try shell.changeFeed() }
}
