import Dispatch
import LogStoreEngine
import Synchronization

/// What one observation computes (a request's results, one item, a count): its state at a
/// snapshot, advanced batch by batch of commits, and the element telling the consumer what
/// changed since the last element it took. Runs only on its runtime's queue.
protocol ObservationCore: Sendable {
    associatedtype Element: Sendable
    /// The item type whose commits matter.
    var itemType: String { get }
    /// The sequence of the snapshot the state reflects.
    var sequence: UInt64 { get }
    /// Computes the state at `snapshot` (the first element's). Throws what the read throws.
    mutating func start(at snapshot: any DataStoreSnapshot) throws
    /// Applies `commits` (ascending; each touches ``itemType`` or is a reset), all of which
    /// `snapshot` includes, and moves the state to `snapshot`.
    mutating func advance(_ commits: [CommitChanges], to snapshot: any DataStoreSnapshot) throws
    /// Whether the state differs from what the consumer last took (always, before the first).
    var hasCandidate: Bool { get }
    /// The element for the state now, against the last one taken; the state becomes the taken one.
    mutating func takeCandidate(token: DataStoreChangeToken) -> Element
}

/// The type-erased face of an observation's runtime, for ``DataStoreObservation``'s iterator.
protocol ObservationDriver<Element>: AnyObject, Sendable {
    associatedtype Element: Sendable
    func next(isolation actor: isolated (any Actor)?) async throws -> Element?
    func cancel()
    func settle() async
    var hasPendingElement: Bool { get }
    var elementsDelivered: Int { get }
    var isFinished: Bool { get }
}

/// One observation at work: its inbox of commits (filled on committing threads), its core (run on
/// its own serial queue, never on a writer's or the consumer's thread) and its consumer.
///
/// Delivery is GRDB's three-state loop, with exact differences: commits are processed as they
/// arrive; the element handed to the consumer is built when it asks (`next()`), against the last
/// element it took, so several commits arriving while the consumer is busy coalesce into one
/// element (newest state wins, nothing is buffered but the state). Commits that change nothing
/// the consumer was given produce no element.
///
/// Lock order: `core` (held by the queue's job for its whole run), then `inbox`; the feed's lock
/// is never held while either is taken.
final class ObservationRuntime<Core: ObservationCore>: ChangeSubscriber, ObservationDriver {
    struct Inbox {
        /// Commits published to the feed and not yet applied, ascending.
        var commits: [CommitChanges] = []
        /// A job is queued or running on `queue`.
        var scheduled = false
        /// The core has computed its first state.
        var started = false
        /// The core's state differs from what the consumer took.
        var ready = false
        /// The consumer waiting in `next()`.
        var waiter: CheckedContinuation<Core.Element?, any Error>?
        /// How the observation ended, once it did; `endDelivered` once the consumer was told.
        var end: DataStoreChangeFeed.End?
        var endDelivered = false
        /// Callers of `settle()`, resumed when no work is left.
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
        var delivered = 0

        var isIdle: Bool { end != nil || (started && !scheduled && commits.isEmpty) }
    }

    let inbox = Mutex(Inbox())
    let core: Mutex<Core>
    let queue = DispatchQueue(label: "LogStore.observation")
    let feed: DataStoreChangeFeed?
    let itemType: String

    /// Subscribes to `store`'s feed and starts the first fetch on the observation's queue. Never
    /// blocks: an error (the store is not set up) ends the observation at the first `next()`.
    init(_ core: Core, store: any DataStore) {
        itemType = core.itemType
        self.core = Mutex(core)
        var feed: DataStoreChangeFeed? = nil
        var end: DataStoreChangeFeed.End? = nil
        do {
            feed = try store.changeFeed()
        } catch {
            end = .failed(error)
        }
        self.feed = feed
        if let end {
            inbox.withLock { $0.end = end }
            return
        }
        inbox.withLock { $0.scheduled = true }
        if let end = feed?.subscribe(self, to: itemType) {
            inbox.withLock { $0.end = end }
            return
        }
        schedule()
    }

    func schedule() { queue.async { self.work() } }

    // MARK: The feed's side (committing threads)

    func enqueue(_ commit: CommitChanges) {
        let start = inbox.withLock { s -> Bool in
            guard s.end == nil else { return false }
            s.commits.append(commit)
            if s.scheduled { return false }
            s.scheduled = true
            return true
        }
        if start { schedule() }
    }

    func finish(_ end: DataStoreChangeFeed.End) { terminate(end) }

    // MARK: The queue's side

    enum Step {
        case stop
        case start
        case advance
        case deliver(CheckedContinuation<Core.Element?, any Error>)
    }

    /// The job: applies every commit waiting and delivers an element if the consumer waits, until
    /// nothing is left to do.
    func work() {
        guard let feed else { return }
        core.withLock { core in
            while true {
                var idle: [CheckedContinuation<Void, Never>] = []
                let step = inbox.withLock { s -> Step in
                    if s.end == nil {
                        if !s.started { return .start }
                        if !s.commits.isEmpty { return .advance }
                        if s.ready, let w = s.waiter {
                            s.waiter = nil
                            return .deliver(w)
                        }
                    }
                    s.scheduled = false
                    swap(&idle, &s.idleWaiters)
                    return .stop
                }
                do {
                    switch step {
                    case .stop:
                        for w in idle { w.resume() }
                        return
                    case .start:
                        let snapshot = try feed.snapshot()
                        // Commits the snapshot includes are part of the first state.
                        inbox.withLock { s in
                            s.commits.removeAll { $0.sequence <= snapshot.sequence }
                            s.started = true
                        }
                        try core.start(at: snapshot)
                    case .advance:
                        // The snapshot first: every commit it includes is in the inbox by then.
                        let snapshot = try feed.snapshot()
                        let batch = inbox.withLock { s -> [CommitChanges] in
                            let n = s.commits.firstIndex { $0.sequence > snapshot.sequence } ?? s.commits.count
                            defer { s.commits.removeFirst(n) }
                            return Array(s.commits.prefix(n))
                        }
                        guard !batch.isEmpty else {
                            throw LogStoreError(
                                .corruption,
                                "The store published commit #\(inbox.withLock { $0.commits.first?.sequence ?? 0 }) before its snapshots showed it (#\(snapshot.sequence)); a DataStoreChangeFeed must be told of a commit before readers can see it."
                            )
                        }
                        try core.advance(batch, to: snapshot)
                    case .deliver(let waiter):
                        let element = core.takeCandidate(token: feed.token(for: core.sequence))
                        inbox.withLock { $0.delivered += 1 }
                        waiter.resume(returning: element)
                    }
                } catch {
                    terminate(.failed(error))
                    continue
                }
                let ready = core.hasCandidate
                inbox.withLock { $0.ready = ready }
            }
        }
    }

    /// Ends the observation: a waiting consumer is told now, a later `next()` then.
    func terminate(_ end: DataStoreChangeFeed.End) {
        let (waiter, idle, first) = inbox.withLock {
            s -> (CheckedContinuation<Core.Element?, any Error>?, [CheckedContinuation<Void, Never>], Bool) in
            guard s.end == nil else { return (nil, [], false) }
            s.end = end
            s.commits = []
            let w = s.waiter
            s.waiter = nil
            if w != nil { s.endDelivered = true }
            defer { s.idleWaiters = [] }
            return (w, s.idleWaiters, true)
        }
        guard first else { return }
        if let waiter {
            switch end {
            case .finished: waiter.resume(returning: nil)
            case .failed(let e): waiter.resume(throwing: e)
            }
        }
        for w in idle { w.resume() }
        feed?.unsubscribe(self, from: itemType)
    }

    // MARK: The consumer's side

    enum NextAction {
        case resume(Result<Core.Element?, any Error>)
        case schedule
        case wait
    }

    func next(isolation actor: isolated (any Actor)?) async throws -> Core.Element? {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation(isolation: actor) { (continuation: CheckedContinuation<Core.Element?, any Error>) in
                let action = inbox.withLock { s -> NextAction in
                    if let end = s.end {
                        if s.endDelivered { return .resume(.success(nil)) }
                        s.endDelivered = true
                        switch end {
                        case .finished: return .resume(.success(nil))
                        case .failed(let e): return .resume(.failure(e))
                        }
                    }
                    if s.waiter != nil {
                        return .resume(
                            .failure(
                                LogStoreError(
                                    .invalidArgument,
                                    "next() was called on an observation's iterator while another call on it was waiting. Iterate an observation from one task; call observe() again for a second consumer."
                                )))
                    }
                    s.waiter = continuation
                    guard s.ready, !s.scheduled else { return .wait }
                    s.scheduled = true
                    return .schedule
                }
                switch action {
                case .resume(let r): continuation.resume(with: r)
                case .schedule: schedule()
                case .wait: break
                }
            }
        } onCancel: {
            self.cancel()
        }
    }

    /// The consumer is gone (task cancelled, iterator released): the observation completes.
    func cancel() { terminate(.finished) }

    /// Returns once every commit published so far is applied (or the observation ended).
    func settle() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = inbox.withLock { s -> Bool in
                if s.isIdle { return true }
                s.idleWaiters.append(c)
                return false
            }
            if now { c.resume() }
        }
    }

    /// Whether an element is waiting for the consumer.
    var hasPendingElement: Bool { inbox.withLock { $0.ready && $0.end == nil } }

    /// Elements handed to the consumer so far.
    var elementsDelivered: Int { inbox.withLock { $0.delivered } }

    /// Whether the observation ended.
    var isFinished: Bool { inbox.withLock { $0.end != nil } }
}
