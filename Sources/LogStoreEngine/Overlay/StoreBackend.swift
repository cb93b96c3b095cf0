/// What the DataStore layer needs from a store: a durable ``LogEngine`` or a child
/// ``OverlayStore``. Both run write bodies serialized on the caller's thread and hand out
/// immutable, thread-safe read views.
public protocol StoreBackend: AnyObject, Sendable {
    /// The latest committed state, as an immutable view usable from any thread for as long as it
    /// is held. Throws `.notOpen` after close, `.parentClosed` for an orphaned child.
    func readView() throws -> any RecordReader & Sendable
    /// Runs a write transaction and returns once it is durable (see ``LogEngine/write(_:)``).
    @discardableResult
    func write<T>(_ body: (EngineTransaction) throws -> T) throws -> T
    /// Runs a write transaction; `onDurable` is called once it is durable.
    @discardableResult
    func write<T>(_ body: (EngineTransaction) throws -> T, onDurable: @escaping @Sendable ((any Error)?) -> Void) throws -> T
    /// Closes the backend. Idempotent.
    func close() throws
    /// Whether the calling thread is inside a write body of this backend.
    var isWritingOnCurrentThread: Bool { get }
}

extension LogEngine: StoreBackend {
    /// See ``StoreBackend/readView()``.
    public func readView() throws -> any RecordReader & Sendable { try snapshot() }
    /// See ``StoreBackend/isWritingOnCurrentThread``.
    public var isWritingOnCurrentThread: Bool { writer.heldByCurrentThread }
}
