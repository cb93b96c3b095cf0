import Foundation
import LogStoreEngine
import XCTest

final class MigrationsCommandTests: XCTestCase {
    /// A fixture store plus a history of two migrations, an index change and an erase, written
    /// through the engine as the DataStore layer writes it.
    func makeStoreWithHistory() throws -> StoreFixture {
        let store = try makeStore()
        let e = try LogEngine.open(directory: store.dir, options: StoreFixture.options())
        let at = Date(timeIntervalSince1970: 1_800_000_000)
        let entries = [
            StoreHistory.Entry(ordinal: 1, kind: .erase, name: "", at: at, reason: "migrations changed"),
            StoreHistory.Entry(ordinal: 2, kind: .migration, name: "v2-rename-title", at: at, durationMs: 12, changes: 50),
            StoreHistory.Entry(
                ordinal: 3, kind: .indexes, name: "User", at: at,
                indexes: [.init(IndexDefinition(attributes: [["name"]]), entries: 250)], dropped: ["age"]),
            StoreHistory.Entry(ordinal: 4, kind: .migration, name: "v3-split", at: at, durationMs: 3, changes: 1),
        ]
        try e.commit(entries.map { .put(type: StoreHistory.itemType, key: $0.key, value: $0.encoded) })
        try e.close()
        return store
    }

    func testMigrationsListsTheAppliedMigrationsAndIndexChangesInOrder() throws {
        let store = try makeStoreWithHistory()
        let before = try snapshotFiles(store.dir)
        let run = runTool(["migrations", store.dir, "--progress", "none"])
        XCTAssertEqual(run.code, 0, run.stderr)
        XCTAssertTrue(run.stdout.contains("2 applied, 1 index change"), run.stdout)
        let lines = run.stdout.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 5)
        XCTAssertTrue(
            lines[2].contains("migration") && lines[2].contains("v2-rename-title") && lines[2].contains("50 records changed"), lines[2])
        XCTAssertTrue(lines[3].contains("name(name) built, 250 entries") && lines[3].contains("dropped age"), lines[3])
        XCTAssertEqual(try snapshotFiles(store.dir), before, "the command only reads")
    }

    func testMigrationsJSON() throws {
        let store = try makeStoreWithHistory()
        let run = runTool(["migrations", store.dir, "--json"])
        XCTAssertEqual(run.code, 0, run.stderr)
        let json = try run.json()
        XCTAssertEqual(json["command"] as? String, "migrations")
        XCTAssertEqual(json["applied"] as? [String], ["v2-rename-title", "v3-split"])
        let history = try XCTUnwrap(json["history"] as? [[String: Any]])
        XCTAssertEqual(history.map { $0["kind"] as? String }, ["erase", "migration", "indexes", "migration"])
        XCTAssertEqual(history[1]["durationMs"] as? Int, 12)
        XCTAssertEqual(history[1]["at"] as? String, "2027-01-15T08:00:00.000Z")
        XCTAssertEqual((history[2]["indexes"] as? [[String: Any]])?.first?["entries"] as? Int, 250)
    }

    func testMigrationsOfAStoreWithoutHistory() throws {
        let store = try makeStore()
        let run = runTool(["migrations", store.dir, "--json"])
        XCTAssertEqual(run.code, 0, run.stderr)
        XCTAssertEqual(try run.json()["applied"] as? [String], [])
        XCTAssertTrue(runTool(["migrations", store.dir]).stdout.contains("no history"))
    }

    func testMigrationsReportsADamagedHistoryRecord() throws {
        let store = try makeStore()
        let e = try LogEngine.open(directory: store.dir, options: StoreFixture.options())
        try e.commit([.put(type: StoreHistory.itemType, key: StoreHistory.key(ordinal: 1), value: AttributeValue.int(3).encoded())])
        try e.close()
        let run = runTool(["migrations", store.dir, "--json"])
        XCTAssertEqual(run.code, 1)
        XCTAssertNotNil(try run.json()["error"])
    }
}
