/// JustPersist's transactional data store: separated reads and writes, automatic commit at the
/// end of a write block, child stores merged into their parent.
///
/// ``LogDataStore`` is LogStore's implementation. Write app code against `DataStore` so the store
/// behind it can be swapped (an in-memory store in tests, another framework later).
///
/// Thread safety: a store may be used from any thread and any task at once.
public protocol DataStore: AnyObject, Sendable {
    /// Creates or opens the store and recovers it after a crash. Idempotent. Blocks the caller.
    /// Throws `.locked` if another open store holds the directory, `.notAStore`, `.corruption`,
    /// `.unsupportedFormatVersion` or an I/O error.
    func setup() throws
    /// Finishes queued asynchronous writes, flushes and closes. Data stays. Idempotent. Child
    /// stores of this store fail with `.parentClosed` afterwards.
    func tearDown() throws
    /// Deletes every item of every type as one committed, durable write (Skopelos' nuke). The
    /// store stays usable.
    func nuke() throws

    /// Runs `block` synchronously on the calling thread over one consistent snapshot and returns
    /// its result. Never waits for writers. The block's own error is rethrown unchanged.
    @discardableResult func read<T>(_ block: (any DataStoreReadAccessor) throws -> T) throws -> T
    /// Runs `block` on the calling thread, serialized with every other write to the store, commits
    /// its changes atomically and returns once the commit is durable (under the store's
    /// `Durability`). If the block throws, nothing is committed and its error is rethrown
    /// unchanged. Calling it from inside a write block of the same store throws `.reentrantWrite`.
    @discardableResult func writeSync<T>(_ block: (any DataStoreReadWriteAccessor) throws -> T) throws -> T
    /// Queues `block` and returns at once. The block runs off the calling thread; `completion`
    /// (on an unspecified thread) gets nil once the commit is durable, or the error (the block's
    /// own error unchanged). Writes queued from one thread commit in the order they were queued.
    func writeAsync(
        _ block: @escaping @Sendable (any DataStoreReadWriteAccessor) throws -> Void,
        completion: (@Sendable ((any Error)?) -> Void)?)
    /// `read` for Swift concurrency: runs `block` off the caller's executor.
    func read<T: Sendable>(_ block: @escaping @Sendable (any DataStoreReadAccessor) throws -> T) async throws -> T
    /// `writeSync` for Swift concurrency: queued like `writeAsync`, resumes once durable.
    func write<T: Sendable>(_ block: @escaping @Sendable (any DataStoreReadWriteAccessor) throws -> T) async throws -> T

    /// A child store: reads this store's committed snapshot as of now plus its own writes, which
    /// this store sees only after ``merge(_:)``. O(1). Throws `.notOpen` if this store is not set up.
    func makeChildDataStore() throws -> any DataStore
    /// Replays `child`'s changes since its last merge into this store as one atomic, durable
    /// transaction, with ``MergePolicy/childWins``. Throws `.notAChild` (changing nothing) if
    /// `child` is not a child of this store.
    func merge(_ child: any DataStore) throws
    /// Like ``merge(_:)`` with an explicit conflict policy. `.failOnConflict` throws
    /// `.mergeConflict` listing the conflicting items and changes nothing.
    func merge(_ child: any DataStore, policy: MergePolicy) throws

    /// The store's commit stream, which observation (``observe(_:)``, ``observeItem(ofType:id:)``,
    /// ``observeCount(_:)``) and change tracking (``changes(since:)``) read. Apps do not call it;
    /// a backend implements it by creating one ``DataStoreChangeFeed`` when it opens and
    /// publishing every commit to it (the rules are on ``DataStoreChangeFeed``). O(1), any thread.
    /// Throws `.notOpen` if the store is not set up, `.parentClosed` for an orphaned child store.
    func changeFeed() throws -> DataStoreChangeFeed
}
