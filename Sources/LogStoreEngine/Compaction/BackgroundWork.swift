import Foundation

/// Bookkeeping for an engine's background work (online compaction, periodic checkpoints) and for
/// `compact()` calls: counts what is running, so `close()` can stop new work and wait for the
/// running work before it releases the store's lock (background work writes files in the store's
/// directory, which must never happen once another process may own it).
///
/// `@unchecked Sendable`: every mutable field is read and written only while `cond` is locked.
final class BackgroundWork: @unchecked Sendable {
    enum Job: Hashable {
        case compaction
        case checkpoint
    }

    /// Runs the jobs one at a time, off the callers' threads.
    let queue = DispatchQueue(label: "LogStore.background", qos: .utility)
    private let cond = NSCondition()
    private var active = 0
    private var closing = false
    private var queued: Set<Job> = []

    /// Marks `job` as queued; false if it already is (or the engine is closing), so triggers
    /// don't pile up copies of the same job.
    func claim(_ job: Job) -> Bool {
        cond.lock()
        defer { cond.unlock() }
        if closing || queued.contains(job) { return false }
        queued.insert(job)
        return true
    }

    /// The queued job has started: a new trigger may queue it again.
    func unclaim(_ job: Job) {
        cond.lock()
        queued.remove(job)
        cond.unlock()
    }

    /// Registers running work; false once closing started (the work must not run).
    func begin() -> Bool {
        cond.lock()
        defer { cond.unlock() }
        if closing { return false }
        active += 1
        return true
    }

    /// Ends work registered with `begin()`.
    func end() {
        cond.lock()
        active -= 1
        cond.broadcast()
        cond.unlock()
    }

    /// Whether `close()` started: long work checks this to stop early.
    var isClosing: Bool {
        cond.lock()
        defer { cond.unlock() }
        return closing
    }

    /// Refuses new work and waits until the running work has ended. Idempotent.
    func closeAndWait() {
        cond.lock()
        closing = true
        while active > 0 { cond.wait() }
        cond.unlock()
    }
}
