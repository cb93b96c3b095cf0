// Writes the seed corpora of the fuzz targets (Tests/Fuzz/Corpus/<target>/seed-*) from files the
// engine really writes: segments and manifests of small stores on an InMemoryFileSystem, encoded
// values, and a few scripts. Deterministic; rerun after a format change:
//
//     swift run --package-path Tests/Fuzz fuzz-corpus-seed [CORPUS-DIR]
//
// Every seed starts with the target's mode byte (see FuzzEntryPoints and StoreScriptFuzzing).
import Foundation
import LogStoreEngine
import LogStoreFuzzSupport
import _LogStoreTestSupport

@main
struct SeedCorpus {
    static func main() throws {
        let corpus =
            CommandLine.arguments.count > 1
            ? URL(fileURLWithPath: CommandLine.arguments[1])
            : URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Corpus").standardized
        var written = 0
        func write(_ target: String, _ name: String, _ mode: UInt8, _ bytes: [UInt8]) throws {
            let dir = corpus.appendingPathComponent(target)
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            try Data([mode] + bytes).write(to: dir.appendingPathComponent("seed-" + name))
            written += 1
        }

        // Stores: a small one (one segment) and one that rolled over (three segments).
        let small = try makeStore(rollOver: false)
        let big = try makeStore(rollOver: true)
        let header = 32

        // frame: runs of frames (a segment without its header), plain and with CRC fixing.
        try write("frame", "small-frames", 0, Array(small.segments[0].dropFirst(header)))
        try write("frame", "small-frames-fixcrc", 1, Array(small.segments[0].dropFirst(header)))
        try write("frame", "compressed-frames", 0, Array(big.segments.last!.dropFirst(header).prefix(3000)))
        // Raw record payloads (mode 2): the first frame's payload of the small store.
        let firstPayload = Array(small.segments[0].dropFirst(header + 24).prefix(120))
        try write("frame", "record-payload", 2, firstPayload)
        try write(
            "frame", "record-payload-short", 2, [0x01, 0x01, 0x41, 0x01, 0x07, 0x02, 0x00, 0x00, 0x02, 0x01, 0x41, 0x00, 0x03, 0x01, 0x42])

        // segment: whole segment files as the last segment and as a sealed one, strict and salvage.
        let seg = small.segments[0]
        try write("segment", "last-strict", 0, seg)
        try write("segment", "sealed-strict", 1, seg)
        try write("segment", "last-salvage", 2, seg)
        try write("segment", "sealed-salvage", 3, seg)
        try write("segment", "torn-tail", 0, Array(seg.prefix(seg.count - 7)))
        try write("segment", "body-with-header", 4 | 8, Array(seg.dropFirst(header)))
        try write("segment", "big-segment-tail", 4, Array(big.segments.last!.dropFirst(header).prefix(4000)))
        try write("segment", "empty-header-only", 0, Array(seg.prefix(header)))
        // A tail with zeros preallocated after its last transaction (free space, not damage), and a
        // compacted segment holding frames copied as they were and re-packed ones (format v2, the
        // fuzz target's store id), as the last and as a sealed segment.
        try write("segment", "preallocated-tail", 0, withFuzzStoreID(seg) + [UInt8](repeating: 0, count: 700))
        let compacted = try makeCompactedSegment()
        try write("segment", "compacted-copied-and-repacked", 0, compacted)
        try write("segment", "compacted-sealed", 1, compacted)

        // Format 4 records, frames and dictionaries (built where the engine's package API is).
        for seed in try FuzzEntryPoints.format4Seeds() { try write(seed.target, seed.name, seed.mode, seed.bytes) }

        // manifest: real manifests (one and three segments), with and without CRC fixing.
        try write("manifest", "one-segment", 0, small.manifest)
        try write("manifest", "three-segments", 0, big.manifest)
        try write("manifest", "three-segments-fixcrc-rollover", 1 | 4, big.manifest)
        try write("manifest", "body-only", 2 | 1, Array(big.manifest.dropFirst(8)))

        // checkpoint: real CHECKPOINT files (written on close, version 4), decoded alone and
        // loaded by a store; the target's own store's, made to name that store (mode bit 2). The
        // seeds without "v4" in their names are version 3 checkpoints of earlier builds, kept for
        // the legacy decoder.
        try write("checkpoint", "v4-small", 0, small.checkpoint)
        try write("checkpoint", "v4-small-in-store", 2, small.checkpoint)
        try write("checkpoint", "v4-rolled-over", 0, big.checkpoint)
        try write("checkpoint", "v4-rolled-over-fixcrc-in-store", 3, big.checkpoint)
        try write("checkpoint", "v4-own-store", 2 | 4, try FuzzEntryPoints.checkpointFuzzStoreCheckpoint())
        // Sealed (mode bit 3): a key, then a clear checkpoint whose body the target seals.
        try write("checkpoint", "v4-sealed", 8, [UInt8](0..<32) + small.checkpoint)

        // value: encoded values (mode 0) and value recipes (mode 1).
        let values: [(String, AttributeValue)] = [
            ("null", .null), ("int", .int(-123_456_789)), ("double", .double(3.25)), ("string", .string("caf\u{e9} \u{1f600}")),
            ("bytes", .bytes([0, 1, 2, 255])), ("date", .date(Date(timeIntervalSinceReferenceDate: 12345.5))),
            ("uuid", .uuid(UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)))),
            ("array", .array([.bool(true), .int(1), .string("x"), .array([])])),
            ("map", .map(["id": .int(7), "name": .string("Rice"), "tags": .array([.string("a")]), "z": .map(["k": .null])])),
            ("nested", (0..<20).reduce(AttributeValue.int(1)) { v, _ in .array([v]) }),
        ]
        for (name, v) in values { try write("value", name, 0, v.encoded()) }
        try write("value", "recipe-map", 1, [10, 3, 2, 1, 2, 3, 4, 5, 6, 7, 8, 5, 2, 1, 2, 0, 1, 2, 1, 3])
        try write(
            "value", "recipe-deep", 1,
            [UInt8](repeating: 9, count: 2) + [UInt8](repeating: 0xFF, count: 1) + (0..<140).flatMap { _ in [9, 0xFF] as [UInt8] })
        try write(
            "value", "recipe-scalars", 1,
            [
                9, 7, 2, 1, 2, 3, 4, 5, 6, 7, 8, 4, 0, 0, 0, 0, 0, 0, 0xF8, 0x7F, 6, 3, 1, 2, 3, 8, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
                13, 14, 15, 16, 1, 1, 0,
            ])

        // json: LogStore JSON texts (mode 0) as the SQL backends store items, and value recipes (mode 1).
        let jsonTexts: [(String, String)] = [
            (
                "item",
                #"{"$$k":{"$date":12.5},"a":"caf\u00e9","b":[1,2.5,null,true,false,-0.0,1e+300],"c":{"$uuid":"E621E1F8-C36C-4951-B6B5-7A5F2B6A1C3F"},"d":{"$bytes":"AAH/"},"e":{"$double":"NaN"},"f":{"$string":"cafe\u0301"},"g":{"$date":"-Infinity"},"h":{"$double":"0xfff8000000000000"}}"#
            ),
            ("unsorted-spaces", #" { "b" : [ 1 , { } , [ ] ] , "a" : "\ud83d\ude00\n" } "#),
            ("scalars", #"[-9223372036854775808,9223372036854775807,0.1,5e-324,"",{"$string":"a\u0000b"}]"#),
            ("deep", String(repeating: "[", count: 127) + "1" + String(repeating: "]", count: 127)),
        ]
        for (name, text) in jsonTexts { try write("json", name, 0, Array(text.utf8)) }
        try write("json", "recipe-map", 1, [10, 3, 2, 1, 2, 3, 4, 5, 6, 7, 8, 5, 2, 1, 2, 0, 1, 2, 1, 3])
        try write(
            "json", "recipe-scalars", 1,
            [
                9, 7, 2, 1, 2, 3, 4, 5, 6, 7, 8, 4, 0, 0, 0, 0, 0, 0, 0xF8, 0x7F, 6, 3, 1, 2, 3, 8, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
                13, 14, 15, 16, 1, 1, 0,
            ])

        // ops: DataStore scripts (mode 0 and 2) and engine crash scripts (mode 1 and 3).
        var rng = SplitMix64(seed: 0x5EED)
        for i in 0..<4 { try write("ops", "datastore-random-\(i)", UInt8(i % 2 == 0 ? 0 : 2), rng.bytes(96 + 32 * i)) }
        // makeChild 1, write child, write root, merge each policy, reopen, nuke.
        try write(
            "ops", "datastore-merge", 0,
            [8, 0, 0, 1, 1, 0, 0, 3, 7, 0, 0, 0, 2, 0, 0, 3, 9, 9, 1, 0, 9, 0, 0, 9, 0, 1, 5, 1, 0, 0, 0, 13, 14])
        for i in 0..<4 { try write("ops", "crash-random-\(i)", UInt8(i % 2 == 0 ? 1 : 3), rng.bytes(96 + 32 * i)) }
        try write(
            "ops", "crash-armed", 1, [0, 1, 2, 0, 5, 0, 1, 9, 0, 0, 1, 2, 0, 0, 0, 1, 8, 3, 1, 17, 0, 0, 2, 0, 200, 1, 2, 3, 7, 10, 1, 5])
        // run: run files of every kind and layout, and key lists for the writer.
        for seed in try FuzzEntryPoints.runSeeds() { try write("run", seed.name, seed.mode, seed.bytes) }
        print("wrote \(written) seed files under \(corpus.path)")
    }

    struct Store {
        var manifest: [UInt8]
        var segments: [[UInt8]]
        var checkpoint: [UInt8]
    }

    /// `segment` (a format v2 segment file) with its header rewritten for the store id the segment
    /// fuzz target gives its store (`0x5A` sixteen times), so the target opens it.
    static func withFuzzStoreID(_ segment: [UInt8]) -> [UInt8] {
        // Header v2 (FileFormat.md §5): store id at bytes 24..<40, masked CRC-32C of 0..<44 at 44.
        guard segment.count >= 48 else { return segment }
        var s = segment
        for i in 24..<40 { s[i] = 0x5A }
        let crc = CRC32C.mask(CRC32C.checksum(Array(s[0..<44])))
        withUnsafeBytes(of: crc.littleEndian) { for i in 0..<4 { s[44 + i] = $0[i] } }
        return s
    }

    /// The compacted segment of a store whose first transaction's frame is left half live (so it is
    /// re-packed) and whose later frames are all live (so they are copied as they were).
    static func makeCompactedSegment() throws -> [UInt8] {
        let fs = InMemoryFileSystem()
        var options = LogEngineOptions()
        options.durability = .none
        options.maxFramePayload = 512
        let engine = try LogEngine.open(directory: "/s", fileSystem: fs, options: options)
        try engine.commit((0..<6).map { .put(type: "T", key: RecordKey([UInt8($0)]), value: AttributeValue.int(Int64($0)).encoded()) })
        try engine.commit([
            .delete(type: "T", key: RecordKey([1])), .put(type: "T", key: RecordKey([2]), value: AttributeValue.string("two").encoded()),
        ])
        try engine.commit((10..<40).map { .put(type: "U", key: RecordKey([UInt8($0)]), value: [UInt8](repeating: UInt8($0), count: 40)) })
        let report = try engine.compact()
        try engine.close()
        let f = try fs.open("/s/" + LogStoreFormat.segmentFileName(report.newSegments[0]), mode: .readOnly)
        defer { try? f.close() }
        return withFuzzStoreID(try f.read(at: 0, count: Int(try f.size())))
    }

    /// A store with puts (small, repeated-pattern and large values), deletes and a delete-all.
    static func makeStore(rollOver: Bool) throws -> Store {
        let fs = InMemoryFileSystem()
        var options = LogEngineOptions()
        options.durability = .none
        options.segmentSize = 64 << 10
        let engine = try LogEngine.open(directory: "/s", fileSystem: fs, options: options)
        // A secondary index, so the checkpoint names a secondary run.
        try engine.declareIndexes([IndexDefinition(attributes: [["rating"], ["name"]])], ofType: "Restaurant")
        try engine.commit([
            .put(
                type: "Restaurant", key: RecordKey([1]), value: AttributeValue.map(["name": .string("Rice"), "rating": .int(5)]).encoded())
        ])
        try engine.write { t in
            for i in 2..<6 { try t.put(type: "Restaurant", key: RecordKey([UInt8(i)]), value: AttributeValue.int(Int64(i)).encoded()) }
            try t.put(type: "Note", key: RecordKey(Array("a-long-key-of-20-byte".utf8)), value: [UInt8](repeating: 0x41, count: 400))
        }
        try engine.commit([.delete(type: "Restaurant", key: RecordKey([3])), .deleteAll(type: "Note")])
        if rollOver {
            for i in 0..<40 {
                try engine.commit([
                    .put(type: "Blob", key: RecordKey([UInt8(i)]), value: (0..<3000).map { UInt8(truncatingIfNeeded: $0 * i) })
                ])
            }
        }
        let segments = engine.manifestInfo.segments
        try engine.close()
        func read(_ name: String) throws -> [UInt8] {
            let f = try fs.open("/s/" + name, mode: .readOnly)
            defer { try? f.close() }
            return try f.read(at: 0, count: Int(try f.size()))
        }
        return Store(
            manifest: try read(LogStoreFormat.manifestFileName),
            segments: try segments.map { try read(LogStoreFormat.segmentFileName($0)) },
            checkpoint: try read(LogStoreFormat.checkpointFileName))
    }
}
