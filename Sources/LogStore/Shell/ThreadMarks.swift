import Synchronization

/// Which threads are inside a store's read and write blocks: what a backend needs to refuse a
/// `writeSync` nested in a write block (it would wait for itself) and a `tearDown()` inside a
/// block (``StoreErrors``), for the backends that run blocks on a connection (SQLite,
/// PostgreSQL). Thread-safe; O(1).
package final class ThreadMarks: Sendable {
    /// The thread inside a write block, if any (a backend runs one write block at a time).
    let writing = Mutex<UInt?>(nil)
    /// How many read blocks each thread is inside.
    let reading = Mutex<[UInt: Int]>([:])

    package init() {}

    /// Whether the calling thread is inside a write block.
    package var isWritingOnCurrentThread: Bool {
        let me = _currentThreadID()
        return writing.withLock { $0 == me }
    }

    /// Whether the calling thread is inside a read block.
    package var isReadingOnCurrentThread: Bool {
        let me = _currentThreadID()
        return reading.withLock { ($0[me] ?? 0) > 0 }
    }

    /// Whether the calling thread is inside a read or write block (where `tearDown()` would wait
    /// for itself).
    package var isInsideBlockOnCurrentThread: Bool { isWritingOnCurrentThread || isReadingOnCurrentThread }

    /// Runs `body` marked as a read block of the calling thread; returns how deep it is nested
    /// (1 for the outermost) to `body`.
    package func reading<T>(_ body: (_ depth: Int) throws -> T) rethrows -> T {
        let me = _currentThreadID()
        let depth = reading.withLock { d -> Int in
            d[me, default: 0] += 1
            return d[me, default: 0]
        }
        defer {
            reading.withLock { d in
                let n = (d[me] ?? 1) - 1
                d[me] = n > 0 ? n : nil
            }
        }
        return try body(depth)
    }

    /// Runs `body` marked as the write block of the calling thread.
    package func writing<T>(_ body: () throws -> T) rethrows -> T {
        let me = _currentThreadID()
        writing.withLock { $0 = me }
        defer { writing.withLock { $0 = nil } }
        return try body()
    }
}
