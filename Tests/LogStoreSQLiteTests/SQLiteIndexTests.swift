import Foundation
import GRDB
import LogStore
import LogStoreSQLite
import XCTest

/// Declared `DataStoreIndex`es become SQL indexes on `json_extract` of their attributes, which
/// `sqlite3` users see and SQLite's planner can use; a changed definition replaces the old index.
final class SQLiteIndexTests: XCTestCase {
    struct MenuItem: DataStoreItem {
        static let indexes: [DataStoreIndex<MenuItem>] = [.init(\.restaurant, \.price), .init(\.name, unique: true)]
        var id: Int
        var restaurant: String
        var name: String
        var price: Int
    }

    struct MenuItemV2: DataStoreItem {
        static let itemType = "MenuItem"
        static let indexes: [DataStoreIndex<MenuItemV2>] = [.init(\.price)]
        var id: Int
        var restaurant: String
        var name: String
        var price: Int
    }

    func indexes(_ path: String) throws -> [String: String] {
        let q = try DatabaseQueue(path: path)
        defer { try? q.close() }
        return try q.read { db in
            var out: [String: String] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL") {
                out[row[0]] = row[1]
            }
            return out
        }
    }

    func testDeclaredIndexesAreSQLIndexesAndFollowTheirDefinition() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("logstore-sqlite-index-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("s.sqlite").path
        let store = SQLiteDataStore(path: path)
        try store.setup()
        try store.writeSync { try $0.insert(MenuItem(id: 1, restaurant: "r", name: "soup", price: 5)) }
        try store.tearDown()
        var found = try indexes(path)
        XCTAssertEqual(found.count, 2, "\(found)")
        XCTAssertTrue(
            found.values.contains { $0.contains("json_extract(data, '$.\"restaurant\"'), json_extract(data, '$.\"price\"')") }, "\(found)")
        XCTAssertTrue(found.values.contains { $0.hasPrefix("CREATE UNIQUE INDEX") && $0.contains("'$.\"name\"'") }, "\(found)")

        // The app changes its declaration: the old indexes go, the new one comes, data stays.
        let again = SQLiteDataStore(path: path)
        try again.setup()
        try again.writeSync { try $0.insert(MenuItemV2(id: 2, restaurant: "r", name: "soup", price: 6)) }
        XCTAssertEqual(try again.read { try $0.countItems(forRequest: DataStoreRequest(itemType: MenuItemV2.self)) }, 2)
        try again.tearDown()
        found = try indexes(path)
        XCTAssertEqual(found.count, 1, "\(found)")
        XCTAssertTrue(found.values.contains { $0.contains("json_extract(data, '$.\"price\"')") && !$0.contains("UNIQUE") }, "\(found)")
    }
}
