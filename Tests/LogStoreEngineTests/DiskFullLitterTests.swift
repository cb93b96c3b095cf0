import Foundation
import Logging
import Synchronization
import XCTest

@testable import LogStoreEngine

/// Writes attempted while the disk is full leave nothing behind (no empty segment files, no
/// burned segment numbers), background compaction backs off instead of retrying at every
/// roll-over, and the log says when space came back.
final class DiskFullLitterTests: XCTestCase {
    func storeNearlyFull(_ fs: DiskFullFileSystem, _ dir: String, logger: Logger? = nil) throws -> LogEngine {
        var o = LogEngineOptions.replayOnly
        o.compression = false
        o.segmentSize = 64 << 10
        o.logger = logger
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: o)
        var n = 0
        while e.manifestInfo.segments == [1], n < 15 {
            try e.commit([.put(type: "Fill", key: RecordKey(Array("f\(n)".utf8)), value: [UInt8](repeating: UInt8(n), count: 4000))])
            n += 1
        }
        return e
    }

    var big: [RecordOperation] { [.put(type: "Big", key: RecordKey(Array("big".utf8)), value: [UInt8](repeating: 7, count: 20_000))] }

    func testWritesOnAFullDiskLeaveNoEmptySegmentFilesAndBurnNoSegmentNumbers() throws {
        for budget in [0, 10, SegmentHeader.sizeV2, SegmentHeader.sizeV2 + 20] {
            let memory = InMemoryFileSystem()
            let full = DiskFullFileSystem(memory)
            let e = try storeNearlyFull(full, "/full-\(budget)")
            full.budget.withLock { $0 = budget }
            for _ in 0..<50 {
                XCTAssertThrowsError(try e.commit(big)) { XCTAssertEqual(($0 as? LogStoreError)?.code, .diskFull, "\($0)") }
            }
            let segments = try memory.contentsOfDirectory(atPath: "/full-\(budget)").filter {
                LogStoreFormat.segmentNumber(fromFileName: $0) != nil
            }
            XCTAssertEqual(segments, ["000001.log"], "budget \(budget): no litter")
            full.budget.withLock { $0 = nil }
            try e.commit(big)
            XCTAssertEqual(e.manifestInfo.segments, [1, 2], "budget \(budget): the next roll-over gets number 2")
            try e.close()
        }
    }

    func testSpaceComingBackIsSaidInTheLog() throws {
        let lines = CapturedLog()
        let full = DiskFullFileSystem(InMemoryFileSystem())
        let e = try storeNearlyFull(full, "/s", logger: lines.logger)
        full.budget.withLock { $0 = 0 }
        for _ in 0..<3 { XCTAssertThrowsError(try e.commit(big)) }
        full.budget.withLock { $0 = nil }
        try e.commit(big)
        try e.close()
        let messages = lines.messages
        XCTAssertEqual(messages.filter { $0.contains("disk is full") }.count, 1, "said once, not per failed write: \(messages)")
        XCTAssertEqual(messages.filter { $0.contains("available again") }.count, 1, "\(messages)")
    }

    func testCompactionBacksOffWhileTheDiskIsFull() {
        var b = DiskFullBackoff()
        let t0 = ContinuousClock.now
        XCTAssertTrue(b.allows(t0))
        XCTAssertEqual(b.failed(at: t0), .seconds(1))
        XCTAssertFalse(b.allows(t0 + .milliseconds(500)))
        XCTAssertTrue(b.allows(t0 + .seconds(1)))
        XCTAssertEqual(b.failed(at: t0 + .seconds(1)), .seconds(2))
        for _ in 0..<20 { _ = b.failed(at: t0) }
        XCTAssertEqual(b.nextWait, DiskFullBackoff.longestWait, "the wait is bounded")
        b.succeeded()
        XCTAssertTrue(b.allows(t0))
        XCTAssertEqual(b.nextWait, .seconds(1))
    }
}

/// Collects log messages (any level) for assertions.
final class CapturedLog: Sendable {
    let lines = Mutex<[String]>([])
    var messages: [String] { lines.withLock { $0 } }
    var logger: Logger { Logger(label: "test") { _ in Handler(log: self) } }

    struct Handler: LogHandler {
        let log: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            log.lines.withLock { $0.append("\(event.level): \(event.message)") }
        }
    }
}
