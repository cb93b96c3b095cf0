import Foundation
import XCTest

@testable import LogStoreEngine

#if canImport(Glibc)
    import Glibc
#endif

/// Recovery reads a segment in windows of `LogEngine.recoveryWindow` bytes, not whole:
/// a segment of several windows replays the same, a transaction larger than a window makes the
/// window grow, and damage found in a window is judged with the bytes after it.
final class RecoveryStreamingTests: XCTestCase {
    lazy var root = StoreHarness.posix(self).root

    var options: LogEngineOptions {
        var o = LogEngineOptions()
        o.autoCompaction = false
        o.checkpointOnClose = false
        o.compression = false
        return o
    }

    func value(_ i: Int, size: Int) -> [UInt8] {
        var g = SplitMix64(seed: UInt64(i))
        return (0..<size).map { _ in UInt8(truncatingIfNeeded: g.next()) }
    }

    /// Writes `count` transactions of one `size`-byte value each into one segment.
    func store(_ name: String, count: Int, size: Int) throws -> String {
        let dir = root + "/" + name
        let e = try LogEngine.open(directory: dir, options: options)
        for i in 0..<count { try e.commit([.put(type: "V", key: RecordKey(Array("k\(i)".utf8)), value: value(i, size: size))]) }
        XCTAssertEqual(e.manifestInfo.segments.count, 1)
        try e.close()
        return dir
    }

    func testSegmentOfSeveralWindowsReplaysEveryTransaction() throws {
        let count = 3 * LogEngine.recoveryWindow / (100 << 10) + 5
        let dir = try store("windows", count: count, size: 100 << 10)
        let e = try LogEngine.open(directory: dir, options: options)
        defer { try? e.close() }
        XCTAssertEqual(e.recoveryReport.transactionsReplayed, count)
        XCTAssertNil(e.recoveryReport.truncatedTail)
        let snap = try e.snapshot()
        for i in stride(from: 0, to: count, by: 7) {
            XCTAssertEqual(try snap.value(type: "V", key: RecordKey(Array("k\(i)".utf8))).map(Array.init), value(i, size: 100 << 10))
        }
    }

    func testTransactionLargerThanTheWindowMakesItGrow() throws {
        var o = options
        o.maxItemSize = 2 * LogEngine.recoveryWindow
        let dir = root + "/large"
        let e = try LogEngine.open(directory: dir, options: o)
        try e.commit([.put(type: "V", key: RecordKey([1]), value: [1])])
        let big = value(2, size: LogEngine.recoveryWindow + (1 << 20))
        try e.commit([.put(type: "V", key: RecordKey([2]), value: big)])
        try e.commit([.put(type: "V", key: RecordKey([3]), value: [3])])
        try e.close()
        let r = try LogEngine.open(directory: dir, options: o)
        defer { try? r.close() }
        XCTAssertEqual(r.recoveryReport.transactionsReplayed, 3)
        XCTAssertEqual(try r.snapshot().value(type: "V", key: RecordKey([2])).map(Array.init), big)
    }

    func testDamageInAnEarlyWindowVouchedForByALaterOneIsCorruption() throws {
        let count = 2 * LogEngine.recoveryWindow / (100 << 10) + 5
        let dir = try store("damage", count: count, size: 100 << 10)
        let path = dir + "/" + LogStoreFormat.segmentFileName(1)
        let f = try POSIXFileSystem().open(path, mode: .readWrite)
        let at: UInt64 = 1 << 20
        var b = try f.read(at: at, count: 1)
        b[0] ^= 0x40
        try f.write(b, at: at)
        try f.close()
        XCTAssertThrowsError(try LogEngine.open(directory: dir, options: options)) { error in
            XCTAssertEqual((error as? LogStoreError)?.code, .corruption, "\(error)")
            XCTAssertEqual((error as? LogStoreError)?.path, path)
        }
    }

    /// The memory target: recovery of a 1 GiB segment with at most 64 MiB of resident memory beyond
    /// the index. Opt-in (it writes 1 GiB): `LOGSTORE_RECOVERY_MEMORY_TEST=1`. Docs/Testing.md
    /// records the run.
    func testRecoveryOfAOneGiBSegmentStaysWithin64MiB() throws {
        guard ProcessInfo.processInfo.environment["LOGSTORE_RECOVERY_MEMORY_TEST"] == "1" else {
            throw XCTSkip("set LOGSTORE_RECOVERY_MEMORY_TEST=1 to write and recover a 1 GiB segment")
        }
        var o = options
        o.segmentSize = 1 << 30
        o.checkpointInterval = 0
        let dir = root + "/gib"
        let e = try LogEngine.open(directory: dir, options: o)
        let chunk = value(0, size: 1 << 20)
        let count = (1 << 30) / (1 << 20) - 2
        for i in 0..<count { try e.commit([.put(type: "V", key: RecordKey(Array("k\(i)".utf8)), value: chunk)]) }
        XCTAssertEqual(e.manifestInfo.segments.count, 1)
        try e.close()
        func maxRSS() -> Int {
            var u = rusage()
            getrusage(RUSAGE_SELF.rawValue, &u)
            return u.ru_maxrss * 1024
        }
        let before = maxRSS()
        let r = try LogEngine.open(directory: dir, options: o)
        let grew = maxRSS() - before
        XCTAssertEqual(r.recoveryReport.transactionsReplayed, count)
        try r.close()
        print("recovery of a \(count) MiB segment: peak resident memory grew by \(grew >> 20) MiB")
        XCTAssertLessThanOrEqual(grew, 64 << 20)
    }
}
