import Foundation
import LogStore
import LogStoreEngine
import LogStoreSQL
import Logging
import PostgresNIO
import Synchronization

/// What a set-up `PostgresDataStore` holds between `setup()` and `tearDown()`: the connection
/// pool, the schema's item tables as far as this process knows them, the change feed and its
/// publisher, the snapshots under child stores.
///
/// Thread-safe: every mutable part is behind its own mutex.
final class PostgresSession: Sendable {
    let configuration: PostgresDataStore.Configuration
    let options: DataStoreOptions
    let pool: PostgresConnectionPool
    let schema: String
    let place: String
    let storeID: String
    /// `"schema"."logstore_sequence"` and `"schema"."logstore_commits"`, quoted once (every
    /// changing commit names both).
    let sequenceTable: String
    let commitsTable: String
    /// Item type -> table, for every type whose registration this process has seen. Tables are
    /// never dropped, so an entry stays true; a reader whose snapshot predates the table finds it
    /// empty.
    let tables: Mutex<[String: PostgresTable]>
    /// Item types whose declared indexes this session created or found in place.
    let declaredIndexes = Mutex<Set<String>>([])
    /// Item type -> the coding paths of the first attribute of each index it declares (queries
    /// narrow their rows to what those indexes can find).
    let indexLeads = Mutex<[String: Set<[String]>]>([:])
    /// The open snapshots under child stores, closed at tearDown.
    let snapshots = Mutex<[WeakSnapshot]>([])
    /// Publishes commits to the change feed, in order, from this process and others.
    let publisher: PostgresChangePublisher
    /// The reads of this process whose snapshot is not fixed yet.
    let pendingReads = Mutex<[ObjectIdentifier: PostgresSnapshotGate]>([:])

    final class WeakSnapshot: Sendable {
        weak let reader: PostgresSnapshotReader?
        init(_ r: PostgresSnapshotReader) { reader = r }
    }

    init(
        configuration: PostgresDataStore.Configuration, options: DataStoreOptions, pool: PostgresConnectionPool,
        opened: PostgresSchema.Opened
    ) {
        self.configuration = configuration
        self.options = options
        self.pool = pool
        self.schema = configuration.schema
        self.place = configuration.place
        self.storeID = opened.storeID
        sequenceTable = PostgresSchema.qualified(configuration.schema, PostgresSchema.sequence)
        commitsTable = PostgresSchema.qualified(configuration.schema, PostgresSchema.commits)
        tables = Mutex(opened.tables)
        publisher = PostgresChangePublisher(sequence: opened.sequence)
    }

    /// The leading attributes of `Item`'s declared indexes (looked up once per type).
    func indexLeads<Item: DataStoreItem>(_ type: Item.Type) -> Set<[String]> {
        if let known = indexLeads.withLock({ $0[Item.itemType] }) { return known }
        let leads = PostgresIndexes.leadingAttributes(Item.self)
        indexLeads.withLock { $0[Item.itemType] = leads }
        return leads
    }

    /// `"schema"."name"` of one of the store's own tables.
    func own(_ name: String) -> String { PostgresSchema.qualified(schema, name) }

    /// Runs `body` with a leased connection, given back afterwards: to the pool when `body`
    /// returned or threw with the connection outside a transaction and unbroken, closed otherwise.
    /// Throws `.serverUnavailable`, `.notOpen`, or `body`'s error.
    func withConnection<T>(_ body: (PostgresStatements) throws -> T) throws -> T {
        try PostgresConnectionPool.checkNotOnEventLoop()
        let connection = try pool.leaseClean()
        let statements = PostgresStatements(
            connection: connection, logger: configuration.logger, place: place, timeout: configuration.statementTimeout)
        do {
            let value = try body(statements)
            pool.release(connection, reusable: true)
            return value
        } catch {
            if connection.isClosed { pool.connectionBroke() }
            pool.release(connection, reusable: !connection.isClosed)
            throw error
        }
    }

    /// Runs `body` in a read-only REPEATABLE READ transaction whose snapshot is taken now (see
    /// ``PostgresSnapshotGate``), ended afterwards in the background; `body`'s error is rethrown
    /// unchanged. Throws `.serverUnavailable`, `.notOpen`.
    func inSnapshot<T>(_ body: (PostgresStatements) throws -> T) throws -> T {
        try PostgresConnectionPool.checkNotOnEventLoop()
        let connection = try pool.leaseForReading()
        let gate = PostgresSnapshotGate(connection: connection, logger: configuration.logger, place: place)
        pendingReads.withLock { $0[ObjectIdentifier(gate)] = gate }
        defer {
            pendingReads.withLock { $0[ObjectIdentifier(gate)] = nil }
            if connection.isClosed {
                pool.connectionBroke()
                pool.release(connection, reusable: false)
            } else {
                pool.releaseAfterReading(connection)
            }
        }
        return try body(
            PostgresStatements(
                connection: connection, logger: configuration.logger, place: place, gate: gate, timeout: configuration.statementTimeout))
    }

    /// Fixes the snapshots of the reads of this process that began but ran no statement yet, so
    /// that a commit about to happen stays out of them (their snapshot is "taken when the read
    /// starts"; PostgreSQL takes it at the first statement). Called by writes right before they
    /// commit, holding the store's writer. Costs one round trip per such read (rare: a read runs
    /// its first statement at once, unless its block waits for something first).
    func fixPendingReads() {
        let gates = pendingReads.withLock { Array($0.values) }
        for gate in gates { gate.fix() }
    }

    /// The table of item type `type` as the registry in `s`'s current transaction has it (cached:
    /// another server may have created it since this process last looked), or nil.
    func table(for type: String, _ s: PostgresStatements) throws -> PostgresTable? {
        if let t = tables.withLock({ $0[type] }) { return t }
        guard let t = try PostgresSchema.registeredTable(s, schema: schema, type: type) else { return nil }
        tables.withLock { $0[type] = t }
        return t
    }

    /// The table of item type `type`, created and registered (in transactions of their own, on a
    /// connection of the pool) when it has none. Safe against servers doing the same at once.
    func ensureTable(type: String, kind: PostgresIDKind) throws -> PostgresTable {
        let t = try withConnection { s in try PostgresSchema.ensureTable(s, schema: schema, type: type, kind: kind) }
        tables.withLock { $0[type] = t }
        configuration.logger.debug("created or found table \(t.sql) for \(type)")
        return t
    }

    /// Every registered item type and its table, as `s`'s transaction sees the registry.
    func allTables(_ s: PostgresStatements) throws -> [String: PostgresTable] {
        let registered = try PostgresSchema.registeredTables(s, schema: schema)
        tables.withLock { $0.merge(registered) { a, _ in a } }
        return registered
    }

    /// A connection outside the pool, for a snapshot that lives as long as a child store (so that
    /// child stores never starve the pool). Throws the mapped connection error.
    func dedicatedConnection() throws -> PostgresStatements {
        try PostgresConnectionPool.checkNotOnEventLoop()
        do {
            let c = try PostgresConnection.connect(
                on: pool.group.next(), configuration: pool.configuration, id: Int.random(in: 1_000_000...Int.max),
                logger: configuration.logger
            ).wait()
            return PostgresStatements(connection: c, logger: configuration.logger, place: place, timeout: configuration.statementTimeout)
        } catch {
            throw PostgresErrors.map(error, place: place)
        }
    }

    /// Closes what the session opened besides the pool: the child snapshots.
    func closeExtras() {
        let snaps = snapshots.withLock { s in
            defer { s = [] }
            return s
        }
        for s in snaps { s.reader?.close() }
    }
}
