import Foundation
import LogStore
import LogStoreSQLite
import Synchronization
import XCTest
import _LogStoreTestSupport

/// BackendMigrator between LogStore and SQLite: round trips verified equal, resumption after an
/// interruption, differences named, refusals. (Kill -9 at random moments: MigrationKillTests.)
final class MigratorTests: XCTestCase {
    typealias Restaurant = MigrationFixture.Restaurant
    typealias MenuItem = MigrationFixture.MenuItem
    typealias Order = MigrationFixture.Order

    /// A set-up LogStore store and SQLite store in a new directory, torn down after the test.
    func logStoreAndSQLite() throws -> (LogDataStore, SQLiteDataStore) {
        let dir = makeDirectory()
        let a = LogDataStore(directory: dir.appendingPathComponent("a.store"))
        let b = SQLiteDataStore(path: dir.appendingPathComponent("b.sqlite").path)
        try a.setup()
        try b.setup()
        addTeardownBlock {
            try? a.tearDown()
            try? b.tearDown()
        }
        return (a, b)
    }

    func makeDirectory() -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("logstore-migrator-\(UUID().uuidString)")
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        return dir
    }

    func seed(_ store: any DataStore, _ n: Int) throws { try MigrationFixture.seed(store, n) }

    func records(_ store: any DataStore) throws -> [String: [[UInt8]]] { try MigrationFixture.records(store) }

    func testRoundTripLogStoreToSQLiteToLogStoreIsVerifiedEqual() throws {
        let dir = makeDirectory()
        let a = LogDataStore(directory: dir.appendingPathComponent("a.store"))
        let b = SQLiteDataStore(path: dir.appendingPathComponent("b.sqlite").path)
        let c = LogDataStore(directory: dir.appendingPathComponent("c.store"))
        for s in [a, b, c] as [any DataStore] { try s.setup() }
        defer { for s in [a, b, c] as [any DataStore] { try? s.tearDown() } }
        try seed(a, 3000)
        let progress = Mutex<[BackendMigrationProgress]>([])
        var m = BackendMigrator(from: a, to: b)
        m.batchSize = 700
        m.progress = { p in progress.withLock { $0.append(p) } }
        let copy = try m.copy()
        XCTAssertEqual(copy.items, 9000)
        XCTAssertEqual(copy.types.map(\.itemType), ["MenuItem", "Order", "Restaurant"])
        XCTAssertFalse(copy.resumed)
        let seen = progress.withLock { $0 }
        XCTAssertEqual(seen.last?.items, 9000)
        XCTAssertEqual(seen.last?.totalItems, 9000)
        XCTAssertGreaterThan(seen.count, 9000 / 700)
        XCTAssertTrue(try m.verify().isEqual)
        XCTAssertEqual(try m.pendingCopy()?.isComplete, true, "the last batch marks the cursor done")
        XCTAssertEqual(try m.copy(resume: true).itemsThisRun, 0, "a complete copy resumes to nothing left")
        try m.finish()
        XCTAssertNil(try m.pendingCopy(), "finish() removes the cursor")
        XCTAssertFalse(try b.read { try $0.itemTypeNames() }.contains(BackendMigrator.cursorItemType))

        var back = BackendMigrator(from: b, to: c)
        back.batchBytes = 64 << 10
        let (_, check) = try back.migrate()
        XCTAssertNil(try back.pendingCopy())
        XCTAssertTrue(check.isEqual, "\(check)")
        XCTAssertEqual(check.types.map(\.sourceCount), [3000, 3000, 3000])
        XCTAssertEqual(try records(a), try records(c), "byte for byte")
        XCTAssertEqual(try c.read { try $0.items(forRequest: DataStoreRequest(itemType: Restaurant.self)) }.count, 3000)
        // Typed reads of the copies agree with the original.
        XCTAssertEqual(
            try a.read { try $0.items(forRequest: DataStoreRequest(itemType: Order.self)) },
            try b.read { try $0.items(forRequest: DataStoreRequest(itemType: Order.self)) })
    }

    func testAnInterruptedCopyResumesToAVerifiedEqualDestination() throws {
        let dir = makeDirectory()
        let a = SQLiteDataStore(path: dir.appendingPathComponent("a.sqlite").path)
        let b = LogDataStore(directory: dir.appendingPathComponent("b.store"))
        try a.setup()
        try b.setup()
        defer {
            try? a.tearDown()
            try? b.tearDown()
        }
        try seed(a, 1000)
        let batches = Atomic<Int>(0)
        var m = BackendMigrator(from: a, to: b)
        m.batchSize = 100
        m.sourceDescription = "a.sqlite"
        m.isCancelled = { batches.add(1, ordering: .relaxed).newValue >= 7 }
        XCTAssertThrowsError(try m.copy()) { XCTAssertTrue($0 is CancellationError, "\($0)") }
        let pending = try XCTUnwrap(try m.pendingCopy())
        XCTAssertEqual(pending.copied, 700)
        XCTAssertEqual(pending.source, "a.sqlite")
        XCTAssertFalse(try m.verify().isEqual, "half a copy is not equal")
        XCTAssertThrowsError(try m.finish(), "an unfinished copy cannot be finished") {
            XCTAssertEqual(($0 as? LogStoreError)?.code, .invalidArgument)
        }
        // Without resume, an interrupted copy is refused; from another source too.
        XCTAssertThrowsError(try BackendMigrator(from: a, to: b).copy()) {
            XCTAssertEqual(($0 as? LogStoreError)?.code, .invalidArgument)
        }
        var other = BackendMigrator(from: a, to: b)
        other.sourceDescription = "elsewhere.sqlite"
        XCTAssertThrowsError(try other.copy(resume: true)) { XCTAssertEqual(($0 as? LogStoreError)?.code, .invalidArgument) }
        batches.store(0, ordering: .relaxed)
        m.isCancelled = { batches.add(1, ordering: .relaxed).newValue >= 9 }
        XCTAssertThrowsError(try m.copy(resume: true)) { XCTAssertTrue($0 is CancellationError) }
        m.isCancelled = nil
        let before = try XCTUnwrap(try m.pendingCopy()).copied
        XCTAssertGreaterThan(before, 700)
        let report = try m.copy(resume: true)
        XCTAssertTrue(report.resumed)
        XCTAssertEqual(report.items, 3000)
        XCTAssertEqual(report.itemsThisRun, 3000 - before)
        XCTAssertTrue(try m.verify().isEqual)
        try m.finish()
        XCTAssertNil(try m.pendingCopy())
    }

    func testVerificationNamesMissingExtraAndDifferingItems() throws {
        let (a, b) = try logStoreAndSQLite()
        try seed(a, 200)
        let m = BackendMigrator(from: a, to: b)
        XCTAssertTrue(try m.migrate().verification.isEqual)
        try b.writeSync { w in
            var altered = try XCTUnwrap(try w.item(ofType: Order.self, id: "o17"))
            altered.total += 1
            try w.insert(altered)
            try w.deleteItem(ofType: MenuItem.self, id: 3)
            try w.insert(Order(id: "zz-extra", items: [], total: 0, note: nil, receipt: Data()))
            try w.insert(DynamicItem(itemType: "Stray", id: .int(1)))
        }
        let check = try m.verify()
        XCTAssertFalse(check.isEqual)
        let byType = Dictionary(uniqueKeysWithValues: check.types.map { ($0.itemType, $0) })
        XCTAssertEqual(byType["Order"]?.differing, ["o17"])
        XCTAssertEqual(byType["Order"]?.extra, ["zz-extra"])
        XCTAssertEqual(byType["MenuItem"]?.missing, ["3"])
        XCTAssertEqual(byType["MenuItem"]?.missingCount, 1)
        XCTAssertEqual(byType["Stray"]?.extraCount, 1, "a type only the destination has")
        XCTAssertEqual(byType["Restaurant"]?.isEqual, true)
        XCTAssertNotEqual(byType["Order"]?.sourceDigest, byType["Order"]?.destinationDigest)
        XCTAssertEqual(byType["Restaurant"]?.sourceDigest, byType["Restaurant"]?.destinationDigest)
    }

    func testANonEmptyDestinationIsRefusedAndChosenTypesAreCopiedAlone() throws {
        let (a, b) = try logStoreAndSQLite()
        try seed(a, 50)
        var m = BackendMigrator(from: a, to: b)
        m.types = ["Order"]
        XCTAssertTrue(try m.migrate().verification.isEqual)
        XCTAssertEqual(try b.read { try $0.itemTypeNames() }, ["Order"])
        XCTAssertThrowsError(try m.copy()) { XCTAssertEqual(($0 as? LogStoreError)?.code, .invalidArgument, "\($0)") }
        // A finished copy killed before it could report: resuming finds it complete.
        let again = try m.copy(resume: true)
        XCTAssertEqual(again.itemsThisRun, 0)
        XCTAssertTrue(again.resumed)
        try b.writeSync { try $0.deleteItem(ofType: Order.self, id: "o1") }
        XCTAssertThrowsError(try m.copy(resume: true), "an incomplete copy without a cursor is not resumed") {
            XCTAssertEqual(($0 as? LogStoreError)?.code, .invalidArgument)
        }
        XCTAssertThrowsError(try BackendMigrator(from: a, to: a).copy()) {
            XCTAssertEqual(($0 as? LogStoreError)?.code, .invalidArgument)
        }
    }

    /// Rule 6: the history goes with the data. A LogStore store whose data went through a
    /// migration is moved to SQLite; the SQLite store, set up with the same steps plus a new one,
    /// skips the applied step and runs only the new one.
    func testTheHistoryGoesWithTheDataSoTheDestinationSkipsAppliedSteps() throws {
        let dir = makeDirectory()
        let sourceURL = dir.appendingPathComponent("a.store")
        let sqlitePath = dir.appendingPathComponent("b.sqlite").path
        @Sendable func rename(_ tx: MigrationTransaction, _ suffix: String) throws {
            try tx.setAttribute("name", ofType: Restaurant.itemType, overwrite: true) { item in
                guard case .string(let s)? = item.object(forKey: "name") else { return .null }
                return .string(s + suffix)
            }
        }
        let seeded = LogDataStore(directory: sourceURL)
        try seeded.setup()
        try seed(seeded, 10)
        try seeded.tearDown()
        let a = LogDataStore(directory: sourceURL)
        a.migrations.register("v2-bang") { try rename($0, "!") }
        try a.setup()
        defer { try? a.tearDown() }
        XCTAssertEqual(a.migrationReport?.applied, ["v2-bang"])
        let names = try a.read { try $0.items(forRequest: DataStoreRequest(itemType: Restaurant.self)).map(\.name) }

        let b = SQLiteDataStore(path: sqlitePath)
        try b.setup()
        let (_, check) = try BackendMigrator(from: a, to: b).migrate()
        XCTAssertTrue(check.isEqual, "\(check)")
        XCTAssertEqual(try DataStoreMigrations.history(of: b).map(\.name), try a.history().map(\.name), "the history was copied")
        try b.tearDown()

        let reopened = SQLiteDataStore(path: sqlitePath)
        reopened.migrations.register("v2-bang") { try rename($0, "!") }
        reopened.migrations.register("v3-question") { try rename($0, "?") }
        try reopened.setup()
        defer { try? reopened.tearDown() }
        XCTAssertEqual(reopened.migrationReport?.alreadyApplied, ["v2-bang"], "the moved data went through v2 already")
        XCTAssertEqual(reopened.migrationReport?.applied, ["v3-question"])
        XCTAssertEqual(
            try reopened.read { try $0.items(forRequest: DataStoreRequest(itemType: Restaurant.self)).map(\.name) }, names.map { $0 + "?" })
    }
}
