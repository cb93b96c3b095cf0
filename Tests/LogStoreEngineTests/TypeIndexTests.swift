import Foundation
import XCTest

@testable import LogStoreEngine

/// ``TypeIndex``: a type's keys held as ``Key8``, ``Key16`` or ``RecordKey``,
/// checked against a sorted-array model whatever the representation: lookups, key order, ranks and
/// starts from keys of any length (which a fixed-width representation cannot hold), snapshots, and
/// the conversion when a key of another length arrives.
final class TypeIndexTests: XCTestCase {
    func location(_ i: Int) -> RecordLocation {
        RecordLocation(segment: UInt32(i % 7), frameOffset: UInt32(i), valueOffset: 3, valueLength: 4, sequence: UInt64(i + 1))
    }

    /// A random key: mostly `width` bytes, with a few bytes shared so that keys interleave.
    func randomKey(_ rng: inout SplitMix64, width: Int) -> RecordKey {
        RecordKey((0..<width).map { i in i < width - 2 ? UInt8(rng.next() % 3) : UInt8(truncatingIfNeeded: rng.next()) })
    }

    enum Representation { case key8, key16, bytes, empty }

    func representation(_ t: TypeIndex) -> Representation {
        switch t.storage {
        case .empty: return .empty
        case .key8: return .key8
        case .key16: return .key16
        case .bytes: return .bytes
        }
    }

    func check(_ index: TypeIndex, _ model: [(RecordKey, RecordLocation)], _ what: String, rng: inout SplitMix64) {
        XCTAssertEqual(index.count, model.count, what)
        XCTAssertNil(index.validate(), what)
        XCTAssertEqual(index.map(\.key), model.map(\.0), "\(what): key order")
        XCTAssertEqual(index.map(\.value), model.map(\.1), "\(what): locations")
        // Probes of every length, present or not.
        for width in [0, 1, 7, 8, 9, 15, 16, 17, 30] {
            let probe =
                model.isEmpty || rng.next() % 2 == 0 ? randomKey(&rng, width: width) : model[Int(rng.next() % UInt64(model.count))].0
            let rank = model.firstIndex { !($0.0 < probe) } ?? model.count
            XCTAssertEqual(index.rank(of: probe), rank, "\(what): rank of \(probe)")
            XCTAssertEqual(index[probe], rank < model.count && model[rank].0 == probe ? model[rank].1 : nil, "\(what): lookup \(probe)")
            var from: [RecordKey] = []
            index.forEach(from: probe) { k, _ in
                from.append(k)
                return from.count < 3
            }
            XCTAssertEqual(from, model[rank..<min(rank + 3, model.count)].map(\.0), "\(what): from \(probe)")
        }
        if !model.isEmpty {
            let o = Int(rng.next() % UInt64(model.count))
            var got: [RecordKey] = []
            index.forEach(fromOffset: o) { k, _ in
                got.append(k)
                return got.count < 3
            }
            XCTAssertEqual(got, model[o..<min(o + 3, model.count)].map(\.0), "\(what): from offset \(o)")
        }
    }

    func run(width: Int, seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        var index = TypeIndex()
        var model: [(RecordKey, RecordLocation)] = []
        var snapshots: [(TypeIndex, [(RecordKey, RecordLocation)])] = []
        for step in 0..<1_500 {
            let what = "width \(width), seed \(seed), step \(step)"
            // After step 1,000 a key of another length arrives now and then.
            let k =
                step > 1_000 && rng.next() % 50 == 0
                ? randomKey(&rng, width: width + 1 + Int(rng.next() % 5)) : randomKey(&rng, width: width)
            let i = model.firstIndex { !($0.0 < k) } ?? model.count
            let present = i < model.count && model[i].0 == k
            if rng.next() % 4 == 0 {
                XCTAssertEqual(index.removeValue(forKey: k), present ? model[i].1 : nil, what)
                if present { model.remove(at: i) }
            } else {
                let loc = location(step)
                XCTAssertEqual(index.updateValue(loc, forKey: k), present ? model[i].1 : nil, what)
                if present { model[i].1 = loc } else { model.insert((k, loc), at: i) }
            }
            if step % 97 == 0 {
                check(index, model, what, rng: &rng)
                snapshots.append((index, model))
            }
        }
        check(index, model, "width \(width), end", rng: &rng)
        for (i, (snap, m)) in snapshots.enumerated() { check(snap, m, "width \(width), snapshot \(i)", rng: &rng) }
        // Built bottom-up from its own entries: the same index, in the narrowest representation.
        let rebuilt = TypeIndex(sortedElements: model)
        XCTAssertEqual(rebuilt, index)
        if let rebuilt { check(rebuilt, model, "width \(width), rebuilt", rng: &rng) }
        XCTAssertNil(TypeIndex(sortedElements: model.reversed()), "unsorted input is refused")
    }

    func testEightByteKeysAgainstAModel() { run(width: 8, seed: 1) }
    func testSixteenByteKeysAgainstAModel() { run(width: 16, seed: 2) }
    func testOtherKeysAgainstAModel() { run(width: 5, seed: 3) }

    func testTheFirstKeyPicksTheRepresentationAndAnotherLengthWidensIt() {
        var index = TypeIndex()
        XCTAssertEqual(representation(index), .empty)
        index.updateValue(location(1), forKey: RecordKey([UInt8](repeating: 1, count: 8)))
        XCTAssertEqual(representation(index), .key8)
        let copy = index
        index.updateValue(location(2), forKey: RecordKey([1, 2, 3]))
        XCTAssertEqual(representation(index), .bytes)
        XCTAssertEqual(representation(copy), .key8, "a snapshot keeps its representation")
        XCTAssertEqual(index.count, 2)
        XCTAssertEqual(copy.count, 1)
        index.removeValue(forKey: RecordKey([1, 2, 3]))
        index.removeValue(forKey: RecordKey([UInt8](repeating: 1, count: 8)))
        XCTAssertEqual(representation(index), .empty, "an emptied index keeps no tree")
        index.updateValue(location(3), forKey: RecordKey([UInt8](repeating: 9, count: 16)))
        XCTAssertEqual(representation(index), .key16)
        XCTAssertEqual(representation(TypeIndex(sortedElements: [(RecordKey([UInt8](repeating: 1, count: 8)), location(1))])!), .key8)
    }

    func testEntriesTakeAtMostFortyBytesForIntegerAndUUIDKeys() {
        XCTAssertEqual(MemoryLayout<RecordLocation>.stride, 24)
        XCTAssertEqual(MemoryLayout<Key8>.stride + MemoryLayout<RecordLocation>.stride, 32)
        XCTAssertEqual(MemoryLayout<Key16>.stride + MemoryLayout<RecordLocation>.stride, 40)
        XCTAssertEqual(MemoryLayout<RecordKey>.stride + MemoryLayout<RecordLocation>.stride, 48)
    }
}
