import Foundation
import LogStore
import LogStoreEngine
import XCTest

@testable import LogStoreEncryption

/// Spill files of an encrypted store (a large transaction's, a child store's) are sealed under a
/// random key that is never written: a marker string and a binary pattern written through them
/// never appear in the file, while a clear store's spill file shows both (so the search can fail).
final class SpillEncryptionTests: TemporaryDirectoryTestCase {
    static let marker = Array("LOGSTORE-MARKER-7f3a9c".utf8)
    static let pattern: [UInt8] = [0xDE, 0xAD, 0xBE, 0xEF, 0x00, 0x5A, 0xA5, 0xFF, 0x13, 0x37, 0xC0, 0xDE]
    static let cipher: any StoreCipher = try! AESGCMCipher(key: [UInt8](repeating: 0x42, count: 32))

    static func value(_ i: Int) -> [UInt8] {
        Array("item \(i) ".utf8) + marker + pattern + [UInt8](repeating: UInt8(truncatingIfNeeded: i), count: 100)
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        let first = needle[0]
        var i = 0
        while i <= haystack.count - needle.count {
            if haystack[i] == first, Array(haystack[i..<(i + needle.count)]) == needle { return true }
            i += 1
        }
        return false
    }

    /// The bytes of every `*.tmp` file in `dir` whose name starts with `prefix`.
    static func spillBytes(_ dir: URL, prefix: String) throws -> [[UInt8]] {
        try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix(prefix) && $0.hasSuffix(".tmp") }.map {
            [UInt8](try Data(contentsOf: dir.appendingPathComponent($0)))
        }
    }

    func testASealedSpillFileReadsBackAndHidesItsValues() throws {
        for sealed in [false, true] {
            let dir = try newCreatedDirectory()
            let file = try SpillFile(directory: dir.path, fs: POSIXFileSystem(), cipher: sealed ? Self.cipher : nil)
            XCTAssertEqual(file.isSealed, sealed)
            let values = (0..<50).map(Self.value) + [[]]
            var places = try file.append(contentsOf: Array(values[0..<20]))
            places += try file.append(contentsOf: Array(values[20...]))
            for (i, p) in places.enumerated() { XCTAssertEqual(try file.read(offset: p.offset, length: p.length), values[i]) }
            // Backwards too (not the read-ahead path).
            for (i, p) in places.enumerated().reversed() { XCTAssertEqual(try file.read(offset: p.offset, length: p.length), values[i]) }
            let bytes = try Self.spillBytes(dir, prefix: "child-")
            XCTAssertEqual(bytes.count, 1)
            XCTAssertEqual(Self.contains(bytes[0], Self.marker), !sealed, "marker, sealed: \(sealed)")
            XCTAssertEqual(Self.contains(bytes[0], Self.pattern), !sealed, "pattern, sealed: \(sealed)")
        }
    }

    func testADamagedSealedEntryIsCorruption() throws {
        let dir = try newCreatedDirectory()
        let file = try SpillFile(directory: dir.path, fs: POSIXFileSystem(), cipher: Self.cipher)
        let places = try file.append(contentsOf: [Self.value(1), Self.value(2)])
        let name = try FileManager.default.contentsOfDirectory(atPath: dir.path)[0]
        let url = dir.appendingPathComponent(name)
        var bytes = [UInt8](try Data(contentsOf: url))
        // Flip a ciphertext bit of the second entry and fix its CRC: only authentication finds it.
        let body = Int(places[1].offset)
        bytes[body + 8 + 3] ^= 0x10
        let crc = CRC32C.mask(CRC32C.checksum(Array(bytes[body..<(body + 8 + Int(places[1].length) + 16)])))
        withUnsafeBytes(of: crc.littleEndian) { for i in 0..<4 { bytes[body - 8 + i] = $0[i] } }
        try Data(bytes).write(to: url)
        XCTAssertEqual(try file.read(offset: places[0].offset, length: places[0].length), Self.value(1))
        XCTAssertThrowsError(try file.read(offset: places[1].offset, length: places[1].length)) { error in
            let e = error as? LogStoreError
            XCTAssertEqual(e?.code, .corruption)
            XCTAssertEqual(e?.offset, places[1].offset)
            XCTAssertTrue(e?.message.contains("authentication") ?? false, "\(error)")
        }
    }

    static func engineOptions(encrypted: Bool) throws -> LogEngineOptions {
        var o = LogEngineOptions()
        o.durability = .none
        o.transactionSpillThreshold = 4 << 10
        if encrypted { o.encryption = StoreEncryption(cipher: cipher) }
        return o
    }

    func testALargeTransactionsSpillFileIsSealedInAnEncryptedStore() throws {
        for encrypted in [false, true] {
            let dir = try newCreatedDirectory()
            let engine = try LogEngine.open(directory: dir.path, options: try Self.engineOptions(encrypted: encrypted))
            defer { try? engine.close() }
            try engine.write { t in
                for i in 0..<200 { try t.put(type: "Secret", key: RecordKey(Array("k\(i)".utf8)), value: Self.value(i)) }
                XCTAssertTrue(t.hasSpilled)
                let spilled = try Self.spillBytes(dir, prefix: "txn-")
                XCTAssertEqual(spilled.count, 1)
                XCTAssertEqual(Self.contains(spilled[0], Self.marker), !encrypted, "encrypted: \(encrypted)")
                XCTAssertEqual(Self.contains(spilled[0], Self.pattern), !encrypted, "encrypted: \(encrypted)")
                XCTAssertEqual(try t.value(type: "Secret", key: RecordKey(Array("k7".utf8))).map(Array.init), Self.value(7))
            }
            XCTAssertEqual(try Self.spillBytes(dir, prefix: "txn-"), [])
            let snapshot = try engine.snapshot()
            for i in [0, 99, 199] {
                XCTAssertEqual(try snapshot.value(type: "Secret", key: RecordKey(Array("k\(i)".utf8))).map(Array.init), Self.value(i))
            }
        }
    }

    func testAChildStoresSpillFileIsSealedInAnEncryptedStore() throws {
        for encrypted in [false, true] {
            let dir = try newCreatedDirectory()
            var options = LogStoreOptions()
            options.engine = try Self.engineOptions(encrypted: encrypted)
            options.childSpillThreshold = 4 << 10
            let store = LogDataStore(directory: dir, options: options)
            try store.setup()
            let child = try store.makeChildDataStore()
            try child.writeSync { a in
                for i in 0..<100 {
                    try a.insert(Secret(id: "s\(i)", text: String(decoding: Self.marker, as: UTF8.self), blob: Data(Self.pattern)))
                }
            }
            let spilled = try Self.spillBytes(dir, prefix: "child-")
            XCTAssertEqual(spilled.count, 1, "the child spilled")
            XCTAssertEqual(Self.contains(spilled[0], Self.marker), !encrypted, "encrypted: \(encrypted)")
            XCTAssertEqual(Self.contains(spilled[0], Self.pattern), !encrypted, "encrypted: \(encrypted)")
            XCTAssertEqual(try child.read { try $0.item(ofType: Secret.self, id: "s42") }?.blob, Data(Self.pattern))
            try store.merge(child)
            try child.tearDown()
            XCTAssertEqual(try store.read { try $0.item(ofType: Secret.self, id: "s42") }?.blob, Data(Self.pattern))
            try store.tearDown()
        }
    }
}
