import Crypto
import Foundation
import LogStoreEngine
import XCTest

@testable import LogStoreEncryption

/// `AESGCMCipher` against published test vectors (AES-GCM: the GCM specification's AES-256 test
/// cases 13 to 16; HKDF: RFC 5869 A.1 and A.3; HMAC: RFC 4231 case 2), and the store's
/// derivations (key check, epoch MAC, record and run-page keys, nonces and AAD) against answers
/// computed by an independent implementation (Python's `cryptography`, OpenSSL), so that a change
/// to any label, nonce or AAD layout fails here.
final class AESGCMCipherTests: XCTestCase {
    static func hex(_ s: String) -> [UInt8] {
        var out: [UInt8] = []
        var i = s.startIndex
        while i < s.endIndex {
            let j = s.index(i, offsetBy: 2)
            out.append(UInt8(s[i..<j], radix: 16)!)
            i = j
        }
        return out
    }

    static func hex(_ b: [UInt8]) -> String { b.map { String(format: "%02x", $0) }.joined() }

    /// An AES-GCM vector with a 96-bit IV: the nonce `u64le(value) ‖ 0^4` the engine builds must
    /// equal `iv`, so only IVs of that form can go through `AEADKey`; the others go through
    /// swift-crypto directly to check the primitive.
    struct GCMVector {
        var key: String
        var iv: String
        var plaintext: String
        var aad: String
        var ciphertext: String
        var tag: String
    }

    static let gcm: [GCMVector] = [
        // Test case 13: empty plaintext.
        GCMVector(
            key: String(repeating: "0", count: 64), iv: String(repeating: "0", count: 24), plaintext: "", aad: "", ciphertext: "",
            tag: "530f8afbc74536b9a963b4f1c4cb738b"),
        // Test case 14: one zero block.
        GCMVector(
            key: String(repeating: "0", count: 64), iv: String(repeating: "0", count: 24), plaintext: String(repeating: "0", count: 32),
            aad: "", ciphertext: "cea7403d4d606b6e074ec5d3baf39d18", tag: "d0d1c8a799996bf0265b98b5d48ab919"),
        // Test case 15: four blocks, no AAD.
        GCMVector(
            key: "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", iv: "cafebabefacedbaddecaf888",
            plaintext:
                "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255",
            aad: "",
            ciphertext:
                "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad",
            tag: "b094dac5d93471bdec1a502270e3cc6c"),
        // Test case 16: 60 bytes with 20 bytes of AAD.
        GCMVector(
            key: "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", iv: "cafebabefacedbaddecaf888",
            plaintext:
                "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
            aad: "feedfacedeadbeeffeedfacedeadbeefabaddad2",
            ciphertext:
                "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
            tag: "76fc6ece0f4e1768cddf8853bb2d551b"),
    ]

    func testAESGCMMatchesTheSpecificationsVectors() throws {
        for (i, v) in Self.gcm.enumerated() {
            let key = SymmetricKey(data: Self.hex(v.key))
            let box = try AES.GCM.seal(
                Self.hex(v.plaintext), using: key, nonce: try AES.GCM.Nonce(data: Self.hex(v.iv)), authenticating: Self.hex(v.aad))
            XCTAssertEqual(Self.hex(Array(box.ciphertext)), v.ciphertext, "vector \(i) ciphertext")
            XCTAssertEqual(Self.hex(Array(box.tag)), v.tag, "vector \(i) tag")
            // Through AEADKey when the IV has the engine's nonce form (zeros: value 0).
            guard v.iv == String(repeating: "0", count: 24) else { continue }
            let aeadKey = AESGCMKey(key)
            let sealed = try aeadKey.seal(Self.hex(v.plaintext), nonce: .zero, aad: Self.hex(v.aad))
            XCTAssertEqual(Self.hex(sealed), v.ciphertext + v.tag, "vector \(i) through AEADKey")
            XCTAssertEqual(try aeadKey.open(sealed, nonce: .zero, aad: Self.hex(v.aad)), Self.hex(v.plaintext))
        }
    }

    func testHKDFAndHMACMatchTheRFCVectors() throws {
        // RFC 5869 A.1.
        XCTAssertEqual(
            Self.hex(
                AESGCMCipher.hkdf(
                    ikm: [UInt8](repeating: 0x0b, count: 22), salt: Self.hex("000102030405060708090a0b0c"),
                    info: Self.hex("f0f1f2f3f4f5f6f7f8f9"),
                    count: 42)),
            "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
        // RFC 5869 A.3: no salt, no info.
        XCTAssertEqual(
            Self.hex(AESGCMCipher.hkdf(ikm: [UInt8](repeating: 0x0b, count: 22), salt: [], info: [], count: 42)),
            "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8")
        // RFC 4231 case 2.
        XCTAssertEqual(
            Self.hex(
                Array(
                    HMAC<SHA256>.authenticationCode(
                        for: Array("what do ya want for nothing?".utf8), using: SymmetricKey(data: Array("Jefe".utf8))))),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    static let storeKey = [UInt8](0..<32)
    static let storeID = StoreID(bytes: [UInt8](0x10..<0x20))
    static let salt = [UInt8](0xa0..<0xb0)

    func testTheStoresDerivationsMatchAnIndependentImplementation() throws {
        let cipher = try AESGCMCipher(key: Self.storeKey)
        XCTAssertEqual(cipher.algorithmID, StoreCipherAlgorithm.aes256GCM)
        XCTAssertEqual(Self.hex(try StoreCrypto.keyCheck(cipher, storeID: Self.storeID)), "911cfc54abb61fdffc093b1281c24905")
        XCTAssertEqual(
            Self.hex(try StoreCrypto.epochMAC(cipher, storeID: Self.storeID, epoch: 3, salt: Self.salt)), "85c11337e9f6d15c9920b30ed2c24c38"
        )

        // A sealed record of epoch 3, counter 7; its clear header (op, form, epoch, counter) is AAD.
        let recordKey = try StoreCrypto.recordKey(cipher, storeID: Self.storeID, epoch: 3, salt: Self.salt)
        let header: [UInt8] = [0x01, 0x10, 0x03, 0x07]
        let aad = StoreCrypto.recordAAD(storeID: Self.storeID, clearHeader: header)
        let sealed = try recordKey.seal(Array("hello, sealed record".utf8), nonce: StoreCrypto.recordNonce(counter: 7), aad: aad)
        XCTAssertEqual(Self.hex(sealed), "cb9fed8130726bcf2c822c6fa8ad68f59a7af1ed7f7d18a50e6123a33340694ad8f9f61b")
        XCTAssertEqual(try recordKey.open(sealed, nonce: StoreCrypto.recordNonce(counter: 7), aad: aad), Array("hello, sealed record".utf8))

        // Page 2 of run 9.
        let runKey = try StoreCrypto.runKey(cipher, storeID: Self.storeID, runNumber: 9, salt: Self.salt)
        let page = try runKey.seal(
            Array("page body".utf8), nonce: StoreCrypto.pageNonce(page: 2), aad: StoreCrypto.pageAAD(runNumber: 9, page: 2))
        XCTAssertEqual(Self.hex(page), "dea028d846b26191a94c016fa89bac8adadfe966d05134e713")
    }

    func testOpenRefusesEveryChangeAndZeroesItsOutput() throws {
        let key = try AESGCMCipher(key: Self.storeKey).deriveKey(salt: Self.salt, info: Array("test".utf8))
        let plain = [UInt8]((0..<200).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let aad = Array("aad".utf8)
        let sealed = try key.seal(plain, nonce: AEADNonce(5), aad: aad)
        XCTAssertEqual(sealed.count, plain.count + 16)
        XCTAssertEqual(try key.open(sealed, nonce: AEADNonce(5), aad: aad), plain)
        for bit in stride(from: 0, to: sealed.count * 8, by: 13) {
            var bad = sealed
            bad[bit / 8] ^= 1 << (bit % 8)
            XCTAssertNil(try key.open(bad, nonce: AEADNonce(5), aad: aad), "bit \(bit)")
        }
        XCTAssertNil(try key.open(sealed, nonce: AEADNonce(6), aad: aad), "another nonce")
        XCTAssertNil(try key.open(sealed, nonce: AEADNonce(5), aad: Array("aaD".utf8)), "other AAD")
        let other = try AESGCMCipher(key: [UInt8](repeating: 1, count: 32)).deriveKey(salt: Self.salt, info: Array("test".utf8))
        XCTAssertNil(try other.open(sealed, nonce: AEADNonce(5), aad: aad), "another key")

        // The raw API zeroes `out` on failure and checks sizes.
        var out = [UInt8](repeating: 0xEE, count: plain.count)
        var bad = sealed
        bad[0] ^= 1
        let ok = try out.withUnsafeMutableBytes { o in
            try bad.withUnsafeBytes { s in try aad.withUnsafeBytes { a in try key.open(s, nonce: AEADNonce(5), aad: a, into: o) } }
        }
        XCTAssertFalse(ok)
        XCTAssertEqual(out, [UInt8](repeating: 0, count: plain.count))
        XCTAssertThrowsError(
            try out.withUnsafeMutableBytes { o in
                try plain.withUnsafeBytes { p in try aad.withUnsafeBytes { a in try key.seal(p, nonce: .zero, aad: a, into: o) } }
            }
        ) { XCTAssertEqual(($0 as? LogStoreError)?.code, .invalidArgument) }
    }

    func testKeysOfTheWrongLengthAreRefusedWithoutTheirBytes() throws {
        for count in [0, 16, 31, 33, 64] {
            let key = [UInt8](repeating: 0x5A, count: count)
            XCTAssertThrowsError(try AESGCMCipher(key: key)) { error in
                let e = error as? LogStoreError
                XCTAssertEqual(e?.code, .invalidArgument)
                XCTAssertTrue(e?.message.contains("\(count) bytes") ?? false)
                XCTAssertFalse(e?.message.contains("5A") ?? true)
            }
        }
        XCTAssertNoThrow(try AESGCMCipher(key: SymmetricKey(size: .bits256)))
        XCTAssertNoThrow(try StoreEncryption.aes256GCM(key: Data(count: 32), additionalKeys: [[UInt8](repeating: 2, count: 32)]))
    }

    func testRandomKeysAndBytesDiffer() throws {
        let cipher = try AESGCMCipher(key: Self.storeKey)
        XCTAssertEqual(cipher.randomBytes(16).count, 16)
        XCTAssertEqual(cipher.randomBytes(0).count, 0)
        XCTAssertEqual(cipher.randomBytes(37).count, 37)
        XCTAssertNotEqual(cipher.randomBytes(16), cipher.randomBytes(16))
        let a = try cipher.ephemeralKey()
        let b = try cipher.ephemeralKey()
        let sealed = try a.seal([1, 2, 3], nonce: AEADNonce(1), aad: [])
        XCTAssertNotEqual(sealed, try b.seal([1, 2, 3], nonce: AEADNonce(1), aad: []))
        XCTAssertNil(try b.open(sealed, nonce: AEADNonce(1), aad: []))
    }
}
