import Foundation
import XCTest

@testable import LogStoreEngine

/// `OrderedTree` (the engine's ordered, persistent index) against a sorted-array model: random
/// inserts, updates and removes (dense and sparse keys, so nodes split, borrow and merge at every
/// level), with every query checked after every operation, and snapshots taken between mutations
/// that must never change. `LOGSTORE_TREE_OPS` raises the number of operations per seed.
final class OrderedTreeTests: XCTestCase {
    /// The model: sorted (key, value) pairs.
    struct Model {
        var keys: [Int] = []
        var values: [Int] = []

        /// The first position whose key is `>= k` (a linear scan: the oracle shares no code with
        /// the tree's searches).
        func index(_ k: Int) -> Int { keys.firstIndex { $0 >= k } ?? keys.count }

        mutating func set(_ k: Int, _ v: Int) -> Int? {
            let i = index(k)
            if i < keys.count && keys[i] == k {
                defer { values[i] = v }
                return values[i]
            }
            keys.insert(k, at: i)
            values.insert(v, at: i)
            return nil
        }

        mutating func remove(_ k: Int) -> Int? {
            let i = index(k)
            guard i < keys.count && keys[i] == k else { return nil }
            keys.remove(at: i)
            return values.remove(at: i)
        }
    }

    func check(_ tree: OrderedTree<Int, Int>, _ model: Model, _ what: String, full: Bool, rng: inout SplitMix64) {
        XCTAssertEqual(tree.count, model.keys.count, what)
        if full, let problem = tree.validate() { XCTFail("\(what): \(problem)") }
        // Point, rank, offset and range queries at random places.
        for _ in 0..<4 {
            let k = rng.int(in: -10...12_000)
            let i = model.index(k)
            XCTAssertEqual(tree[k], i < model.keys.count && model.keys[i] == k ? model.values[i] : nil, "\(what): lookup \(k)")
            XCTAssertEqual(tree.rank(of: k), i, "\(what): rank of \(k)")
            if !model.keys.isEmpty {
                let o = rng.int(in: 0..<model.keys.count)
                XCTAssertEqual(tree.element(at: o)?.key, model.keys[o], "\(what): element at \(o)")
                var got: [Int] = []
                tree.forEach(fromOffset: o) { key, _ in
                    got.append(key)
                    return got.count < 5
                }
                XCTAssertEqual(got, Array(model.keys[o..<min(o + 5, model.keys.count)]), "\(what): from offset \(o)")
            }
            var got: [Int] = []
            tree.forEach(from: k) { key, _ in
                got.append(key)
                return got.count < 5
            }
            XCTAssertEqual(got, Array(model.keys[i..<min(i + 5, model.keys.count)]), "\(what): from \(k)")
            let upper = k + rng.int(in: 0...500)
            XCTAssertEqual(tree.count(from: k, below: upper), model.index(upper) - i, "\(what): count in \(k)..<\(upper)")
        }
        if full {
            XCTAssertEqual(tree.keys, model.keys, what)
            XCTAssertEqual(Array(tree.map(\.value)), model.values, what)
        }
    }

    func run(seed: UInt64, operations: Int) {
        var rng = SplitMix64(seed: seed)
        var tree = OrderedTree<Int, Int>()
        var model = Model()
        var snapshots: [(OrderedTree<Int, Int>, Model)] = []
        for step in 0..<operations {
            let what = "seed \(seed), step \(step)"
            // Phases: grow (mostly inserts), churn, shrink (mostly removes), so every level splits,
            // borrows and merges.
            let phase = (step / (operations / 6 + 1)) % 3
            let insertShare = phase == 0 ? 80 : phase == 1 ? 50 : 20
            let dense = rng.chance(0.5)
            let k = dense ? rng.int(in: 0...3_000) : rng.int(in: 0...12_000)
            if rng.int(in: 0..<100) < insertShare {
                let v = rng.int(in: 0...1_000_000)
                XCTAssertEqual(tree.updateValue(v, forKey: k), model.set(k, v), "\(what): insert \(k)")
            } else {
                XCTAssertEqual(tree.removeValue(forKey: k), model.remove(k), "\(what): remove \(k)")
            }
            if rng.chance(0.01) { snapshots.append((tree, model)) }
            check(tree, model, what, full: step % 25 == 0, rng: &rng)
        }
        check(tree, model, "seed \(seed), end", full: true, rng: &rng)
        for (i, (snapshot, expected)) in snapshots.enumerated() {
            XCTAssertEqual(snapshot.keys, expected.keys, "seed \(seed): snapshot \(i) changed after later writes")
            XCTAssertEqual(Array(snapshot.map(\.value)), expected.values, "seed \(seed): snapshot \(i) values changed")
            if let problem = snapshot.validate() { XCTFail("seed \(seed), snapshot \(i): \(problem)") }
        }
    }

    func testRandomOperationsMatchASortedArrayAndSnapshotsNeverChange() {
        let ops = ProcessInfo.processInfo.environment["LOGSTORE_TREE_OPS"].flatMap(Int.init) ?? 4_000
        for seed in [1, 2, 3, 20_261_124] as [UInt64] { run(seed: seed, operations: ops) }
    }

    func testBulkBuildFromSortedElementsMatchesInsertsAtEverySize() {
        for n in [0, 1, 2, 63, 64, 65, 127, 128, 129, 4_095, 4_096, 4_097, 70_000] {
            let elements = (0..<n).map { ($0 * 3, $0) }
            guard let built = OrderedTree<Int, Int>(sortedElements: elements) else { return XCTFail("\(n): refused sorted input") }
            if let problem = built.validate() { XCTFail("\(n): \(problem)") }
            XCTAssertEqual(built.count, n)
            XCTAssertEqual(built.keys, elements.map(\.0), "\(n)")
            if n > 0 {
                XCTAssertEqual(built.element(at: n / 2)?.key, elements[n / 2].0)
                XCTAssertEqual(built.rank(of: elements[n - 1].0), n - 1)
            }
            // A built tree takes further writes like any other.
            var t = built
            t.updateValue(-1, forKey: -5)
            t.removeValue(forKey: 0)
            if let problem = t.validate() { XCTFail("\(n) after writes: \(problem)") }
            XCTAssertEqual(built.count, n, "the built tree is a snapshot")
        }
    }

    func testBulkBuildRefusesUnsortedOrRepeatedKeys() {
        XCTAssertNil(OrderedTree<Int, Int>(sortedElements: [(1, 1), (1, 2)]))
        XCTAssertNil(OrderedTree<Int, Int>(sortedElements: [(2, 1), (1, 2)]))
    }

    func testCopiesShareNodesUntilWrittenAndWritesCopyOnlyTheirPath() {
        guard let big = OrderedTree<Int, Int>(sortedElements: (0..<100_000).map { ($0, $0) }) else { return XCTFail() }
        var copy = big
        copy.updateValue(-1, forKey: 50_000)
        XCTAssertEqual(big[50_000], 50_000)
        XCTAssertEqual(copy[50_000], -1)
        // The untouched first leaf is still shared.
        var a = big.root
        var b = copy.root
        while !a.isLeaf {
            a = a.children[0]
            b = b.children[0]
        }
        XCTAssertTrue(a === b, "untouched nodes are shared, not copied")
    }

    /// The inline fast path of `RecordKey.<` orders keys exactly as their bytes do (prefixes first).
    func testRecordKeyOrderIsByteOrderForInlineAndHeapKeys() {
        var rng = SplitMix64(seed: 7)
        let alphabet: [UInt8] = [0, 1, 0x7F, 0x80, 0xFF, 0x61]
        let keys: [[UInt8]] = (0..<2_000).map { _ in (0..<rng.int(in: 0...20)).map { _ in alphabet[rng.int(in: 0..<alphabet.count)] } }
        for _ in 0..<20_000 {
            let a = keys[rng.int(in: 0..<keys.count)]
            let b = keys[rng.int(in: 0..<keys.count)]
            XCTAssertEqual(RecordKey(a) < RecordKey(b), a.lexicographicallyPrecedes(b), "\(a) < \(b)")
        }
    }
}
