import Foundation
import LogStoreEngine
import XCTest
@_exported import _LogStoreTestSupport

/// A deterministic pseudo-random generator (SplitMix64) so fixtures are the same on every run.
/// A real store on disk, written through `LogEngine`, with overwrites, deletes, a delete-all and
/// several 64 KiB segments.
struct StoreFixture {
    let dir: String
    /// Live records per type after all writes.
    let live: [String: Int]
    let lastSequence: UInt64

    static let segmentSize = 64 << 10
    static let created = Date(timeIntervalSinceReferenceDate: 700_000_000.25)

    static func options() -> LogEngineOptions {
        var o = LogEngineOptions.replayOnly
        o.segmentSize = segmentSize
        o.durability = .none
        // One frame per fixture transaction (the scanner tests count frames as transactions).
        o.maxFramePayload = 32 << 10
        // Compressed records too (the tools read both).
        o.compressOnWrite = true
        return o
    }

    /// The file offset of the frame that holds the record at `offset` of segment file `path`
    /// (frames walked by their length fields from the segment header on).
    static func frameStart(ofRecordAt offset: UInt32, in path: String) throws -> UInt64 {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var o = SegmentHeader.sizeV2
        while o + LogFrame.headerSizeV4 <= bytes.count {
            let length = Int(bytes[o + 4]) | Int(bytes[o + 5]) << 8 | Int(bytes[o + 6]) << 16 | Int(bytes[o + 7]) << 24
            let end = o + LogFrame.headerSizeV4 + length
            if Int(offset) >= o && Int(offset) < end { return UInt64(o) }
            o = end
        }
        throw LogStoreError(.corruption, "no frame holds the record", path: path, offset: UInt64(offset))
    }

    static func userKey(_ i: Int) -> RecordKey { RecordKey(Array("u\(i)".utf8)) }
    static func noteKey(_ i: Int) -> RecordKey { RecordKey([0x00, 0xFF] + (0..<14).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i) }) }

    static func user(_ i: Int, round: Int, rng: inout SplitMix64) -> AttributeValue {
        .map([
            "name": .string("user \(i) \u{e9}"),
            "age": .int(Int64(20 + i % 50)),
            "score": .double(Double(i) / 4),
            "flag": .bool(i % 2 == 0),
            "nothing": .null,
            "created": .date(created.addingTimeInterval(Double(i))),
            "id": .uuid(UUID(uuid: (UInt8(i & 0xFF), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, UInt8(round)))),
            "blob": .bytes(rng.bytes(300)),
            "tags": .array([.string("a"), .int(Int64(round))]),
        ])
    }

    /// Writes the fixture into `dir` (which must not exist yet).
    static func build(in dir: String, options: LogEngineOptions = options()) throws -> StoreFixture {
        var rng = SplitMix64(seed: 42)
        let e = try LogEngine.open(directory: dir, options: options)
        // 300 users in 10 transactions, then half of them overwritten, a sixth deleted.
        for t in 0..<10 {
            try e.write { txn in
                for i in (t * 30)..<(t * 30 + 30) {
                    try txn.put(type: "User", key: userKey(i), value: user(i, round: 1, rng: &rng).encoded())
                }
            }
        }
        for t in 0..<5 {
            try e.write { txn in
                for i in (t * 30)..<(t * 30 + 30) {
                    try txn.put(type: "User", key: userKey(i), value: user(i, round: 2, rng: &rng).encoded())
                }
            }
        }
        try e.write { txn in
            for i in 0..<50 { try txn.delete(type: "User", key: userKey(i)) }
        }
        // Notes with binary keys; a type that is written then wiped.
        try e.write { txn in
            for i in 0..<40 {
                try txn.put(
                    type: "Note", key: noteKey(i),
                    value: AttributeValue.map(["text": .string("note \(i)"), "data": .bytes(rng.bytes(64))]).encoded())
            }
        }
        try e.write { txn in
            for i in 0..<20 { try txn.put(type: "Temp", key: RecordKey([UInt8(i)]), value: AttributeValue.int(Int64(i)).encoded()) }
        }
        try e.write { txn in _ = try txn.deleteAll(type: "Temp") }
        try e.write { txn in
            for i in 300..<320 { try txn.put(type: "User", key: userKey(i), value: user(i, round: 1, rng: &rng).encoded()) }
        }
        let seq = try e.snapshot().sequence
        try e.flush()
        try e.close()
        return StoreFixture(dir: dir, live: ["User": 270, "Note": 40], lastSequence: seq)
    }
}

extension XCTestCase {
    /// A fresh path under the temporary directory, removed after the test. Not created.
    func temporaryPath(_ name: String = "store") -> String {
        let base = NSTemporaryDirectory() + "logstore-compact-tests-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        // LOGSTORE_KEEP_TEST_STORES=1 keeps them for a look with the tool.
        if ProcessInfo.processInfo.environment["LOGSTORE_KEEP_TEST_STORES"] == nil {
            addTeardownBlock { try? FileManager.default.removeItem(atPath: base) }
        }
        return base + "/" + name
    }

    /// A new fixture store.
    func makeStore() throws -> StoreFixture {
        try StoreFixture.build(in: temporaryPath())
    }

    /// Segment file names of a store, sorted.
    func segmentFiles(_ dir: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".log") }.sorted()
    }

    /// Every file's name and contents, to prove a command wrote nothing.
    func snapshotFiles(_ dir: String) throws -> [String: Data] {
        var out: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: dir) {
            out[name] = try Data(contentsOf: URL(fileURLWithPath: dir + "/" + name))
        }
        return out
    }

    /// XORs one byte of a file.
    func flipByte(_ path: String, at offset: Int) throws {
        var data = try Data(contentsOf: URL(fileURLWithPath: path))
        data[offset] ^= 0x5A
        try data.write(to: URL(fileURLWithPath: path))
    }

    /// Where a live record is stored that is not in the last segment (damage there is in the
    /// middle of the log, not a torn tail).
    func locationOutsideLastSegment(_ store: StoreFixture) throws -> RecordLocation {
        let e = try LogEngine.open(directory: store.dir, options: StoreFixture.options())
        defer { try? e.close() }
        let last = e.manifestInfo.segments.last
        let s = try e.snapshot()
        let candidates = try s.locations(ofType: "User").map(\.location).filter { $0.segment != last }.sorted {
            ($0.segment, $0.offset) < ($1.segment, $1.offset)
        }
        return try XCTUnwrap(candidates.first, "fixture has no live record outside its last segment")
    }

    /// A live User record in the last frame of a sealed segment (so that nothing of its segment
    /// follows the frame that holds it).
    func locationInTheLastFrameOfASealedSegment(_ store: StoreFixture) throws -> RecordLocation {
        let e = try LogEngine.open(directory: store.dir, options: StoreFixture.options())
        defer { try? e.close() }
        let last = e.manifestInfo.segments.last
        let s = try e.snapshot()
        for loc in try s.locations(ofType: "User").map(\.location).filter({ $0.segment != last }).sorted(by: { $0.offset > $1.offset }) {
            let path = store.dir + "/" + LogStoreFormat.segmentFileName(loc.segment)
            let frame = try StoreFixture.frameStart(ofRecordAt: loc.offset, in: path)
            let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            let length =
                Int(bytes[Int(frame) + 4]) | Int(bytes[Int(frame) + 5]) << 8 | Int(bytes[Int(frame) + 6]) << 16 | Int(bytes[Int(frame) + 7])
                << 24
            if Int(frame) + LogFrame.headerSizeV4 + length == size { return loc }
        }
        throw XCTSkip("fixture has no live record in the last frame of a sealed segment")
    }
}
