import Foundation
import Synchronization
import XCTest
import _LogStoreTestSupport

@testable import LogStoreEngine

/// Durability modes, checked against the crash harness's file system: a "power loss" image keeps
/// what was synced and drops, keeps or tears what was not (files and directory entries alike).
final class DurabilityTests: XCTestCase {
    let dir = "/stores/durable"

    /// Commits `count` workload transactions; returns the model after each (index 0 = empty).
    func commitAll(_ e: LogEngine, _ count: Int) throws -> [Contents] {
        var models: [Contents] = [[:]]
        var m = Contents()
        for n in 0..<count {
            let ops = workloadTransaction(n)
            try write(e, ops)
            apply(ops, to: &m)
            models.append(m)
            // Visible at once, whatever the mode.
            XCTAssertEqual(try e.snapshot().sequence, UInt64(n + 1))
        }
        assertSameContents(try dump(e), m)
        return models
    }

    /// The store as a power loss now could leave it (`seed` picks which unsynced changes survive).
    func reopenAfterPowerLoss(_ fs: FaultInjectingFileSystem, seed: UInt64 = 0) throws -> LogEngine {
        try LogEngine.open(directory: dir, fileSystem: fs.powerLossImage(seed: seed), options: .replayOnly)
    }

    func testSynchronousCommitIsDurableWhenWriteReturns() throws {
        let fs = FaultInjectingFileSystem()
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: .replayOnly)
        let models = try commitAll(e, 10)
        let after = try reopenAfterPowerLoss(fs)
        assertSameContents(try dump(after), models.last ?? [:])
        try after.close()
        try e.close()
    }

    /// `write(_:onDurable:)`: returns before the sync; every callback fires once, without an
    /// error, and by then the commit survives power loss.
    func testOnDurableCallbacksFireOnceCommitsAreDurable() throws {
        let fs = FaultInjectingFileSystem()
        let dir = self.dir
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: .replayOnly)
        let group = DispatchGroup()
        let results = Mutex<[Int: Int]>([:])
        let failures = Mutex<[String]>([])
        var model = Contents()
        for i in 0..<40 {
            group.enter()
            let ops: [RecordOperation] = [.put(type: "Async", key: key("a\(i)"), value: sampleValue(i))]
            apply(ops, to: &model)
            try e.write(
                { t in try t.put(type: "Async", key: key("a\(i)"), value: sampleValue(i)) },
                onDurable: { error in
                    if let error { failures.withLock { $0.append("\(i): \(error)") } }
                    // Durable now: a power loss at this point keeps it.
                    let survived = (try? LogEngine.open(directory: dir, fileSystem: fs.powerLossImage(seed: UInt64(i))))
                        .map { eng -> Bool in
                            defer { try? eng.close() }
                            return (try? eng.snapshot().contains(type: "Async", key: key("a\(i)"))) == true
                        }
                    if survived != true { failures.withLock { $0.append("\(i) not durable when its callback ran") } }
                    results.withLock { $0[i, default: 0] += 1 }
                    group.leave()
                })
        }
        XCTAssertEqual(group.wait(timeout: .now() + 60), .success)
        XCTAssertEqual(failures.withLock { $0 }, [])
        XCTAssertEqual(results.withLock { $0 }, Dictionary(uniqueKeysWithValues: (0..<40).map { ($0, 1) }))
        assertSameContents(try dump(e), model)
        try e.close()
    }

    func testBufferedIsVisibleAtOnceAndDurableAfterFlush() throws {
        var o = LogEngineOptions.replayOnly
        o.durability = .buffered
        o.syncInterval = .seconds(3600)  // only flush() and close() sync in this test
        let fs = FaultInjectingFileSystem()
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: o)
        let models = try commitAll(e, 10)
        // Before a flush, power loss may lose commits, but only whole ones at the end.
        let early = try reopenAfterPowerLoss(fs)
        XCTAssertTrue(models.contains(try dump(early)), "power loss left a state that is not a prefix of the commits")
        try early.close()
        try e.flush()
        let flushed = try reopenAfterPowerLoss(fs)
        assertSameContents(try dump(flushed), models.last ?? [:])
        try flushed.close()
        // close() flushes too.
        try write(e, workloadTransaction(10))
        var m = models.last ?? [:]
        apply(workloadTransaction(10), to: &m)
        try e.close()
        let closed = try reopenAfterPowerLoss(fs)
        assertSameContents(try dump(closed), m)
        try closed.close()
    }

    func testBufferedBackgroundSyncMakesCommitsDurable() throws {
        var o = LogEngineOptions.replayOnly
        o.durability = .buffered
        o.syncInterval = .milliseconds(5)
        let fs = FaultInjectingFileSystem()
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: o)
        let models = try commitAll(e, 3)
        // No flush: the background sync gets there on its own (bounded wait).
        var durable = false
        for _ in 0..<1000 where !durable {
            let after = try reopenAfterPowerLoss(fs)
            durable = try dump(after) == models.last
            try after.close()
            if !durable { Thread.sleep(forTimeInterval: 0.005) }
        }
        XCTAssertTrue(durable, "buffered commits never became durable without flush()")
        try e.close()
    }

    func testNoneIsVisibleAtOnceAndDurableAfterFlush() throws {
        var o = LogEngineOptions.replayOnly
        o.durability = .none
        let fs = FaultInjectingFileSystem()
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: o)
        let models = try commitAll(e, 10)
        let early = try reopenAfterPowerLoss(fs)
        XCTAssertTrue(models.contains(try dump(early)), "power loss left a state that is not a prefix of the commits")
        try early.close()
        try e.flush()
        let flushed = try reopenAfterPowerLoss(fs)
        assertSameContents(try dump(flushed), models.last ?? [:])
        try flushed.close()
        try e.close()
        // Without power loss, everything written is there after close.
        let reopened = try LogEngine.open(directory: dir, fileSystem: fs, options: o)
        assertSameContents(try dump(reopened), models.last ?? [:])
        try reopened.close()
    }

    func testBufferedAndNoneOnRealFilesSurviveClose() throws {
        let h = StoreHarness.posix(self)
        for mode in [Durability.buffered, .none] {
            var o = LogEngineOptions.replayOnly
            o.durability = mode
            let path = h.newStorePath("\(mode)")
            let e = try h.open(path, options: o)
            let models = try commitAll(e, 5)
            try e.flush()
            try e.close()
            let e2 = try h.open(path, options: o)
            assertSameContents(try dump(e2), models.last ?? [:], "\(mode)")
            try e2.close()
        }
    }
}
