import XCTest

@testable import LogStoreEngine

/// `SecondaryEntries` (and `IndexEntry`, `IndexEntry24`) against a sorted array of byte strings:
/// the narrow form answers every question, including bounds longer than any entry it can hold,
/// exactly as the wide form and the model do, before and after it widens.
final class SecondaryEntriesTests: XCTestCase {
    struct Rng {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func bytes(maxCount: Int) -> [UInt8] {
            // Few distinct byte values, so that entries share prefixes and zero padding matters.
            (0..<Int(next() % UInt64(maxCount + 1))).map { _ in [0x00, 0x01, 0x7F, 0xFF][Int(next() % 4)] }
        }
    }

    func check(_ entries: SecondaryEntries, _ model: [[UInt8]], probes: [[UInt8]], _ what: String) throws {
        XCTAssertEqual(entries.count, model.count, what)
        XCTAssertEqual(try entries.keys().map(\.bytes), model, what)
        for p in probes {
            let probe = IndexEntry(p)
            let below = model.filter { $0.lexicographicallyPrecedes(p) }
            XCTAssertEqual(try entries.rank(of: probe), below.count, "\(what): rank of \(p)")
            var from: [[UInt8]] = []
            try entries.forEach(from: probe) { e in
                from.append(e.bytes)
                return true
            }
            XCTAssertEqual(from, Array(model.dropFirst(below.count)), "\(what): from \(p)")
            var reversed: [[UInt8]] = []
            try entries.forEachReversed(below: probe) { e in
                reversed.append(e.bytes)
                return true
            }
            XCTAssertEqual(reversed, below.reversed(), "\(what): below \(p)")
            XCTAssertEqual(try entries.contains(probe), model.contains(p), "\(what): contains \(p)")
        }
    }

    /// `entries` written to a run (a delta run over its base, or a new base) and read back from
    /// it, the run validated.
    func writtenToRun(_ entries: SecondaryEntries, delta: Bool, run: UInt32) throws -> SecondaryEntries {
        let sink = RunMemorySink()
        _ = try entries.writeRun(
            delta: delta, storeId: StoreID(bytes: Array(repeating: 1, count: 16)), runNumber: run, sequence: 1, sink: sink)
        let written = try MappedRun(data: RunBytes(copying: sink.bytes), path: "/r")
        _ = try RunValidator.validate(written)
        return delta ? SecondaryEntries(base: entries.runs.base, deltaRun: written) : SecondaryEntries(base: written, deltaRun: nil)
    }

    func testShortEntriesStayNarrowAndAnswerLongBoundsExactly() throws {
        var rng = Rng(state: 13)
        var entries = SecondaryEntries()
        var model = Set<[UInt8]>()
        for _ in 0..<600 {
            let b = rng.bytes(maxCount: 24)
            try entries.insert(IndexEntry(b))
            model.insert(b)
        }
        guard case .narrow = entries else { return XCTFail("entries of at most 24 bytes widened the index") }
        let probes = (0..<300).map { _ in rng.bytes(maxCount: 70) }
        try check(entries, model.sorted { $0.lexicographicallyPrecedes($1) }, probes: probes, "narrow")
    }

    func testALongEntryWidensTheIndexOnceAndKeepsEveryEntry() throws {
        var rng = Rng(state: 2026)
        var entries = SecondaryEntries()
        var model = Set<[UInt8]>()
        for i in 0..<800 {
            let b = rng.bytes(maxCount: i < 400 ? 24 : 70)
            try entries.insert(IndexEntry(b))
            model.insert(b)
            if i % 5 == 0 {
                let all = model.sorted { $0.lexicographicallyPrecedes($1) }
                let victim = all[Int(rng.next() % UInt64(all.count))]
                try entries.remove(IndexEntry(victim))
                model.remove(victim)
            }
        }
        if case .narrow = entries { return XCTFail("an entry of more than 24 bytes left the index narrow") }
        let sorted = model.sorted { $0.lexicographicallyPrecedes($1) }
        try check(entries, sorted, probes: (0..<300).map { _ in rng.bytes(maxCount: 70) }, "wide")
        // Built bottom-up from the same entries: the same answers, and equal to the grown one.
        guard let built = SecondaryEntries(sortedKeys: sorted.map { IndexEntry($0) }) else { return XCTFail("sorted entries refused") }
        XCTAssertEqual(built, entries)
        XCTAssertEqual(IndexEntry(Array(repeating: 0xAB, count: 57)).isInline, false, "57 bytes are kept in a heap array")
        XCTAssertEqual(IndexEntry(Array(repeating: 0xAB, count: 56)).isInline, true)
    }

    /// Entries inserted and removed while the index is written to runs now and then (a delta run
    /// over the base, or a new base), answering as the model does at every stage.
    func testEntriesOverRunsAnswerAsTheModel() throws {
        var rng = Rng(state: 7)
        var entries = SecondaryEntries()
        var model = Set<[UInt8]>()
        var run: UInt32 = 0
        for i in 0..<3000 {
            let b = rng.bytes(maxCount: i < 1500 ? 24 : 70)
            if rng.next() % 3 == 0, let victim = model.randomElement() {
                try entries.remove(IndexEntry(victim))
                model.remove(victim)
            } else {
                try entries.insert(IndexEntry(b))
                model.insert(b)
            }
            if i % 300 == 299 {
                run += 1
                entries = try writtenToRun(entries, delta: entries.runs.base != nil && rng.next() % 3 != 0, run: run)
                let sorted = model.sorted { $0.lexicographicallyPrecedes($1) }
                try check(entries, sorted, probes: (0..<60).map { _ in rng.bytes(maxCount: 70) }, "after run \(run)")
            }
        }
        try check(entries, model.sorted { $0.lexicographicallyPrecedes($1) }, probes: (0..<200).map { _ in rng.bytes(maxCount: 70) }, "end")
    }
}

extension SecondaryEntriesTests {
    /// Batches of removals and insertions (``SecondaryEntries/apply(removing:inserting:)``, merged
    /// into the tree in one walk) over runs written now and then: the same answers as the model
    /// and as the same changes made one entry at a time.
    func testBatchesOverRunsAnswerAsTheModelAndAsOneByOne() throws {
        var rng = Rng(state: 29)
        var batched = SecondaryEntries()
        var single = SecondaryEntries()
        var model = Set<[UInt8]>()
        var run: UInt32 = 0
        for round in 0..<120 {
            var inserting = Set<[UInt8]>()
            var removing = Set<[UInt8]>()
            for _ in 0..<Int(1 + rng.next() % 80) {
                if rng.next() % 3 == 0, let victim = model.randomElement(), !inserting.contains(victim) {
                    removing.insert(victim)
                } else {
                    let b = rng.bytes(maxCount: round < 60 ? 24 : 56)
                    if !removing.contains(b) { inserting.insert(b) }
                }
            }
            let ins = inserting.sorted { $0.lexicographicallyPrecedes($1) }.map { IndexEntry($0) }
            let rem = removing.sorted { $0.lexicographicallyPrecedes($1) }.map { IndexEntry($0) }
            try batched.apply(removing: rem, inserting: ins)
            for e in rem { try single.remove(e) }
            for e in ins { try single.insert(e) }
            model.subtract(removing)
            model.formUnion(inserting)
            if round % 15 == 14 {
                run += 1
                batched = try writtenToRun(batched, delta: batched.runs.base != nil && rng.next() % 3 != 0, run: run)
            }
            if round % 10 == 9 {
                let sorted = model.sorted { $0.lexicographicallyPrecedes($1) }
                try check(batched, sorted, probes: (0..<30).map { _ in rng.bytes(maxCount: 70) }, "batched, round \(round)")
                XCTAssertEqual(batched, single, "round \(round)")
            }
        }
    }
}
