import Foundation
import XCTest

@testable import LogStoreEngine

/// Secondary indexes in the engine: the order of encoded entries, maintenance by commits,
/// unique indexes, checkpoints, replay after a checkpoint, compaction, and reads that merge a
/// transaction's own changes. The oracle throughout: the index equals a rebuild from the records.
final class SecondaryIndexTests: XCTestCase {
    // MARK: Encoding order

    func testNumbersOrderExactlyAcrossIntegersAndDoubles() {
        func enc(_ v: AttributeValue) -> [UInt8] { IndexKeyEncoding.component(v) }
        XCTAssertEqual(enc(.int(3)), enc(.double(3)), "3 == 3.0")
        XCTAssertEqual(enc(.int(3)), [0x04, 0x03, 0x08, 0x01, 0x80, 0, 0, 0, 0, 0, 0, 0], "the example in FileFormat.md section 9a")
        XCTAssertEqual(enc(.double(0)), enc(.double(-0.0)), "-0.0 == 0.0")
        XCTAssertTrue(
            enc(.int(Int64.max)).lexicographicallyPrecedes(enc(.double(9_223_372_036_854_775_808.0))), "Int64.max < 2^63 (the double)")
        XCTAssertTrue(enc(.double(9_007_199_254_740_992)).lexicographicallyPrecedes(enc(.int((1 << 53) + 1))), "2^53 < 2^53 + 1 exactly")
        XCTAssertTrue(enc(.double(.infinity)).lexicographicallyPrecedes(enc(.double(.nan))), "NaN after +inf")
        XCTAssertEqual(enc(.double(.nan)), enc(.double(-.nan)), "one NaN")
        XCTAssertTrue(enc(.double(-.infinity)).lexicographicallyPrecedes(enc(.int(Int64.min))))
    }

    func testCanonicallyEquivalentStringsAreOneValueAndTheEntryEndsWithTheKey() throws {
        XCTAssertEqual(IndexKeyEncoding.component(.string("é")), IndexKeyEncoding.component(.string("e\u{301}")))
        let entry = IndexKeyEncoding.entry([.string("a\u{0}b"), nil, .array([.int(1), .string("x")])], key: key("k-1"))
        XCTAssertEqual(IndexKeyEncoding.recordKey(ofEntry: entry, componentCount: 3), key("k-1"))
        XCTAssertNil(IndexKeyEncoding.recordKey(ofEntry: RecordKey([0x05, 0x61]), componentCount: 1), "an unterminated string")
    }

    // MARK: Maintenance

    static let options: LogEngineOptions = {
        var o = LogEngineOptions()
        o.autoCompaction = false
        o.durability = .none
        return o
    }()

    static let byCity = IndexDefinition(attributes: [["address", "city"], ["rating"]])
    static let byEmail = IndexDefinition(name: "email", attributes: [["email"]], unique: true)

    func value(city: String?, rating: Int, email: String? = nil) -> [UInt8] {
        var m: [String: AttributeValue] = ["rating": .int(Int64(rating))]
        if let city { m["address"] = .map(["city": .string(city)]) }
        if let email { m["email"] = .string(email) }
        return AttributeValue.map(m).encoded()
    }

    func assertIndexesMatchRecords(_ e: LogEngine, file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(try e.snapshot().secondaryIndexProblems(), [], file: file, line: line)
    }

    func entries(_ r: some RecordReader, _ index: String = "address.city,rating", range: IndexEntryRange = IndexEntryRange()) throws
        -> [String]
    {
        var out: [String] = []
        try r.forEachIndexEntry(ofType: "User", index: index, in: range, reverse: false) { _, k in
            out.append(String(decoding: k.bytes, as: UTF8.self))
            return true
        }
        return out
    }

    func testEntriesFollowInsertsUpdatesDeletesAndDeleteAllThroughReopen() throws {
        let h = StoreHarness.memory()
        let dir = h.newStorePath()
        var e = try h.open(dir, options: Self.options)
        try e.commit([.put(type: "User", key: key("u1"), value: value(city: "Oslo", rating: 3))])
        try e.declareIndexes([Self.byCity], ofType: "User")
        var rng = SplitMix64(seed: 7)
        let cities: [String?] = ["Oslo", "Rome", "Bergen", nil]
        for round in 0..<300 {
            let k = key("u\(rng.int(in: 0..<40))")
            switch rng.int(in: 0..<10) {
            case 0: try e.commit([.delete(type: "User", key: k)])
            case 1 where round % 97 == 0: try e.commit([.deleteAll(type: "User")])
            default:
                try e.commit([.put(type: "User", key: k, value: value(city: cities[rng.int(in: 0..<4)], rating: rng.int(in: 0..<5)))])
            }
            if round % 50 == 0 { try assertIndexesMatchRecords(e) }
            if round == 150 {
                // Reopen from a checkpoint, then keep writing (replay after it must catch up).
                try e.close()
                e = try h.open(dir, options: Self.options)
                XCTAssertEqual(
                    try e.snapshot().secondaryIndexes(ofType: "User").keys.sorted(), ["address.city,rating"], "loaded from the checkpoint")
            }
        }
        try assertIndexesMatchRecords(e)
        // A close without a checkpoint after more writes: the replay after the older checkpoint
        // brings the index up to date.
        var noCheckpoint = Self.options
        noCheckpoint.checkpointOnClose = false
        try e.close()
        e = try h.open(dir, options: noCheckpoint)
        for i in 0..<30 { try e.commit([.put(type: "User", key: key("u\(i)"), value: value(city: "Rome", rating: i % 5))]) }
        try e.commit([.delete(type: "User", key: key("u3"))])
        try e.close()
        e = try h.open(dir, options: Self.options)
        XCTAssertTrue(e.recoveryReport.checkpointUsed)
        try assertIndexesMatchRecords(e)
        let rome = IndexEntryRange(prefix: IndexKeyEncoding.component(.string("Rome")))
        XCTAssertEqual(
            try entries(e.snapshot(), range: rome).count,
            try e.snapshot().countIndexEntries(ofType: "User", index: "address.city,rating", in: rome))
        try e.close()
    }

    func testWithoutACheckpointIndexesComeBackOnlyWhenDeclaredAgain() throws {
        let h = StoreHarness.memory()
        let dir = h.newStorePath()
        var o = Self.options
        o.checkpointOnClose = false
        var e = try h.open(dir, options: o)
        try e.declareIndexes([Self.byCity], ofType: "User")
        try e.commit([.put(type: "User", key: key("a"), value: value(city: "Oslo", rating: 1))])
        try e.close()
        e = try h.open(dir, options: o)
        XCTAssertTrue(try e.snapshot().secondaryIndexes(ofType: "User").isEmpty, "indexes are derived: no checkpoint, no index")
        let report = try e.declareIndexes([Self.byCity], ofType: "User")
        XCTAssertEqual(report.built, ["address.city,rating": 1])
        XCTAssertEqual(try entries(e.snapshot()), ["a"])
        XCTAssertTrue(try e.declareIndexes([Self.byCity], ofType: "User").isUnchanged, "declaring again costs nothing")
        XCTAssertEqual(try e.declareIndexes([], ofType: "User").dropped, ["address.city,rating"])
        try e.close()
    }

    func testUniqueIndexRefusesADuplicateAndWritesNothing() throws {
        let h = StoreHarness.memory()
        let e = try h.open(h.newStorePath(), options: Self.options)
        try e.declareIndexes([Self.byEmail], ofType: "User")
        try e.commit([.put(type: "User", key: key("a"), value: value(city: nil, rating: 1, email: "x@e"))])
        let before = e.recoveryReport.lastSequence
        assertThrowsLogStoreError(.uniqueConstraintViolation) {
            try e.commit([.put(type: "User", key: key("b"), value: self.value(city: nil, rating: 1, email: "x@e"))])
        }
        assertThrowsLogStoreError(.uniqueConstraintViolation, "two in one transaction") {
            try e.commit([
                .put(type: "User", key: key("c"), value: self.value(city: nil, rating: 1, email: "y@e")),
                .put(type: "User", key: key("d"), value: self.value(city: nil, rating: 1, email: "y@e")),
            ])
        }
        XCTAssertEqual(try e.snapshot().count(ofType: "User"), 1, "nothing of the refused transactions")
        XCTAssertEqual(try e.snapshot().sequence, before + 1)
        // Moving the value: the old owner changes in the same transaction.
        try e.commit([
            .put(type: "User", key: key("a"), value: value(city: nil, rating: 1, email: "z@e")),
            .put(type: "User", key: key("b"), value: value(city: nil, rating: 1, email: "x@e")),
        ])
        // Missing values never conflict.
        try e.commit([
            .put(type: "User", key: key("n1"), value: value(city: nil, rating: 1)),
            .put(type: "User", key: key("n2"), value: value(city: nil, rating: 1)),
        ])
        try assertIndexesMatchRecords(e)
        // Declaring a unique index over records that break it fails and changes nothing.
        assertThrowsLogStoreError(.uniqueConstraintViolation) {
            try e.declareIndexes([Self.byEmail, IndexDefinition(name: "rating", attributes: [["rating"]], unique: true)], ofType: "User")
        }
        XCTAssertEqual(try e.snapshot().secondaryIndexes(ofType: "User").keys.sorted(), ["email"])
        try e.close()
    }

    func testATransactionReadsItsOwnIndexChangesAndADeclarationInsideItsBodyIndexesItsCommit() throws {
        let h = StoreHarness.memory()
        let e = try h.open(h.newStorePath(), options: Self.options)
        try e.commit((0..<10).map { .put(type: "User", key: key("u\($0)"), value: value(city: $0 % 2 == 0 ? "Oslo" : "Rome", rating: $0)) })
        try e.declareIndexes([Self.byCity], ofType: "User")
        let oslo = IndexEntryRange(prefix: IndexKeyEncoding.component(.string("Oslo")))
        try e.write { txn in
            try txn.put(type: "User", key: key("u1"), value: value(city: "Oslo", rating: 0))
            _ = try txn.delete(type: "User", key: key("u2"))
            try txn.put(type: "User", key: key("u99"), value: value(city: "Oslo", rating: 9))
            XCTAssertEqual(try entries(txn, range: oslo), ["u0", "u1", "u4", "u6", "u8", "u99"], "its own changes, in index order")
            XCTAssertEqual(try txn.countIndexEntries(ofType: "User", index: "address.city,rating", in: oslo), 6)
        }
        try assertIndexesMatchRecords(e)
        try e.write { txn in
            try txn.put(type: "User", key: key("m1"), value: value(city: nil, rating: 1, email: "dup@e"))
            try e.declareIndexes([Self.byCity, Self.byEmail], ofType: "User")
            try txn.put(type: "User", key: key("m2"), value: value(city: nil, rating: 2, email: "other@e"))
        }
        try assertIndexesMatchRecords(e)
        assertThrowsLogStoreError(.uniqueConstraintViolation, "the index declared inside the body is enforced from then on") {
            try e.commit([.put(type: "User", key: key("m3"), value: self.value(city: nil, rating: 1, email: "dup@e"))])
        }
        try e.close()
    }

    /// `commit(_:)` takes any list of operations: one that puts a key and then deletes it (or
    /// deletes the type after writing to it) must leave no entry of the put, so each operation's
    /// old value is the one the operations before it left, not the state before the commit (the
    /// engine power-loss harness's seed 16002228717466926311 reaches this).
    func testACommitThatTouchesAKeyTwiceOrDeletesItsTypeAfterWritingLeavesExactEntries() throws {
        let h = StoreHarness.memory()
        let e = try h.open(h.newStorePath(), options: Self.options)
        try e.declareIndexes([Self.byCity, Self.byEmail], ofType: "User")
        try e.commit([.put(type: "User", key: key("a"), value: value(city: "Oslo", rating: 1, email: "a@e"))])
        try e.commit([
            .put(type: "User", key: key("b"), value: value(city: "Rome", rating: 2)),
            .delete(type: "User", key: key("b")),
            .put(type: "User", key: key("a"), value: value(city: "Bergen", rating: 3, email: "a@e")),
            .put(type: "User", key: key("a"), value: value(city: "Oslo", rating: 4, email: "a2@e")),
        ])
        try assertIndexesMatchRecords(e)
        try e.commit([
            .put(type: "User", key: key("c"), value: value(city: "Rome", rating: 5, email: "c@e")),
            .deleteAll(type: "User"),
            .put(type: "User", key: key("d"), value: value(city: "Oslo", rating: 6, email: "c@e")),
        ])
        try assertIndexesMatchRecords(e)
        XCTAssertEqual(try entries(e.snapshot()), ["d"])
        try e.close()
    }

    func testCompactionKeepsIndexesAndCheckpointsCarryThem() throws {
        let h = StoreHarness.memory()
        let dir = h.newStorePath()
        var o = Self.options
        o.segmentSize = 64 << 10
        var e = try h.open(dir, options: o)
        try e.declareIndexes([Self.byCity], ofType: "User")
        for round in 0..<6 {
            try e.commit(
                (0..<600).map {
                    .put(type: "User", key: key("u\($0)"), value: value(city: ["Oslo", "Rome"][($0 + round) % 2], rating: round))
                })
        }
        XCTAssertTrue(try e.compact().performed)
        try assertIndexesMatchRecords(e)
        try e.close()
        let bytes = try h.fs.readAll(_joinPath(dir, LogStoreFormat.checkpointFileName))
        let cp = try bytes.withUnsafeBytes { buf in try CheckpointFileV4.decode(buf) }
        let byCity = cp.indexes.first { $0.type == "User" && $0.definition?.name == "address.city,rating" }
        XCTAssertEqual(byCity?.definition, Self.byCity)
        XCTAssertEqual(byCity?.entryCount, 600)
        XCTAssertNotNil(byCity?.base)
        e = try h.open(dir, options: o)
        try assertIndexesMatchRecords(e)
        try e.close()
    }

    func testCheckpointIndexSectionsAreCheckedWhenDecoded() throws {
        var index = IndexState()
        index.sequence = 1
        let loc = RecordLocation(segment: 1, frameOffset: 48, valueOffset: 0, valueLength: 4, sequence: 1)
        var dead = DeadBytes()
        try index.put("User", key("a"), loc, dead: &dead)
        index.secondary["User"] = [
            "address.city,rating": SecondaryIndex(
                definition: Self.byCity,
                entries: OrderedTree(
                    sortedElements: [(IndexKeyEncoding.entry([.string("Oslo"), .int(1)], key: key("a")), IndexEntryMark())])
                    ?? OrderedTree())
        ]
        let segments = [CheckpointFile.Segment(number: 1, length: 200, rawBytes: 10)]
        let good = try CheckpointFile.encode(generation: 1, createdAtMillis: 0, segments: segments, index: index, storeId: StoreID.random())
        {
            _ in 10
        }
        let decoded = try good.withUnsafeBytes { try CheckpointFile.decode($0) }
        XCTAssertEqual(decoded.index.secondaryIndexes(ofType: "User")["address.city,rating"]?.entries.count, 1)
        // An index with more entries than its type has records is refused.
        var wrong = index
        try wrong.secondary["User"]?["address.city,rating"]?.entries.insert(
            IndexKeyEncoding.entry([.string("Rome"), .int(2)], key: key("b")))
        let bad = try CheckpointFile.encode(generation: 1, createdAtMillis: 0, segments: segments, index: wrong, storeId: StoreID.random())
        {
            _ in 10
        }
        XCTAssertThrowsError(try bad.withUnsafeBytes { try CheckpointFile.decode($0) })
    }
}
