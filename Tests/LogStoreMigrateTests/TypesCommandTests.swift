import Foundation
import LogStore
import LogStoreMigrateCommands
import XCTest

/// `logstore-migrate types STORE`: types, counts, an interrupted copy.
final class TypesCommandTests: MigrateTestCase {
    func testTypesAndCountsOfBothBackends() throws {
        let logStore = try seedLogStore("a.store", 12)
        let text = migrate(["types", logStore])
        XCTAssertEqual(text.code, 0, text.stderr)
        XCTAssertTrue(text.stdout.contains("Dish"), text.stdout)
        XCTAssertTrue(text.stdout.contains("2 type(s), 24 items"), text.stdout)
        let sqlite = try seedSQLite("b.sqlite", 3)
        let json = try migrate(["types", sqlite, "--json"]).json()
        XCTAssertEqual((json["types"] as? [[String: Any]])?.map { $0["items"] as? Int }, [3, 3])
        XCTAssertEqual(json["interruptedCopy"] as? Bool, false)
        XCTAssertEqual(json["store"] as? String, "sqlite:" + sqlite)
        XCTAssertEqual(migrate(["types", path("none.store")]).code, 4)
    }
}
