import Foundation
import LogStore
import LogStoreEngine
import XCTest

// A store written by store format 3 (MANIFEST 2, segments 2, CHECKPOINT 3: the last format 3
// writer, commit 6d8d702), committed under Tests/Fixtures/format-v3, must open with every committed
// item and index entry in every later version. It holds the writes of the version 1 fixture plus
// an item type with two secondary indexes: several segments, a compacted segment with both
// re-packed (`putAt`) and copied frames, compressed frames and uncompressed ones (the
// dishes of phase 2, written with compressOnWrite off), deletes, a delete-all, a CHECKPOINT 3 with index
// sections, and transactions after that checkpoint in a tail that still has its preallocated
// zeros (phase 3, copied while the store was open: what a crash leaves).
//
// To regenerate it (only ever with a format 3 build):
//   LOGSTORE_WRITE_FIXTURE=1 swift test --filter FormatVersion3FixtureTests/testWriteFixture

struct FixtureDish: DataStoreItem, Equatable {
    var id: Int
    var restaurant: Int
    var name: String
    var price: Int

    static let indexes: [DataStoreIndex<FixtureDish>] = [.init(\.restaurant, \.name), .init(\.price)]
}

/// The version 3 fixture's contents: the version 1 fixture's items and the dishes.
struct FormatVersion3Fixture {
    var base = FormatVersion1Fixture()
    var dishes: [Int: FixtureDish] = [:]

    static var directory: URL { FormatVersion1Fixture.directory(version: 3) }

    static var options: LogStoreOptions {
        var o = FormatVersion1Fixture.options
        o.preallocationSize = 16 << 10
        o.preallocatesInBackground = false
        return o
    }

    static func dish(_ i: Int, version: Int) -> FixtureDish {
        let names = ["soup", "salad", "noodles", "curry", "tart", "dumplings", "stew", "pie"]
        return FixtureDish(id: i, restaurant: i % 17, name: "\(names[(i + version) % names.count]) \(i)", price: (i * 7 + version) % 40 + 1)
    }

    /// Writes the fixture's store into `dir` with this build. Only for regenerating the committed
    /// fixture (`LOGSTORE_WRITE_FIXTURE=1`).
    static func write(to dir: URL) throws {
        let fm = FileManager.default
        try? fm.removeItem(at: dir)
        let work = fm.temporaryDirectory.appendingPathComponent("logstore-v3-fixture-\(UUID().uuidString)")
        defer { try? fm.removeItem(at: work) }
        var f = FormatVersion3Fixture()
        let store = LogDataStore(directory: work, options: options)
        try store.setup()
        try f.phase1(store)
        try store.tearDown()
        let engine = try LogEngine.open(directory: work.path, options: options.engine)
        let report = try engine.compact(includingTail: false)
        // (The format 3 build that wrote the fixture also checked that this compaction both
        // copied frames and re-packed some.)
        XCTAssertTrue(report.performed)
        try engine.close()
        let again = LogDataStore(directory: work, options: options)
        try again.setup()
        try f.base.phase2(again)
        try again.tearDown()
        var uncompressed = options
        uncompressed.compressOnWrite = false
        let fourth = LogDataStore(directory: work, options: uncompressed)
        try fourth.setup()
        try f.dishPhase2(fourth)
        try fourth.tearDown()
        // Phase 3 after the checkpoint that close wrote; the files are copied while the store is
        // open, so the tail keeps its preallocated zeros and the log goes on after the checkpoint.
        let third = LogDataStore(directory: work, options: uncompressed)
        try third.setup()
        try f.phase3(third)
        try copyStoreFiles(of: work, to: dir)
        try third.tearDown()
    }

    /// Copies the store files of `work` into `dir`: of a store that is open, so its tail keeps its
    /// preallocated zeros and its log goes on after its checkpoint (what a crash leaves).
    static func copyStoreFiles(of work: URL, to dir: URL) throws {
        let fm = FileManager.default
        try fm.createDirectory(at: dir, withIntermediateDirectories: true)
        for name in try fm.contentsOfDirectory(atPath: work.path) where name != "LOCK" && !name.hasSuffix(".tmp") {
            try fm.copyItem(at: work.appendingPathComponent(name), to: dir.appendingPathComponent(name))
        }
    }

    mutating func phase1(_ store: LogDataStore) throws {
        try store.writeSync { a in for i in 0..<300 { try a.insert(Self.dish(i, version: 1)) } }
        for i in 0..<300 { dishes[i] = Self.dish(i, version: 1) }
        try store.writeSync { a in
            for i in stride(from: 0, to: 300, by: 3) { try a.insert(Self.dish(i, version: 2)) }
            for i in 290..<300 { try a.deleteItem(ofType: FixtureDish.self, id: i) }
        }
        for i in stride(from: 0, to: 300, by: 3) { dishes[i] = Self.dish(i, version: 2) }
        for i in 290..<300 { dishes[i] = nil }
        try base.phase1(store)
    }

    mutating func phase2(_ store: LogDataStore) throws {
        try base.phase2(store)
        try dishPhase2(store)
    }

    mutating func dishPhase2(_ store: LogDataStore) throws {
        try store.writeSync { a in
            for i in 300..<400 { try a.insert(Self.dish(i, version: 3)) }
            for i in stride(from: 1, to: 100, by: 5) { try a.deleteItem(ofType: FixtureDish.self, id: i) }
        }
        for i in 300..<400 { dishes[i] = Self.dish(i, version: 3) }
        for i in stride(from: 1, to: 100, by: 5) { dishes[i] = nil }
    }

    mutating func phase3(_ store: LogDataStore) throws {
        for start in stride(from: 400, to: 460, by: 20) {
            try store.writeSync { a in for i in start..<(start + 20) { try a.insert(Self.dish(i, version: 4)) } }
            for i in start..<(start + 20) { dishes[i] = Self.dish(i, version: 4) }
        }
        try store.writeSync { a in
            for i in stride(from: 2, to: 60, by: 4) { try a.insert(Self.dish(i, version: 5)) }
            try a.deleteItem(ofType: FixtureItem.self, id: 7)
        }
        for i in stride(from: 2, to: 60, by: 4) { dishes[i] = Self.dish(i, version: 5) }
        base.items[7] = nil
    }

    static func expected() throws -> FormatVersion3Fixture {
        var f = FormatVersion3Fixture()
        let scratch = LogDataStore.inMemory(options: FormatVersion1Fixture.options)
        try scratch.setup()
        try f.phase1(scratch)
        try f.phase2(scratch)
        try f.phase3(scratch)
        try scratch.tearDown()
        return f
    }

    /// Every item, and answers that the secondary indexes serve.
    func check(_ store: LogDataStore, file: StaticString = #filePath, line: UInt = #line) throws {
        try base.check(store, file: file, line: line)
        try store.read { a in
            let got = try a.items(forRequest: DataStoreRequest(itemType: FixtureDish.self))
            XCTAssertEqual(got, dishes.keys.sorted().compactMap { dishes[$0] }, "FixtureDish", file: file, line: line)
            for r in [0, 5, 16] {
                var request = DataStoreRequest(itemType: FixtureDish.self)
                request.predicate = #Predicate<FixtureDish> { $0.restaurant == r }
                request.sortDescriptors = [SortDescriptor(\.name)]
                let want = dishes.values.filter { $0.restaurant == r }.sorted { $0.name < $1.name }
                XCTAssertEqual(try a.items(forRequest: request), want, "dishes of restaurant \(r)", file: file, line: line)
                guard case .index = try a.explain(request).access else {
                    XCTFail("dishes of restaurant \(r) not served by an index", file: file, line: line)
                    continue
                }
            }
            var cheap = DataStoreRequest(itemType: FixtureDish.self)
            cheap.predicate = #Predicate<FixtureDish> { $0.price < 6 }
            XCTAssertEqual(try a.countItems(forRequest: cheap), dishes.values.filter { $0.price < 6 }.count, file: file, line: line)
        }
    }
}

final class FormatVersion3FixtureTests: XCTestCase {
    func copyOfFixture(removing: [String] = []) throws -> URL {
        try FormatVersion1Fixture.copy(version: 3, removing: removing, for: self)
    }

    func testWriteFixture() throws {
        guard ProcessInfo.processInfo.environment["LOGSTORE_WRITE_FIXTURE"] == "1" else {
            throw XCTSkip("set LOGSTORE_WRITE_FIXTURE=1 to regenerate Tests/Fixtures/format-v3 (format 3 builds only)")
        }
        try FormatVersion3Fixture.write(to: FormatVersion3Fixture.directory)
    }

    func testFormatVersion3StoreOpensFromItsCheckpoint() throws {
        let expected = try FormatVersion3Fixture.expected()
        let store = LogDataStore(directory: try copyOfFixture(), options: FormatVersion3Fixture.options)
        try store.setup()
        XCTAssertTrue(store.recoveryReport?.checkpointUsed ?? false, "the CHECKPOINT 3 is read")
        try expected.check(store)
        try store.tearDown()
    }

    func testFormatVersion3StoreOpensByReplayingTheWholeLog() throws {
        let expected = try FormatVersion3Fixture.expected()
        let store = LogDataStore(directory: try copyOfFixture(removing: ["CHECKPOINT"]), options: FormatVersion3Fixture.options)
        try store.setup()
        try expected.check(store)
        try store.tearDown()
    }

    /// The version of a store file's header (MANIFEST, segment: a u16 after the 8 magic bytes).
    func headerVersion(_ url: URL) throws -> UInt16 {
        let bytes = [UInt8](try Data(contentsOf: url).prefix(10))
        return UInt16(bytes[8]) | UInt16(bytes[9]) << 8
    }

    /// A format 3 store's first writable open upgrades it to format 4 (MANIFEST 4 and a version 4
    /// tail; the version 2 segments stay, read by their own rules), and a compaction re-encodes
    /// their records as format 4 records: every item and index answer stays the same through each
    /// step and the reopens after them.
    func testFormatVersion3StoreIsUpgradedAndCompactedIntoFormat4() throws {
        let expected = try FormatVersion3Fixture.expected()
        let dir = try copyOfFixture()
        let segment = { (n: UInt32) in dir.appendingPathComponent(LogStoreFormat.segmentFileName(n)) }
        XCTAssertEqual(try headerVersion(dir.appendingPathComponent(LogStoreFormat.manifestFileName)), 2)
        let store = LogDataStore(directory: dir, options: FormatVersion3Fixture.options)
        try store.setup()
        XCTAssertNotNil(store.recoveryReport?.upgradedFromVersion, "the first writable open upgrades the store")
        try expected.check(store)
        try store.tearDown()
        XCTAssertEqual(try headerVersion(dir.appendingPathComponent(LogStoreFormat.manifestFileName)), 4)

        var options = FormatVersion3Fixture.options.engine
        options.autoCompaction = false
        options.autoRecompression = false
        let engine = try LogEngine.open(directory: dir.path, options: options)
        let before = engine.manifestInfo.segments
        XCTAssertTrue(try before.contains { try headerVersion(segment($0)) == 2 }, "version 2 segments are still listed")
        let report = try engine.compact()
        XCTAssertTrue(report.performed)
        let after = engine.manifestInfo.segments
        try engine.close()
        for n in after { XCTAssertEqual(try headerVersion(segment(n)), 4, "segment \(n) after the compaction") }

        let again = LogDataStore(directory: dir, options: FormatVersion3Fixture.options)
        try again.setup()
        XCTAssertNil(again.recoveryReport?.upgradedFromVersion)
        try expected.check(again)
        try again.tearDown()
    }
}
