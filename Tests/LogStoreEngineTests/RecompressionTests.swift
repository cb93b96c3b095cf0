import Foundation
import XCTest
import _LogStoreTestSupport

@testable import LogStoreEngine

/// The recompression pass: per-type dictionaries trained from samples, records re-encoded once
/// with them, copied as they are afterwards, dictionaries kept while anything uses them and
/// dropped after, and every record read back the same from the mapping, a checkpoint and a full
/// replay.
final class RecompressionTests: XCTestCase {
    static func options() -> LogEngineOptions {
        var o = CT.smallOptions()
        o.segmentSize = 1 << 20
        o.checkpointOnClose = true
        o.autoRecompression = false
        o.dictionaryTrainingMinimumBytes = 64 << 10
        return o
    }

    static let words = [
        "the", "kitchen", "serves", "fresh", "pasta", "with", "basil", "and", "a", "glass", "of", "wine", "every", "evening",
        "near", "harbour", "quiet", "terrace", "friendly", "service", "garden", "market", "morning", "golden",
    ]

    /// A text-heavy value: repeated vocabulary with some variety, as app items have.
    static func value(_ i: Int, vocabulary: [String] = words) -> [UInt8] {
        var rng = SplitMix64(seed: UInt64(i) &* 0x9E37_79B9)
        let text = (0..<40).map { _ in vocabulary[Int(rng.next() % UInt64(vocabulary.count))] }.joined(separator: " ")
        return AttributeValue.map(["id": .int(Int64(i)), "name": .string("Item \(i)"), "text": .string(text)]).encoded()
    }

    func fill(_ e: LogEngine, type: String = "Note", count: Int = 1500, vocabulary: [String] = words) throws -> [RecordKey: [UInt8]] {
        var model: [RecordKey: [UInt8]] = [:]
        for start in stride(from: 0, to: count, by: 100) {
            try e.write { t in
                for i in start..<min(count, start + 100) {
                    let v = Self.value(i, vocabulary: vocabulary)
                    try t.put(type: type, key: CT.key(i), value: v)
                    model[CT.key(i)] = v
                }
            }
        }
        return model
    }

    func records(_ fs: any FileSystem, _ dir: String, _ e: LogEngine) throws -> [RecordCodec.Fields] {
        try e.manifestInfo.segments.flatMap { putRecords(ofSegment: try CT.readFile(fs, segmentPath(dir, $0))) }
    }

    func assertReads(_ e: LogEngine, _ type: String, _ model: [RecordKey: [UInt8]], file: StaticString = #filePath, line: UInt = #line)
        throws
    {
        let snap = try e.snapshot()
        XCTAssertEqual(snap.count(ofType: type), model.count, file: file, line: line)
        for (k, v) in model { XCTAssertEqual(try snap.value(type: type, key: k).map(Array.init), v, file: file, line: line) }
    }

    func testThePassTrainsADictionaryAndShrinksTheRecordsThatPay() throws {
        let fs = InMemoryFileSystem()
        let dir = "/store"
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: Self.options())
        let model = try fill(e)
        let before = e.storageStats().totalBytes
        XCTAssertTrue(try records(fs, dir, e).allSatisfy { $0.codec == .raw }, "writes store values raw")
        let report = try e.recompress()
        XCTAssertTrue(report.performed)
        XCTAssertEqual(report.dictionariesTrained, 1)
        XCTAssertEqual(report.recordsRecompressed, model.count)
        XCTAssertLessThan(report.recompressedBytesAfter * 2, report.recompressedBytesBefore, "\(report)")
        let after = e.storageStats().totalBytes
        XCTAssertLessThan(after * 2, before, "the store is less than half its size (\(after) of \(before) bytes)")
        let records = try records(fs, dir, e)
        XCTAssertTrue(records.allSatisfy { $0.codec == .lz4Dictionary }, "every record compressed with the type's dictionary")
        XCTAssertNotNil(try e.snapshot().index.meta.currentDictionary(ofType: 1))
        try assertReads(e, "Note", model)
        try e.close()
        // From the pass's checkpoint, then from a full replay.
        let fromCheckpoint = try LogEngine.open(directory: dir, fileSystem: fs, options: Self.options())
        XCTAssertTrue(fromCheckpoint.recoveryReport.checkpointUsed)
        try assertReads(fromCheckpoint, "Note", model)
        try fromCheckpoint.close()
        try fs.removeFile(atPath: _joinPath(dir, LogStoreFormat.checkpointFileName))
        let replayed = try LogEngine.open(directory: dir, fileSystem: fs, options: Self.options())
        try assertReads(replayed, "Note", model)
        // A second pass copies every record as it is.
        let second = try replayed.recompress()
        XCTAssertEqual(second.recordsRecompressed, 0, "\(second)")
        XCTAssertEqual(second.dictionariesTrained, 0)
        try assertReads(replayed, "Note", model)
        try replayed.close()
    }

    func testWritesCompressWithTheTypesDictionaryOnceItHasOne() throws {
        let fs = InMemoryFileSystem()
        let dir = "/store"
        var o = Self.options()
        o.compressOnWrite = true
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: o)
        var model = try fill(e)
        let before = try records(fs, dir, e)
        XCTAssertTrue(
            before.allSatisfy { $0.codec != .lz4Dictionary } && before.contains { $0.codec == .lz4 },
            "alone, before the type has a dictionary")
        try e.recompress()
        for i in 5000..<5100 {
            let v = Self.value(i)
            try e.commit([.put(type: "Note", key: CT.key(i), value: v)])
            model[CT.key(i)] = v
        }
        let tail = try CT.readFile(fs, segmentPath(dir, try XCTUnwrap(e.manifestInfo.segments.last)))
        let written = putRecords(ofSegment: tail)
        XCTAssertEqual(written.count, 100)
        XCTAssertTrue(written.allSatisfy { $0.codec == .lz4Dictionary }, "new values compress against the dictionary")
        try assertReads(e, "Note", model)
        try e.close()
        try fs.removeFile(atPath: _joinPath(dir, LogStoreFormat.checkpointFileName))
        let replayed = try LogEngine.open(directory: dir, fileSystem: fs, options: o)
        try assertReads(replayed, "Note", model)
        try replayed.close()
    }

    /// A better dictionary gets a new id; the old one lives while a record uses it and is dropped
    /// by the compaction after the last one went.
    func testAReplacedDictionaryIsDroppedOnceNothingUsesIt() throws {
        let fs = InMemoryFileSystem()
        let dir = "/store"
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: Self.options())
        _ = try fill(e)
        try e.recompress()
        let first = try XCTUnwrap(try e.snapshot().index.meta.currentDictionary(ofType: 1)).id
        // The type's values change completely (another vocabulary): a new dictionary pays.
        let other = (0..<30).map { "w\($0)x\($0 * 7)yz" }
        let model = try fill(e, vocabulary: other)
        let report = try e.recompress()
        XCTAssertEqual(report.dictionariesTrained, 1, "\(report)")
        let meta = try e.snapshot().index.meta
        let second = try XCTUnwrap(meta.currentDictionary(ofType: 1)).id
        XCTAssertGreaterThan(second, first)
        // Nothing uses the first one any more, but it was current when the pass began (a writer
        // may have used it): the pass carried it. The next compaction drops it.
        XCTAssertNotNil(meta.dictionary(first))
        let compaction = try e.compact()
        XCTAssertTrue(compaction.performed, "\(compaction)")
        XCTAssertNil(try e.snapshot().index.meta.dictionary(first))
        XCTAssertNotNil(try e.snapshot().index.meta.dictionary(second))
        try assertReads(e, "Note", model)
        try e.close()
        try fs.removeFile(atPath: _joinPath(dir, LogStoreFormat.checkpointFileName))
        let replayed = try LogEngine.open(directory: dir, fileSystem: fs, options: Self.options())
        XCTAssertNil(try replayed.snapshot().index.meta.dictionary(first))
        try assertReads(replayed, "Note", model)
        try replayed.close()
    }

    /// A damaged dictionary define: a read of a record that uses it is corruption (after the open
    /// refused the damaged segment); salvage keeps every record that does not depend on it.
    func testADamagedDictionaryDefineLosesOnlyTheRecordsThatUseIt() throws {
        let fs = InMemoryFileSystem()
        let dir = "/store"
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: Self.options())
        let notes = try fill(e)
        var others: [RecordKey: [UInt8]] = [:]
        for i in 0..<20 {
            try e.commit([.put(type: "Small", key: CT.key(i), value: [UInt8(i)])])
            others[CT.key(i)] = [UInt8(i)]
        }
        try e.recompress()
        let meta = try e.snapshot().index.meta
        let dictionary = try XCTUnwrap(meta.currentDictionary(ofType: 1))
        let location = try XCTUnwrap(dictionary.location)
        try e.close()
        try fs.removeFile(atPath: _joinPath(dir, LogStoreFormat.checkpointFileName))
        let path = segmentPath(dir, location.segment)
        var bytes = try CT.readFile(fs, path)
        bytes[Int(location.offset) + Int(location.length) / 2] ^= 0x40
        try CT.writeFile(fs, path, bytes)
        XCTAssertThrowsError(try LogEngine.open(directory: dir, fileSystem: fs, options: Self.options())) { error in
            XCTAssertEqual((error as? LogStoreError)?.code, .corruption, "\(error)")
            XCTAssertEqual((error as? LogStoreError)?.path, path)
        }
        var salvage = Self.options()
        salvage.recovery = .salvage
        let s = try LogEngine.open(directory: dir, fileSystem: fs, options: salvage)
        defer { try? s.close() }
        XCTAssertFalse(s.recoveryReport.dropped.isEmpty)
        try assertReads(s, "Small", others)
        XCTAssertLessThan(try s.snapshot().count(ofType: "Note"), notes.count)
    }

    /// With `autoRecompression`, sealed segments of values stored raw are recompressed in the
    /// background once the store is quiet; the tail is left alone.
    func testBackgroundRecompressionRunsWhenTheStoreIsQuiet() throws {
        let fs = InMemoryFileSystem()
        let dir = "/store"
        var o = Self.options()
        o.segmentSize = 64 << 10
        o.autoRecompression = true
        o.autoCompaction = false
        o.compactionMinimumDeadBytes = 1
        o.recompressionIdleDelay = .milliseconds(50)
        let e = try LogEngine.open(directory: dir, fileSystem: fs, options: o)
        defer { try? e.close() }
        let model = try fill(e, count: 2000)
        XCTAssertGreaterThan(e.manifestInfo.segments.count, 3)
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let trained = try e.snapshot().index.meta.currentDictionary(ofType: 1) != nil
            if trained && e.recompressionDue() == .notDue { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        XCTAssertNotNil(try e.snapshot().index.meta.currentDictionary(ofType: 1), "a dictionary was trained in the background")
        XCTAssertEqual(e.recompressionDue(), .notDue)
        let sealed = e.manifestInfo.segments.dropLast()
        let records = try sealed.flatMap { putRecords(ofSegment: try CT.readFile(fs, segmentPath(dir, $0))) }
        XCTAssertTrue(records.contains { $0.codec == .lz4Dictionary })
        try assertReads(e, "Note", model)
    }
}
