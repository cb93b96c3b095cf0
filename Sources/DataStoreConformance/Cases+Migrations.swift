import Foundation
import LogStore

// Migrations: registered steps applied by setup(), once each, in order, atomic with their record;
// a failing step rolls back and closes the store; unknown and inserted steps are refused; several
// processes setting up one place at once apply each step once.

extension DataStoreConformance {
    static var migrationCases: [ConformanceCase] {
        [
            ConformanceCase(
                "migrations.appliedOnceEachInOrderBySetup",
                "setup() applies the registered migrations the store has not applied, in registration order, before it returns; a reopen applies only new ones, and the history lists each once.",
                requires: [.migrations, .persistsAcrossReopen, .recordAccess],
                { c in
                    let location = try c.makeLocation()
                    let first = try migratingStore(location, c)
                    try first.setup()
                    try first.writeSync { a in for i in 0..<5 { try a.insert(Numbered(id: i, value: "v\(i)")) } }
                    try first.tearDown()

                    let second = try migratingStore(location, c)
                    second.migrations.register("conformance-1-upper") { tx in
                        try tx.setAttribute("value", ofType: Numbered.itemType, overwrite: true) { item in
                            guard case .string(let s)? = item.object(forKey: "value") else { return .null }
                            return .string(s.uppercased())
                        }
                    }
                    second.migrations.register("conformance-2-suffix") { tx in
                        // Runs after step 1: it sees step 1's values.
                        try tx.setAttribute("value", ofType: Numbered.itemType, overwrite: true) { item in
                            guard case .string(let s)? = item.object(forKey: "value") else { return .null }
                            return .string(s + "!")
                        }
                    }
                    try second.setup()
                    c.expectEqual(
                        second.migrationReport?.applied ?? [], ["conformance-1-upper", "conformance-2-suffix"],
                        "steps applied by the first setup()")
                    c.expectEqual(
                        try second.read { try $0.item(ofType: Numbered.self, id: 3) }?.value, "V3!", "item after both steps, in order")
                    try second.tearDown()
                    c.expect(second.migrationReport == nil, "migrationReport after tearDown()")

                    let third = try migratingStore(location, c)
                    third.migrations.register("conformance-1-upper") { _ in c.fail("an applied migration ran again") }
                    third.migrations.register("conformance-2-suffix") { _ in c.fail("an applied migration ran again") }
                    third.migrations.register("conformance-3-delete") { tx in _ = try tx.deleteItem(ofType: Numbered.itemType, id: .int(0))
                    }
                    try third.setup()
                    c.expectEqual(
                        third.migrationReport?.alreadyApplied ?? [], ["conformance-1-upper", "conformance-2-suffix"], "steps applied before"
                    )
                    c.expectEqual(third.migrationReport?.applied ?? [], ["conformance-3-delete"], "the new step")
                    c.expectEqual(try countOf(Numbered.self, in: third), 4, "items after step 3")
                    let names = try DataStoreMigrations.history(of: third).filter { $0.kind == .migration }.map(\.name)
                    c.expectEqual(names, ["conformance-1-upper", "conformance-2-suffix", "conformance-3-delete"], "the store's history")
                    c.expect(
                        try !third.read { try $0.itemTypeNames() }.contains(where: StoreHistory.isReserved),
                        "itemTypeNames() leaves out the history's reserved type")
                    try third.tearDown()
                }),
            ConformanceCase(
                "migrations.aFailingStepRollsBackAndSetupThrows",
                "A step that throws commits nothing: setup() throws .migrationFailed naming it, the store stays closed, and the steps before it stay applied.",
                requires: [.migrations, .persistsAcrossReopen, .recordAccess],
                { c in
                    let location = try c.makeLocation()
                    let store = try migratingStore(location, c)
                    store.migrations.register("conformance-ok") { tx in
                        try tx.insert(DynamicItem(itemType: Numbered.itemType, id: .int(1), attributes: ["value": .string("ok")]))
                    }
                    store.migrations.register("conformance-fails") { tx in
                        try tx.insert(DynamicItem(itemType: Numbered.itemType, id: .int(2), attributes: ["value": .string("half")]))
                        throw LogStoreError(.invalidArgument, "this step fails on purpose")
                    }
                    do {
                        try store.setup()
                        c.fail("setup() succeeded although a migration threw")
                    } catch let e as LogStoreError {
                        c.expectEqual(e.code, .migrationFailed, "setup()'s error")
                        c.expectEqual(e.migration, "conformance-fails", "the failing step's name")
                    }
                    c.expectThrows(.notOpen, "read after a failed setup()") { try store.read { _ in 1 } }
                    let fixed = try migratingStore(location, c)
                    fixed.migrations.register("conformance-ok") { _ in c.fail("an applied migration ran again") }
                    fixed.migrations.register("conformance-fails") { tx in
                        try tx.insert(DynamicItem(itemType: Numbered.itemType, id: .int(3), attributes: ["value": .string("fixed")]))
                    }
                    try fixed.setup()
                    c.expectEqual(fixed.migrationReport?.applied ?? [], ["conformance-fails"], "the fixed step")
                    c.expectEqual(
                        try fixed.read { a in try a.items(forRequest: DataStoreRequest(itemType: Numbered.self)).map(\.id) }, [1, 3],
                        "no write of the failed attempt")
                    try fixed.tearDown()
                }),
            ConformanceCase(
                "migrations.unknownAndInsertedStepsAreRefused",
                "A store that applied steps this build does not register throws .unknownMigrations (unless allowed); a step registered before an applied one throws .migrationHistoryMismatch.",
                requires: [.migrations, .persistsAcrossReopen, .recordAccess],
                { c in
                    let location = try c.makeLocation()
                    let store = try migratingStore(location, c)
                    store.migrations.register("conformance-a") { _ in }
                    store.migrations.register("conformance-b") { _ in }
                    try store.setup()
                    try store.tearDown()
                    let older = try migratingStore(location, c)
                    older.migrations.register("conformance-a") { _ in }
                    c.expectThrows(.unknownMigrations, "a build that lacks an applied step") { try older.setup() }
                    older.migrations.allowsUnknownMigrations = true
                    try older.setup()
                    c.expectEqual(older.migrationReport?.unknown ?? [], ["conformance-b"], "the unknown step, allowed")
                    try older.tearDown()
                    let inserted = try migratingStore(location, c)
                    inserted.migrations.register("conformance-a") { _ in }
                    inserted.migrations.register("conformance-inserted") { _ in c.fail("an inserted step ran") }
                    inserted.migrations.register("conformance-b") { _ in }
                    c.expectThrows(.migrationHistoryMismatch, "a step inserted before an applied one") { try inserted.setup() }
                }),
            ConformanceCase(
                "migrations.concurrentSetupsApplyEachStepOnce",
                "Stores without a lock (several servers on one database): two store objects set up at once with the same steps apply each step once.",
                requires: [.migrations, .persistsAcrossReopen, .recordAccess],
                { c in
                    if c.capabilities.contains(.exclusiveLock) { throw c.skip("the backend allows one open store per place") }
                    let location = try c.makeLocation()
                    let stores = try (0..<2).map { _ in try migratingStore(location, c) }
                    for store in stores {
                        for step in 0..<3 {
                            store.migrations.register("conformance-count-\(step)") { tx in
                                let current = try tx.item(ofType: Numbered.itemType, id: .int(0))
                                let n =
                                    current.flatMap { item -> Int? in
                                        guard case .string(let s)? = item.object(forKey: "value") else { return nil }
                                        return Int(s)
                                    } ?? 0
                                try tx.insert(
                                    DynamicItem(itemType: Numbered.itemType, id: .int(0), attributes: ["value": .string("\(n + 1)")]))
                            }
                        }
                    }
                    let errors = SharedBox<[String]>([])
                    let group = DispatchGroup()
                    for store in stores {
                        DispatchQueue.global().async(group: group) {
                            do { try store.setup() } catch { errors.update { $0.append("\(error)") } }
                        }
                    }
                    c.wait(group, "the two setups")
                    c.expectEqual(errors.value, [], "setup() errors")
                    c.expectEqual(
                        try stores[0].read { try $0.item(ofType: Numbered.self, id: 0) }?.value, "3", "each of the 3 steps ran once")
                    let applied = stores.flatMap { $0.migrationReport?.applied ?? [] }.sorted()
                    c.expectEqual(
                        applied, ["conformance-count-0", "conformance-count-1", "conformance-count-2"], "steps applied, over both stores")
                    let names = try DataStoreMigrations.history(of: stores[1]).filter { $0.kind == .migration }.map(\.name)
                    c.expectEqual(names, ["conformance-count-0", "conformance-count-1", "conformance-count-2"], "the history")
                    for store in stores { try store.tearDown() }
                }),
        ]
    }

    /// A store object on `location` that applies migrations (the factory declared `.migrations`).
    static func migratingStore(_ location: any DataStoreLocation, _ c: ConformanceContext) throws -> any MigratingDataStore {
        guard let store = try location.makeMigratingStore() else {
            throw c.skip("the factory declares .migrations, but its stores are not MigratingDataStore")
        }
        return store
    }
}
