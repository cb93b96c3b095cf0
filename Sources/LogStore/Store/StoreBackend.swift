import Dispatch
import LogStoreEngine

/// What a `LogDataStore` runs on: a durable ``LogEngine`` (a directory or in-memory store) or a
/// ``ChildStore`` over its parent. One closed set, matched by `switch`, so the DataStore layer
/// never guesses a backend's type at run time.
///
/// Both run write bodies serialized on the caller's thread and hand out immutable, thread-safe
/// read views.
enum StoreBackend: Sendable {
    case engine(LogEngine)
    case child(ChildStore)

    /// The latest committed state, usable from any thread for as long as it is held. Throws
    /// `.notOpen` after close, `.parentClosed` for an orphaned child.
    func readView() throws -> any RecordReader & Sendable { try readAccess().view }

    /// ``readView()`` and its failure report for a ``ReadAccessor``: nil for the engine's own
    /// snapshots, which cannot fail without throwing (no conformance lookup on the point-read
    /// path); a child's view reports its base's failures itself.
    func readAccess() throws -> (view: any RecordReader & Sendable, health: (any FallibleRecordReader)?) {
        switch self {
        case .engine(let e): return (try e.snapshot(), nil)
        case .child(let c):
            let v = try c.readView()
            return (v, v)
        }
    }

    /// Runs a write transaction and returns once it is durable (see ``LogEngine/write(_:)``; a
    /// child's writes are never durable and return at once).
    @discardableResult
    func write<T>(_ body: (EngineTransaction) throws -> T) throws -> T {
        switch self {
        case .engine(let e): return try e.write(body)
        case .child(let c): return try c.write(body)
        }
    }

    /// Runs a write transaction; `onDurable` is called once it is durable (at once for a child).
    @discardableResult
    func write<T>(_ body: (EngineTransaction) throws -> T, onDurable: @escaping @Sendable ((any Error)?) -> Void) throws -> T {
        switch self {
        case .engine(let e): return try e.write(body, onDurable: onDurable)
        case .child(let c):
            let r = try c.write(body)
            onDurable(nil)
            return r
        }
    }

    /// Whether the calling thread is inside a write body of this backend.
    var isWritingOnCurrentThread: Bool {
        switch self {
        case .engine(let e): return e.isWritingOnCurrentThread
        case .child(let c): return c.isWritingOnCurrentThread
        }
    }

    /// Makes every commit so far durable (`fdatasync`); nothing to do for a child.
    func flush() throws {
        if case .engine(let e) = self { try e.flush() }
    }

    /// What opening the store found and did; nil for a child (its parent recovered).
    var recoveryReport: RecoveryReport? {
        if case .engine(let e) = self { return e.recoveryReport }
        return nil
    }

    /// Makes a child unusable with `error` (its parent was torn down); an engine closes itself.
    func invalidate(_ error: LogStoreError) {
        if case .child(let c) = self { c.invalidate(error) }
    }

    /// Closes the backend. Idempotent.
    func close() throws {
        switch self {
        case .engine(let e): try e.close()
        case .child(let c): c.close()
        }
    }
}
