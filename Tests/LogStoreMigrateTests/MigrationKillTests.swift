import Foundation
import XCTest
import _LogStoreTestSupport

/// kill -9 at random moments of real `logstore-migrate` copies (LogStore -> SQLite -> LogStore):
/// every interrupted copy resumes to a verified-equal destination (Docs/Testing.md, "Migration
/// under kill -9"). `logstore-crashtest migrate-kill` runs more cycles as a soak.
final class MigrationKillTests: XCTestCase {
    func testKillNineAtRandomMomentsAlwaysResumesToAVerifiedEqualDestination() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("logstore-migrate-kill-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: base) }
        let seed = UInt64.random(in: 0...UInt64.max)
        let driver = MigrationKillDriver(
            binary: productsDirectory.appendingPathComponent("logstore-migrate").path, base: base, seed: seed,
            itemsPerType: 1_500, batchSize: 40)
        do {
            try driver.run(cycles: 20)
        } catch {
            XCTFail("seed \(seed): \(error)")
        }
        XCTAssertEqual(driver.kills, 20, driver.summary)
    }
}
