import Foundation
import LogStore
import LogStoreEngine
import XCTest

@testable import LogStoreEncryption

/// Keys at open: the key check's choice among the keys offered; a wrong or missing key, or a key
/// for a clear store, refused before anything changes.
final class KeySetupTests: TemporaryDirectoryTestCase {

    static let keyA = [UInt8](repeating: 0xA1, count: 32)
    static let keyB = [UInt8](repeating: 0xB2, count: 32)
    static let storeID = StoreID(bytes: [UInt8](0..<16))

    static func keyBytes(_ c: AESGCMCipher) -> [UInt8] { c.storeKey.withUnsafeBytes { Array($0) } }

    func assertCode(_ code: LogStoreError.Code, line: UInt = #line, _ body: () throws -> Void) {
        XCTAssertThrowsError(try body(), line: line) { XCTAssertEqual(($0 as? LogStoreError)?.code, code, "\($0)", line: line) }
    }

    func testTheKeyCheckSelectsTheStoresKeyAmongThoseOffered() throws {
        let a = try AESGCMCipher(key: Self.keyA)
        let b = try AESGCMCipher(key: Self.keyB)
        let check = try StoreCrypto.keyCheck(a, storeID: Self.storeID)
        let none = StoreCipherAlgorithm.none
        let gcm = StoreCipherAlgorithm.aes256GCM
        let path = "/s/MANIFEST"

        // A clear store: no key is fine, any key is refused (never silently ignored).
        XCTAssertNil(try StoreEncryption.none.select(storeCipher: none, keyCheck: [], storeID: Self.storeID, path: path))
        assertCode(.notEncrypted) {
            _ = try StoreEncryption(cipher: a).select(storeCipher: none, keyCheck: [], storeID: Self.storeID, path: path)
        }
        // Only an old key after an interrupted decryption: the clear store opens.
        XCTAssertNil(
            try StoreEncryption(cipher: nil, additionalCiphers: [a]).select(
                storeCipher: none, keyCheck: [], storeID: Self.storeID, path: path))

        // An encrypted store.
        assertCode(.wrongKey) { _ = try StoreEncryption.none.select(storeCipher: gcm, keyCheck: check, storeID: Self.storeID, path: path) }
        assertCode(.wrongKey) {
            _ = try StoreEncryption(cipher: b).select(storeCipher: gcm, keyCheck: check, storeID: Self.storeID, path: path)
        }
        let chosen = try StoreEncryption(cipher: a).select(storeCipher: gcm, keyCheck: check, storeID: Self.storeID, path: path)
        XCTAssertEqual((chosen as? AESGCMCipher).map(Self.keyBytes), Self.keyA)
        // The new key first, the old one as a fallback: the one whose check matches wins.
        let fallback = try StoreEncryption(cipher: b, additionalCiphers: [a]).select(
            storeCipher: gcm, keyCheck: check, storeID: Self.storeID, path: path)
        XCTAssertEqual((fallback as? AESGCMCipher).map(Self.keyBytes), Self.keyA)
        // The check is bound to the store id: the same key for another store does not match.
        assertCode(.wrongKey) {
            _ = try StoreEncryption(cipher: a).select(
                storeCipher: gcm, keyCheck: check, storeID: StoreID(bytes: [UInt8](1...16)), path: path)
        }
        // A cipher of another construction never matches.
        assertCode(.wrongKey) {
            _ = try StoreEncryption(cipher: a).select(storeCipher: 2, keyCheck: check, storeID: Self.storeID, path: path)
        }
    }

    /// Every file's name and bytes, to show an open changed nothing.
    func contents(_ dir: URL) throws -> [String: Data] {
        var out: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: dir.path) {
            out[name] = try Data(contentsOf: dir.appendingPathComponent(name))
        }
        return out
    }

    func testAKeyForAClearStoreIsRefusedBeforeAnythingChanges() throws {
        let dir = newDirectory()
        let store = LogDataStore(directory: dir)
        try store.setup()
        try store.writeSync { try $0.insert(Secret(id: "a", text: "clear")) }
        try store.tearDown()
        let before = try contents(dir)

        var options = LogStoreOptions()
        options.encryption = try .aes256GCM(key: Self.keyA)
        assertCode(.notEncrypted) { try LogDataStore(directory: dir, options: options).setup() }
        var engineOptions = LogEngineOptions()
        engineOptions.encryption = options.encryption
        assertCode(.notEncrypted) { _ = try LogEngine.open(directory: dir.path, options: engineOptions) }
        XCTAssertEqual(try contents(dir), before, "nothing changed")

        // Without the key it opens as before.
        let again = LogDataStore(directory: dir)
        try again.setup()
        XCTAssertEqual(try again.read { try $0.item(ofType: Secret.self, id: "a") }?.text, "clear")
        try again.tearDown()
    }

    func testAStoreCreatedWithAKeyOpensOnlyWithIt() throws {
        var options = LogEngineOptions()
        options.durability = .none
        options.encryption = try .aes256GCM(key: Self.keyA)
        let dir = newDirectory()
        let engine = try LogEngine.open(directory: dir.path, options: options)
        try engine.write { try $0.put(type: "Secret", key: RecordKey(Array("k".utf8)), value: Array("v".utf8)) }
        try engine.close()
        let before = try contents(dir)

        assertCode(.wrongKey) { _ = try LogEngine.open(directory: dir.path, options: LogEngineOptions()) }
        var wrong = options
        wrong.encryption = try .aes256GCM(key: Self.keyB)
        assertCode(.wrongKey) { _ = try LogEngine.open(directory: dir.path, options: wrong) }
        XCTAssertEqual(try contents(dir), before, "a wrong key changes nothing")

        // The old key offered beside a new one (an interrupted rekey): the store's own is chosen.
        var both = options
        both.encryption = try .aes256GCM(key: Self.keyB, additionalKeys: [Self.keyA])
        let again = try LogEngine.open(directory: dir.path, options: both)
        XCTAssertEqual(try again.snapshot().value(type: "Secret", key: RecordKey(Array("k".utf8))).map(Array.init), Array("v".utf8))
        try again.close()
    }

    func testNonceAADAndInfoLayouts() {
        XCTAssertEqual(AEADNonce(0x0102_0304_0506_0708).bytes, [8, 7, 6, 5, 4, 3, 2, 1, 0, 0, 0, 0])
        XCTAssertEqual(StoreCrypto.pageNonce(page: 0xAABB_CCDD).bytes, [0xDD, 0xCC, 0xBB, 0xAA, 0, 0, 0, 0, 0, 0, 0, 0])
        XCTAssertEqual(StoreCrypto.checkpointNonce.bytes, [UInt8](repeating: 0, count: 12))
        XCTAssertEqual(StoreCrypto.pageAAD(runNumber: 0x0102_0304, page: 5), Array("LS4P".utf8) + [4, 3, 2, 1, 5, 0, 0, 0])
        XCTAssertEqual(
            StoreCrypto.recordAAD(storeID: Self.storeID, clearHeader: [0x01, 0x10]), Array("LS4R".utf8) + Self.storeID.bytes + [0x01, 0x10])
        XCTAssertEqual(
            StoreCrypto.recordKeyInfo(storeID: Self.storeID, epoch: 2),
            Array("LogStore 4 records".utf8) + Self.storeID.bytes + [2, 0, 0, 0])
        XCTAssertEqual(
            StoreCrypto.runKeyInfo(storeID: Self.storeID, runNumber: 3), Array("LogStore 4 run".utf8) + Self.storeID.bytes + [3, 0, 0, 0])
        XCTAssertEqual(StoreCrypto.checkpointKeyInfo(storeID: Self.storeID), Array("LogStore 4 checkpoint".utf8) + Self.storeID.bytes)
        XCTAssertEqual(
            StoreCrypto.epochMACMessage(storeID: Self.storeID, epoch: 1, salt: [9, 9]),
            Array("LS4E".utf8) + Self.storeID.bytes + [1, 0, 0, 0, 9, 9])
        XCTAssertTrue(StoreCrypto.constantTimeEqual([1, 2], [1, 2]))
        XCTAssertFalse(StoreCrypto.constantTimeEqual([1, 2], [1, 3]))
        XCTAssertFalse(StoreCrypto.constantTimeEqual([1, 2], [1]))
    }
}

/// An item holding text that must not reach the disk in the clear.
struct Secret: DataStoreItem, Equatable {
    var id: String
    var text: String
    var blob = Data()
}
