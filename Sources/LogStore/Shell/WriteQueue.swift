import Dispatch
import Foundation
import Synchronization

/// The queue of a store's asynchronous writes (`writeAsync` and the async `write`): blocks run
/// one at a time, off the caller's thread, in the order they were queued (Concurrency rule 8),
/// and their completion fires once both the block's value and the commit's durability are known.
/// `LogDataStore` and the other backends share it, so the ordering rules have one implementation.
///
/// Thread-safe; `enqueue` returns at once.
package final class WriteQueue: Sendable {
    let queue: DispatchQueue
    /// The thread currently running a queued write (to avoid waiting on ourselves).
    let runningThread = Mutex<UInt?>(nil)

    package init(label: String) {
        queue = DispatchQueue(label: label)
    }

    /// Queues `work`. `check` runs first on the caller's thread: if it throws (the store is not
    /// open), `done` gets its error (on a global queue) and nothing is queued. `work` runs on the
    /// queue; it commits and calls its argument once the commit is durable (or with the error),
    /// before or after returning the block's value. `done` is called once, on a global queue.
    package func enqueue<T: Sendable>(
        check: () throws -> Void,
        _ work: @escaping @Sendable (_ onDurable: @escaping @Sendable ((any Error)?) -> Void) throws -> T,
        done: @escaping @Sendable (Result<T, any Error>) -> Void
    ) {
        do {
            try check()
        } catch {
            DispatchQueue.global().async { done(.failure(error)) }
            return
        }
        queue.async {
            let me = _currentThreadID()
            self.runningThread.withLock { $0 = me }
            defer { self.runningThread.withLock { $0 = nil } }
            // The block's value is known when `work` returns; durability may be reported before or
            // after that, on another thread. `Rendezvous` fires `done` once both are known.
            let rendezvous = Rendezvous<T>(done)
            do {
                let value = try work { error in rendezvous.durable(error) }
                rendezvous.value(value)
            } catch {
                rendezvous.failed(error)
            }
        }
    }

    /// ``enqueue(check:_:done:)`` for `writeAsync`: `completion` (on a global queue) gets nil
    /// once the commit is durable, or the error.
    package func enqueue(
        check: () throws -> Void,
        _ work: @escaping @Sendable (_ onDurable: @escaping @Sendable ((any Error)?) -> Void) throws -> Void,
        completion: (@Sendable ((any Error)?) -> Void)?
    ) {
        enqueue(check: check, work) { (result: Result<Void, any Error>) in
            if case .failure(let e) = result { completion?(e) } else { completion?(nil) }
        }
    }

    /// ``enqueue(check:_:done:)`` for the async `write`: returns the block's value once the
    /// commit is durable, or throws the error.
    package func value<T: Sendable>(
        check: () throws -> Void,
        _ work: @escaping @Sendable (_ onDurable: @escaping @Sendable ((any Error)?) -> Void) throws -> T
    ) async throws -> T {
        try await withCheckedThrowingContinuation { (cont: CheckedContinuation<T, any Error>) in
            enqueue(check: check, work) { cont.resume(with: $0) }
        }
    }

    /// ``enqueue(check:_:completion:)`` for a backend whose `transaction` returns once its commit
    /// is durable (SQLite, PostgreSQL): `completion` gets nil after it returned, or its error.
    package func enqueue(
        check: () throws -> Void, durableTransaction transaction: @escaping @Sendable () throws -> Void,
        completion: (@Sendable ((any Error)?) -> Void)?
    ) {
        enqueue(
            check: check,
            { onDurable in
                try transaction()
                onDurable(nil)
            }, completion: completion)
    }

    /// ``value(check:_:)`` for a backend whose `transaction` returns once its commit is durable.
    package func value<T: Sendable>(check: () throws -> Void, durableTransaction transaction: @escaping @Sendable () throws -> T)
        async throws -> T
    {
        try await value(check: check) { onDurable in
            let value = try transaction()
            onDurable(nil)
            return value
        }
    }

    /// Waits until every write queued so far has run (returns at once when called from a queued
    /// write itself).
    package func drain() {
        if isRunningOnCurrentThread { return }
        queue.sync {}
    }

    /// Whether the calling thread is running a queued write.
    package var isRunningOnCurrentThread: Bool {
        let me = _currentThreadID()
        return runningThread.withLock { $0 == me }
    }
}

/// Joins a write's value with its durability notification; calls `done` once, on a global queue.
final class Rendezvous<T: Sendable>: Sendable {
    struct State {
        var value: T?
        var durable: Bool = false
        var fired = false
    }
    let state = Mutex(State())
    let done: @Sendable (Result<T, any Error>) -> Void
    init(_ done: @escaping @Sendable (Result<T, any Error>) -> Void) { self.done = done }

    func fire(_ r: Result<T, any Error>) {
        let d = done
        DispatchQueue.global().async { d(r) }
    }

    func value(_ v: T) {
        let ready = state.withLock { s -> Bool in
            s.value = v
            guard s.durable, !s.fired else { return false }
            s.fired = true
            return true
        }
        if ready { fire(.success(v)) }
    }

    func durable(_ error: (any Error)?) {
        if let error {
            failed(error)
            return
        }
        let v = state.withLock { s -> T? in
            s.durable = true
            guard let v = s.value, !s.fired else { return nil }
            s.fired = true
            return v
        }
        if let v { fire(.success(v)) }
    }

    func failed(_ error: any Error) {
        let go = state.withLock { s -> Bool in
            defer { s.fired = true }
            return !s.fired
        }
        if go { fire(.failure(error)) }
    }
}

/// An identifier of the calling thread.
package func _currentThreadID() -> UInt {
    #if canImport(Glibc)
        return UInt(pthread_self())
    #else
        return UInt(bitPattern: pthread_self())
    #endif
}
