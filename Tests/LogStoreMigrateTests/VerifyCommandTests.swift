import Foundation
import LogStore
import LogStoreMigrateCommands
import LogStoreSQLite
import XCTest

/// `logstore-migrate verify SRC DEST` and `--verify-only`: a deliberately altered destination item
/// is reported (exit 1), with missing and extra items named.
final class VerifyCommandTests: MigrateTestCase {
    func testAnAlteredDestinationItemIsReported() throws {
        let source = try seedLogStore("a.store", 50)
        XCTAssertEqual(migrate([source, path("b.sqlite"), "--progress", "none"]).code, 0)
        let b = SQLiteDataStore(path: path("b.sqlite"))
        try b.setup()
        try b.writeSync { w in
            var dish = try XCTUnwrap(try w.item(ofType: Dish.self, id: 7))
            dish.price = 99
            try w.insert(dish)
            try w.deleteItem(ofType: Dish.self, id: 8)
            try w.insert(Dish(id: 1000, name: "extra", price: 1))
        }
        try b.tearDown()

        let text = migrate([source, path("b.sqlite"), "--verify-only", "--progress", "none"])
        XCTAssertEqual(text.code, 1, text.stderr)
        XCTAssertTrue(text.stdout.contains("different (1): 7"), text.stdout)
        XCTAssertTrue(text.stdout.contains("missing in the destination (1): 8"), text.stdout)
        XCTAssertTrue(text.stdout.contains("extra in the destination (1): 1000"), text.stdout)
        XCTAssertTrue(text.stdout.contains("NOT EQUAL"), text.stdout)

        let json = migrate(["verify", source, path("b.sqlite"), "--json"])
        XCTAssertEqual(json.code, 1)
        let verification = try XCTUnwrap(try json.json()["verification"] as? [String: Any])
        XCTAssertEqual(verification["equal"] as? Bool, false)
        let dish = try XCTUnwrap((verification["types"] as? [[String: Any]])?.first { $0["itemType"] as? String == "Dish" })
        XCTAssertEqual(dish["differing"] as? [String], ["7"])
        XCTAssertEqual(dish["missing"] as? [String], ["8"])
        XCTAssertEqual(dish["extra"] as? [String], ["1000"])
        XCTAssertNotEqual(dish["sourceDigest"] as? String, dish["destinationDigest"] as? String)
        let restaurant = try XCTUnwrap((verification["types"] as? [[String: Any]])?.first { $0["itemType"] as? String == "Restaurant" })
        XCTAssertEqual(restaurant["equal"] as? Bool, true)
        XCTAssertEqual(restaurant["sourceCount"] as? Int, 50)
    }

    func testEqualStoresVerifyAndAMissingDestinationIsNotAStore() throws {
        let source = try seedSQLite("a.sqlite", 30)
        XCTAssertEqual(migrate([source, path("b.store"), "--no-verify", "--progress", "none"]).code, 0)
        let run = migrate(["verify", source, path("b.store"), "--progress", "none"])
        XCTAssertEqual(run.code, 0, run.stderr)
        XCTAssertTrue(run.stdout.contains("verified: the destination equals the source"), run.stdout)
        XCTAssertEqual(migrate(["verify", source, path("nothing.store")]).code, 4, "verify never creates a store")
        XCTAssertEqual(migrate([source, path("b.store"), "--verify-only", "--resume"]).code, 2)
    }
}
