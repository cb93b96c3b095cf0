import Foundation
import LogStore
import LogStoreMigrateCommands
import LogStoreSQLite
import XCTest

/// `logstore-migrate [copy] SRC DEST`: copy, verify, resume, refusals, the JSON document.
final class CopyCommandTests: MigrateTestCase {
    func testCopyBothWaysVerifiesAndReportsJSON() throws {
        let source = try seedLogStore("a.store", 500)
        let run = migrate([source, path("b.sqlite"), "--json", "--progress", "none"])
        XCTAssertEqual(run.code, 0, run.stderr)
        let json = try run.json()
        let copy = try XCTUnwrap(json["copy"] as? [String: Any])
        XCTAssertEqual(copy["items"] as? Int, 1000)
        XCTAssertEqual(copy["resumed"] as? Bool, false)
        XCTAssertEqual((json["verification"] as? [String: Any])?["equal"] as? Bool, true)
        XCTAssertEqual(json["destination"] as? String, "sqlite:" + path("b.sqlite"))

        let back = migrate(["copy", "sqlite:" + path("b.sqlite"), "logstore:" + path("c.store"), "--progress", "plain"])
        XCTAssertEqual(back.code, 0, back.stderr)
        XCTAssertTrue(back.stdout.contains("copied 2 type(s), 1,000 items"), back.stdout)
        XCTAssertTrue(back.stdout.contains("verified: the destination equals the source"), back.stdout)
        XCTAssertTrue(back.stderr.contains("copying Restaurant"), "progress lines on stderr: \(back.stderr)")
        XCTAssertEqual(migrate(["verify", source, path("c.store"), "--progress", "none"]).code, 0)
    }

    func testANonEmptyDestinationIsAUsageError() throws {
        let source = try seedLogStore("a.store", 10)
        let destination = try seedSQLite("b.sqlite", 3)
        let run = migrate([source, destination, "--json"])
        XCTAssertEqual(run.code, 2, run.stderr)
        XCTAssertTrue(run.stderr.contains("already holds items"), run.stderr)
        XCTAssertEqual((try run.json()["error"] as? [String: Any])?["code"] as? String, "usage")
    }

    func testChosenTypesAndBatchSize() throws {
        let source = try seedSQLite("a.sqlite", 120)
        let run = migrate([source, path("b.store"), "--types", "Dish", "--batch-size", "7", "--json", "--progress", "none"])
        XCTAssertEqual(run.code, 0, run.stderr)
        let types = try XCTUnwrap((try run.json()["copy"] as? [String: Any])?["types"] as? [[String: Any]])
        XCTAssertEqual(types.map { $0["itemType"] as? String }, ["Dish"])
        XCTAssertEqual(migrate(["verify", source, path("b.store"), "--types", "Dish"]).code, 0)
        XCTAssertEqual(migrate(["verify", source, path("b.store")]).code, 1, "without --types, the restaurants are missing")
        XCTAssertEqual(migrate([source, path("c.store"), "--batch-size", "0"]).code, 2)
    }

    func testAnInterruptedCopyNeedsResumeAndResumes() throws {
        let source = try seedLogStore("a.store", 300)
        // Interrupt a copy the way a kill would: stop it after a few batches.
        let from = LogDataStore(directory: dir.appendingPathComponent("a.store"))
        let to = SQLiteDataStore(path: path("b.sqlite"))
        try from.setup()
        try to.setup()
        var m = BackendMigrator(from: from, to: to)
        m.batchSize = 50
        m.sourceDescription = "logstore:" + source
        let batches = BatchCounter()
        m.isCancelled = { batches.next() >= 3 }
        XCTAssertThrowsError(try m.copy())
        try from.tearDown()
        try to.tearDown()

        let refused = migrate([source, path("b.sqlite")])
        XCTAssertEqual(refused.code, 2)
        XCTAssertTrue(refused.stderr.contains("--resume"), refused.stderr)
        let resumed = migrate([source, path("b.sqlite"), "--resume", "--json", "--progress", "none"])
        XCTAssertEqual(resumed.code, 0, resumed.stderr)
        let copy = try XCTUnwrap(try resumed.json()["copy"] as? [String: Any])
        XCTAssertEqual(copy["resumed"] as? Bool, true)
        XCTAssertEqual(copy["items"] as? Int, 600)
        XCTAssertEqual(copy["itemsThisRun"] as? Int, 450)
    }

    func testLockedAndMissingStoresHaveTheirExitCodes() throws {
        let source = try seedLogStore("a.store", 5)
        let open = LogDataStore(directory: URL(fileURLWithPath: source))
        try open.setup()
        XCTAssertEqual(migrate([source, path("b.sqlite")]).code, 3, "the app has the source open")
        try open.tearDown()
        XCTAssertEqual(migrate([path("missing.store"), path("b.sqlite")]).code, 4)
        try Data("not a database".utf8).write(to: dir.appendingPathComponent("junk.sqlite"))
        XCTAssertEqual(migrate(["sqlite:" + path("junk.sqlite"), path("c.store")]).code, 4)
        XCTAssertEqual(migrate([source]).code, 2, "a missing DEST is a usage error")
    }

    func testTheBinaryRunsWithTheSameExitCodes() throws {
        let source = try seedLogStore("a.store", 20)
        let process = Process()
        process.executableURL = productsDirectory.appendingPathComponent("logstore-migrate")
        process.arguments = [source, path("b.sqlite"), "--progress", "none"]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
    }
}

/// Counts batches from the migrator's thread.
final class BatchCounter: @unchecked Sendable {
    // @unchecked: only the migrator's thread calls `next()`.
    var n = 0
    func next() -> Int {
        n += 1
        return n
    }
}
