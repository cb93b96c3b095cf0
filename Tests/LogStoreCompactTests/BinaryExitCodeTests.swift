import Foundation
import LogStoreEngine
import XCTest

/// Runs the built `logstore-compact` executable: real exit statuses, real stdout/stderr split.
final class BinaryExitCodeTests: XCTestCase {
    func testBinaryExitCodesAndJSONMatchTheDocumentation() throws {
        let store = try makeStore()

        let clean = try runBinary(["verify", store.dir, "--json", "--progress", "none"])
        XCTAssertEqual(clean.code, 0, clean.stderr)
        XCTAssertEqual(try clean.json()["ok"] as? Bool, true)

        let help = try runBinary(["--help"])
        XCTAssertEqual(help.code, 0)
        XCTAssertTrue(help.stdout.contains("EXIT CODES"), help.stdout)

        let usage = try runBinary(["stats", store.dir, "--no-such-option"])
        XCTAssertEqual(usage.code, 2)
        XCTAssertTrue(usage.stderr.contains("no-such-option"), usage.stderr)
        XCTAssertEqual(usage.stdout, "")

        let notAStore = try runBinary(["stats", store.dir + "-missing", "--json"])
        XCTAssertEqual(notAStore.code, 4)
        XCTAssertEqual((try notAStore.json()["error"] as? [String: Any])?["code"] as? String, "notAStore")

        do {
            let engine = try LogEngine.open(directory: store.dir, options: StoreFixture.options())
            defer { try? engine.close() }
            let locked = try runBinary(["verify", store.dir])
            XCTAssertEqual(locked.code, 3, "another process holds the lock")
        }

        let stats = try runBinary(["stats", store.dir, "--json", "--progress", "plain"])
        XCTAssertEqual(stats.code, 0)
        XCTAssertEqual((try stats.json()["records"] as? [String: Any])?["live"] as? Int, 310)
        XCTAssertTrue(stats.stderr.contains("scanning: 100%"), "progress goes to stderr")

        let dump = try runBinary(["dump", store.dir, "--progress", "none"])
        XCTAssertEqual(dump.code, 0)
        XCTAssertEqual(try dump.jsonLines().count, 310)

        let loc = try locationOutsideLastSegment(store)
        try flipByte(store.dir + "/" + LogStoreFormat.segmentFileName(loc.segment), at: Int(loc.offset) + 24)
        let damaged = try runBinary(["verify", store.dir, "--json", "--progress", "none"])
        XCTAssertEqual(damaged.code, 1)
        XCTAssertEqual(try damaged.json()["ok"] as? Bool, false)

        // In-place compaction refuses a damaged store rather than rewriting around the damage.
        let refused = try runBinary([store.dir, "--progress", "none"])
        XCTAssertNotEqual(refused.code, 0)
    }
}
