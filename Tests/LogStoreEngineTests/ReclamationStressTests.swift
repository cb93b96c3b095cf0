import Foundation
import Synchronization
import XCTest

@testable import LogStoreEngine

/// Tree nodes are freed by interval-based reclamation (``NodeArena``): a node goes once no tree
/// version that reaches it is held. Here reader threads hold snapshots of random ages while a
/// writer commits thousands of times (puts, deletes, a secondary index, compactions, checkpoints
/// written as runs), and every value and index entry a held snapshot reads must be what was
/// committed at its sequence. Run under ThreadSanitizer (tools/tsan) and AddressSanitizer
/// (`swift build --sanitize=address`): a node freed too early is a use after free there.
final class ReclamationStressTests: XCTestCase {
    static let keys = 150
    static let byGroup = IndexDefinition(attributes: [["group"]])

    /// The plan: commit `i` (sequence `i + 1` after the first, which declares nothing) writes
    /// key `i % keys` and every third commit deletes key `(i * 7) % keys`.
    struct Plan {
        /// Per key: (sequence, value number or nil for a delete), ascending.
        var events: [[(UInt64, Int?)]]

        init(commits: Int) {
            events = Array(repeating: [], count: ReclamationStressTests.keys)
            for i in 0..<commits {
                let seq = UInt64(i + 1)
                events[i % ReclamationStressTests.keys].append((seq, i))
                if i % 3 == 0 { events[(i * 7) % ReclamationStressTests.keys].append((seq, nil)) }
            }
        }

        /// The value number of `key` in the state at `sequence` (nil: absent).
        func value(_ key: Int, at sequence: UInt64) -> Int? {
            let e = events[key]
            var lo = 0
            var hi = e.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if e[mid].0 <= sequence { lo = mid + 1 } else { hi = mid }
            }
            // Within one commit a put comes before the delete of the same key.
            var i = lo - 1
            var result: Int?? = nil
            while i >= 0 && e[i].0 == e[lo - 1].0 {
                if e[i].1 == nil { result = .some(nil) } else if result == nil { result = .some(e[i].1) }
                i -= 1
            }
            return result ?? nil
        }
    }

    static func key(_ k: Int) -> RecordKey { RecordKey(withUnsafeBytes(of: UInt64(k).bigEndian, Array.init)) }

    static func encode(_ n: Int) -> [UInt8] {
        AttributeValue.map(["n": .int(Int64(n)), "group": .int(Int64(n % 5)), "pad": .string(String(repeating: "x", count: n % 40))])
            .encoded()
    }

    static func decode(_ bytes: ArraySlice<UInt8>) -> Int? {
        guard case .map(let m)? = try? AttributeValue.decode(Array(bytes)), case .int(let n)? = m["n"] else { return nil }
        return Int(n)
    }

    func testReadersHoldingOldViewsAcrossThousandsOfCommitsReadWhatWasCommitted() throws {
        let commits = 4000
        let plan = Plan(commits: commits)
        let h = StoreHarness.memory()
        var options = LogEngineOptions()
        options.durability = .none
        options.autoCompaction = false
        options.segmentSize = 64 << 10
        options.checkpointInterval = 0
        let dir = h.newStorePath()
        let engine = try h.open(dir, options: options)
        try engine.declareIndexes([Self.byGroup], ofType: "T")
        let done = Atomic<Bool>(false)
        let failures = Mutex<[String]>([])
        let checks = Atomic<Int>(0)
        let readers = 6
        let group = DispatchGroup()
        for r in 0..<readers {
            DispatchQueue.global().async(group: group) {
                var rng = SplitMix64(seed: UInt64(r + 1))
                var held: [EngineSnapshot] = []
                func fail(_ s: String) { failures.withLock { if $0.count < 20 { $0.append(s) } } }
                while !done.load(ordering: .acquiring) {
                    do {
                        let s = try engine.snapshot()
                        // Hold some for long: up to 12 snapshots of random ages.
                        if held.count < 12 { held.append(s) } else if rng.next() % 4 == 0 { held[Int(rng.next() % 12)] = s }
                        let v = held[Int(rng.next() % UInt64(held.count))]
                        // The sequence counts the declaration (no commit): commit i is sequence i + 1.
                        let seq = v.sequence
                        var present = 0
                        for _ in 0..<8 {
                            let k = Int(rng.next() % UInt64(Self.keys))
                            let got = try v.value(type: "T", key: Self.key(k)).flatMap(Self.decode)
                            let want = plan.value(k, at: seq)
                            if got != want {
                                fail(
                                    "reader \(r): key \(k) at \(seq): read \(String(describing: got)), committed \(String(describing: want))"
                                )
                            }
                        }
                        // Walk the index and the keys: their counts agree with the plan.
                        for k in 0..<Self.keys where plan.value(k, at: seq) != nil { present += 1 }
                        var entries = 0
                        try v.forEachIndexEntry(ofType: "T", index: "group", in: IndexEntryRange(), reverse: rng.next() % 2 == 0) {
                            _, key in
                            entries += 1
                            return try v.contains(type: "T", key: key)
                        }
                        if entries != present || v.count(ofType: "T") != present {
                            fail(
                                "reader \(r): at \(seq) \(present) records committed, index walk \(entries), count \(v.count(ofType: "T"))")
                        }
                        checks.add(1, ordering: .relaxed)
                    } catch {
                        fail("reader \(r): \(error)")
                    }
                }
            }
        }
        for i in 0..<commits {
            var ops: [RecordOperation] = [.put(type: "T", key: Self.key(i % Self.keys), value: Self.encode(i))]
            if i % 3 == 0 { ops.append(.delete(type: "T", key: Self.key((i * 7) % Self.keys))) }
            try engine.commit(ops)
            if i % 500 == 250 { _ = try engine.compact() }
            if i % 700 == 350 { try engine.writeCheckpoint() }
        }
        done.store(true, ordering: .releasing)
        group.wait()
        XCTAssertEqual(failures.withLock { $0 }, [])
        XCTAssertGreaterThan(checks.load(ordering: .relaxed), readers)
        try engine.close()
        // Everything the readers held is gone: the arena keeps only what live trees reach.
        NodeArena.shared.reclaim()
    }
}
