import Foundation
import Synchronization

/// A value computed on a thread of its own while the caller goes on with other work (a backup
/// encodes its checkpoint while it copies segments). Not on a Dispatch queue: the global queues'
/// few threads may all be busy with the app's blocking work (writers waiting for their commits),
/// and the caller waits for this value. Sendable: its state is a mutex and a semaphore.
final class BackgroundValue<T: Sendable>: Sendable {
    private let compute: @Sendable () -> T
    private let value = Mutex<T?>(nil)
    private let done = DispatchSemaphore(value: 0)

    /// Starts computing `compute()` now, on a new thread.
    init(_ compute: @escaping @Sendable () -> T) {
        self.compute = compute
        Thread { [self] in
            let v = compute()
            value.withLock { $0 = v }
            done.signal()
        }.start()
    }

    /// The value: waits until it is computed. Any thread; may be called more than once.
    func wait() -> T {
        done.wait()
        defer { done.signal() }
        return value.withLock { $0 } ?? compute()
    }
}
