import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Serializes write transactions and detects a write started from inside another write on the
/// same thread (which would otherwise deadlock).
package final class WriterLock: Sendable {
    private let lock = NSLock()
    private let owner = Mutex<UInt?>(nil)

    /// An unlocked lock.
    package init() {}

    /// How often ``acquire()`` yields the CPU and tries again before it sleeps until the holder
    /// releases the lock.
    static let yieldsBeforeSleeping = 8

    static func currentThread() -> UInt {
        #if canImport(Glibc)
            return UInt(pthread_self())
        #else
            return UInt(bitPattern: pthread_self())
        #endif
    }

    /// Whether the calling thread holds the lock.
    package var heldByCurrentThread: Bool { owner.withLock { $0 == Self.currentThread() } }

    /// Takes the lock, waiting for the holder. Throws `.reentrantWrite` if this thread holds it.
    package func acquire() throws {
        let me = Self.currentThread()
        if owner.withLock({ $0 == me }) {
            throw LogStoreError(
                .reentrantWrite,
                "A write block started another write on the same store; it would wait for itself forever. Do the work in the outer block, or use writeAsync."
            )
        }
        // Held for microseconds (a write body and its append): yielding a few times costs less
        // than sleeping in the kernel and being woken (the futex path was a third of the CPU of
        // 16 writers sharing group commits).
        var acquired = lock.try()
        var tries = 0
        while !acquired && tries < Self.yieldsBeforeSleeping {
            sched_yield()
            acquired = lock.try()
            tries += 1
        }
        if !acquired { lock.lock() }
        owner.withLock { $0 = me }
    }

    /// Takes the lock if it comes free within about `withinMicroseconds`, polling; returns
    /// whether it did (false, too, when this thread holds it). For a caller that holds another
    /// lock a writer may wait for, and so must never sleep on this one.
    package func tryAcquire(withinMicroseconds: Int = 20_000) -> Bool {
        let me = Self.currentThread()
        if owner.withLock({ $0 == me }) { return false }
        var waited = 0
        while !lock.try() {
            if waited >= withinMicroseconds { return false }
            if waited < 8 { sched_yield() } else { usleep(50) }
            waited += waited < 8 ? 1 : 50
        }
        owner.withLock { $0 = me }
        return true
    }

    /// Releases the lock taken by ``acquire()`` on this thread.
    package func release() {
        owner.withLock { $0 = nil }
        lock.unlock()
    }
}
