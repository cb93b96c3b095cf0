import Foundation

/// Group commit: many committers, one `fdatasync` at a time covering everything appended so far.
///
/// A committer that needs durability either finds its sequence number already synced, waits for
/// the sync in flight, or becomes the leader and runs the next sync itself (so a lone writer pays
/// one `fdatasync` and no thread hand-off). Asynchronous committers register a callback instead.
///
/// It only counts: which sequence numbers are appended and which are synced. What a sync means for
/// readers is the engine's business: the thread that waited for its commit publishes what the
/// sync covered (`LogEngine.waitDurable(_:)`), and whoever sees a sync fail poisons the store.
///
/// `@unchecked Sendable`: every mutable field is read and written only while `cond` is locked.
final class GroupCommit: @unchecked Sendable {
    private let cond = NSCondition()
    private var appended: UInt64
    private var synced: UInt64
    private var syncing = false
    private var failure: LogStoreError?
    private var callbacks: [(UInt64, @Sendable ((any Error)?) -> Void)] = []

    /// Makes everything appended so far durable (the engine's `fdatasync` of the tail). Runs on
    /// the leader's thread, without `cond`.
    private let sync: @Sendable () throws -> Void

    init(sequence: UInt64, sync: @escaping @Sendable () throws -> Void) {
        appended = sequence
        synced = sequence
        self.sync = sync
    }

    /// Records that transactions up to `seq` are written to the OS.
    func noteAppended(_ seq: UInt64) {
        cond.lock()
        appended = max(appended, seq)
        cond.unlock()
    }

    var lastAppended: UInt64 {
        cond.lock()
        defer { cond.unlock() }
        return appended
    }

    var pendingSync: Bool {
        cond.lock()
        defer { cond.unlock() }
        return appended > synced
    }

    /// Blocks until `seq` is durable; returns how far the log is durable now (at least `seq`), so
    /// the caller can publish everything that sync covered. Throws `.storePoisoned` if a sync
    /// failed, or the error given to ``fail(_:)``.
    @discardableResult
    func waitDurable(_ seq: UInt64) throws -> UInt64 {
        cond.lock()
        while true {
            // Synced first: a commit that reached the disk succeeded, even if the store was closed
            // or a later sync failed afterwards.
            if synced >= seq {
                let now = synced
                cond.unlock()
                return now
            }
            if let failure {
                cond.unlock()
                throw failure
            }
            if !syncing {
                runSyncLocked()
            } else {
                cond.wait()
            }
        }
    }

    /// Calls `callback` (on some thread) once `seq` is durable, or with the error if a sync fails.
    /// The callback runs without `cond` held.
    func notifyDurable(_ seq: UInt64, _ callback: @escaping @Sendable ((any Error)?) -> Void) {
        cond.lock()
        if synced >= seq {
            cond.unlock()
            callback(nil)
            return
        }
        if let failure {
            cond.unlock()
            callback(failure)
            return
        }
        callbacks.append((seq, callback))
        let start = !syncing
        cond.unlock()
        if start { DispatchQueue.global().async { _ = try? self.waitDurable(seq) } }
    }

    /// Runs one sync as leader. Called and returns with `cond` locked.
    private func runSyncLocked() {
        syncing = true
        let target = appended
        cond.unlock()
        var error: LogStoreError? = nil
        do { try sync() } catch let cause {
            error = LogStoreError(
                .storePoisoned,
                "fdatasync failed, so recent commits may not be on disk. The store refuses writes until it is reopened; data committed before this error is safe.",
                underlying: cause)
        }
        cond.lock()
        syncing = false
        var ready: [@Sendable ((any Error)?) -> Void] = []
        var errorForCallbacks: LogStoreError? = nil
        if let error {
            if failure == nil { failure = error }
            ready = callbacks.map { $0.1 }
            callbacks.removeAll()
            errorForCallbacks = failure
        } else {
            synced = max(synced, target)
            var rest: [(UInt64, @Sendable ((any Error)?) -> Void)] = []
            for c in callbacks {
                if c.0 <= synced { ready.append(c.1) } else { rest.append(c) }
            }
            callbacks = rest
        }
        let more = failure == nil && callbacks.contains { $0.0 > synced }
        let nextTarget = appended
        cond.broadcast()
        if !ready.isEmpty || more {
            cond.unlock()
            for r in ready { r(errorForCallbacks) }
            if more { DispatchQueue.global().async { _ = try? self.waitDurable(nextTarget) } }
            cond.lock()
        }
    }

    /// Fails every future wait (the store is closing or poisoned).
    func fail(_ error: LogStoreError) {
        cond.lock()
        if failure == nil { failure = error }
        let pending = callbacks.map { $0.1 }
        callbacks.removeAll()
        cond.broadcast()
        cond.unlock()
        for p in pending { p(error) }
    }
}
