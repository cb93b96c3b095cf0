import Foundation
import XCTest

@testable import LogStoreEngine

/// The point-read path: sealed segments and the tail read in place through a
/// mapping, each frame's CRC checked on its first read, compressed frames decompressed only up to
/// the value, and what falls back to `pread`. Run on the real file system (the in-memory one cannot
/// map files; every other engine test covers its `pread` path).
final class ReadPathTests: XCTestCase {
    /// Small segments so that a few hundred records roll over several times.
    func options(compression: Bool = true, cacheSize: Int = 1 << 20) -> LogEngineOptions {
        var o = LogEngineOptions.replayOnly
        o.segmentSize = 64 << 10
        o.maxFramePayload = 2 << 10
        o.compression = compression
        o.cacheSize = cacheSize
        return o
    }

    /// Writes `count` records in transactions of 20 and returns the model. Values are half text,
    /// half noise: LZ4 shrinks frames, but not to nothing.
    func fill(_ e: LogEngine, count: Int = 600, size: Int = 200) throws -> [RecordKey: [UInt8]] {
        var model: [RecordKey: [UInt8]] = [:]
        var rng = SplitMix64(seed: UInt64(count))
        for start in stride(from: 0, to: count, by: 20) {
            try e.write { t in
                for i in start..<min(start + 20, count) {
                    let v = sampleValue(i, size: size / 2) + (0..<(size / 2)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                    try t.put(type: "T", key: key("k\(i)"), value: v)
                    model[key("k\(i)")] = v
                }
            }
        }
        return model
    }

    func assertReads(_ e: LogEngine, _ model: [RecordKey: [UInt8]], file: StaticString = #filePath, line: UInt = #line) throws {
        let snap = try e.snapshot()
        for (k, v) in model {
            XCTAssertEqual(try snap.value(type: "T", key: k).map(Array.init), v, "value of \(k)", file: file, line: line)
            XCTAssertEqual(try snap.withValue(type: "T", key: k) { $0.map(Array.init) }, v, "withValue of \(k)", file: file, line: line)
        }
    }

    func segments(_ e: LogEngine) -> [SegmentFile] {
        e.state.withLock { s in s.log.manifest.segments.compactMap { s.views.head.segments[$0] } }
    }

    /// `forEach` hands out values as slices of shared buffers: slices kept past many buffers
    /// (values large and small, one larger than a buffer) still hold their own value, and a body
    /// that stops stops the walk.
    func testKeptForEachSlicesHoldTheirValuesAcrossBuffers() throws {
        let e = try LogEngine.open(directory: "/s", fileSystem: InMemoryFileSystem(), options: .replayOnly)
        defer { try? e.close() }
        var expected: [RecordKey: [UInt8]] = [:]
        for i in 0..<600 {
            let size = i == 300 ? 20_000 : 1 + (i * 37) % 700
            let value = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i) }
            let key = RecordKey(Array("k\(i)".utf8))
            expected[key] = value
            try e.commit([.put(type: "T", key: key, value: value)])
        }
        let snap = try e.snapshot()
        var kept: [(RecordKey, ArraySlice<UInt8>)] = []
        try snap.forEach(ofType: "T") { k, v in
            kept.append((k, v))
            return true
        }
        XCTAssertEqual(kept.count, expected.count)
        for (k, v) in kept { XCTAssertEqual(Array(v), expected[k], "\(k)") }
        var seen = 0
        try snap.forEach(ofType: "T") { _, _ in
            seen += 1
            return seen < 250
        }
        XCTAssertEqual(seen, 250)
    }

    func testSealedSegmentsAndTheTailAreReadThroughAMapping() throws {
        for compression in [true, false] {
            let h = StoreHarness.posix(self)
            let dir = h.newStorePath()
            let e = try h.open(dir, options: options(compression: compression))
            let model = try fill(e, count: 3_000)
            XCTAssertGreaterThan(segments(e).count, 3, "the test needs several sealed segments")
            try assertReads(e, model)
            for s in segments(e) { XCTAssertNotNil(s.sealedBytes, "segment \(s.number) not mapped") }
            try e.close()
            // Reopened: the segments recovery opened are mapped too.
            let again = try h.open(dir, options: options(compression: compression))
            try assertReads(again, model)
            for s in segments(again) { XCTAssertNotNil(s.sealedBytes, "segment \(s.number) not mapped after reopen") }
            try again.close()
        }
    }

    func testDamageInASealedSegmentIsCorruptionOnItsFirstRead() throws {
        let h = StoreHarness.posix(self)
        let dir = h.newStorePath()
        var e = try h.open(dir, options: options(compression: false))
        let model = try fill(e)
        try e.close()
        e = try h.open(dir, options: options(compression: false))
        defer { try? e.close() }
        // Damage one value in the first (sealed) segment after the store opened, as bit rot would.
        let snap = try e.snapshot()
        let k = key("k3")
        guard let loc = try snap.location(type: "T", key: k) else { return XCTFail("k3 missing") }
        XCTAssertEqual(loc.segment, 1)
        let header = UInt64(LogFrame.headerSizeV2)
        try h.fs.flipByte(segmentPath(dir, 1), at: UInt64(loc.offset) + header + UInt64(loc.legacy & 0x7fff_ffff), mask: 0x20)
        let error = assertThrowsLogStoreError(.corruption) { try snap.value(type: "T", key: k) }
        XCTAssertEqual(error?.path, segmentPath(dir, 1))
        XCTAssertEqual(error?.offset, UInt64(loc.offset))
        // Records of other frames still read.
        for (key, v) in model where try snap.location(type: "T", key: key)?.offset != loc.offset {
            XCTAssertEqual(try snap.value(type: "T", key: key).map(Array.init), v)
        }
    }

    func testATransactionLargerThanTheSegmentSizeIsReadPastTheMapping() throws {
        let h = StoreHarness.posix(self)
        let dir = h.newStorePath()
        let e = try h.open(dir, options: options(compression: false))
        defer { try? e.close() }
        var model = try fill(e, count: 40)
        // 200 values of 1 KiB in one transaction: the tail grows past the 64 KiB it maps.
        try e.write { t in
            for i in 0..<200 {
                let v = sampleValue(10_000 + i, size: 1_000)
                try t.put(type: "T", key: key("big\(i)"), value: v)
                model[key("big\(i)")] = v
            }
        }
        let tail = e.state.withLock { $0.log.tail }
        XCTAssertGreaterThan(try tail.file.size(), UInt64(128 << 10))
        try assertReads(e, model)
    }

    /// A store upgraded from format 3 (the committed format 2 fixture, upgraded when it opens)
    /// keeps its compressed version 2 frames until compaction: their records are read through the
    /// frame, decompressed up to the value, with and without the frame cache, and give the same
    /// bytes as a scan that decompresses whole frames.
    func testLegacyCompressedFramesReadFromAnyOffsetWithAndWithoutTheCache() throws {
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/format-v2")
        for cacheSize in [0, 1 << 20] {
            let h = StoreHarness.posix(self)
            let dir = h.newStorePath()
            try FileManager.default.copyItem(atPath: fixture.path, toPath: dir)
            var o = options(cacheSize: cacheSize)
            o.segmentSize = 64 << 20
            let e = try h.open(dir, options: o)
            defer { try? e.close() }
            XCTAssertEqual(e.recoveryReport.upgradedFromVersion, 3)
            let legacy = segments(e).filter { $0.version == 2 }
            XCTAssertGreaterThan(legacy.count, 1, "the fixture's segments stay version 2")
            let compressed = try legacy.reduce(0) { n, s in
                n + frames(ofSegment: try h.fs.readAll(s.path)).filter(\.header.compressed).count
            }
            XCTAssertGreaterThan(compressed, 10, "the test needs compressed frames")
            let snap = try e.snapshot()
            var checked = 0
            for type in snap.itemTypes {
                var scanned: [RecordKey: [UInt8]] = [:]
                try snap.forEachValue(ofType: type) { k, v in
                    scanned[k] = Array(v)
                    return true
                }
                // Twice: the first reads decompress prefixes, the second finds admitted frames cached.
                for _ in 0..<2 {
                    for (k, v) in scanned {
                        XCTAssertTrue(try XCTUnwrap(snap.location(type: type, key: k)).isLegacy)
                        XCTAssertEqual(try snap.withValue(type: type, key: k) { $0.map(Array.init) }, v)
                        checked += 1
                    }
                }
            }
            XCTAssertGreaterThan(checked, 1000)
            XCTAssertLessThanOrEqual(e.cache.bytesHeld, cacheSize)
        }
    }

    func testASnapshotReadsAMappedSegmentThatCompactionRemoved() throws {
        let h = StoreHarness.posix(self)
        let dir = h.newStorePath()
        let e = try h.open(dir, options: options())
        defer { try? e.close() }
        let model = try fill(e)
        let old = try e.snapshot()
        try assertReads(e, model)
        // Overwrite everything, then compact the sealed segments away.
        _ = try fill(e)
        try e.compact()
        XCTAssertFalse(FileManager.default.fileExists(atPath: segmentPath(dir, 1)) && e.manifestInfo.segments.contains(1))
        for (k, v) in model { XCTAssertEqual(try old.value(type: "T", key: k).map(Array.init), v) }
    }

    func testPartialDecompressionYieldsThePrefixOfTheWholePayload() throws {
        var raw: [UInt8] = []
        for i in 0..<2_000 { raw.append(contentsOf: Array("word\(i % 37) ".utf8)) }
        let block = try XCTUnwrap(raw.withUnsafeBytes { LZ4.compress($0) })
        try block.withUnsafeBytes { buf in
            for prefix in [0, 1, 17, 4_096, raw.count - 1, raw.count, raw.count + 10, .max] {
                let out = try XCTUnwrap(LZ4.decompress(buf, rawLength: raw.count, prefix: prefix), "prefix \(prefix)")
                XCTAssertEqual(out, Array(raw.prefix(prefix)), "prefix \(prefix)")
            }
            // A block that cannot yield what its header announces.
            XCTAssertNil(
                LZ4.decompress(UnsafeRawBufferPointer(rebasing: buf[0..<(buf.count / 2)]), rawLength: raw.count, prefix: raw.count - 1))
        }
    }
}
