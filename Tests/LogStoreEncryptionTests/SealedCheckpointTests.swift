import Foundation
import LogStoreEngine
import XCTest

@testable import LogStoreEncryption

/// An encrypted store's CHECKPOINT and run files (Checkpoint4.swift, RunFormat.swift): neither
/// holds a key, an indexed value or a type name in the clear; the store reopens from them; a
/// damaged sealed CHECKPOINT is rejected like a damaged clear one (the log is replayed); and a
/// backup's runs and CHECKPOINT are sealed too.
final class SealedCheckpointTests: TemporaryDirectoryTestCase {
    static let marker = "LOGSTORE-MARKER-7f3a9c"
    static let typeName = "SecretTypeName-Q9"
    static let byTag = IndexDefinition(name: "byTag", attributes: [["tag"]])
    static let storeID = StoreID(bytes: [UInt8](0..<16))

    static func cipher(_ byte: UInt8 = 0x42) throws -> any StoreCipher { try AESGCMCipher(key: [UInt8](repeating: byte, count: 32)) }

    static func options(_ cipher: (any StoreCipher)?) -> LogEngineOptions {
        var o = LogEngineOptions()
        o.durability = .none
        o.checkpointOnClose = true
        o.autoCompaction = false
        o.checkpointInterval = 0
        o.encryption = StoreEncryption(cipher: cipher)
        return o
    }

    static func key(_ i: Int) -> RecordKey { RecordKey(Array("\(marker)-user-\(i)".utf8)) }
    static func value(_ i: Int, round: Int = 0) -> [UInt8] {
        AttributeValue.map(["tag": .string("\(marker)-tag-\((i + round) % 40)"), "n": .int(Int64(i))]).encoded()
    }

    /// A store of `count` items (keys and indexed values holding the marker), closed with a
    /// checkpoint.
    func makeStore(_ dir: URL, cipher: (any StoreCipher)?, count: Int = 3_000) throws {
        let e = try LogEngine.open(directory: dir.path, options: Self.options(cipher))
        try e.declareIndexes([Self.byTag], ofType: Self.typeName)
        _ = try e.commit((0..<count).map { .put(type: Self.typeName, key: Self.key($0), value: Self.value($0)) })
        try e.close()
    }

    /// The bytes of CHECKPOINT and every run file in `dir`.
    static func indexFiles(_ dir: URL) throws -> [String: [UInt8]] {
        var out: [String: [UInt8]] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: dir.path)
        where name.hasSuffix(".run") || name == LogStoreFormat.checkpointFileName {
            out[name] = [UInt8](try Data(contentsOf: dir.appendingPathComponent(name)))
        }
        return out
    }

    func assertEveryItem(_ e: LogEngine, count: Int, round: Int = 0, line: UInt = #line) throws {
        let s = try e.snapshot()
        XCTAssertEqual(try s.keys(ofType: Self.typeName).count, count, line: line)
        for i in stride(from: 0, to: count, by: 1) {
            XCTAssertEqual(
                try s.value(type: Self.typeName, key: Self.key(i)).map(Array.init), Self.value(i, round: i < 10 ? round : 0), line: line)
        }
        XCTAssertEqual(try s.secondaryIndexProblems(), [], line: line)
    }

    func testAnEncryptedStoresRunsAndCheckpointHideKeysValuesAndTypeNames() throws {
        for encrypted in [false, true] {
            let dir = newDirectory()
            let cipher = encrypted ? try Self.cipher() : nil
            try makeStore(dir, cipher: cipher)
            let files = try Self.indexFiles(dir)
            XCTAssertNotNil(files[LogStoreFormat.checkpointFileName])
            XCTAssertGreaterThanOrEqual(files.keys.filter { $0.hasSuffix(".run") }.count, 2, "a primary and a secondary run")
            // Clear: the runs hold the keys and indexed values, CHECKPOINT the type name (so the
            // search can fail); sealed: no file holds either.
            for secret in [Self.marker, Self.typeName] {
                let holders = files.filter { SealedRunTests.contains($0.value, Array(secret.utf8)) }.keys.sorted()
                XCTAssertEqual(holders.isEmpty, encrypted, "\(secret) in \(holders): encrypted \(encrypted)")
            }
            // Reopened with the key: from the checkpoint, every item and index entry.
            let e = try LogEngine.open(directory: dir.path, options: Self.options(cipher))
            XCTAssertTrue(e.recoveryReport.checkpointUsed, e.recoveryReport.checkpointRejectedReason ?? "")
            try assertEveryItem(e, count: 3_000)
            // A few changes: a sealed delta run over the sealed base.
            _ = try e.commit((0..<10).map { .put(type: Self.typeName, key: Self.key($0), value: Self.value($0, round: 1)) })
            try e.close()
            for (name, bytes) in try Self.indexFiles(dir) where encrypted {
                XCTAssertFalse(SealedRunTests.contains(bytes, Array(Self.marker.utf8)), name)
                XCTAssertFalse(SealedRunTests.contains(bytes, Array(Self.typeName.utf8)), name)
            }
            let again = try LogEngine.open(directory: dir.path, options: Self.options(cipher))
            XCTAssertTrue(again.recoveryReport.checkpointUsed, again.recoveryReport.checkpointRejectedReason ?? "")
            try assertEveryItem(again, count: 3_000, round: 1)
            try again.close()
        }
    }

    func testADamagedSealedCheckpointIsRejectedAndTheLogReplayed() throws {
        let cipher = try Self.cipher()
        let dir = newDirectory()
        try makeStore(dir, cipher: cipher, count: 500)
        let path = dir.appendingPathComponent(LogStoreFormat.checkpointFileName)
        let good = [UInt8](try Data(contentsOf: path))
        let bodyAt = CheckpointFileV4.headerSize
        // A changed body byte with the CRC left (the CRC catches it), or made right again (the
        // tag does), a changed salt or header byte (the key or the AAD differ).
        for (what, at, fixCRC) in [
            ("body, CRC left", bodyAt + 5, false), ("body, CRC fixed", bodyAt + 5, true), ("tag, CRC fixed", good.count - 6, true),
            ("salt, CRC fixed", 62, true), ("generation, CRC fixed", 12, true),
        ] {
            var bad = good
            bad[at] ^= 0x04
            if fixCRC {
                let crc = bad.withUnsafeBytes { CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<(bad.count - 4)]))) }
                bad.replaceSubrange((bad.count - 4)..., with: withUnsafeBytes(of: crc.littleEndian, Array.init))
            }
            try Data(bad).write(to: path)
            let e = try LogEngine.open(directory: dir.path, options: Self.options(cipher))
            XCTAssertFalse(e.recoveryReport.checkpointUsed, what)
            XCTAssertNotNil(e.recoveryReport.checkpointRejectedReason, what)
            if fixCRC {
                XCTAssertTrue(
                    e.recoveryReport.checkpointRejectedReason?.contains("authenticate") ?? false,
                    e.recoveryReport.checkpointRejectedReason ?? what)
            }
            try assertEveryItem(e, count: 500)
            // Closing writes a good checkpoint again; put the original back for the next case.
            try e.close()
            try Data(good).write(to: path)
        }
        // A clear CHECKPOINT in an encrypted store (as a clear store writes it) is rejected too.
        let clear = try good.withUnsafeBytes { try CheckpointFileV4.decode($0, cipher: cipher) }.encode()
        try Data(clear).write(to: path)
        let e = try LogEngine.open(directory: dir.path, options: Self.options(cipher))
        XCTAssertFalse(e.recoveryReport.checkpointUsed)
        XCTAssertTrue(
            e.recoveryReport.checkpointRejectedReason?.contains("clear checkpoint") ?? false,
            e.recoveryReport.checkpointRejectedReason ?? "")
        try assertEveryItem(e, count: 500)
        try e.close()
    }

    func testAnEncryptedStoreWithASealedCheckpointStillNeedsItsKey() throws {
        let dir = newDirectory()
        try makeStore(dir, cipher: try Self.cipher(), count: 100)
        for (what, cipher) in [("no key", nil), ("another key", try Self.cipher(0x43))] as [(String, (any StoreCipher)?)] {
            XCTAssertThrowsError(try LogEngine.open(directory: dir.path, options: Self.options(cipher)), what) {
                XCTAssertEqual(($0 as? LogStoreError)?.code, .wrongKey, "\(what): \($0)")
            }
        }
        let e = try LogEngine.open(directory: dir.path, options: Self.options(try Self.cipher()))
        XCTAssertTrue(e.recoveryReport.checkpointUsed)
        try e.close()
    }

    func testASealedCheckpointRoundTripsUnderAFreshSaltEachTime() throws {
        let cipher = try Self.cipher()
        let cp = CheckpointFileV4(
            generation: 3, sequence: 77, createdAtMillis: 1_700_000_000_000, storeId: Self.storeID,
            segments: [CheckpointFile.Segment(number: 1, length: 4096, rawBytes: 1000)],
            indexes: [
                .init(
                    type: Self.typeName, definition: nil,
                    base: RunWitness(runNumber: 1, pageCount: 3, rootPage: 2, entryCount: 10, headerCrc: 0xABCD), delta: nil, entryCount: 10
                )
            ],
            nextRun: 2)
        let a = try cp.encode(sealedWith: cipher)
        let b = try cp.encode(sealedWith: cipher)
        XCTAssertNotEqual(a, b, "each CHECKPOINT has a salt (and key) of its own")
        XCTAssertEqual(a.count, cp.encode().count + StoreCrypto.tagByteCount)
        XCTAssertEqual(a[52], StoreCipherAlgorithm.aes256GCM)
        for bytes in [a, b] {
            XCTAssertEqual(try bytes.withUnsafeBytes { try CheckpointFileV4.decode($0, cipher: cipher) }, cp)
            XCTAssertFalse(SealedRunTests.contains(bytes, Array(Self.typeName.utf8)))
            XCTAssertThrowsError(try bytes.withUnsafeBytes { try CheckpointFileV4.decode($0) })
            XCTAssertThrowsError(try bytes.withUnsafeBytes { try CheckpointFileV4.decode($0, cipher: try Self.cipher(0x43)) })
        }
        XCTAssertTrue(SealedRunTests.contains(cp.encode(), Array(Self.typeName.utf8)), "the search can fail")
        XCTAssertThrowsError(try cp.encode().withUnsafeBytes { try CheckpointFileV4.decode($0, cipher: cipher) })
        XCTAssertEqual(try cp.encode(sealedWith: nil), cp.encode())
    }

    func testABackupOfAnEncryptedStoreIsSealedAndOpensFromItsCheckpoint() throws {
        let cipher = try Self.cipher()
        let dir = newDirectory()
        try makeStore(dir, cipher: cipher, count: 800)
        let backup = newDirectory()
        let e = try LogEngine.open(directory: dir.path, options: Self.options(cipher))
        _ = try e.backup(to: backup.path, fileSystem: POSIXFileSystem(), verification: .open)
        try e.close()
        let files = try Self.indexFiles(backup)
        XCTAssertNotNil(files[LogStoreFormat.checkpointFileName])
        for (name, bytes) in files {
            XCTAssertFalse(SealedRunTests.contains(bytes, Array(Self.marker.utf8)), name)
            XCTAssertFalse(SealedRunTests.contains(bytes, Array(Self.typeName.utf8)), name)
        }
        let b = try LogEngine.open(directory: backup.path, options: Self.options(cipher))
        XCTAssertTrue(b.recoveryReport.checkpointUsed, b.recoveryReport.checkpointRejectedReason ?? "")
        try assertEveryItem(b, count: 800)
        try b.close()
    }
}
