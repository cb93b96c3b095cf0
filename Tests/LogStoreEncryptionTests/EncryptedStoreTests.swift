import Foundation
import LogStore
import LogStoreEngine
import XCTest

@testable import LogStoreEncryption

/// An encrypted store end to end: what it writes reveals none of the values, keys or type names
/// written through it, anywhere in its directory or its backup, through commits, compaction,
/// recompression and checkpoints; the same test on a clear store finds them (so it can fail).
final class EncryptedStoreTests: TemporaryDirectoryTestCase {
    static let marker = Array("LOGSTORE-MARKER-7f3a9c".utf8)
    static let pattern: [UInt8] = [0xDE, 0xAD, 0xBE, 0xEF, 0x00, 0x5A, 0xA5, 0xFF, 0x13, 0x37, 0xC0, 0xDE]
    static let typeName = "MarkedSecretType"
    static let key = [UInt8](repeating: 0x42, count: 32)

    static func options(encrypted: Bool) throws -> LogEngineOptions {
        var o = LogEngineOptions()
        o.durability = .none
        o.autoCompaction = false
        o.autoRecompression = false
        o.segmentSize = 64 << 10
        if encrypted { o.encryption = try .aes256GCM(key: key) }
        return o
    }

    static func recordKey(_ i: Int) -> RecordKey { RecordKey(Array("id-\(i)-".utf8) + marker) }

    /// A value with the marker and the pattern, compressible (so that recompression has work).
    static func value(_ i: Int) -> [UInt8] {
        Array("item \(i) ".utf8) + marker + pattern + Array(repeating: UInt8(ascii: "a") + UInt8(i % 7), count: 300)
    }

    /// Every regular file under `dir`, by path.
    static func files(_ dir: URL) -> [String: [UInt8]] {
        var out: [String: [UInt8]] = [:]
        guard let e = FileManager.default.enumerator(at: dir, includingPropertiesForKeys: nil) else { return out }
        for case let url as URL in e where (try? url.resourceValues(forKeys: [.isRegularFileKey]))?.isRegularFile == true {
            out[url.path] = (try? Data(contentsOf: url)).map { [UInt8]($0) }
        }
        return out
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        return Data(haystack).range(of: Data(needle)) != nil
    }

    /// The files under `dir` that hold the marker, the pattern or the type name.
    static func revealing(_ dir: URL) -> [String] {
        files(dir).filter { _, bytes in
            contains(bytes, marker) || contains(bytes, pattern) || contains(bytes, Array(typeName.utf8))
        }.map { $0.key }.sorted()
    }

    func assertAllItems(_ engine: LogEngine, count: Int, deleted: Set<Int>, line: UInt = #line) throws {
        let s = try engine.snapshot()
        XCTAssertEqual(s.count(ofType: Self.typeName), count - deleted.count, line: line)
        for i in 0..<count {
            let v = try s.value(type: Self.typeName, key: Self.recordKey(i)).map(Array.init)
            XCTAssertEqual(v, deleted.contains(i) ? nil : Self.value(i), "item \(i)", line: line)
        }
    }

    func testNothingWrittenRevealsValuesKeysOrTypeNames() throws {
        for encrypted in [false, true] {
            let dir = newDirectory()
            let backup = newDirectory()
            let options = try Self.options(encrypted: encrypted)
            var engine = try LogEngine.open(directory: dir.path, options: options)
            let n = 600
            for batch in 0..<6 {
                try engine.write { t in
                    for i in (batch * 100)..<(batch * 100 + 100) {
                        try t.put(type: Self.typeName, key: Self.recordKey(i), value: Self.value(i))
                    }
                }
            }
            try engine.write { t in
                for i in stride(from: 0, to: n, by: 10) { try t.delete(type: Self.typeName, key: Self.recordKey(i)) }
            }
            let deleted = Set(stride(from: 0, to: n, by: 10))
            try assertAllItems(engine, count: n, deleted: deleted)
            let compaction = try engine.compact()
            XCTAssertGreaterThan(compaction.recordsCopied, 0)
            let recompression = try engine.recompress()
            XCTAssertGreaterThan(recompression.recordsRecompressed, 0, "encrypted: \(encrypted)")
            try assertAllItems(engine, count: n, deleted: deleted)
            try engine.backup(to: backup.path, fileSystem: POSIXFileSystem())
            try engine.close()

            let found = Self.revealing(dir) + Self.revealing(backup)
            if encrypted {
                XCTAssertEqual(found, [], "an encrypted store's files reveal nothing")
            } else {
                XCTAssertFalse(found.isEmpty, "a clear store's files show the marker (the search works)")
            }

            // Reopened (from its checkpoint, then again replaying the whole log), and its backup.
            engine = try LogEngine.open(directory: dir.path, options: options)
            try assertAllItems(engine, count: n, deleted: deleted)
            try engine.write { try $0.put(type: Self.typeName, key: Self.recordKey(0), value: Self.value(0)) }
            try engine.close()
            try FileManager.default.removeItem(at: dir.appendingPathComponent("CHECKPOINT"))
            engine = try LogEngine.open(directory: dir.path, options: options)
            try assertAllItems(engine, count: n, deleted: deleted.subtracting([0]))
            try engine.close()
            let restored = try LogEngine.open(directory: backup.path, options: options)
            try assertAllItems(restored, count: n, deleted: deleted)
            try restored.close()
        }
    }

    /// A changed byte of a sealed record whose checksum was fixed to match: a point read (the
    /// record behind a checkpoint, so no replay sees it first) throws `.corruption` naming the
    /// segment file and the record's offset. The sealed bit cleared is the fuzzers'
    /// `sealed/crash-sealed-bit-cleared`: it must not read as the clear record its ciphertext
    /// happens to parse as.
    func testAChangedByteOfASealedRecordIsCorruptionAtItsOffset() throws {
        // (what to change in the body, what the error says)
        let cases: [(String, (inout [UInt8], Int, Int) -> Void, String)] = [
            ("sealed bit cleared", { b, body, _ in b[body + 1] &= ~0x10 }, "in the clear"),
            ("ciphertext", { b, _, end in b[end - 20] ^= 0x01 }, "authenticate"),
            ("tag", { b, _, end in b[end - 1] ^= 0x80 }, "authenticate"),
            ("counter", { b, body, _ in b[body + 3] ^= 0x01 }, "authenticate"),
        ]
        for (name, change, expected) in cases {
            let dir = newDirectory()
            var options = try Self.options(encrypted: true)
            options.checkpointOnClose = true
            var engine = try LogEngine.open(directory: dir.path, options: options)
            try engine.write { try $0.put(type: Self.typeName, key: Self.recordKey(1), value: Self.value(1)) }
            let location = try XCTUnwrap(try engine.snapshot().location(type: Self.typeName, key: Self.recordKey(1)))
            try engine.close()

            let url = dir.appendingPathComponent(LogStoreFormat.segmentFileName(location.segment))
            var bytes = [UInt8](try Data(contentsOf: url))
            let record = Int(location.offset)
            let end = record + Int(location.length)
            var r = 0
            while bytes[record + r] & 0x80 != 0 { r += 1 }
            let body = record + r + 1 + 4
            XCTAssertEqual(bytes[body + 1] & 0x10, 0x10, "sealed")
            change(&bytes, body, end)
            let crc = CRC32C.mask(CRC32C.checksum(Array(bytes[body..<end])))
            withUnsafeBytes(of: crc.littleEndian) { for i in 0..<4 { bytes[record + r + 1 + i] = $0[i] } }
            try Data(bytes).write(to: url)

            engine = try LogEngine.open(directory: dir.path, options: options)
            XCTAssertTrue(engine.recoveryReport.checkpointUsed, name)
            XCTAssertThrowsError(try engine.snapshot().value(type: Self.typeName, key: Self.recordKey(1)), name) { error in
                let e = error as? LogStoreError
                XCTAssertEqual(e?.code, .corruption, "\(name): \(error)")
                XCTAssertTrue(e?.message.contains(expected) ?? false, "\(name): \(error)")
                XCTAssertEqual(e?.path, url.path, name)
                XCTAssertEqual(e?.offset, UInt64(record), name)
            }
            try engine.close()
        }
    }
}
