import Foundation
import XCTest

@testable import LogStoreEngine

/// ``TypeIndex`` (a ``LayeredIndex`` of runs and a ``DeltaTree``) against ``OrderedTree``, the
/// index it replaces, over random puts and removes with keys of every length, while it is
/// written to runs now and then, as checkpoints do: a delta run over the base (a close), or a new
/// base (a fold). Lookups, key order, ranks, starts from keys of any length and from offsets,
/// and snapshots held across all of it must match.
final class TypeIndexTests: XCTestCase {
    static let store = StoreID(bytes: Array(repeating: 3, count: 16))

    func location(_ i: Int) -> RecordLocation {
        RecordLocation(segment: UInt32(i % 7), frameOffset: UInt32(i), valueOffset: 3, valueLength: 4, sequence: UInt64(i + 1))
    }

    /// A random key: mostly `width` bytes, with a few bytes shared so that keys interleave.
    func randomKey(_ rng: inout SplitMix64, width: Int) -> RecordKey {
        RecordKey((0..<width).map { i in i < width - 2 ? UInt8(rng.next() % 3) : UInt8(truncatingIfNeeded: rng.next()) })
    }

    func check(_ index: TypeIndex, _ oracle: OrderedTree<RecordKey, RecordLocation>, _ what: String, rng: inout SplitMix64) throws {
        let model = Array(oracle)
        XCTAssertEqual(index.count, model.count, what)
        XCTAssertNil(index.validate(), what)
        let elements = try index.elements()
        XCTAssertEqual(elements.map(\.key), model.map(\.key), "\(what): key order")
        XCTAssertEqual(elements.map(\.value), model.map(\.value), "\(what): locations")
        // Probes of every length, present or not.
        for width in [0, 1, 7, 8, 9, 15, 16, 17, 30] {
            let probe =
                model.isEmpty || rng.next() % 2 == 0 ? randomKey(&rng, width: width) : model[Int(rng.next() % UInt64(model.count))].key
            let rank = oracle.rank(of: probe)
            XCTAssertEqual(try index.rank(of: probe), rank, "\(what): rank of \(probe)")
            XCTAssertEqual(try index.location(probe), oracle[probe], "\(what): lookup \(probe)")
            var from: [RecordKey] = []
            try index.forEach(from: probe) { k, _ in
                from.append(k)
                return from.count < 3
            }
            XCTAssertEqual(from, model[rank..<min(rank + 3, model.count)].map(\.key), "\(what): from \(probe)")
        }
        for o in [0, model.count / 3, model.count - 1, model.count, Int(rng.next() % UInt64(model.count + 1))] where o >= 0 {
            var got: [RecordKey] = []
            try index.forEach(fromOffset: o) { k, _ in
                got.append(k)
                return got.count < 3
            }
            XCTAssertEqual(got, model[min(o, model.count)..<min(o + 3, model.count)].map(\.key), "\(what): from offset \(o)")
        }
    }

    /// `index` written to runs, as a checkpoint does: a new base, or a delta run over its base.
    func checkpoint(_ index: TypeIndex, fold: Bool, run: inout UInt32) throws -> TypeIndex {
        let hasBase = index.runs.base != nil
        run += 1
        let sink = RunMemorySink()
        let delta = hasBase && !fold
        _ = try index.writeRun(delta: delta, storeId: Self.store, runNumber: run, sequence: UInt64(run), sink: sink)
        let written = try MappedRun(data: RunBytes(copying: sink.bytes), path: "/run-\(run)")
        _ = try RunValidator.validate(written)
        return delta ? TypeIndex(base: index.runs.base, deltaRun: written) : TypeIndex(base: written, deltaRun: nil)
    }

    func run(width: Int, seed: UInt64, steps: Int = 3_000) throws {
        var rng = SplitMix64(seed: seed)
        var index = TypeIndex()
        var oracle = OrderedTree<RecordKey, RecordLocation>()
        var snapshots: [(TypeIndex, OrderedTree<RecordKey, RecordLocation>)] = []
        var runNumber: UInt32 = 0
        for step in 0..<steps {
            let what = "width \(width), seed \(seed), step \(step)"
            // Now and then a key of another length.
            let k = rng.next() % 40 == 0 ? randomKey(&rng, width: 1 + Int(rng.next() % 24)) : randomKey(&rng, width: width)
            if rng.next() % 4 == 0 {
                XCTAssertEqual(try index.removeValue(forKey: k), oracle.removeValue(forKey: k), what)
            } else {
                let loc = location(step)
                XCTAssertEqual(try index.updateValue(loc, forKey: k), oracle.updateValue(loc, forKey: k), what)
            }
            if step % 400 == 399 {
                // A checkpoint: mostly a delta run over the base, sometimes a fold into a new base.
                index = try checkpoint(index, fold: rng.next() % 3 == 0, run: &runNumber)
                try check(index, oracle, "\(what) after a checkpoint", rng: &rng)
            }
            if step % 97 == 0 {
                try check(index, oracle, what, rng: &rng)
                snapshots.append((index, oracle))
            }
        }
        try check(index, oracle, "width \(width), end", rng: &rng)
        for (i, (snap, m)) in snapshots.enumerated() { try check(snap, m, "width \(width), snapshot \(i)", rng: &rng) }
        // Built bottom-up from its own entries: the same index.
        let model = Array(oracle).map { ($0.key, $0.value) }
        let rebuilt = TypeIndex(sortedElements: model)
        XCTAssertEqual(rebuilt, index)
        if let rebuilt { try check(rebuilt, oracle, "width \(width), rebuilt", rng: &rng) }
        XCTAssertNil(TypeIndex(sortedElements: model.reversed()), "unsorted input is refused")
    }

    func testEightByteKeysAgainstOrderedTree() throws { try run(width: 8, seed: 1) }
    func testSixteenByteKeysAgainstOrderedTree() throws { try run(width: 16, seed: 2) }
    func testOtherKeysAgainstOrderedTree() throws { try run(width: 5, seed: 3) }
    func testLongKeysAgainstOrderedTree() throws { try run(width: 40, seed: 4, steps: 1_500) }

    func testTheFirstKeyPicksTheTreeRepresentationAndAnotherLengthWidensIt() throws {
        enum Representation { case key8, short, long }
        func representation(_ t: TypeIndex) -> Representation {
            switch t.storage {
            case .key8: return .key8
            case .short: return .short
            case .long: return .long
            }
        }
        var index = TypeIndex()
        try index.updateValue(location(1), forKey: RecordKey([UInt8](repeating: 1, count: 8)))
        XCTAssertEqual(representation(index), .key8)
        let copy = index
        try index.updateValue(location(2), forKey: RecordKey([1, 2, 3]))
        XCTAssertEqual(representation(index), .short)
        XCTAssertEqual(representation(copy), .key8, "a snapshot keeps its representation")
        XCTAssertEqual(index.count, 2)
        XCTAssertEqual(copy.count, 1)
        try index.updateValue(location(3), forKey: RecordKey([UInt8](repeating: 9, count: 40)))
        XCTAssertEqual(representation(index), .long)
        XCTAssertEqual(try index.location(RecordKey([1, 2, 3])), location(2))
        XCTAssertEqual(representation(TypeIndex(sortedElements: [(RecordKey([UInt8](repeating: 1, count: 8)), location(1))])!), .key8)
        XCTAssertEqual(representation(TypeIndex(sortedElements: [(RecordKey([UInt8](repeating: 1, count: 16)), location(1))])!), .short)
    }

    func testTreeEntriesOfIntegerKeysTakeFortyBytes() {
        XCTAssertEqual(MemoryLayout<Key8>.stride + MemoryLayout<PrimaryDelta>.stride, 40)
        XCTAssertEqual(MemoryLayout<ShortKey>.stride + MemoryLayout<PrimaryDelta>.stride, 56)
    }
}
