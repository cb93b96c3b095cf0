import Foundation
import LogStore
import XCTest

/// What recovery did is visible to the app through `LogDataStore`, not only in
/// the log.
final class RecoveryReportTests: XCTestCase {
    func testRecoveryReportIsReachableFromDataStoreAfterSetup() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("logstore-report-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        var options = LogStoreOptions()
        options.checkpointOnClose = false
        let store = LogDataStore(directory: dir, options: options)
        XCTAssertNil(store.recoveryReport, "no report before setup()")
        try store.setup()
        XCTAssertEqual(store.recoveryReport?.created, true)
        try store.writeSync { try $0.insert(r(1)) }
        try store.writeSync { try $0.insert(r(2)) }
        try store.tearDown()
        XCTAssertNil(store.recoveryReport, "no report after tearDown()")

        // A torn tail: a partial frame appended after the last commit.
        let segment = try XCTUnwrap(
            try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".log") }.sorted().last)
        let handle = try FileHandle(forWritingTo: dir.appendingPathComponent(segment))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data([0x01, 0x02, 0x03, 0x04, 0x05]))
        try handle.close()

        try store.setup()
        let report = try XCTUnwrap(store.recoveryReport)
        XCTAssertFalse(report.created)
        XCTAssertEqual(report.transactionsReplayed, 2)
        XCTAssertEqual(report.truncatedTail?.bytes, 5)
        try store.tearDown()
    }
}
