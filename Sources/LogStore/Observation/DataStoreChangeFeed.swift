import Foundation
public import LogStoreEngine
import Synchronization

/// A store's commit stream, as observation and change tracking read it: the one piece a
/// ``DataStore`` backend provides so that ``DataStore/observe(_:)``, ``DataStore/observeItem(ofType:id:)``,
/// ``DataStore/observeCount(_:)`` and ``DataStore/changes(since:)`` work on it. Everything else
/// (initial fetch at a snapshot, tailing commits from its sequence, relevance, diffing,
/// coalescing, tombstones) is LogStore's, written once, the same for every backend.
///
/// What a backend does (the conformance suite checks each rule):
/// 1. Creates one feed when it opens, with the sequence of its state then, and returns it from
///    ``DataStore/changeFeed()`` until it closes.
/// 2. Calls ``publish(_:)`` with the `CommitChanges` of every commit, in sequence order, never
///    two calls at once, and never after a later commit can be seen: best **before** any reader
///    can see the commit (LogStore calls it under its state lock, where commits become visible);
///    a backend whose commits become visible on their own (SQLite, PostgreSQL) publishes right
///    after the commit, still holding its writer, and its `snapshot` closure returns a snapshot
///    only once every commit it holds was published (it waits for that moment).
/// 3. Serves ``DataStoreSnapshot``s of its newest state through the `snapshot` closure.
/// 4. Calls ``finish(throwing:)`` when it closes (nil: observers complete) or can commit no more
///    (a poisoned store, an orphaned child: observers throw the error).
///
/// What the feed guarantees the backend: ``publish(_:)`` costs O(observers of the changed types)
/// plus O(deleted keys), never blocks on an observer, and never calls back into the backend.
///
/// Thread-safe (one lock, held briefly). The feed lives as long as the backend holds it and its
/// observers run.
public final class DataStoreChangeFeed: Sendable {
    /// How an observation ended, once it did.
    enum End: Sendable {
        /// The store was torn down (or the observer cancelled): the iteration completes.
        case finished
        /// The store can commit no more, or the observation failed: the iteration throws.
        case failed(any Error)
    }

    struct State {
        /// Per item type, the observers of it.
        var subscribers: [String: [ObjectIdentifier: any ChangeSubscriber]] = [:]
        var history: ChangeHistory
        var end: End?
    }

    let state: Mutex<State>
    /// The store's identity, carried by tokens.
    let storeIdentity: String?
    /// This opening of the store, carried by tokens.
    let epoch: String
    let retention: ChangeHistoryRetention
    let latest: @Sendable () throws -> any DataStoreSnapshot

    /// A feed starting at `sequence` (the backend's state when it opened).
    ///
    /// - Parameters:
    ///   - storeIdentity: survives reopening (tokens of another store are refused); nil if the
    ///     store has none.
    ///   - sequence: the sequence of the backend's state now; every later commit must be published.
    ///   - retention: how long tombstones are kept for ``DataStore/changes(since:)``.
    ///   - recordsWrites: keep written keys too, because the backend's snapshots answer
    ///     ``DataStoreSnapshot/keys(ofType:writtenAfter:)`` with nil.
    ///   - snapshot: the backend's newest committed state; called on observation threads, never
    ///     under the feed's lock.
    public init(
        storeIdentity: String?, sequence: UInt64, retention: ChangeHistoryRetention = ChangeHistoryRetention(),
        recordsWrites: Bool, snapshot: @escaping @Sendable () throws -> any DataStoreSnapshot
    ) {
        self.storeIdentity = storeIdentity
        self.epoch = UUID().uuidString
        self.retention = retention
        self.latest = snapshot
        state = Mutex(State(history: ChangeHistory(openedAt: sequence, recordsWrites: recordsWrites)))
    }

    // MARK: The backend's side

    /// Hands committed changes to the observers of the types they touch and to the history.
    /// Call in sequence order, before readers can see the commits (rule 2). O(observers of the
    /// changed types) plus O(deleted keys); never blocks. After ``finish(throwing:)``, ignored.
    public func publish(_ commits: [CommitChanges]) {
        guard !commits.isEmpty else { return }
        let now = ContinuousClock.now
        var deliveries: [(any ChangeSubscriber, CommitChanges)] = []
        state.withLock { s in
            guard s.end == nil else { return }
            for c in commits {
                s.history.record(c, at: now)
                if c.isReset {
                    for subs in s.subscribers.values { for sub in subs.values { deliveries.append((sub, c)) } }
                } else {
                    for type in c.types.keys {
                        guard let subs = s.subscribers[type] else { continue }
                        for sub in subs.values { deliveries.append((sub, c)) }
                    }
                }
            }
            s.history.prune(now: now, retention: retention)
        }
        for (sub, c) in deliveries { sub.enqueue(c) }
    }

    /// Whether ``finish(throwing:)`` was called. Any thread.
    package var isFinished: Bool { state.withLock { $0.end != nil } }

    /// Ends every observation: nil when the store was torn down (iterations complete), an error
    /// when it can commit no more (iterations throw it). Later publications are ignored and later
    /// observations end at once. Idempotent: the first call wins.
    public func finish(throwing error: LogStoreError?) {
        let subscribers = state.withLock { s -> [any ChangeSubscriber] in
            guard s.end == nil else { return [] }
            s.end = error.map { .failed($0) } ?? .finished
            defer { s.subscribers = [:] }
            return s.subscribers.values.flatMap(\.values)
        }
        let end: End = error.map { .failed($0) } ?? .finished
        for sub in subscribers { sub.finish(end) }
    }

    // MARK: Observation's side

    /// The backend's newest committed state. Throws what the backend throws (`.notOpen` once
    /// closed).
    func snapshot() throws -> any DataStoreSnapshot { try latest() }

    /// The token of the state at `sequence` of this opening.
    func token(for sequence: UInt64) -> DataStoreChangeToken {
        DataStoreChangeToken(sequence: sequence, store: storeIdentity, epoch: epoch)
    }

    /// Registers `subscriber` for the commits touching `type`; returns how the feed ended if it
    /// already has (then nothing is registered).
    func subscribe(_ subscriber: any ChangeSubscriber, to type: String) -> End? {
        state.withLock { s in
            if let end = s.end { return end }
            s.subscribers[type, default: [:]][ObjectIdentifier(subscriber)] = subscriber
            return nil
        }
    }

    /// Unregisters `subscriber`. Idempotent.
    func unsubscribe(_ subscriber: any ChangeSubscriber, from type: String) {
        state.withLock { s in
            s.subscribers[type]?[ObjectIdentifier(subscriber)] = nil
            if s.subscribers[type]?.isEmpty == true { s.subscribers[type] = nil }
        }
    }

    /// Test support: observers registered now.
    package var _subscriberCount: Int { state.withLock { $0.subscribers.values.reduce(0) { $0 + $1.count } } }

    /// Test support: tombstones (and recorded writes) the history keeps now.
    package var _historyCount: Int { state.withLock { $0.history.count } }

    // MARK: Change tracking

    /// The token of the newest committed state.
    func currentToken() throws -> DataStoreChangeToken { token(for: try snapshot().sequence) }

    /// See ``DataStore/changes(since:)``.
    func changes(since token: DataStoreChangeToken) throws -> DataStoreChanges {
        let snap = try snapshot()
        let s = snap.sequence
        let t = token.sequence
        if token.store != storeIdentity {
            throw LogStoreError(
                .historyTruncated,
                "The change token belongs to another store (\(token.store ?? "none"), this one is \(storeIdentity ?? "none")). Resynchronize fully from this store, then continue from changeToken()."
            )
        }
        let (history, typesWritten) = try state.withLock { st -> ([String: [RecordKey: Bool]], [String]) in
            let h = st.history
            // A token of this opening is good back to the floor; one of an earlier opening only up
            // to the state the store was opened at (later sequences of that opening may be commits
            // a crash took back and this opening reused).
            let newest = token.epoch == epoch ? s : min(s, h.openedAt)
            guard t >= h.floor, t <= newest else {
                let why =
                    t > newest
                    ? "it is newer than any state this store can vouch for (\(newest)): it was handed out before a crash or restore that took commits back, or before the store was reopened"
                    : t < h.openedAt
                        ? "it is older than the state the store was opened at (#\(h.openedAt)); deleted ids are remembered only while a store is open"
                        : "the store no longer remembers ids deleted before #\(h.floor) (LogStoreOptions.changeHistory)"
                throw LogStoreError(
                    .historyTruncated,
                    "Cannot list the changes since \(token): \(why). Resynchronize fully, then continue from the token of the state you read."
                )
            }
            return h.changes(after: t, through: s)
        }
        var upserted: [String: [RecordKey]] = [:]
        var deleted: [String: [RecordKey]] = [:]
        var written: [String: Set<RecordKey>] = [:]
        for type in typesWritten {
            if let keys = try snap.keys(ofType: type, writtenAfter: t) {
                written[type] = Set(keys)
                if !keys.isEmpty { upserted[type] = keys.sorted() }
            }
        }
        for (type, ops) in history {
            var up: [RecordKey] = []
            var del: [RecordKey] = []
            let known = written[type]
            for (k, isWrite) in ops {
                if isWrite {
                    up.append(k)
                } else if !(known?.contains(k) ?? false) {
                    del.append(k)
                }
            }
            if !up.isEmpty { upserted[type, default: []] = Array(Set(upserted[type, default: []]).union(up)).sorted() }
            if !del.isEmpty { deleted[type] = del.sorted() }
        }
        return DataStoreChanges(token: self.token(for: s), insertedOrUpdatedKeys: upserted, deletedKeys: deleted)
    }
}

/// What a feed delivers commits to: one observation's runtime.
protocol ChangeSubscriber: AnyObject, Sendable {
    /// A commit touching the subscribed type. Called on the committing thread: must be O(1) and
    /// never block.
    func enqueue(_ commit: CommitChanges)
    /// The feed ended.
    func finish(_ end: DataStoreChangeFeed.End)
}
