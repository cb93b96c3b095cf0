import Dispatch
import Foundation
import LogStore
import LogStoreEngine
import Logging
import PostgresNIO
import Synchronization

/// The store's connection pool: at most `maximum` connections, opened on demand, kept while idle,
/// handed out by blocking calls.
///
/// Why not postgres-nio's `PostgresClient`: its pool is leased with `async` calls and runs on a
/// task of its own, so the store's synchronous API (read, writeSync: the DataStore contract) would
/// have to block a thread of Swift's cooperative pool until another cooperative task hands it a
/// connection, which deadlocks once every cooperative thread (two on a 2-core machine) is blocked
/// that way. This pool leases with a lock and a semaphore, and every query completes on the
/// connection's NIO event loop, so a blocked caller never waits for the cooperative pool.
///
/// Thread-safe: one mutex over the idle list and the waiters.
final class PostgresConnectionPool: Sendable {
    let configuration: PostgresConnection.Configuration
    let group: any EventLoopGroup
    let maximum: Int
    let leaseTimeout: Duration
    let logger: Logger
    /// A description of the server for errors (the URL without its password).
    let place: String

    /// One thread waiting for a connection: the releaser hands it one and signals.
    final class Waiter: @unchecked Sendable {
        // @unchecked: `connection` is written by the releasing thread before `ready.signal()` and
        // read by the waiting thread after `ready.wait()`, under the pool's mutex both times.
        var connection: PostgresConnection?
        var begun = false
        var mayOpen = false
        let ready = DispatchSemaphore(value: 0)
    }

    /// An idle connection: `begun` when it is inside a read-only REPEATABLE READ transaction
    /// that no statement used yet (no snapshot taken: it holds nothing back), ready for a read.
    struct Idle {
        var connection: PostgresConnection
        var begun: Bool
        /// Idle when another connection broke: checked with a statement before it is handed out.
        var suspect = false
    }

    struct State {
        var idle: [Idle] = []
        /// Open connections, idle or leased (or being opened).
        var open = 0
        var waiters: [Waiter] = []
        var closed = false
        var nextID = 0
    }
    let state = Mutex(State())

    init(
        configuration: PostgresConnection.Configuration, group: any EventLoopGroup, maximum: Int, leaseTimeout: Duration,
        logger: Logger, place: String
    ) {
        self.configuration = configuration
        self.group = group
        self.maximum = max(2, maximum)
        self.leaseTimeout = leaseTimeout
        self.logger = logger
        self.place = place
    }

    /// A connection for the caller's exclusive use until ``release(_:reusable:begun:)``: an idle
    /// one (one inside a fresh read transaction first when `preferBegun`, one outside any
    /// otherwise), a new one while fewer than `maximum` are open, or the next one released
    /// (waiting up to the lease timeout). `begun` says whether it is inside a fresh read-only
    /// REPEATABLE READ transaction. Blocks the calling thread, which must not be an event loop of
    /// the store's group. Throws `.serverUnavailable` when the server cannot be reached or no
    /// connection frees up in time, `.notOpen` after ``close()``, and what connecting throws.
    func lease(preferBegun: Bool = false) throws -> (connection: PostgresConnection, begun: Bool) {
        enum Next {
            case use(PostgresConnection, Bool, Bool)
            case open(Int)
            case wait(Waiter)
        }
        let next = try state.withLock { s -> Next in
            if s.closed { throw StoreErrors.notOpen() }
            s.idle.removeAll { idle in
                guard idle.connection.isClosed else { return false }
                s.open -= 1
                return true
            }
            if let i = s.idle.lastIndex(where: { $0.begun == preferBegun }) {
                let idle = s.idle.remove(at: i)
                return .use(idle.connection, idle.begun, idle.suspect)
            }
            // A writer opens a connection rather than roll back a reader's (which then stays
            // ready for the next read); a reader takes any idle one (BEGIN costs less than a
            // new connection).
            if preferBegun || s.open >= maximum, let idle = s.idle.popLast() {
                return .use(idle.connection, idle.begun, idle.suspect)
            }
            if s.open < maximum {
                s.open += 1
                s.nextID += 1
                return .open(s.nextID)
            }
            let w = Waiter()
            s.waiters.append(w)
            return .wait(w)
        }
        switch next {
        case .use(let c, let begun, let suspect):
            guard suspect else { return (c, begun) }
            // Another connection broke while this one idled: the server may have ended it too.
            if (try? PostgresStatements.wait(for: c.query("SELECT 1", logger: logger), connection: c, timeout: .seconds(10))) != nil {
                return (c, begun)
            }
            release(c, reusable: false)
            return try lease(preferBegun: preferBegun)
        case .open(let id): return (try connect(id: id), false)
        case .wait(let w):
            let nanos = leaseTimeout.components.seconds * 1_000_000_000 + leaseTimeout.components.attoseconds / 1_000_000_000
            if w.ready.wait(timeout: .now() + .nanoseconds(Int(clamping: nanos))) == .timedOut {
                // Gone from the waiters (then nobody will signal us), or handed something just now.
                let handed = state.withLock { s -> Bool in
                    if let i = s.waiters.firstIndex(where: { $0 === w }) {
                        s.waiters.remove(at: i)
                        return false
                    }
                    return true
                }
                if !handed {
                    throw LogStoreError(
                        .serverUnavailable,
                        "All \(maximum) connections of the store were busy for \(leaseTimeout) (long transactions, or many snapshots held by observers). Raise Configuration.maximumConnections, or end long blocks sooner.",
                        path: place)
                }
                w.ready.wait()
            }
            let (connection, begun, mayOpen) = state.withLock { _ in (w.connection, w.begun, w.mayOpen) }
            if let connection { return (connection, begun) }
            if mayOpen {
                let id = state.withLock { s -> Int in
                    s.nextID += 1
                    return s.nextID
                }
                return (try connect(id: id), false)
            }
            throw StoreErrors.notOpen()
        }
    }

    /// A connection outside any transaction (one inside a fresh read transaction is rolled back
    /// first). Throws as ``lease(preferBegun:)`` and the error of the rollback.
    func leaseClean() throws -> PostgresConnection {
        let (c, begun) = try lease(preferBegun: false)
        guard begun else { return c }
        do {
            _ = try c.query("ROLLBACK", logger: logger).wait()
            return c
        } catch {
            release(c, reusable: false)
            throw PostgresErrors.map(error, place: place)
        }
    }

    /// A connection inside a read-only REPEATABLE READ transaction that no statement used yet (its
    /// snapshot is taken by the first statement). Throws as ``lease(preferBegun:)`` and the error
    /// of `BEGIN`.
    func leaseForReading() throws -> PostgresConnection {
        let (c, begun) = try lease(preferBegun: true)
        guard !begun else { return c }
        do {
            _ = try c.query(Self.beginReading, logger: logger).wait()
            return c
        } catch {
            release(c, reusable: false)
            throw PostgresErrors.map(error, place: place)
        }
    }

    static let beginReading: PostgresQuery = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"

    /// Whether the server takes `ROLLBACK AND CHAIN` (PostgreSQL 12 and later do), which ends a
    /// read transaction and begins the next in one statement. Set once at setup.
    let chains = Atomic<Bool>(false)

    /// Gives back a connection whose read transaction is over, without making the caller wait:
    /// the statement that ends it and begins the next is sent, and the connection idles once it
    /// is answered (closed if it fails: a connection the server ended is never handed out to a
    /// write). A caller that needs a connection meanwhile takes another (the pool holds at least
    /// two), so back-to-back reads alternate and never wait for it.
    func releaseAfterReading(_ c: PostgresConnection) {
        guard !c.isClosed else { return release(c, reusable: false) }
        let logger = logger
        let ended: EventLoopFuture<PostgresQueryResult>
        if chains.load(ordering: .relaxed) {
            ended = c.query("ROLLBACK AND CHAIN", logger: logger)
        } else {
            ended = c.query("ROLLBACK", logger: logger).flatMap { _ in c.query(Self.beginReading, logger: logger) }
        }
        ended.whenComplete { result in
            if case .success = result {
                self.release(c, reusable: true, begun: true)
            } else {
                self.release(c, reusable: false)
            }
        }
    }

    /// Opens connection `id` (its slot is already counted in `open`), giving the slot back on failure.
    func connect(id: Int) throws -> PostgresConnection {
        do {
            try Self.checkNotOnEventLoop()
            return try PostgresConnection.connect(on: group.next(), configuration: configuration, id: id, logger: logger).wait()
        } catch {
            release(nil, reusable: false)
            throw PostgresErrors.map(error, place: place)
        }
    }

    /// Gives a leased connection back: to the next waiter, to the idle list (`reusable`: it is
    /// unbroken, and outside any transaction, or inside a fresh read-only one when `begun`), or
    /// closed (freeing its slot for a new one). `nil` frees a slot whose connection never opened.
    /// Any thread; never blocks.
    func release(_ connection: PostgresConnection?, reusable: Bool, begun: Bool = false) {
        let keep = reusable && !(connection?.isClosed ?? true)
        let (waiter, close, closedPool) = state.withLock { s -> (Waiter?, Bool, Bool) in
            if s.closed {
                if connection != nil { s.open -= 1 }
                return (nil, connection != nil, true)
            }
            if !s.waiters.isEmpty {
                let w = s.waiters.removeFirst()
                if keep {
                    w.connection = connection
                    w.begun = begun
                } else {
                    // The slot passes to the waiter, which opens a new connection in it.
                    w.mayOpen = true
                }
                return (w, !keep && connection != nil, false)
            }
            if keep, let connection {
                s.idle.append(Idle(connection: connection, begun: begun))
                return (nil, false, false)
            }
            s.open -= 1
            return (nil, connection != nil, false)
        }
        if close, let connection { connection.closeInBackground() }
        waiter?.ready.signal()
        _ = closedPool
    }

    /// Closes idle connections and refuses new leases; connections still leased close when
    /// released. Waiters fail with `.notOpen`. Idempotent; never blocks.
    func close() {
        let (idle, waiters) = state.withLock { s -> ([Idle], [Waiter]) in
            s.closed = true
            defer {
                s.open -= s.idle.count
                s.idle = []
                s.waiters = []
            }
            return (s.idle, s.waiters)
        }
        for c in idle { c.connection.closeInBackground() }
        for w in waiters { w.ready.signal() }
    }

    /// Marks every idle connection suspect: a connection broke (a server restart or failover ends
    /// them all), so each is checked before it is handed out again. Any thread; never blocks.
    func connectionBroke() {
        state.withLock { s in
            for i in s.idle.indices { s.idle[i].suspect = true }
        }
    }

    /// Whether ``close()`` was called.
    var isClosed: Bool { state.withLock { $0.closed } }

    /// Throws when the calling thread is a SwiftNIO event loop: blocking it until a query on
    /// another event loop of the same group completes could deadlock, and blocking the loop that
    /// serves the query surely would.
    static func checkNotOnEventLoop() throws {
        if MultiThreadedEventLoopGroup.currentEventLoop != nil {
            throw LogStoreError(
                .invalidArgument,
                "A PostgresDataStore's synchronous API (read, writeSync, setup...) was called on a SwiftNIO event loop thread, which it would block. Call the async twins (await store.read { }, await store.write { }) from there, or hop off the event loop first."
            )
        }
    }
}
