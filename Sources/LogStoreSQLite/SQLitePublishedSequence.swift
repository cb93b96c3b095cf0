import Foundation

/// The number of the last commit of an SQLite session that reached its change feed: the writer
/// advances it after publishing (still holding the writer connection, so commits advance it in
/// order), and reads it to number its next commit; a feed snapshot that sees a newer commit in the
/// file waits until that commit was published (the feed's rule 2).
///
/// Thread-safe: `value` is read and written only while holding `condition`, the lock that
/// justifies `@unchecked Sendable`.
final class SQLitePublishedSequence: @unchecked Sendable {
    private let condition = NSCondition()
    private var value: UInt64

    init(_ value: UInt64) { self.value = value }

    /// The last published commit (0 for an empty store).
    var current: UInt64 {
        condition.lock()
        defer { condition.unlock() }
        return value
    }

    /// Records that commit `sequence` was published, and wakes the snapshots waiting for it.
    func advance(to sequence: UInt64) {
        condition.lock()
        value = sequence
        condition.broadcast()
        condition.unlock()
    }

    /// Blocks until commit `sequence` was published. `abandoned` is asked again at least every
    /// 50 ms (a torn-down store never publishes it); returns false when it said so.
    func wait(for sequence: UInt64, abandoned: () -> Bool) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while value < sequence {
            if abandoned() { return false }
            _ = condition.wait(until: Date(timeIntervalSinceNow: 0.05))
        }
        return true
    }
}
