import Synchronization

/// A value behind a mutex, in a class so closures can share it.
package final class Protected<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    package init(_ value: Value) { mutex = Mutex(value) }
    /// Runs `body` with exclusive access. Never call back into the same `Protected` from `body`.
    package func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        try mutex.withLock { v in try body(&v) }
    }
}
