import Foundation
import Synchronization
import XCTest

@testable import LogStoreEngine

/// The engine's publication hook (observation's input, Docs/Observation.md): every commit
/// is announced once, in sequence order, when readers can see it, with what it changed.
final class PublicationObserverTests: XCTestCase {
    /// Records what the hook is told, and checks that a snapshot taken inside the hook never
    /// lags (the hook runs under the state lock, so it cannot take one; it checks afterwards).
    final class Recorder: Sendable {
        let commits = Mutex<[CommitChanges]>([])
        let poisoned = Mutex<LogStoreError?>(nil)
        func observe(_ event: PublicationEvent) {
            switch event {
            case .published(let c): commits.withLock { $0.append(contentsOf: c) }
            case .poisoned(let e): poisoned.withLock { $0 = e }
            }
        }
        var sequences: [UInt64] { commits.withLock { $0.map(\.sequence) } }
    }

    func testEachCommitIsAnnouncedOnceWithItsKeysInEveryDurabilityMode() throws {
        for durability in [Durability.synchronous, .buffered, .none] {
            let h = StoreHarness.memory()
            var o = LogEngineOptions.replayOnly
            o.durability = durability
            let e = try h.open(h.newStorePath(), options: o)
            let r = Recorder()
            let start = e.setPublicationObserver { r.observe($0) }
            XCTAssertEqual(start, 0)
            try e.write { t in
                try t.put(type: "A", key: key("a1"), value: [1])
                try t.put(type: "A", key: key("a2"), value: [2])
                try t.put(type: "B", key: key("b1"), value: [3])
            }
            try e.write { t in
                try t.delete(type: "A", key: key("a1"))
                try t.put(type: "A", key: key("a3"), value: [4])
            }
            try e.write { t in
                try t.deleteAll(type: "A")
                try t.put(type: "A", key: key("a9"), value: [5])
            }
            // A write that changes nothing is no commit.
            try e.write { _ in }
            let commits = r.commits.withLock { $0 }
            XCTAssertEqual(commits.map(\.sequence), [1, 2, 3], "\(durability)")
            XCTAssertEqual(commits[0].types["A"]?.written, [key("a1"), key("a2")])
            XCTAssertEqual(commits[0].types["B"]?.written, [key("b1")])
            XCTAssertEqual(commits[1].types["A"]?.deleted, [key("a1")])
            XCTAssertEqual(commits[1].types["A"]?.written, [key("a3")])
            XCTAssertNil(commits[1].types["B"])
            // The delete-all's keys are those before the commit.
            XCTAssertEqual(commits[2].types["A"]?.cleared?.keys(), [key("a2"), key("a3")])
            XCTAssertEqual(commits[2].types["A"]?.cleared?.count, 2)
            XCTAssertEqual(commits[2].types["A"]?.written, [key("a9")])
            XCTAssertEqual(try e.snapshot().sequence, 3)
            try e.close()
        }
    }

    func testConcurrentGroupCommitsAreAnnouncedInOrderAndNoneTwice() throws {
        let h = StoreHarness.posix(self)
        var o = LogEngineOptions.replayOnly
        o.durability = .synchronous
        let e = try h.open(h.newStorePath(), options: o)
        let r = Recorder()
        _ = e.setPublicationObserver { r.observe($0) }
        let threads = 8
        let perThread = 25
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            for i in 0..<perThread {
                _ = try? e.write { txn in try txn.put(type: "T", key: key("k\(t)-\(i)"), value: [UInt8(i)]) }
                // Every commit this thread made is announced before its write returned.
                let seen = Set(r.commits.withLock { $0.flatMap { $0.types["T"]?.written ?? [] } })
                XCTAssertTrue(seen.contains(key("k\(t)-\(i)")))
            }
        }
        XCTAssertEqual(r.sequences, Array(1...UInt64(threads * perThread)))
        try e.close()
    }

    func testAPoisonedStoreSaysSoOnceAndAnnouncesNoLaterCommit() throws {
        let h = StoreHarness.posix(self)
        let failing = FailingSyncFileSystem(h.fs)
        var o = LogEngineOptions.replayOnly
        o.durability = .synchronous
        let e = try LogEngine.open(directory: h.newStorePath(), fileSystem: failing, options: o)
        let r = Recorder()
        _ = e.setPublicationObserver { r.observe($0) }
        try e.write { try $0.put(type: "T", key: key("a"), value: [1]) }
        failing.failing.withLock { $0 = true }
        XCTAssertThrowsError(try e.write { try $0.put(type: "T", key: key("b"), value: [2]) })
        XCTAssertEqual(r.sequences, [1], "the commit whose sync failed is never announced")
        XCTAssertEqual(r.poisoned.withLock { $0 }?.code, .storePoisoned)
        try? e.close()
    }
}
