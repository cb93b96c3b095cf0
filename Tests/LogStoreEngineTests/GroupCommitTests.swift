import Foundation
import Synchronization
import XCTest

@testable import LogStoreEngine

/// Concurrent synchronous writers all return, all their data is durable, and they share syncs.
final class GroupCommitTests: XCTestCase {
    func testConcurrentSynchronousWritersAllCommit() throws {
        let h = StoreHarness.posix(self)
        let counting = CountingFileSystem(h.fs)
        try Scenarios.concurrentSynchronousWriters(StoreHarness(name: "posix+counting", fs: counting, root: h.root), counting: counting)
    }

    func testConcurrentWritersAcrossSegmentRollOvers() throws {
        let h = StoreHarness.posix(self)
        let counting = CountingFileSystem(h.fs)
        var o = LogEngineOptions.replayOnly
        o.segmentSize = 64 << 10
        o.compression = false
        try Scenarios.concurrentSynchronousWriters(
            StoreHarness(name: "posix+rollover", fs: counting, root: h.root), counting: counting,
            threads: 8, perThread: 40, valueSize: 1500, options: o)
    }
}

extension Scenarios {
    static func concurrentSynchronousWriters(
        _ h: StoreHarness, counting: CountingFileSystem, threads: Int = 16, perThread: Int = 50,
        valueSize: Int = 40, options: LogEngineOptions = LogEngineOptions.replayOnly
    ) throws {
        let dir = h.newStorePath("group")
        var options = options
        options.durability = .synchronous
        let e = try h.open(dir, options: options)
        counting.reset()
        let errors = Mutex<[String]>([])
        let sequences = Mutex<[UInt64]>([])
        let group = DispatchGroup()
        for t in 0..<threads {
            group.enter()
            let thread = Thread {
                defer { group.leave() }
                for i in 0..<perThread {
                    do {
                        let seq = try e.write { txn -> UInt64 in
                            try txn.put(type: "T\(t % 4)", key: key("t\(t)-\(i)"), value: sampleValue(t * 1000 + i, size: valueSize))
                            return txn.sequence + 1
                        }
                        // Durable means published: a snapshot taken now sees it.
                        let s = try e.snapshot()
                        if s.sequence < seq { errors.withLock { $0.append("snapshot \(s.sequence) older than returned commit \(seq)") } }
                        if try s.value(type: "T\(t % 4)", key: key("t\(t)-\(i)")) == nil {
                            errors.withLock { $0.append("t\(t)-\(i) not visible after its write returned") }
                        }
                        sequences.withLock { $0.append(seq) }
                    } catch {
                        errors.withLock { $0.append("t\(t)-\(i): \(error)") }
                    }
                }
            }
            thread.start()
        }
        XCTAssertEqual(group.wait(timeout: .now() + 120), .success, "writers did not finish")
        XCTAssertEqual(errors.withLock { $0 }, [])
        let commits = threads * perThread
        XCTAssertEqual(Set(sequences.withLock { $0 }), Set(1...UInt64(commits)), "every commit got its own sequence number")
        XCTAssertLessThanOrEqual(counting.segmentSyncs, commits, "group commit should never sync more than once per commit")
        XCTAssertGreaterThan(counting.segmentSyncs, 0)
        let segments = e.manifestInfo.segments
        if options.segmentSize <= 64 << 10 { XCTAssertGreaterThan(segments.count, 2, "the writers should have rolled over segments") }
        try e.close()

        let e2 = try h.open(dir, options: options)
        XCTAssertEqual(e2.recoveryReport.transactionsReplayed, commits)
        XCTAssertEqual(e2.manifestInfo.segments, segments)
        let s = try e2.snapshot()
        XCTAssertEqual(s.totalCount, commits)
        for t in 0..<threads {
            for i in 0..<perThread {
                XCTAssertEqual(
                    try s.value(type: "T\(t % 4)", key: key("t\(t)-\(i)")).map(Array.init), sampleValue(t * 1000 + i, size: valueSize))
            }
        }
        try e2.close()
    }
}
