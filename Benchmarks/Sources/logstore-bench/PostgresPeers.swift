import FluentKit
import FluentPostgresDriver
import Foundation
import LogStore
import LogStorePostgres
import PostgresNIO

// The PostgreSQL peers: what a server-side Swift user would otherwise pick to keep the same items
// in PostgreSQL, side by side with PostgresDataStore on one server, in one run: postgres-nio by
// hand with one typed column per property, postgres-nio by hand with the item as a jsonb document,
// and Fluent models (FluentKit with its PostgreSQL driver). Every peer stores `PeerItem` in a
// table of the same shape and answers the same five operations.

/// The item of the PostgreSQL peers workload: ``BenchItem``'s properties and `group` (the id / 20),
/// declared as an index, so that "the items of one group" is an indexed query returning 20 items.
struct PeerItem: DataStoreItem, Codable, Sendable, Equatable, PostgresCodable {
    static var itemType: String { "PeerItem" }
    static let indexes: [DataStoreIndex<PeerItem>] = [DataStoreIndex(\.group)]
    /// Items per group.
    static let groupSize = 20

    var id: Int
    var name: String
    var rating: Int
    var date: Date
    var tags: [String]
    var text: String
    var group: Int

    /// The benchmark's item `id` (``ItemFactory``), in its group.
    static func make(id: Int) -> PeerItem {
        let b = ItemFactory.make(id: id)
        return PeerItem(id: b.id, name: b.name, rating: b.rating, date: b.date, tags: b.tags, text: b.text, group: b.id / groupSize)
    }
}

extension PeerItem: PostgresArrayEncodable {
    static var psqlArrayType: PostgresDataType { .jsonbArray }
}

/// One peer: the five operations of the workload on its own table.
protocol PeerStore: AnyObject {
    var key: String { get }
    var name: String { get }
    var config: String { get }
    /// One durable write of one item (autocommit, or one transaction).
    func insert(_ item: PeerItem) throws
    /// One durable transaction writing `items`.
    func insertBatch(_ items: [PeerItem]) throws
    /// The item `id`, decoded.
    func get(_ id: Int) throws -> Bool
    /// The items of group `group` in id order, decoded (an indexed query of 20).
    func group(_ group: Int) throws -> Int
    /// `limit` items in id order from the `offset`-th, decoded.
    func page(offset: Int, limit: Int) throws -> Int
    func count() throws -> Int
    func close() throws
}

/// One connection of postgres-nio, waited for as a synchronous caller must.
final class RawConnection: @unchecked Sendable {
    // @unchecked: used from the benchmark's one thread; the connection serializes its statements.
    let connection: PostgresConnection
    let logger = Logger(label: "bench")

    init(url: String) throws {
        let c = try PostgresDataStore.Configuration(url: url)
        connection = try PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.next(), configuration: c.connection, id: 1, logger: logger
        ).wait()
    }

    @discardableResult
    func run(_ q: PostgresQuery) throws -> PostgresQueryResult {
        do {
            return try connection.query(q, logger: logger).wait()
        } catch {
            throw BenchError("postgres-nio: \(String(reflecting: error))")
        }
    }

    func run(_ sql: String) throws { try run(PostgresQuery(unsafeSQL: sql)) }

    func close() {
        let closing: EventLoopFuture<Void> = connection.close()
        _ = try? closing.wait()
    }
}

/// postgres-nio by hand, one typed column per property (`tags` as `text[]`), an index on
/// `group`: a bare `INSERT ... ON CONFLICT` per item (autocommit), one `INSERT ... SELECT
/// unnest(...)` of typed arrays per batch, `SELECT`s into tuples.
final class RawTypedPeer: PeerStore {
    let key = "postgres-raw"
    let name = "postgres-nio, typed columns"
    let config = "one connection, statement per call"
    let db: RawConnection
    let table: String
    static let columns = "id, name, rating, date, tags, text, \"group\""

    init(url: String, schema: String, create: Bool = true) throws {
        db = try RawConnection(url: url)
        table = "\"\(schema)\".peer_item"
        guard create else { return }
        try db.run("CREATE SCHEMA IF NOT EXISTS \"\(schema)\"")
        try db.run(
            "CREATE TABLE \(table) (id bigint PRIMARY KEY, name text NOT NULL, rating bigint NOT NULL, date timestamptz NOT NULL, tags text[] NOT NULL, text text NOT NULL, \"group\" bigint NOT NULL)"
        )
        try db.run("CREATE INDEX ON \(table) (\"group\")")
    }

    static let upsert =
        " ON CONFLICT (id) DO UPDATE SET name = excluded.name, rating = excluded.rating, date = excluded.date, tags = excluded.tags, text = excluded.text, \"group\" = excluded.\"group\""

    func insert(_ item: PeerItem) throws {
        var b = PostgresBindings()
        b.append(item.id)
        b.append(item.name)
        b.append(item.rating)
        b.append(item.date)
        b.append(item.tags)
        b.append(item.text)
        b.append(item.group)
        try db.run(
            PostgresQuery(unsafeSQL: "INSERT INTO \(table) (\(Self.columns)) VALUES ($1, $2, $3, $4, $5, $6, $7)" + Self.upsert, binds: b))
    }

    func insertBatch(_ items: [PeerItem]) throws {
        var b = PostgresBindings()
        b.append(items.map(\.id))
        b.append(items.map(\.name))
        b.append(items.map(\.rating))
        b.append(items.map(\.date))
        // A text[] per row does not unnest (arrays of arrays flatten): the tags travel as one
        // text per row, split again in SQL.
        b.append(items.map { $0.tags.joined(separator: "\u{1F}") })
        b.append(items.map(\.text))
        b.append(items.map(\.group))
        try db.run(
            PostgresQuery(
                unsafeSQL:
                    "INSERT INTO \(table) (\(Self.columns)) SELECT r.id, r.name, r.rating, r.date, string_to_array(r.tags, chr(31)), r.text, r.g FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::timestamptz[], $5::text[], $6::text[], $7::bigint[]) AS r(id, name, rating, date, tags, text, g)"
                    + Self.upsert, binds: b))
    }

    func items(_ result: PostgresQueryResult) throws -> [PeerItem] {
        try result.rows.map { row in
            let (i, name, rating, date, tags, text, group) = try row.decode((Int, String, Int, Date, [String], String, Int).self)
            return PeerItem(id: i, name: name, rating: rating, date: date, tags: tags, text: text, group: group)
        }
    }

    func get(_ id: Int) throws -> Bool {
        var b = PostgresBindings()
        b.append(id)
        return try !items(db.run(PostgresQuery(unsafeSQL: "SELECT \(Self.columns) FROM \(table) WHERE id = $1", binds: b))).isEmpty
    }

    func group(_ group: Int) throws -> Int {
        var b = PostgresBindings()
        b.append(group)
        return try items(
            db.run(PostgresQuery(unsafeSQL: "SELECT \(Self.columns) FROM \(table) WHERE \"group\" = $1 ORDER BY id", binds: b))
        )
        .count
    }

    func page(offset: Int, limit: Int) throws -> Int {
        var b = PostgresBindings()
        b.append(limit)
        b.append(offset)
        return try items(db.run(PostgresQuery(unsafeSQL: "SELECT \(Self.columns) FROM \(table) ORDER BY id LIMIT $1 OFFSET $2", binds: b)))
            .count
    }

    func count() throws -> Int {
        Int(try db.run(PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table)")).rows.first?.decode(Int.self) ?? 0)
    }
    func close() throws { db.close() }
}

/// postgres-nio by hand on PostgresDataStore's row shape, `(id bigint PRIMARY KEY, data jsonb)`,
/// with an expression index on `data -> 'group'`: the same statements as ``RawTypedPeer``, the
/// item sent and read as a `jsonb` document by postgres-nio's Codable support (Foundation's
/// `JSONEncoder`/`JSONDecoder`, binary jsonb). What an app storing its Codable items as documents
/// by hand would write.
final class RawJSONBPeer: PeerStore {
    let key = "postgres-raw-jsonb"
    let name = "postgres-nio, jsonb by hand"
    let config = "one connection, statement per call, (id, data jsonb)"
    let db: RawConnection
    let table: String

    init(url: String, schema: String, create: Bool = true) throws {
        db = try RawConnection(url: url)
        table = "\"\(schema)\".peer_document"
        guard create else { return }
        try db.run("CREATE SCHEMA IF NOT EXISTS \"\(schema)\"")
        try db.run("CREATE TABLE \(table) (id bigint PRIMARY KEY, data jsonb NOT NULL)")
        try db.run("CREATE INDEX ON \(table) ((data -> 'group'))")
    }

    func insert(_ item: PeerItem) throws {
        var b = PostgresBindings()
        b.append(item.id)
        try b.append(item)
        try db.run(
            PostgresQuery(
                unsafeSQL: "INSERT INTO \(table) (id, data) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET data = excluded.data", binds: b))
    }

    func insertBatch(_ items: [PeerItem]) throws {
        var b = PostgresBindings()
        b.append(items.map(\.id))
        try b.append(items)
        try db.run(
            PostgresQuery(
                unsafeSQL:
                    "INSERT INTO \(table) (id, data) SELECT r.id, r.data FROM unnest($1::bigint[], $2::jsonb[]) AS r(id, data) ON CONFLICT (id) DO UPDATE SET data = excluded.data",
                binds: b))
    }

    func items(_ result: PostgresQueryResult) throws -> [PeerItem] { try result.rows.map { try $0.decode(PeerItem.self) } }

    func get(_ id: Int) throws -> Bool {
        var b = PostgresBindings()
        b.append(id)
        return try !items(db.run(PostgresQuery(unsafeSQL: "SELECT data FROM \(table) WHERE id = $1", binds: b))).isEmpty
    }

    func group(_ group: Int) throws -> Int {
        var b = PostgresBindings()
        b.append(group)
        return try items(
            db.run(PostgresQuery(unsafeSQL: "SELECT data FROM \(table) WHERE data -> 'group' = to_jsonb($1::bigint) ORDER BY id", binds: b))
        ).count
    }

    func page(offset: Int, limit: Int) throws -> Int {
        var b = PostgresBindings()
        b.append(limit)
        b.append(offset)
        return try items(db.run(PostgresQuery(unsafeSQL: "SELECT data FROM \(table) ORDER BY id LIMIT $1 OFFSET $2", binds: b))).count
    }

    func count() throws -> Int {
        Int(try db.run(PostgresQuery(unsafeSQL: "SELECT count(*) FROM \(table)")).rows.first?.decode(Int.self) ?? 0)
    }
    func close() throws { db.close() }
}

/// A Fluent model of ``PeerItem`` on a table of the typed peer's shape.
final class PeerModel: Model, @unchecked Sendable {
    // @unchecked: Fluent's models are classes with property wrappers; used by one thread at a time.
    static let schema = "peer_model"

    @ID(custom: .id, generatedBy: .user) var id: Int?
    @Field(key: "name") var name: String
    @Field(key: "rating") var rating: Int
    @Field(key: "date") var date: Date
    @Field(key: "tags") var tags: [String]
    @Field(key: "text") var text: String
    @Field(key: "group") var group: Int

    init() {}

    init(_ item: PeerItem) {
        id = item.id
        name = item.name
        rating = item.rating
        date = item.date
        tags = item.tags
        text = item.text
        group = item.group
    }
}

/// Fluent (FluentKit 1.57 and FluentPostgresDriver 2.14, without Vapor: the models, not the web
/// glue): `model.create(on:)` per item (autocommit), `[model].create(on:)` in `db.transaction`
/// per batch, `find`, `query(on:).filter(\.$group == g).sort(\.$id).all()`, and
/// `sort(\.$id).offset(o).limit(l).all()`; futures waited for, one connection per event loop.
final class FluentPeer: PeerStore {
    let key = "postgres-fluent"
    let name = "Fluent models"
    let config = "FluentKit 1.57, FluentPostgresDriver 2.14, 1 connection per event loop"
    let databases: Databases
    let db: any Database

    init(url: String, schema: String, create: Bool = true) throws {
        let c = try PostgresDataStore.Configuration(url: url)
        databases = Databases(threadPool: NIOThreadPool.singleton, on: MultiThreadedEventLoopGroup.singleton)
        databases.use(
            .postgres(configuration: SQLPostgresConfiguration(coreConfiguration: c.connection, searchPath: [schema]), sqlLogLevel: .trace),
            as: .psql)
        var logger = Logger(label: "bench-fluent")
        logger.logLevel = .error
        guard let db = databases.database(.psql, logger: logger, on: MultiThreadedEventLoopGroup.singleton.next()) else {
            throw BenchError("Fluent: no database")
        }
        self.db = db
        guard create else { return }
        let raw = try RawConnection(url: url)
        defer { raw.close() }
        try raw.run("CREATE SCHEMA IF NOT EXISTS \"\(schema)\"")
        try raw.run(
            "CREATE TABLE \"\(schema)\".peer_model (id bigint PRIMARY KEY, name text NOT NULL, rating bigint NOT NULL, date timestamptz NOT NULL, tags text[] NOT NULL, text text NOT NULL, \"group\" bigint NOT NULL)"
        )
        try raw.run("CREATE INDEX ON \"\(schema)\".peer_model (\"group\")")
    }

    func insert(_ item: PeerItem) throws { try PeerModel(item).create(on: db).wait() }

    func insertBatch(_ items: [PeerItem]) throws {
        let models = items.map(PeerModel.init)
        try db.transaction { db in models.create(on: db) }.wait()
    }

    func get(_ id: Int) throws -> Bool { try PeerModel.find(id, on: db).wait() != nil }

    func group(_ group: Int) throws -> Int {
        try PeerModel.query(on: db).filter(\.$group == group).sort(\.$id).all().wait().count
    }

    func page(offset: Int, limit: Int) throws -> Int {
        try PeerModel.query(on: db).sort(\.$id).offset(offset).limit(limit).all().wait().count
    }

    func count() throws -> Int { try PeerModel.query(on: db).count().wait() }
    func close() throws { databases.shutdown() }
}

/// `PostgresDataStore` through the DataStore API: `writeSync` per item and per batch, `read` of
/// `item(ofType:id:)`, and `items(forRequest:)` with `#Predicate { $0.group == g }` (the declared
/// index) or an offset and limit.
final class PostgresDataStorePeer: PeerStore {
    let key = "logstore-postgres"
    let name = "PostgresDataStore"
    let config = "DataStore API, pool of 4, jsonb rows"
    let store: PostgresDataStore

    init(url: String, schema: String) throws {
        var c = try PostgresDataStore.Configuration(url: url)
        c.schema = schema
        c.maximumConnections = 4
        store = PostgresDataStore(configuration: c)
        try store.setup()
    }

    func insert(_ item: PeerItem) throws { try store.writeSync { try $0.insert(item) } }
    func insertBatch(_ items: [PeerItem]) throws { try store.writeSync { a in for i in items { try a.insert(i) } } }
    func get(_ id: Int) throws -> Bool { try store.read { try $0.item(ofType: PeerItem.self, id: id) } != nil }

    func group(_ group: Int) throws -> Int {
        var r = DataStoreRequest(itemType: PeerItem.self)
        r.predicate = #Predicate<PeerItem> { $0.group == group }
        return try store.read { try $0.items(forRequest: r) }.count
    }

    func page(offset: Int, limit: Int) throws -> Int {
        var r = DataStoreRequest(itemType: PeerItem.self)
        r.offset = offset
        r.limit = limit
        return try store.read { try $0.items(forRequest: r) }.count
    }

    func count() throws -> Int { try store.read { try $0.countItems(forRequest: DataStoreRequest(itemType: PeerItem.self)) } }
    func close() throws { try store.tearDown() }
}
