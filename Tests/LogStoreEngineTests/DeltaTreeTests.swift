import Foundation
import XCTest

@testable import LogStoreEngine

/// ``DeltaTree`` against a sorted-array model: random updates and removals in every key
/// representation, copies kept across later changes (value semantics, histories that branch),
/// cursors in both directions, counts and net sums below any key, bottom-up builds, and the
/// arena: every node freed once no version reaches it.
final class DeltaTreeTests: XCTestCase {
    typealias Model = [(key: [UInt8], change: UInt8)]

    func bytes<K: DeltaKey>(_ k: K) -> [UInt8] { k.withBytes { Array($0) } }

    /// Reclaims `arena` and checks that it holds no node and no version: every tree is gone.
    func assertEveryNodeFreed(_ arena: NodeArena, file: StaticString = #filePath, line: UInt = #line) {
        arena.reclaim()
        XCTAssertEqual(arena.statistics.nodes, 0, "every node freed once no version reaches it", file: file, line: line)
        XCTAssertEqual(arena.statistics.liveVersions, 0, file: file, line: line)
    }

    func check<K: DeltaKey>(_ tree: DeltaTree<K, SecondaryDelta>, _ model: Model, _ what: String, rng: inout SplitMix64) {
        XCTAssertNil(tree.validate(), what)
        XCTAssertEqual(tree.count, model.count, what)
        XCTAssertEqual(tree.net, model.reduce(0) { $0 + (RunChange.contribution($1.change) ?? 0) }, what)
        var seen: Model = []
        tree.forEach { k, v in
            seen.append((bytes(k), v.change))
            return true
        }
        XCTAssertEqual(seen.map(\.key), model.map(\.key), "\(what): order")
        XCTAssertEqual(seen.map(\.change), model.map(\.change), "\(what): values")
        let back = DeltaCursor(tree)
        back.seek(below: nil)
        var reversed: [[UInt8]] = []
        while back.isValid {
            reversed.append(bytes(back.key))
            back.previous()
        }
        XCTAssertEqual(reversed, model.map(\.key).reversed(), "\(what): backward")
        for _ in 0..<30 {
            var probe =
                model.isEmpty || rng.next() % 3 == 0
                ? (0..<Int(rng.next() % 12)).map { _ in UInt8(rng.next() % 4) } : model[Int(rng.next() % UInt64(model.count))].key
            if rng.next() % 4 == 0 { probe.append(1) }
            let lower = model.partitioningIndex { !$0.key.lexicographicallyPrecedes(probe) }
            let p = probe.withUnsafeBytes { Array($0) }
            p.withUnsafeBytes { raw in
                let probe = DeltaProbe<K>(raw)
                let below = tree.below(probe)
                XCTAssertEqual(below.count, lower, "\(what): count below")
                XCTAssertEqual(
                    below.net, model.prefix(lower).reduce(0) { $0 + (RunChange.contribution($1.change) ?? 0) }, "\(what): net below")
                XCTAssertEqual(
                    tree.find(bytes: raw)?.change, lower < model.count && model[lower].key == p ? model[lower].change : nil, what)
                let c = DeltaCursor(tree)
                c.seek(atLeast: probe)
                XCTAssertEqual(c.isValid ? bytes(c.key) : nil, lower < model.count ? model[lower].key : nil, "\(what): seek")
                c.seek(below: probe)
                XCTAssertEqual(c.isValid ? bytes(c.key) : nil, lower > 0 ? model[lower - 1].key : nil, "\(what): seek below")
            }
            let offset = Int(rng.next() % UInt64(model.count + 2))
            let c = DeltaCursor(tree)
            c.seek(offset: offset)
            XCTAssertEqual(c.isValid ? bytes(c.key) : nil, offset < model.count ? model[offset].key : nil, "\(what): offset")
        }
    }

    func randomKey(_ rng: inout SplitMix64, width: Int?) -> [UInt8] {
        if let width { return (0..<width).map { i in i < width - 2 ? UInt8(rng.next() % 2) : UInt8(truncatingIfNeeded: rng.next()) } }
        let n = rng.next() % 10 == 0 ? 20 + Int(rng.next() % 100) : Int(rng.next() % 12)
        return (0..<n).map { _ in UInt8(rng.next() % 4) }
    }

    func run<K: DeltaKey>(_: K.Type, width: Int?, seed: UInt64, steps: Int) {
        let arena = NodeArena()
        var rng = SplitMix64(seed: seed)
        do {
            var tree = DeltaTree<K, SecondaryDelta>(arena: arena)
            var model: Model = []
            var kept: [(DeltaTree<K, SecondaryDelta>, Model)] = []
            for step in 0..<steps {
                let key = randomKey(&rng, width: width)
                let i = model.partitioningIndex { !$0.key.lexicographicallyPrecedes(key) }
                let present = i < model.count && model[i].key == key
                guard let k = key.withUnsafeBytes({ K(probe: $0) }) else { continue }
                if rng.next() % 4 == 0 {
                    _ = key.withUnsafeBytes { tree.remove(K(probe: $0)!) }
                    if present { model.remove(at: i) }
                } else {
                    let change: UInt8 = rng.next() % 2 == 0 ? RunChange.newKey : RunChange.tombstone
                    _ = key.withUnsafeBytes { tree.set(SecondaryDelta(change: change), for: K(probe: $0)!) }
                    if present { model[i].change = change } else { model.insert((key, change), at: i) }
                }
                _ = k
                if step % 97 == 0 { kept.append((tree, model)) }
                if step % 211 == 0, let old = kept.randomElement(using: &rng) {
                    // A copy of an old version changed on its own: a history that branches.
                    var branch = old.0
                    var branchModel = old.1
                    let extra = randomKey(&rng, width: width)
                    extra.withUnsafeBytes { if let k = K(probe: $0) { branch.set(SecondaryDelta(change: RunChange.newKey), for: k) } }
                    if extra.withUnsafeBytes({ K(probe: $0) }) != nil {
                        let j = branchModel.partitioningIndex { !$0.key.lexicographicallyPrecedes(extra) }
                        if j < branchModel.count && branchModel[j].key == extra {
                            branchModel[j].change = RunChange.newKey
                        } else {
                            branchModel.insert((extra, RunChange.newKey), at: j)
                        }
                    }
                    check(branch, branchModel, "branch at \(step)", rng: &rng)
                    arena.reclaim()
                }
                if step % 500 == 0 { check(tree, model, "step \(step)", rng: &rng) }
            }
            check(tree, model, "end", rng: &rng)
            arena.reclaim()
            for (t, m) in kept { check(t, m, "kept copy", rng: &rng) }
            // A bottom-up build of the same entries.
            let built = DeltaTree<K, SecondaryDelta>.build(arena: arena) { b in
                for e in model { e.key.withUnsafeBytes { _ = b.append(bytes: $0, SecondaryDelta(change: e.change)) } }
            }
            XCTAssertNotNil(built)
            if let built { check(built, model, "built", rng: &rng) }
        }
        assertEveryNodeFreed(arena)
    }

    func testEveryKeyRepresentationAgainstAModel() {
        run(Key8.self, width: 8, seed: 1, steps: 6000)
        run(ShortKey.self, width: nil, seed: 2, steps: 6000)
        run(IndexEntry24.self, width: nil, seed: 3, steps: 4000)
        run(InlineEntry.self, width: nil, seed: 4, steps: 4000)
        run(LongKey.self, width: nil, seed: 5, steps: 6000)
    }

    func testAHeldVersionKeepsOnlyItsOwnNodes() {
        let arena = NodeArena()
        var tree = DeltaTree<Key8, SecondaryDelta>(arena: arena)
        for i in 0..<5000 { tree.set(SecondaryDelta(change: RunChange.newKey), for: Key8(word: UInt64(i * 2))) }
        let held = tree
        let size = arena.statistics.nodes
        for round in 0..<20 {
            for i in 0..<5000 where i % 7 == round % 7 {
                tree.set(SecondaryDelta(change: RunChange.tombstone), for: Key8(word: UInt64(i * 2)))
            }
            tree.set(SecondaryDelta(change: RunChange.newKey), for: Key8(word: UInt64(round * 2 + 1)))
            var next = tree
            next.set(SecondaryDelta(change: RunChange.newKey), for: Key8(word: 1_000_000 + UInt64(round)))
            tree = next
            arena.reclaim()
        }
        // The held version's nodes, plus the current tree's, plus what changes made: bounded by
        // a few tree sizes, not by the 20 rounds of changes.
        XCTAssertLessThan(arena.statistics.nodes, 3 * size + 64)
        XCTAssertEqual(held.count, 5000)
        XCTAssertEqual(held.net, 5000)
        XCTAssertEqual(held.find(Key8(word: 14))?.change, RunChange.newKey)
    }

    func testBuildRefusesKeysOutOfOrder() {
        let arena = NodeArena()
        let t = DeltaTree<Key8, SecondaryDelta>.build(arena: arena) { b in
            b.append(Key8(word: 2), SecondaryDelta(change: 2))
            b.append(Key8(word: 1), SecondaryDelta(change: 2))
        }
        XCTAssertNil(t)
        arena.reclaim()
        XCTAssertEqual(arena.statistics.nodes, 0)
    }
}
