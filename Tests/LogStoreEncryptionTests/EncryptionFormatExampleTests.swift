import LogStoreEngine
import XCTest

@testable import LogStoreEncryption

/// The worked example of Docs/FileFormatEncryption.md, byte for byte: a store key, the MANIFEST
/// key check, a key epoch's define and a sealed put, computed by the engine's own code and
/// compared with the bytes the document prints (so the document cannot drift from the format).
final class EncryptionFormatExampleTests: XCTestCase {
    static let storeID = StoreID(bytes: Array(0x00...0x0F))
    static let key = [UInt8](repeating: 0x42, count: 32)
    static let salt = [UInt8](repeating: 0x11, count: 16)

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map { String(format: "%02x", $0) }.joined(separator: " ")
    }

    /// The document's bytes for each part (hex, spaces between bytes).
    static let keyCheck = "fe ed b0 dc 04 a4 20 b2 e2 45 a7 b8 1f b7 97 e1"
    static let epochDefine =
        "24 6f c3 b1 da 10 00 03 01 11 11 11 11 11 11 11 11 11 11 11 11 11 11 11 11 c5 e0 e0 0e 68 5d 35 d0 96 46 10 4e e0 be ce 81"
    static let sealedPut =
        "1a b0 7f 94 2c 01 10 01 00 01 ce b2 4b b6 91 ad fc a6 a0 bc 04 ae 8e 5b a4 1f 2c 66 5a 2a c3"

    func testTheWorkedExampleMatchesTheDocument() throws {
        let cipher = try AESGCMCipher(key: Self.key)
        XCTAssertEqual(Self.hex(try StoreCrypto.keyCheck(cipher, storeID: Self.storeID)), Self.keyCheck)

        let records = RecordCipher(cipher: cipher, storeID: Self.storeID)
        var meta = MetaTable()
        meta.attach(records)
        try records.startWriting(after: meta, salt: Self.salt)
        let epoch = try XCTUnwrap(records.writingEpoch)
        XCTAssertEqual(epoch.id, 1)
        var define: [UInt8] = []
        RecordCodec.appendEpochDefine(into: &define, epoch: epoch)
        XCTAssertEqual(Self.hex(define), Self.epochDefine)
        meta.defineEpoch(epoch)

        // put of type 1, key "a1", value "v1" stored raw: the record's first counter, 0.
        var clear: [UInt8] = []
        Array("a1".utf8).withUnsafeBytes { k in
            Array("v1".utf8).withUnsafeBytes { _ = RecordCodec.appendPut(into: &clear, typeID: 1, key: k, stored: $0) }
        }
        var sealed: [UInt8] = []
        _ = try clear.withUnsafeBytes { try RecordCodec.appendSealed($0, cipher: records, into: &sealed) }
        XCTAssertEqual(Self.hex(sealed), Self.sealedPut)

        // It opens to the clear record's body.
        try sealed.withUnsafeBytes { s in
            let fields = try RecordCodec.parse(s, at: 0)
            XCTAssertTrue(fields.sealed)
            XCTAssertEqual(fields.epoch, 1)
            XCTAssertEqual(fields.counter, 0)
            let value = try RecordCodec.withValue(s, fields, meta: meta, path: nil, offset: 0) { Array($0) }
            XCTAssertEqual(value, Array("v1".utf8))
        }
    }
}
