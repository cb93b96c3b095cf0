import Foundation
import LogStore
import LogStoreEngine
import Synchronization
import XCTest
import _LogStoreTestSupport

// Item types of two app versions that share item type names: what a store holds before and after
// each migration shape.

struct BookV1: DataStoreItem, Equatable {
    static var itemType: String { "Book" }
    var id: Int
    var title: String
}

struct BookV2: DataStoreItem, Equatable {
    static var itemType: String { "Book" }
    var id: Int
    var name: String
}

struct Publication: DataStoreItem, Equatable {
    var id: Int
    var name: String
}

struct PersonV1: DataStoreItem, Equatable {
    static var itemType: String { "Person" }
    var id: UUID
    var name: String
    var street: String?
}

struct PersonV2: DataStoreItem, Equatable {
    static var itemType: String { "Person" }
    var id: UUID
    var firstName: String
    var lastName: String
}

struct PersonAddress: DataStoreItem, Equatable {
    var id: UUID
    var street: String
}

struct ProductV1: DataStoreItem, Equatable {
    static var itemType: String { "Product" }
    var id: String
    var price: String
}

struct ProductV2: DataStoreItem, Equatable {
    static var itemType: String { "Product" }
    var id: String
    var price: Int
}

struct OrderV1: DataStoreItem, Equatable {
    static var itemType: String { "Order" }
    var id: Int
    var total: Int
}

struct OrderV2: DataStoreItem, Equatable {
    static var itemType: String { "Order" }
    var id: Int
    var total: Int
    var currency: String
}

/// Opens stores for migration tests: each open is a new `LogDataStore` object (a new app launch),
/// on disk or on one in-memory file system that outlives the objects.
final class MigrationStores: @unchecked Sendable {
    enum Kind: CaseIterable { case disk, memory }
    let kind: Kind
    let directory: URL
    let memory = InMemoryFileSystem()

    init(_ kind: Kind) {
        self.kind = kind
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("logstore-migrations-\(UUID().uuidString)")
    }

    func make(options: LogStoreOptions = .init()) -> LogDataStore {
        switch kind {
        case .disk: return LogDataStore(directory: directory, options: options)
        case .memory: return LogDataStore(path: "/store", fileSystem: memory, options: options)
        }
    }

    /// A launch: a new store object with `register` applied, set up.
    func open(options: LogStoreOptions = .init(), _ register: (DataStoreMigrations) -> Void = { _ in }) throws -> LogDataStore {
        let store = make(options: options)
        register(store.migrations)
        try store.setup()
        return store
    }

    func cleanUp() { try? FileManager.default.removeItem(at: directory) }
}

final class MigrationTests: XCTestCase {
    var stores: [MigrationStores] = []

    override func tearDown() {
        for s in stores { s.cleanUp() }
        stores = []
        super.tearDown()
    }

    /// Runs `body` once on disk and once in memory.
    func forEachKind(_ body: (MigrationStores) throws -> Void) throws {
        for kind in MigrationStores.Kind.allCases {
            let s = MigrationStores(kind)
            stores.append(s)
            do { try body(s) } catch {
                XCTFail("\(kind): \(error)")
                throw error
            }
        }
    }

    func all<Item: DataStoreItem>(_ store: LogDataStore, _ type: Item.Type) throws -> [Item] {
        try store.read { try $0.items(forRequest: DataStoreRequest(itemType: type)) }
    }

    // MARK: Shapes

    func testRenameAnAttributeAndAnItemType() throws {
        try forEachKind { s in
            var store = try s.open()
            try store.writeSync { a in for i in 1...50 { try a.insert(BookV1(id: i, title: "Title \(i)")) } }
            try store.tearDown()

            store = try s.open { m in
                m.register("v2-rename-title") { tx in XCTAssertEqual(try tx.renameAttribute("title", to: "name", ofType: "Book"), 50) }
            }
            XCTAssertEqual(store.migrationReport?.applied, ["v2-rename-title"])
            XCTAssertEqual(try all(store, BookV2.self), (1...50).map { BookV2(id: $0, name: "Title \($0)") })
            try store.tearDown()

            let register: (DataStoreMigrations) -> Void = { m in
                m.register("v2-rename-title") { tx in try tx.renameAttribute("title", to: "name", ofType: "Book") }
                m.register("v3-book-is-publication") { tx in XCTAssertEqual(try tx.renameItemType("Book", to: "Publication"), 50) }
            }
            store = try s.open(register)
            XCTAssertEqual(store.migrationReport?.applied, ["v3-book-is-publication"])
            XCTAssertEqual(store.migrationReport?.alreadyApplied, ["v2-rename-title"])
            try store.tearDown()
            // Reopen: nothing runs again; the data is the new shape.
            store = try s.open(register)
            XCTAssertEqual(store.migrationReport?.applied, [])
            XCTAssertEqual(try all(store, Publication.self), (1...50).map { Publication(id: $0, name: "Title \($0)") })
            XCTAssertEqual(try all(store, BookV2.self), [])
            XCTAssertEqual(try store.read { try $0.itemTypeNames() }, ["Publication"])
            XCTAssertEqual(try store.history().map(\.name), ["v2-rename-title", "v3-book-is-publication"])
            try store.tearDown()
        }
    }

    func testSplitAnAttributeAndMovePartOfItToANewType() throws {
        try forEachKind { s in
            var store = try s.open()
            let people = (0..<30).map { PersonV1(id: UUID(), name: "First\($0) Last\($0)", street: $0 % 3 == 0 ? nil : "Street \($0)") }
            try store.writeSync { a in for p in people { try a.insert(p) } }
            try store.tearDown()

            store = try s.open { m in
                m.register("v2-split-name") { tx in
                    try tx.updateItems(ofType: "Person") { person in
                        guard case .string(let name)? = person.object(forKey: "name") else { return }
                        let parts = name.split(separator: " ", maxSplits: 1).map(String.init)
                        person.setObject(.string(parts[0]), forKey: "firstName")
                        person.setObject(.string(parts.count > 1 ? parts[1] : ""), forKey: "lastName")
                        person.setObject(nil, forKey: "name")
                        if let street = person.object(forKey: "street") {
                            try tx.insert(DynamicItem(itemType: "PersonAddress", id: person.id, attributes: ["street": street]))
                            person.setObject(nil, forKey: "street")
                        }
                    }
                }
            }
            let expected = people.map { p in
                let parts = p.name.split(separator: " ").map(String.init)
                return PersonV2(id: p.id, firstName: parts[0], lastName: parts[1])
            }
            XCTAssertEqual(Set(try all(store, PersonV2.self).map { "\($0)" }), Set(expected.map { "\($0)" }))
            XCTAssertEqual(try all(store, PersonAddress.self).count, 20)
            XCTAssertEqual(try store.read { try $0.item(ofType: PersonAddress.self, id: people[1].id) }?.street, "Street 1")
            try store.tearDown()
        }
    }

    func testChangeAnAttributesTypeAndFillANewRequiredField() throws {
        try forEachKind { s in
            var store = try s.open()
            try store.writeSync { a in
                for i in 0..<20 { try a.insert(ProductV1(id: "p\(i)", price: "\(i * 100)")) }
                try a.insert(ProductV1(id: "bad", price: "n/a"))
                for i in 0..<10 { try a.insert(OrderV1(id: i, total: i * 7)) }
            }
            try store.tearDown()
            store = try s.open { m in
                m.register("v2-price-is-cents") { tx in
                    try tx.updateItems(ofType: "Product") { p in
                        guard case .string(let text)? = p.object(forKey: "price") else { return }
                        p.setObject(.int(Int64(text) ?? 0), forKey: "price")
                    }
                }
                m.register("v2-order-currency") { tx in
                    XCTAssertEqual(try tx.setAttribute("currency", ofType: "Order") { _ in .string("EUR") }, 10)
                }
            }
            XCTAssertEqual(try all(store, ProductV2.self).first { $0.id == "p7" }?.price, 700)
            XCTAssertEqual(try all(store, ProductV2.self).first { $0.id == "bad" }?.price, 0)
            XCTAssertEqual(try all(store, OrderV2.self), (0..<10).map { OrderV2(id: $0, total: $0 * 7, currency: "EUR") })
            XCTAssertEqual(store.migrationReport?.applied, ["v2-price-is-cents", "v2-order-currency"])
            try store.tearDown()
        }
    }

    func testDeleteAndInsertItemsWithoutTheirSwiftTypes() throws {
        try forEachKind { s in
            var store = try s.open()
            try store.writeSync { a in for i in 0..<40 { try a.insert(OrderV1(id: i, total: i)) } }
            try store.tearDown()
            store = try s.open { m in
                m.register("v2-drop-small-orders") { tx in
                    XCTAssertEqual(
                        try tx.deleteItems(ofType: "Order") { ($0.object(forKey: "total") ?? .null) == .int(0) || $0.id == .int(1) }, 2)
                    try tx.insert(DynamicItem(itemType: "Order", id: .int(100), attributes: ["total": .int(1000)]))
                    XCTAssertTrue(try tx.deleteItem(ofType: "Order", id: .int(2)))
                }
            }
            XCTAssertEqual(try all(store, OrderV1.self).map(\.id), Array(3..<40) + [100])
            try store.tearDown()
        }
    }

    /// A walk pages through the type it rewrites: every item once, in id order, whatever the
    /// step writes at or behind the current item.
    func testAWalkPagesThroughAWholeTypeWhileTheStepRewritesIt() throws {
        try forEachKind { s in
            var store = try s.open()
            try store.writeSync { a in for i in 0..<5_000 { try a.insert(OrderV1(id: i * 2, total: i)) } }
            try store.tearDown()
            store = try s.open { m in
                m.register("v2-walk") { tx in
                    var seen: [Int64] = []
                    try tx.forEachItem(ofType: "Order") { item in
                        guard case .int(let id) = item.id else { return }
                        seen.append(id)
                        var copy = item
                        copy.setObject(.int(-1), forKey: "total")
                        try tx.insert(copy)
                        // Behind the walk: not walked again.
                        if id == 4_000 { try tx.insert(DynamicItem(itemType: "Order", id: .int(3_999), attributes: ["total": .int(-1)])) }
                        if id == 6_000 { XCTAssertTrue(try tx.deleteItem(ofType: "Order", id: .int(6_000))) }
                        // Ahead of the walk, in a page not read yet: walked (merged in).
                        if id == 100 { try tx.insert(DynamicItem(itemType: "Order", id: .int(7_001), attributes: ["total": .int(0)])) }
                    }
                    XCTAssertTrue(seen.contains(7_001), "a put ahead of the walk's pages is merged in")
                    XCTAssertEqual(seen.count, 5_001)
                    XCTAssertEqual(seen, seen.sorted(), "id order")
                    try tx.insert(DynamicItem(itemType: "Order", id: .int(6_000), attributes: ["total": .int(-1)]))
                    try tx.insert(DynamicItem(itemType: "Order", id: .int(10_001), attributes: ["total": .int(-1)]))
                }
            }
            let orders = try all(store, OrderV1.self)
            XCTAssertEqual(orders.count, 5_003)
            XCTAssertTrue(orders.allSatisfy { $0.total == -1 })
            try store.tearDown()
        }
    }

    /// A step over more values than the spill threshold: the transaction spills and commits in
    /// chunks, and the result is whole.
    func testALargeTypeMigratesInOneTransactionBeyondTheSpillThreshold() throws {
        try forEachKind { s in
            var o = LogStoreOptions()
            o.transactionSpillThreshold = 64 << 10
            o.durability = .none
            var store = try s.open(options: o)
            try store.writeSync { a in
                for i in 0..<20_000 { try a.insert(BookV1(id: i, title: String(repeating: "t", count: 40) + "\(i)")) }
            }
            try store.tearDown()
            let look = try LogEngine.open(
                directory: s.kind == .disk ? s.directory.path : "/store",
                fileSystem: s.kind == .disk ? POSIXFileSystem() : s.memory)
            let before = look.recoveryReport.lastSequence
            try look.close()
            store = try s.open(options: o) { m in m.register("v2") { tx in try tx.renameAttribute("title", to: "name", ofType: "Book") } }
            let names = try all(store, BookV2.self)
            XCTAssertEqual(names.count, 20_000)
            XCTAssertEqual(names.last?.name, String(repeating: "t", count: 40) + "19999")
            try store.tearDown()
            let engine = try LogEngine.open(
                directory: s.kind == .disk ? s.directory.path : "/store", fileSystem: s.kind == .disk ? POSIXFileSystem() : s.memory)
            XCTAssertEqual(engine.recoveryReport.lastSequence, before + 1, "the step is one transaction")
            try engine.close()
        }
    }

    // MARK: Safety

    func testEachStepRunsOnceInRegistrationOrder() throws {
        try forEachKind { s in
            let runs = Mutex<[String]>([])
            let register: (DataStoreMigrations) -> Void = { m in
                for name in ["a", "b", "c"] { m.register(name) { _ in runs.withLock { $0.append(name) } } }
            }
            for _ in 0..<3 { try s.open(register).tearDown() }
            XCTAssertEqual(runs.withLock { $0 }, ["a", "b", "c"])
            let store = try s.open(register)
            XCTAssertEqual(store.migrationReport?.alreadyApplied, ["a", "b", "c"])
            XCTAssertEqual(try store.history().map(\.kind), [.migration, .migration, .migration])
            XCTAssertEqual(try store.history().map(\.ordinal), [1, 2, 3])
            try store.tearDown()
        }
    }

    func testAFailingStepRollsBackAndSetupThrowsItsNameAndError() throws {
        try forEachKind { s in
            var store = try s.open()
            try store.writeSync { a in for i in 0..<10 { try a.insert(BookV1(id: i, title: "t\(i)")) } }
            try store.tearDown()
            let shouldFail = Mutex(true)
            let register: (DataStoreMigrations) -> Void = { m in
                m.register("v2-rename") { tx in try tx.renameAttribute("title", to: "name", ofType: "Book") }
                m.register("v3-fails") { tx in
                    try tx.deleteAllItems(ofType: "Book")
                    try tx.insert(DynamicItem(itemType: "Other", id: .int(1)))
                    if shouldFail.withLock({ $0 }) { throw Marker(n: 3) }
                }
                m.register("v4-after") { tx in try tx.insert(DynamicItem(itemType: "After", id: .int(1))) }
            }
            store = s.make()
            register(store.migrations)
            do {
                try store.setup()
                XCTFail("setup() succeeded")
            } catch let e as LogStoreError {
                XCTAssertEqual(e.code, .migrationFailed)
                XCTAssertEqual(e.migration, "v3-fails")
                XCTAssertEqual(e.underlyingError as? Marker, Marker(n: 3))
            }
            assertThrowsCode(.notOpen) { try store.read { _ in 0 } }
            // The step before it stays applied; the failed one left nothing.
            store = try s.open { m in m.allowsUnknownMigrations = true }
            XCTAssertEqual(try store.history().map(\.name), ["v2-rename"])
            XCTAssertEqual(try all(store, BookV2.self).count, 10)
            XCTAssertEqual(try store.read { try $0.itemTypeNames() }, ["Book"])
            try store.tearDown()
            shouldFail.withLock { $0 = false }
            store = try s.open(register)
            XCTAssertEqual(store.migrationReport?.applied, ["v3-fails", "v4-after"])
            XCTAssertEqual(try store.read { try $0.itemTypeNames() }, ["After", "Other"])
            try store.tearDown()
        }
    }

    func testAStoreWithMigrationsThisBuildDoesNotKnowIsRefusedUnlessAllowed() throws {
        try forEachKind { s in
            try s.open { m in
                m.register("v2") { _ in }
                m.register("v3-newer") { tx in try tx.insert(DynamicItem(itemType: "X", id: .int(1))) }
            }.tearDown()
            // An older build: knows v2 only.
            let old = s.make()
            old.migrations.register("v2") { _ in }
            assertThrowsCode(.unknownMigrations) { try old.setup() }
            // And a build that registers none at all.
            assertThrowsCode(.unknownMigrations) { try s.make().setup() }
            let allowed = try s.open { m in
                m.register("v2") { _ in }
                m.register("v2.1-older-line") { tx in try tx.insert(DynamicItem(itemType: "Y", id: .int(1))) }
                m.allowsUnknownMigrations = true
            }
            XCTAssertEqual(allowed.migrationReport?.unknown, ["v3-newer"])
            XCTAssertEqual(allowed.migrationReport?.applied, ["v2.1-older-line"])
            try allowed.tearDown()
        }
    }

    func testAStepRegisteredBeforeAnAppliedOneIsRefused() throws {
        try forEachKind { s in
            try s.open { m in
                m.register("a") { _ in }
                m.register("c") { _ in }
            }.tearDown()
            let store = s.make()
            store.migrations.register("a") { _ in }
            store.migrations.register("b") { _ in }
            store.migrations.register("c") { _ in }
            assertThrowsCode(.migrationHistoryMismatch) { try store.setup() }
            let dup = s.make()
            dup.migrations.register("a") { _ in }
            dup.migrations.register("a") { _ in }
            assertThrowsCode(.invalidArgument) { try dup.setup() }
            let empty = s.make()
            empty.migrations.register("") { _ in }
            assertThrowsCode(.invalidArgument) { try empty.setup() }
        }
    }

    func testEraseOnMigrationChangeRecreatesTheStoreAndRecordsTheErase() throws {
        try forEachKind { s in
            var store = try s.open { m in
                m.register("a") { tx in try tx.insert(DynamicItem(itemType: "Made", id: .string("a"))) }
                m.register("c") { _ in }
            }
            try store.writeSync { a in try a.insert(BookV1(id: 1, title: "x")) }
            try store.tearDown()
            store = try s.open { m in
                m.register("a") { tx in try tx.insert(DynamicItem(itemType: "Made", id: .string("a"))) }
                m.register("b") { tx in try tx.insert(DynamicItem(itemType: "Made", id: .string("b"))) }
                m.register("c") { _ in }
                m.eraseStoreOnMigrationChange = true
            }
            XCTAssertNotNil(store.migrationReport?.erasedBecause)
            XCTAssertEqual(store.migrationReport?.applied, ["a", "b", "c"])
            XCTAssertEqual(try all(store, BookV1.self), [])
            XCTAssertEqual(try store.read { try $0.dynamicItems(ofType: "Made") }.map(\.id), [.string("a"), .string("b")])
            XCTAssertEqual(try store.history().map(\.kind), [.erase, .migration, .migration, .migration])
            try store.tearDown()
        }
    }

    func testTheHistoryIsHiddenFromRequestsKeptByNukeAndRefusedToTypedItems() throws {
        struct Sneaky: DataStoreItem {
            static var itemType: String { StoreHistory.itemType }
            var id: Int
        }
        try forEachKind { s in
            let store = try s.open { m in m.register("v2") { _ in } }
            try store.writeSync { a in try a.insert(BookV1(id: 1, title: "x")) }
            XCTAssertEqual(try store.read { try $0.itemTypeNames() }, ["Book"])
            assertThrowsCode(.invalidArgument) { try store.read { try $0.items(forRequest: DataStoreRequest(itemType: Sneaky.self)) } }
            assertThrowsCode(.invalidArgument) { try store.writeSync { try $0.insert(Sneaky(id: 1)) } }
            try store.nuke()
            XCTAssertEqual(try store.read { try $0.itemTypeNames() }, [])
            XCTAssertEqual(try store.history().map(\.name), ["v2"], "nuke deletes items, not the store's history")
            // Tools read it through record-level access.
            XCTAssertEqual(try store.read { try StoreHistory.entries(in: $0) }.count, 1)
            try store.tearDown()
        }
    }

    /// A child store has no migrations of its own (``ChildDataStore`` has no `migrations`): it
    /// shows its parent's data, which the parent's `setup()` migrated.
    func testAChildStoreShowsItsParentsMigratedData() throws {
        let parent = LogDataStore.inMemory()
        parent.migrations.register("v1") { tx in try tx.insert(DynamicItem(itemType: "Thing", id: .int(1), attributes: ["n": .int(1)])) }
        try parent.setup()
        let child = try parent.makeChildDataStore()
        XCTAssertEqual(try DataStoreMigrations.history(of: child).map(\.name), ["v1"])
        try parent.tearDown()
    }

    // MARK: Index history

    struct IndexedV1: DataStoreItem {
        static var itemType: String { "Indexed" }
        var id: Int
        var name: String
        var rank: Int
        static var indexes: [DataStoreIndex<Self>] { [.init(\.name)] }
    }

    struct IndexedV2: DataStoreItem {
        static var itemType: String { "Indexed" }
        var id: Int
        var name: String
        var rank: Int
        static var indexes: [DataStoreIndex<Self>] { [.init(\.name), .init(\.rank)] }
    }

    func testChangedIndexDeclarationsAreRecordedInTheHistoryOncePerChange() throws {
        try forEachKind { s in
            var store = try s.open()
            try store.writeSync { a in for i in 0..<20 { try a.insert(IndexedV1(id: i, name: "n\(i)", rank: i % 4)) } }
            var h = try store.history()
            XCTAssertEqual(h.map(\.kind), [.indexes])
            XCTAssertEqual(h.last?.name, "Indexed")
            XCTAssertEqual(h.last?.indexes?.map(\.name), ["name"])
            try store.tearDown()
            // The same declaration after a reopen (with or without a checkpoint): nothing new.
            store = try s.open()
            _ = try store.read { try $0.countItems(forRequest: DataStoreRequest(itemType: IndexedV1.self)) }
            XCTAssertEqual(try store.history().count, 1)
            try store.tearDown()
            // A new version declares another index: recorded with the entries it built.
            store = try s.open()
            _ = try store.read { try $0.countItems(forRequest: DataStoreRequest(itemType: IndexedV2.self)) }
            h = try store.history()
            XCTAssertEqual(h.map(\.kind), [.indexes, .indexes])
            XCTAssertEqual(h.last?.indexes?.map(\.name), ["name", "rank"])
            XCTAssertEqual(h.last?.indexes?.first { $0.name == "rank" }?.entries, 20)
            try store.tearDown()
            // Back to the old declaration: the rank index is dropped, recorded.
            store = try s.open()
            try store.prepareIndexes(for: IndexedV1.self)
            XCTAssertEqual(try store.history().last?.dropped, ["rank"])
            try store.tearDown()
        }
    }

    // MARK: Crashes

    /// A power loss or a process crash at every I/O operation of `setup()` applying two steps
    /// leaves a store that opens before a step or after it, never between: the data and the
    /// history agree.
    func testACrashAtEveryStepOfAMigrationLeavesTheStoreBeforeOrAfterIt() throws {
        var o = LogStoreOptions()
        o.transactionSpillThreshold = 8 << 10
        o.segmentSize = 64 << 10
        o.checkpointOnClose = false
        // Zeros written on the committing thread: every run takes the same I/O operations, so
        // the crash points counted in the uncrashed run are the same in each crashed one.
        o.preallocatesInBackground = false
        let base = FaultInjectingFileSystem()
        try base.createDirectory(atPath: "/s")
        try base.syncDirectory(atPath: "/")
        do {
            let store = LogDataStore(path: "/s/store", fileSystem: base, options: o)
            try store.setup()
            try store.writeSync { a in for i in 0..<1_000 { try a.insert(BookV1(id: i, title: "title \(i)")) } }
            try store.tearDown()
        }
        let register: (DataStoreMigrations) -> Void = { m in
            m.register("v2-rename") { tx in try tx.renameAttribute("title", to: "name", ofType: "Book") }
            m.register("v3-move") { tx in try tx.renameItemType("Book", to: "Publication") }
        }
        /// 0: before v2, 1: after v2, 2: after v3.
        func stage(_ store: LogDataStore) throws -> Int {
            let history = try store.history().map(\.name)
            func items<Item: DataStoreItem>(_ type: Item.Type) throws -> [Item] {
                try store.read { try $0.items(forRequest: DataStoreRequest(itemType: type)) }
            }
            switch history {
            case []:
                XCTAssertEqual(try items(BookV1.self).map(\.title), (0..<1_000).map { "title \($0)" })
                return 0
            case ["v2-rename"]:
                XCTAssertEqual(try items(BookV2.self).map(\.name), (0..<1_000).map { "title \($0)" })
                XCTAssertEqual(try items(Publication.self), [])
                return 1
            case ["v2-rename", "v3-move"]:
                XCTAssertEqual(try items(Publication.self).map(\.name), (0..<1_000).map { "title \($0)" })
                XCTAssertEqual(try store.read { try $0.itemTypeNames() }, ["Publication"])
                return 2
            default:
                XCTFail("unexpected history \(history)")
                return -1
            }
        }
        // The uncrashed run: how many mutating I/O operations the migrations take. Every one of
        // them is a crash point (in CI-bounded time: at most 120, spread evenly, the last ones
        // always included).
        let total: Int
        do {
            let fs = base.processCrashImage()
            let before = fs.mutatingOperationCount
            let store = LogDataStore(path: "/s/store", fileSystem: fs, options: o)
            register(store.migrations)
            try store.setup()
            try store.tearDown()
            total = fs.mutatingOperationCount - before
        }
        let crashPoints =
            total <= 120 ? Array(0..<total) : Array(Set((0..<100).map { $0 * total / 100 } + Array((total - 20)..<total))).sorted()
        var points = 0
        var stages = Set<Int>()
        for k in crashPoints {
            let fs = base.processCrashImage()
            fs.scheduleCrash(afterMutatingOperations: k)
            let store = LogDataStore(path: "/s/store", fileSystem: fs, options: o)
            register(store.migrations)
            do {
                try store.setup()
                try store.tearDown()
            } catch {
                XCTAssertTrue(FaultInjectingFileSystem.isSimulatedCrash(error) || fs.isCrashed, "point \(k): \(error)")
            }
            XCTAssertTrue(fs.isCrashed, "point \(k) of \(total)")
            points += 1
            for image in [fs.processCrashImage(), fs.powerLossImage(seed: UInt64(k))] {
                // Opened as a tool would (no steps run), the image shows a stage...
                let look = LogDataStore(path: "/s/store", fileSystem: image, options: o)
                look.migrations.allowsUnknownMigrations = true
                try look.setup()
                stages.insert(try stage(look))
                try look.tearDown()
                // ...and the app's next launch finishes the migrations.
                let app = LogDataStore(path: "/s/store", fileSystem: image, options: o)
                register(app.migrations)
                try app.setup()
                XCTAssertEqual(try stage(app), 2, "point \(k)")
                try app.tearDown()
            }
        }
        XCTAssertGreaterThan(points, 8, "appends of spilled, chunked transactions, spill files and syncs")
        XCTAssertEqual(stages, [0, 1, 2], "crashes hit before, between and after the steps")
    }
}
