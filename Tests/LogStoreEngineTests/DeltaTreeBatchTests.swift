import XCTest

@testable import LogStoreEngine

/// ``DeltaTree/merge(_:_:)`` against the same changes made one by one: random batches (small,
/// dense enough to split a leaf many times over, sequential at either edge, emptying the tree),
/// in every key form without a key heap, with copies kept across merges, and the arena freeing
/// every node once no version reaches it.
extension DeltaTreeTests {
    /// A decision per batch key: what to leave there, given what is there.
    enum Decision: CaseIterable {
        case insert, tombstone, remove, keep, flip
        func apply(_ current: SecondaryDelta?) -> SecondaryDelta? {
            switch self {
            case .insert: return SecondaryDelta(change: RunChange.newKey)
            case .tombstone: return SecondaryDelta(change: RunChange.tombstone)
            case .remove: return nil
            case .keep: return current
            case .flip:
                guard let c = current else { return SecondaryDelta(change: RunChange.newKey) }
                return c.isTombstone ? nil : SecondaryDelta(change: RunChange.tombstone)
            }
        }
    }

    func batchRun<K: DeltaKey>(_: K.Type, width: Int?, seed: UInt64, rounds: Int) {
        let arena = NodeArena()
        var rng = SplitMix64(seed: seed)
        do {
            var merged = DeltaTree<K, SecondaryDelta>(arena: arena)
            var oneByOne = DeltaTree<K, SecondaryDelta>(arena: arena)
            var model: Model = []
            var kept: [(DeltaTree<K, SecondaryDelta>, Model)] = []
            for round in 0..<rounds {
                // Batch keys: random, or a dense band, or everything there is (to empty it).
                var keyBytes: [[UInt8]]
                switch rng.next() % 6 {
                case 0: keyBytes = (0..<Int(rng.next() % 400)).map { _ in randomKey(&rng, width: width) }
                case 1: keyBytes = model.map(\.key)
                default: keyBytes = (0..<Int(1 + rng.next() % 60)).map { _ in randomKey(&rng, width: width) }
                }
                keyBytes = Array(Set(keyBytes)).sorted { $0.lexicographicallyPrecedes($1) }
                let pairs = keyBytes.compactMap { b in b.withUnsafeBytes { K(probe: $0) }.map { (b, $0) } }
                let decisions = pairs.map { _ in
                    round % 9 == 8 ? Decision.remove : Decision.allCases[Int(rng.next() % UInt64(Decision.allCases.count))]
                }
                XCTAssertTrue(merged.merge(pairs.map(\.1)) { i, current in decisions[i].apply(current) }, "round \(round)")
                for (i, p) in pairs.enumerated() {
                    oneByOne.update(p.1) { v in v = decisions[i].apply(v) }
                    let at = model.partitioningIndex { !$0.key.lexicographicallyPrecedes(p.0) }
                    let present = at < model.count && model[at].key == p.0
                    let current = present ? SecondaryDelta(change: model[at].change) : nil
                    switch (decisions[i].apply(current), present) {
                    case (let v?, true): model[at].change = v.change
                    case (let v?, false): model.insert((p.0, v.change), at: at)
                    case (nil, true): model.remove(at: at)
                    case (nil, false): break
                    }
                }
                if round % 5 == 0 { check(merged, model, "merged, round \(round)", rng: &rng) }
                if round % 7 == 0 { kept.append((merged, model)) }
                if round % 11 == 0 { arena.reclaim() }
            }
            check(merged, model, "merged", rng: &rng)
            check(oneByOne, model, "one by one", rng: &rng)
            arena.reclaim()
            for (t, m) in kept { check(t, m, "kept copy", rng: &rng) }
        }
        assertEveryNodeFreed(arena)
    }

    func testMergedBatchesEqualChangesMadeOneByOne() {
        batchRun(Key8.self, width: 8, seed: 11, rounds: 300)
        batchRun(ShortKey.self, width: nil, seed: 12, rounds: 300)
        batchRun(IndexEntry24.self, width: nil, seed: 13, rounds: 200)
        batchRun(InlineEntry.self, width: nil, seed: 14, rounds: 200)
    }

    func testABatchOfAscendingKeysGrowsTheTreeByLevels() {
        let arena = NodeArena()
        var tree = DeltaTree<Key8, SecondaryDelta>(arena: arena)
        var rng = SplitMix64(seed: 3)
        // 20,000 keys in one batch into an empty tree, then batches at both edges and between.
        let insert = { (_: Int, _: SecondaryDelta?) in SecondaryDelta(change: RunChange.newKey) }
        XCTAssertTrue(tree.merge((0..<20_000).map { Key8(word: UInt64($0 * 4 + 2)) }, insert))
        let held = tree
        XCTAssertTrue(tree.merge((0..<5_000).map { Key8(word: 1_000_000 + UInt64($0)) }, insert))
        XCTAssertTrue(tree.merge((0..<5_000).map { Key8(word: UInt64($0 * 16 + 1)) }, insert))
        var model: Model = []
        var words: [UInt64] = (0..<20_000).map { UInt64($0 * 4 + 2) }
        words += (0..<5_000).map { UInt64($0 * 16 + 1) }
        words += (0..<5_000).map { 1_000_000 + UInt64($0) }
        for w in words.sorted() { model.append((Swift.withUnsafeBytes(of: w.bigEndian) { Array($0) }, RunChange.newKey)) }
        check(tree, model, "grown", rng: &rng)
        XCTAssertEqual(held.count, 20_000, "a copy taken before keeps its entries")
        XCTAssertNil(held.validate())
        // Keys out of order, and a form with a key heap, are refused without a change.
        XCTAssertFalse(tree.merge([Key8(word: 5), Key8(word: 3)]) { _, _ in nil })
        var long = DeltaTree<LongKey, SecondaryDelta>(arena: arena)
        XCTAssertFalse(long.merge([]) { _, _ in nil })
        check(tree, model, "after refusals", rng: &rng)
    }
}
