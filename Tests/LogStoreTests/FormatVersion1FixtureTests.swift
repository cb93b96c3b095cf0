import Foundation
import LogStore
import LogStoreEngine
import XCTest
import _LogStoreTestSupport

// A store written by format version 1 (the last version-1 writer: commit 721f100), committed under
// Tests/Fixtures/format-v1, must open with every committed item in every later version. Version 2
// upgrades it at the first writable open, atomically (Docs/FileFormat.md, section 11): the tests
// below check the upgrade, and a crash at every I/O operation of it. The fixture has several segments, a compacted prefix, multi-frame and
// compressed transactions, deletes, a delete-all, three id kinds and a checkpoint: replay order
// compacted segment(s), then sealed normal segments, then the tail.
//
// To regenerate it (only ever with a version-1 build):
//   LOGSTORE_WRITE_FIXTURE=1 swift test --filter FormatVersion1FixtureTests/testWriteFixture

struct FixtureItem: DataStoreItem, Equatable {
    var id: Int
    var name: String
    var rating: Int
    var tags: [String]
    var note: String?
    var when: Date
}

struct FixtureUser: DataStoreItem, Equatable {
    var id: String
    var email: String
}

struct FixtureThing: DataStoreItem, Equatable {
    var id: UUID
    var weight: Double
}

/// The fixture's contents, as the writes that made it and the state they leave.
struct FormatVersion1Fixture {
    var items: [Int: FixtureItem] = [:]
    var users: [String: FixtureUser] = [:]
    var things: [UUID: FixtureThing] = [:]

    static var directory: URL { directory(version: 1) }

    /// `Tests/Fixtures/format-vN`: the committed store written by the last format-N writer.
    static func directory(version: Int) -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/format-v\(version)")
    }

    /// A copy of fixture `version` in a fresh temporary directory, removed when `test` ends
    /// (opening writes LOCK and a checkpoint, which must not touch the committed files).
    static func copy(version: Int, removing: [String] = [], for test: XCTestCase) throws -> URL {
        let fm = FileManager.default
        let dest = fm.temporaryDirectory.appendingPathComponent("logstore-v\(version)-fixture-\(UUID().uuidString)")
        try fm.copyItem(at: directory(version: version), to: dest)
        for name in removing { try? fm.removeItem(at: dest.appendingPathComponent(name)) }
        test.addTeardownBlock { try? fm.removeItem(at: dest) }
        return dest
    }

    /// Writes the fixture's store into `dir` with this build: phase 1, a compaction of everything
    /// but the tail, phase 2. Only for regenerating a committed fixture (`LOGSTORE_WRITE_FIXTURE=1`).
    static func write(to dir: URL) throws {
        try? FileManager.default.removeItem(at: dir)
        var f = FormatVersion1Fixture()
        let store = LogDataStore(directory: dir, options: options)
        try store.setup()
        try f.phase1(store)
        try store.tearDown()
        let engine = try LogEngine.open(directory: dir.path, options: options.engine)
        let report = try engine.compact(includingTail: false)
        XCTAssertTrue(report.performed)
        try engine.close()
        let again = LogDataStore(directory: dir, options: options)
        try again.setup()
        try f.phase2(again)
        try again.tearDown()
        try? FileManager.default.removeItem(at: dir.appendingPathComponent("LOCK"))
    }

    static var options: LogStoreOptions {
        var o = LogStoreOptions()
        o.segmentSize = 64 << 10
        o.maxFramePayload = 2 << 10
        o.autoCompaction = false
        return o
    }

    static func item(_ i: Int, version: Int) -> FixtureItem {
        let words = ["harbour", "lantern", "copper", "meadow", "saffron", "granite", "willow", "ember"]
        let text =
            (0..<(20 + i % 30)).map { words[($0 * 7 + i + version) % words.count] }.joined(separator: " ")
            + " "
            + String(
                (0..<(80 + i % 40)).map { k in Character(Unicode.Scalar(UInt8(97 + (i &* 2_654_435_761 &+ k &* 40_503 &+ version) % 26))) })
        return FixtureItem(
            id: i, name: "item \(i) v\(version)", rating: (i * 31 + version) % 5 + 1,
            tags: (0..<(i % 4)).map { words[($0 + i) % words.count] }, note: i % 3 == 0 ? nil : text,
            when: Date(timeIntervalSinceReferenceDate: Double(i) * 3600 + Double(version)))
    }

    static func uuid(_ i: Int) -> UUID {
        var b = [UInt8](repeating: 0, count: 16)
        for k in 0..<16 { b[k] = UInt8(truncatingIfNeeded: i &* 37 &+ k &* 11) }
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }

    /// Phase 1: before the compaction.
    mutating func phase1(_ store: LogDataStore) throws {
        for start in stride(from: 0, to: 900, by: 25) {
            try store.writeSync { a in
                for i in start..<(start + 25) { try a.insert(Self.item(i, version: 1)) }
            }
            for i in start..<(start + 25) { items[i] = Self.item(i, version: 1) }
        }
        try store.writeSync { a in for i in 0..<100 { try a.insert(Self.item(i, version: 2)) } }
        for i in 0..<100 { items[i] = Self.item(i, version: 2) }
        for i in 850..<900 {
            try store.writeSync { a in try a.deleteItem(ofType: FixtureItem.self, id: i) }
            items[i] = nil
        }
        try store.writeSync { a in
            for i in 0..<20 { try a.insert(FixtureUser(id: "user-\(i)-é", email: "u\(i)@example.com")) }
            for i in 0..<20 { try a.insert(FixtureThing(id: Self.uuid(i), weight: Double(i) / 3)) }
        }
        for i in 0..<20 { users["user-\(i)-é"] = FixtureUser(id: "user-\(i)-é", email: "u\(i)@example.com") }
        for i in 0..<20 { things[Self.uuid(i)] = FixtureThing(id: Self.uuid(i), weight: Double(i) / 3) }
        try store.writeSync { a in
            try a.deleteAllItems(ofType: FixtureThing.self)
            for i in 100..<105 { try a.insert(FixtureThing(id: Self.uuid(i), weight: -Double(i))) }
        }
        things = [:]
        for i in 100..<105 { things[Self.uuid(i)] = FixtureThing(id: Self.uuid(i), weight: -Double(i)) }
    }

    /// Phase 2: after the compaction (these transactions stay in normal segments).
    mutating func phase2(_ store: LogDataStore) throws {
        try store.writeSync { a in
            for i in 900..<940 { try a.insert(Self.item(i, version: 3)) }
            for i in 0..<5 { try a.deleteItem(ofType: FixtureUser.self, id: "user-\(i)-é") }
        }
        for i in 900..<940 { items[i] = Self.item(i, version: 3) }
        for start in stride(from: 940, to: 1900, by: 20) {
            try store.writeSync { a in for i in start..<(start + 20) { try a.insert(Self.item(i, version: 4)) } }
            for i in start..<(start + 20) { items[i] = Self.item(i, version: 4) }
        }
        for i in 0..<5 { users["user-\(i)-é"] = nil }
    }

    static func expected() throws -> FormatVersion1Fixture {
        var f = FormatVersion1Fixture()
        let scratch = LogDataStore.inMemory(options: options)
        try scratch.setup()
        try f.phase1(scratch)
        try f.phase2(scratch)
        try scratch.tearDown()
        return f
    }

    func check(_ store: LogDataStore, file: StaticString = #filePath, line: UInt = #line) throws {
        try store.read { a in
            let gotItems = try a.items(forRequest: DataStoreRequest(itemType: FixtureItem.self))
            XCTAssertEqual(gotItems, items.keys.sorted().compactMap { items[$0] }, "FixtureItem", file: file, line: line)
            let gotUsers = try a.items(forRequest: DataStoreRequest(itemType: FixtureUser.self))
            XCTAssertEqual(Dictionary(uniqueKeysWithValues: gotUsers.map { ($0.id, $0) }), users, "FixtureUser", file: file, line: line)
            let gotThings = try a.items(forRequest: DataStoreRequest(itemType: FixtureThing.self))
            XCTAssertEqual(Dictionary(uniqueKeysWithValues: gotThings.map { ($0.id, $0) }), things, "FixtureThing", file: file, line: line)
            XCTAssertEqual(try a.item(ofType: FixtureItem.self, id: 7), items[7], file: file, line: line)
        }
    }
}

final class FormatVersion1FixtureTests: XCTestCase {
    func copyOfFixture(removing: [String] = []) throws -> URL {
        try FormatVersion1Fixture.copy(version: 1, removing: removing, for: self)
    }

    func testWriteFixture() throws {
        guard ProcessInfo.processInfo.environment["LOGSTORE_WRITE_FIXTURE"] == "1" else {
            throw XCTSkip("set LOGSTORE_WRITE_FIXTURE=1 to regenerate Tests/Fixtures/format-v1 (version-1 builds only)")
        }
        try FormatVersion1Fixture.write(to: FormatVersion1Fixture.directory)
    }

    func testFormatVersion1StoreOpensFromItsCheckpoint() throws {
        let expected = try FormatVersion1Fixture.expected()
        let store = LogDataStore(directory: try copyOfFixture(), options: FormatVersion1Fixture.options)
        try store.setup()
        try expected.check(store)
        try store.tearDown()
    }

    func testFormatVersion1StoreOpensByReplayingTheWholeLog() throws {
        let expected = try FormatVersion1Fixture.expected()
        let store = LogDataStore(directory: try copyOfFixture(removing: ["CHECKPOINT"]), options: FormatVersion1Fixture.options)
        try store.setup()
        try expected.check(store)
        try store.tearDown()
    }

    func testFormatVersion1StoreTakesNewWritesAndKeepsThemAcrossReopen() throws {
        var expected = try FormatVersion1Fixture.expected()
        let dir = try copyOfFixture()
        let store = LogDataStore(directory: dir, options: FormatVersion1Fixture.options)
        try store.setup()
        try store.writeSync { a in try a.insert(FormatVersion1Fixture.item(5000, version: 9)) }
        expected.items[5000] = FormatVersion1Fixture.item(5000, version: 9)
        try store.tearDown()
        let again = LogDataStore(directory: dir, options: FormatVersion1Fixture.options)
        try again.setup()
        try expected.check(again)
        try again.tearDown()
    }

    func testFirstOpenUpgradesToFormat4OnceAndKeepsEveryItem() throws {
        let expected = try FormatVersion1Fixture.expected()
        let dir = try copyOfFixture()
        let store = LogDataStore(directory: dir, options: FormatVersion1Fixture.options)
        try store.setup()
        XCTAssertEqual(store.recoveryReport?.upgradedFromVersion, 1)
        try expected.check(store)
        try store.tearDown()
        let m = try ManifestFile.decode(
            [UInt8](try Data(contentsOf: dir.appendingPathComponent("MANIFEST"))), path: "MANIFEST")
        XCTAssertEqual(m.version, ManifestFile.currentVersion)
        XCTAssertNotNil(m.storeId)
        XCTAssertEqual(m.sealed.count, m.segments.count - 1, "every segment but the new tail is sealed")
        let again = LogDataStore(directory: dir, options: FormatVersion1Fixture.options)
        try again.setup()
        XCTAssertNil(again.recoveryReport?.upgradedFromVersion, "upgraded once")
        XCTAssertTrue(again.recoveryReport?.checkpointUsed ?? false, "the close after the upgrade wrote a current checkpoint")
        try expected.check(again)
        try again.tearDown()
    }

    /// A crash (power loss or process crash) at every mutating I/O operation of the upgrade leaves
    /// a store that opens with every item: still version 1 before the MANIFEST rename, version 2
    /// after it.
    func testCrashAtEveryStepOfTheUpgradeLosesNothing() throws {
        let expected = try FormatVersion1Fixture.expected()
        var files: [String: [UInt8]] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: FormatVersion1Fixture.directory.path) where name != "LOCK" {
            files[name] = [UInt8](try Data(contentsOf: FormatVersion1Fixture.directory.appendingPathComponent(name)))
        }
        var o = FormatVersion1Fixture.options
        o.checkpointOnClose = false
        var points = 0
        for k in 0..<64 {
            let fs = FaultInjectingFileSystem()
            try fs.createDirectory(atPath: "/v1")
            try fs.syncDirectory(atPath: "/")
            for (name, bytes) in files {
                let f = try fs.open("/v1/" + name, mode: .createNew)
                try f.write(bytes, at: 0)
                try f.sync()
                try f.close()
            }
            try fs.syncDirectory(atPath: "/v1")
            fs.scheduleCrash(afterMutatingOperations: k)
            let store = LogDataStore(path: "/v1", fileSystem: fs, options: o)
            let crashed: Bool
            do {
                try store.setup()
                crashed = fs.isCrashed
                try? store.tearDown()
            } catch {
                XCTAssertTrue(FaultInjectingFileSystem.isSimulatedCrash(error) || fs.isCrashed, "crash point \(k): \(error)")
                crashed = true
            }
            if !crashed { break }
            points += 1
            for image in [fs.powerLossImage(seed: UInt64(k)), fs.processCrashImage()] {
                let reopened = LogDataStore(path: "/v1", fileSystem: image, options: o)
                try reopened.setup()
                try expected.check(reopened)
                try reopened.tearDown()
            }
        }
        XCTAssertGreaterThan(points, 3, "the upgrade has several I/O steps to crash in")
    }
}
