import Foundation
import LogStoreEngine
import LogStoreFuzzSupport
import XCTest
import _LogStoreTestSupport

/// Replays, in the ordinary `swift test`, every input the fuzz targets ever crashed on
/// (Tests/Fuzz/FailCases/<target>/) and every seed of their corpora (Tests/Fuzz/Corpus/<target>/),
/// through the same entry points the libFuzzer targets call (Docs/Fuzzing.md).
/// Each bug found also has a test of its own below, named after what it caught.
final class FuzzFailCaseTests: XCTestCase {
    static let fuzzDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fuzz")

    static let targets: [String: @Sendable ([UInt8]) throws -> Void] = [
        "frame": { b in try b.withUnsafeBytes { try FuzzEntryPoints.frames($0) } },
        "record": { b in try b.withUnsafeBytes { try FuzzEntryPoints.record($0) } },
        "sealed": { b in try b.withUnsafeBytes { try FuzzEntryPoints.sealedRecord($0) } },
        "dict": { b in try b.withUnsafeBytes { try FuzzEntryPoints.dictionary($0) } },
        "segment": { b in try b.withUnsafeBytes { try FuzzEntryPoints.segmentRecovery($0) } },
        "segment4": { b in try b.withUnsafeBytes { try FuzzEntryPoints.segmentRecovery4($0) } },
        "value": { b in try b.withUnsafeBytes { try FuzzEntryPoints.attributeValue($0) } },
        "manifest": { b in try b.withUnsafeBytes { try FuzzEntryPoints.manifest($0) } },
        "checkpoint": { b in try b.withUnsafeBytes { try FuzzEntryPoints.checkpoint($0) } },
        "run": { b in try b.withUnsafeBytes { try FuzzEntryPoints.run($0) } },
        "ops": { b in try StoreScriptFuzzing.run(b) },
        "json": { b in try b.withUnsafeBytes { try FuzzEntryPoints.logStoreJSON($0) } },
    ]

    /// The files of `Tests/Fuzz/<kind>/<target>/`, sorted (none if the directory is missing).
    static func inputs(_ kind: String, _ target: String) throws -> [URL] {
        let dir = fuzzDirectory.appendingPathComponent(kind).appendingPathComponent(target)
        guard FileManager.default.fileExists(atPath: dir.path) else { return [] }
        return try FileManager.default.contentsOfDirectory(at: dir, includingPropertiesForKeys: nil)
            .filter { !$0.lastPathComponent.hasPrefix(".") }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    func replay(_ kind: String) throws -> Int {
        var count = 0
        for (target, run) in Self.targets.sorted(by: { $0.key < $1.key }) {
            for file in try Self.inputs(kind, target) {
                let bytes = [UInt8](try Data(contentsOf: file))
                XCTAssertNoThrow(try run(bytes), "\(kind)/\(target)/\(file.lastPathComponent)")
                count += 1
            }
        }
        return count
    }

    func testEveryRecordedFuzzFailCasePasses() throws {
        _ = try replay("FailCases")
    }

    func testEverySeedOfTheFuzzCorporaPasses() throws {
        let n = try replay("Corpus")
        XCTAssertGreaterThan(n, 20, "the seed corpora are missing (run fuzz-corpus-seed)")
    }

    /// The format 4 seeds (version 4 frames, records, dictionaries) pass their targets. With
    /// LOGSTORE_WRITE_FUZZ_SEEDS=1 they are written into Tests/Fuzz/Corpus as well (the seed
    /// corpus tool writes the same files).
    func testFormat4SeedsPass() throws {
        let seeds = try FuzzEntryPoints.format4Seeds()
        XCTAssertGreaterThan(seeds.count, 20)
        let write = ProcessInfo.processInfo.environment["LOGSTORE_WRITE_FUZZ_SEEDS"] == "1"
        for seed in seeds {
            let bytes = [seed.mode] + seed.bytes
            XCTAssertNoThrow(try Self.targets[seed.target]?(bytes), "\(seed.target)/\(seed.name)")
            // The seeds reach the decoders: a frame or a record the parser accepts.
            seed.bytes.withUnsafeBytes { b in
                if seed.target == "frame" && seed.mode & 3 == 0 {
                    guard case .frame = LogFrame.parse(b, at: 0, version: 4, compacted: seed.mode & 16 != 0) else {
                        return XCTFail("\(seed.name): the first frame does not parse")
                    }
                } else if seed.target == "frame" && seed.mode & 2 != 0 || seed.target == "record" && seed.mode & 1 == 0 {
                    XCTAssertNotNil(try? RecordCodec.parse(b, at: 0), "\(seed.name): the first record does not parse")
                }
            }
            if write {
                let dir = Self.fuzzDirectory.appendingPathComponent("Corpus").appendingPathComponent(seed.target)
                try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
                try Data(bytes).write(to: dir.appendingPathComponent("seed-" + seed.name))
            }
        }
    }

    func run(_ target: String, _ name: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let url = Self.fuzzDirectory.appendingPathComponent("FailCases/\(target)/\(name)")
        let bytes = [UInt8](try Data(contentsOf: url))
        XCTAssertNoThrow(try Self.targets[target]?(bytes), file: file, line: line)
    }

    // MARK: Bugs the fuzzers found

    /// fuzz-frame, FailCases/frame/lz4-raw-length-far-beyond-payload: a CRC-valid compressed
    /// frame of a few bytes announcing a raw length of hundreds of MiB made the decoder allocate
    /// that much before LZ4 failed (libFuzzer: out-of-memory). The parser now rejects raw lengths
    /// beyond LZ4's 255-fold expansion as an invalid frame.
    /// The sealed variants (run mode bit 5, checkpoint mode bit 3: a key, then the bytes) pass
    /// on their seeds and on random keys and bytes, mutated seeds included: random bytes and keys
    /// reach the page and body decryption without a trap or a property violation.
    func testSealedRunAndCheckpointVariantsPassOnSeedsAndRandomInputs() throws {
        let runSeeds = try FuzzEntryPoints.runSeeds()
        let sealedRuns = runSeeds.filter { $0.mode & 0x20 != 0 }
        XCTAssertGreaterThanOrEqual(sealedRuns.count, 3)
        let checkpoint = [UInt8](0..<32) + (try FuzzEntryPoints.checkpointFuzzStoreCheckpoint())
        var inputs: [(String, [UInt8])] = sealedRuns.map { ("run", [$0.mode] + $0.bytes) } + [("checkpoint", [8] + checkpoint)]
        var rng = SplitMix64(seed: 0x5EA1)
        for i in 0..<120 {
            // A clear seed sealed under a random key (run modes 0, 1, 2 with bit 5), or a sealed
            // seed with a few random bytes changed.
            let seed = runSeeds[i % runSeeds.count]
            let key = (0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) }
            var bytes = seed.mode & 0x20 != 0 ? seed.bytes : key + seed.bytes
            for _ in 0..<(i % 4) where !bytes.isEmpty {
                bytes[Int.random(in: 0..<bytes.count, using: &rng)] ^= UInt8.random(in: 1...255, using: &rng)
            }
            inputs.append(("run", [(seed.mode & 0x1F) | 0x20] + bytes))
            var cp = checkpoint
            for _ in 0..<(i % 3) { cp[Int.random(in: 32..<cp.count, using: &rng)] ^= UInt8.random(in: 1...255, using: &rng) }
            inputs.append(("checkpoint", [8] + key + cp.dropFirst(32)))
        }
        for (n, (target, bytes)) in inputs.enumerated() {
            XCTAssertNoThrow(try Self.targets[target]?(bytes), "\(target) input \(n)")
        }
    }

    func testCompressedFrameClaimingMoreThanLZ4CanExpandIsRejectedAsInvalid() throws {
        try run("frame", "lz4-raw-length-far-beyond-payload")
        let fs = InMemoryFileSystem()
        var options = LogEngineOptions.replayOnly
        options.durability = .none
        let engine = try LogEngine.open(directory: "/s", fileSystem: fs, options: options)
        try engine.commit([.put(type: "t", key: RecordKey([1]), value: [1])])
        try engine.close()
        // Append a commit frame (sequence 2) whose one record stores 10 LZ4 bytes claiming 512 MiB
        // of value (format 4 compresses records, not frames; the same check guards them).
        var record: [UInt8] = []
        [UInt8]([2]).withUnsafeBytes { k in
            [UInt8](repeating: 0x1F, count: 10).withUnsafeBytes {
                _ = RecordCodec.appendPut(into: &record, typeID: 1, key: k, stored: $0, codec: .lz4, rawLength: 512 << 20)
            }
        }
        var frame: [UInt8] = []
        record.withUnsafeBytes {
            _ = LogFrame.appendV4(into: &frame, records: $0, recordCount: 1, kind: .commit, sequence: 2, syncedThrough: 48)
        }
        let f = try fs.open("/s/" + LogStoreFormat.segmentFileName(1), mode: .readWrite)
        try f.write(frame, at: try f.size())
        try f.close()

        let reopened = try LogEngine.open(directory: "/s", fileSystem: fs, options: options)
        defer { try? reopened.close() }
        let cut = try XCTUnwrap(reopened.recoveryReport.truncatedTail, "the impossible record is a damaged tail, cut")
        XCTAssertTrue(cut.reason.contains("more than its 10 compressed bytes can hold"), cut.reason)
        XCTAssertEqual(try reopened.snapshot().value(type: "t", key: RecordKey([1])), [1])
    }

    /// The other side of the bound above: the most compressible value there is (zeros) still
    /// reads back after a reopen, so the 255-fold limit never rejects a frame LZ4 really wrote.
    func testHighlyCompressibleValueSurvivesReopen() throws {
        let fs = InMemoryFileSystem()
        var options = LogEngineOptions.replayOnly
        options.durability = .none
        options.maxFramePayload = 1 << 20
        let zeros = [UInt8](repeating: 0, count: 1 << 20)
        let engine = try LogEngine.open(directory: "/s", fileSystem: fs, options: options)
        try engine.commit([.put(type: "t", key: RecordKey([1]), value: zeros)])
        try engine.close()
        let reopened = try LogEngine.open(directory: "/s", fileSystem: fs, options: options)
        defer { try? reopened.close() }
        XCTAssertNil(reopened.recoveryReport.truncatedTail)
        XCTAssertEqual(try reopened.snapshot().value(type: "t", key: RecordKey([1])).map(Array.init), zeros)
    }

    /// fuzz-manifest, FailCases/manifest/format-version-zero-accepted: a MANIFEST with a valid
    /// checksum and format version 0 (which no LogStore writes, and which segment headers refuse)
    /// was accepted. It is now damage (`.corruption`).
    func testManifestWithFormatVersionZeroIsRejectedAsCorruption() throws {
        try run("manifest", "format-version-zero-accepted")
        let fs = InMemoryFileSystem()
        try LogEngine.open(directory: "/s", fileSystem: fs, options: LogEngineOptions.replayOnly).close()
        let f = try fs.open("/s/MANIFEST", mode: .readWrite)
        var bytes = try f.read(at: 0, count: Int(try f.size()))
        bytes[8] = 0
        bytes[9] = 0
        let crc = bytes.withUnsafeBytes { CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<(bytes.count - 4)]))) }
        bytes.replaceSubrange((bytes.count - 4)..., with: le(crc, 4))
        try f.write(bytes, at: 0)
        try f.close()
        XCTAssertThrowsError(try LogEngine.open(directory: "/s", fileSystem: fs, options: LogEngineOptions.replayOnly)) { error in
            XCTAssertEqual((error as? LogStoreError)?.code, .corruption, "\(error)")
        }
    }

    /// fuzz-segment, FailCases/segment/salvage-without-manifest-segment-number-uint32-max: with
    /// no MANIFEST, salvage recovery rebuilt one from the segment files present and computed the
    /// next segment number as the largest + 1, which overflowed (a trap) for a file named
    /// `4294967295.log`. Such a file is now skipped and reported.
    func testSalvageWithoutManifestSkipsSegmentNumberUInt32Max() throws {
        try run("segment", "salvage-without-manifest-segment-number-uint32-max")
        let fs = InMemoryFileSystem()
        var options = LogEngineOptions.replayOnly
        options.durability = .none
        let engine = try LogEngine.open(directory: "/s", fileSystem: fs, options: options)
        try engine.commit([.put(type: "t", key: RecordKey([1]), value: [1])])
        try engine.close()
        try fs.removeFile(atPath: "/s/MANIFEST")
        let stray = try fs.open("/s/" + LogStoreFormat.segmentFileName(UInt32.max), mode: .createOrTruncate)
        try stray.write([1, 2, 3], at: 0)
        try stray.close()
        options.recovery = .salvage
        let salvaged = try LogEngine.open(directory: "/s", fileSystem: fs, options: options)
        defer { try? salvaged.close() }
        XCTAssertEqual(try salvaged.snapshot().value(type: "t", key: RecordKey([1])), [1])
        XCTAssertTrue(
            salvaged.recoveryReport.dropped.contains { $0.reason == "segment number out of range" }, "\(salvaged.recoveryReport.dropped)")
    }

    /// fuzz-ops (engine crash script), FailCases/ops/power-loss-after-process-crash-recovery-loses-replayed-commit:
    /// after a kill -9 during a commit's fdatasync, recovery showed the commit (its bytes were in
    /// the OS cache), and a power loss right after took it away again. Found independently of
    /// the crash harness, which caught it first; fixed in main by 72df190 ("recovery fsyncs the
    /// tail segment and the store directory"). The script replays the exact steps.
    func testPowerLossAfterRecoveryFromAProcessCrashKeepsTheReplayedCommits() throws {
        try run("ops", "power-loss-after-process-crash-recovery-loses-replayed-commit")
    }

    /// fuzz-manifest, FailCases/manifest/roll-over-with-generation-uint64-max: a checksum-valid
    /// MANIFEST whose generation is UInt64.max opened fine, and the first segment roll-over
    /// trapped on `generation + 1` (the same held for nextSegment = UInt32.max). The roll-over
    /// now fails with `.corruption` and commits nothing; the store stays usable.
    func testRollOverWithManifestCountersAtTheirLimitIsCorruptionNotATrap() throws {
        try run("manifest", "roll-over-with-generation-uint64-max")
        for (generation, nextSegment) in [(UInt64.max, UInt32(2)), (UInt64(1), UInt32.max)] {
            let fs = InMemoryFileSystem()
            var options = LogEngineOptions()
            options.durability = .none
            options.segmentSize = 64 << 10
            options.compression = false
            try LogEngine.open(directory: "/s", fileSystem: fs, options: options).close()
            var manifest = try ManifestFile.decode(try fs.readAll("/s/MANIFEST"), path: "/s/MANIFEST")
            manifest.generation = generation
            manifest.nextSegment = nextSegment
            let m = manifest.encoded()
            let f = try fs.open("/s/MANIFEST", mode: .createOrTruncate)
            try f.write(m, at: 0)
            try f.close()

            let engine = try LogEngine.open(directory: "/s", fileSystem: fs, options: options)
            try engine.commit([.put(type: "t", key: RecordKey([1]), value: [1])])
            XCTAssertThrowsError(try engine.commit([.put(type: "t", key: RecordKey([2]), value: [UInt8](repeating: 7, count: 64 << 10))])) {
                error in
                XCTAssertEqual((error as? LogStoreError)?.code, .corruption, "\(error)")
            }
            try engine.commit([.put(type: "t", key: RecordKey([3]), value: [3])])
            try engine.close()
            let reopened = try LogEngine.open(directory: "/s", fileSystem: fs, options: options)
            defer { try? reopened.close() }
            XCTAssertEqual(try reopened.snapshot().keys(ofType: "t").sorted(), [RecordKey([1]), RecordKey([3])])
        }
    }

    /// fuzz-segment, FailCases/segment/commit-after-recovered-sequence-uint64-max: a checksum-valid
    /// commit frame with sequence number UInt64.max recovered fine, and the next commit trapped
    /// on `sequence + 1`. The commit now fails with `.corruption`; the store stays readable.
    func testCommitAfterRecoveringSequenceUInt64MaxIsCorruptionNotATrap() throws {
        try run("segment", "commit-after-recovered-sequence-uint64-max")
        let fs = InMemoryFileSystem()
        var options = LogEngineOptions()
        options.durability = .none
        options.compression = false
        // A format v1 store (v1 sequence rules: any larger number follows) whose segment holds a
        // commit frame (sequence UInt64.max) with put t/01 = [9]: op, type, key, value. Opening
        // upgrades it to v2; the sequence stays at its limit.
        let payload: [UInt8] = [0x01, 0x01, 0x74, 0x01, 0x01, 0x01, 0x09]
        var frame: [UInt8] = [0, 0, 0, 0]
        frame += le(UInt32(payload.count), 4) + [0x02, 0x00, 0, 0] + le(UInt64.max, 8) + le(UInt32(payload.count), 4) + payload
        let crc = frame.withUnsafeBytes { CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[4...]))) }
        frame.replaceSubrange(0..<4, with: le(crc, 4))
        try fs.createDirectory(atPath: "/s")
        let f = try fs.open("/s/" + LogStoreFormat.segmentFileName(1), mode: .createOrTruncate)
        try f.write(SegmentHeader(version: 1, segment: 1, baseSequence: 1).encoded() + frame, at: 0)
        try f.close()
        let m = try fs.open("/s/MANIFEST", mode: .createOrTruncate)
        try m.write(ManifestFile(version: 1, generation: 1, nextSegment: 2, segments: [1]).encoded(), at: 0)
        try m.close()

        let engine = try LogEngine.open(directory: "/s", fileSystem: fs, options: options)
        defer { try? engine.close() }
        XCTAssertEqual(engine.recoveryReport.lastSequence, UInt64.max)
        XCTAssertEqual(try engine.snapshot().value(type: "t", key: RecordKey([1])), [9])
        XCTAssertThrowsError(try engine.commit([.put(type: "t", key: RecordKey([2]), value: [2])])) { error in
            XCTAssertEqual((error as? LogStoreError)?.code, .corruption, "\(error)")
        }
        XCTAssertFalse(try engine.snapshot().contains(type: "t", key: RecordKey([2])))
    }

    /// fuzz-segment, FailCases/segment/segment-number-near-uint32-max-v1-no-header: a format v1
    /// store whose only segment is shorter than a header (torn while being created) opened
    /// once, and then never again. Recovery recreated the header in the current version, with
    /// the v1 store's absent id written as zeros; the upgrade gave the store a new id, and the
    /// next open found a segment "from another store". A recreated header (or a recreated
    /// missing segment) of a v1 store is now a v1 header, and the store opens any number of
    /// times, with its commits.
    func testTornHeaderOfAFormatV1StoreIsRecreatedAsV1AndTheStoreReopens() throws {
        try run("segment", "segment-number-near-uint32-max-v1-no-header")
        for missing in [false, true] {
            let fs = InMemoryFileSystem()
            var options = LogEngineOptions()
            options.durability = .none
            try fs.createDirectory(atPath: "/s")
            if !missing {
                let f = try fs.open("/s/" + LogStoreFormat.segmentFileName(1), mode: .createOrTruncate)
                try f.write([0x4C, 0x53], at: 0)
                try f.close()
            }
            let m = try fs.open("/s/MANIFEST", mode: .createOrTruncate)
            try m.write(ManifestFile(version: 1, generation: 1, nextSegment: 2, segments: [1]).encoded(), at: 0)
            try m.close()
            for round in 0..<3 {
                let engine = try LogEngine.open(directory: "/s", fileSystem: fs, options: options)
                try engine.commit([.put(type: "t", key: RecordKey([UInt8(round)]), value: [UInt8(round)])])
                XCTAssertEqual(try engine.snapshot().count(ofType: "t"), round + 1, "missing: \(missing)")
                try engine.close()
            }
        }
    }

    func le<T: FixedWidthInteger>(_ v: T, _ n: Int) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
}
