import XCTest

@testable import LogStoreEngine

/// The format 4 record grammar (``RecordCodec``), the define table (``MetaTable``) and the
/// format 4 MANIFEST and segment header, on their own.
final class RecordCodecTests: XCTestCase {
    func parse(_ bytes: [UInt8], checkingCRC: Bool = true) throws -> RecordCodec.Fields {
        try bytes.withUnsafeBytes { b throws(_DecodeError) in try RecordCodec.parse(b, at: 0, checkingCRC: checkingCRC) }
    }

    func testPutRoundTripsInEveryCodec() throws {
        let key: [UInt8] = [0x61, 0x31]
        let value = [UInt8](repeating: 7, count: 300)
        for codec in [RecordCodec.Codec.raw, .lz4, .lz4Dictionary] {
            var out: [UInt8] = [0xEE]  // records are appended after whatever is there
            let stored: [UInt8] = codec == .raw ? value : [1, 2, 3]
            let n = key.withUnsafeBytes { k in
                stored.withUnsafeBytes { v in
                    RecordCodec.appendPut(into: &out, typeID: 3, key: k, stored: v, codec: codec, dictionaryID: 9, rawLength: value.count)
                }
            }
            XCTAssertEqual(n, out.count - 1)
            let f = try parse(Array(out.dropFirst()))
            XCTAssertEqual(f.op, .put)
            XCTAssertEqual(f.codec, codec)
            XCTAssertEqual(f.typeID, 3)
            XCTAssertEqual(f.length, n)
            XCTAssertEqual(f.dictionaryID, codec == .lz4Dictionary ? 9 : 0)
            XCTAssertEqual(f.rawLength, value.count)
            let record = Array(out.dropFirst())
            XCTAssertEqual(Array(record[f.key]), key)
            XCTAssertEqual(Array(record[f.content]), stored)
        }
    }

    func testDeletesAndDefinesRoundTrip() throws {
        var out: [UInt8] = []
        [UInt8]([1, 2]).withUnsafeBytes { _ = RecordCodec.appendDelete(into: &out, typeID: 1, key: $0) }
        let a = out.count
        RecordCodec.appendDeleteAll(into: &out, typeID: 200)
        let b = out.count
        RecordCodec.appendTypeDefine(into: &out, id: 5, name: "User")
        let c = out.count
        [UInt8](repeating: 0x41, count: 1000).withUnsafeBytes {
            _ = RecordCodec.appendDictionaryDefine(into: &out, id: 2, typeID: 5, dictionary: $0)
        }
        let delete = try parse(Array(out[0..<a]))
        XCTAssertEqual(delete.op, .delete)
        XCTAssertEqual(Array(out[delete.key]), [1, 2])
        let all = try parse(Array(out[a..<b]))
        XCTAssertEqual(all.op, .deleteAll)
        XCTAssertEqual(all.typeID, 200)
        let type = try parse(Array(out[b..<c]))
        XCTAssertEqual(type.defineKind, .type)
        XCTAssertEqual(type.defineID, 5)
        XCTAssertEqual(String(decoding: out[b..<c][(b + type.content.lowerBound)..<(b + type.content.upperBound)], as: UTF8.self), "User")
        let dict = try parse(Array(out[c...]))
        XCTAssertEqual(dict.defineKind, .dictionary)
        XCTAssertEqual(dict.defineID, 2)
        XCTAssertEqual(dict.typeID, 5)
        XCTAssertEqual(dict.content.count, 1000)
    }

    /// The bytes of FileFormat.md's worked example: a type define, then a put.
    func testWorkedExampleRecordBytes() throws {
        var out: [UInt8] = []
        RecordCodec.appendTypeDefine(into: &out, id: 1, name: "User")
        XCTAssertEqual(out.count, 14)
        XCTAssertEqual(Array(out[0..<1]), [0x09])
        XCTAssertEqual(Array(out[5...]), [0x10, 0x00, 0x01, 0x01, 0x04, 0x55, 0x73, 0x65, 0x72])
        let value: [UInt8] = [0x0A, 0x02, 0x02, 0x69, 0x64, 0x05, 0x02, 0x61, 0x31, 0x06, 0x72, 0x61, 0x74, 0x69, 0x6E, 0x67, 0x03, 0x0A]
        var put: [UInt8] = []
        [UInt8]([0x61, 0x31]).withUnsafeBytes { k in
            value.withUnsafeBytes { _ = RecordCodec.appendPut(into: &put, typeID: 1, key: k, stored: $0) }
        }
        XCTAssertEqual(put.count, 29)
        XCTAssertEqual(Array(put[0..<1]), [0x18])
        XCTAssertEqual(Array(put[5..<11]), [0x01, 0x00, 0x01, 0x02, 0x61, 0x31])
        XCTAssertEqual(
            CRC32C.mask(CRC32C.checksum(Array(put[5...]))), put.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 1, as: UInt32.self) })
    }

    func testDamageIsRefusedNeverTrapped() throws {
        var out: [UInt8] = []
        [UInt8]([1]).withUnsafeBytes { k in
            [UInt8]([9, 9, 9]).withUnsafeBytes { _ = RecordCodec.appendPut(into: &out, typeID: 1, key: k, stored: $0) }
        }
        // Every single-bit flip fails the checksum (or the size) and is refused.
        for i in 0..<(out.count * 8) {
            var bad = out
            bad[i / 8] ^= 1 << (i % 8)
            XCTAssertThrowsError(try parse(bad), "bit \(i)")
        }
        // Every prefix is refused.
        for n in 0..<out.count { XCTAssertThrowsError(try parse(Array(out[0..<n]))) }
        // Bodies with a valid checksum but wrong fields.
        func record(_ body: [UInt8]) -> [UInt8] {
            var r = [UInt8(body.count)]
            withUnsafeBytes(of: CRC32C.mask(CRC32C.checksum(body)).littleEndian) { r.append(contentsOf: $0) }
            return r + body
        }
        for body: [UInt8] in [
            [0x04, 0x00, 0x01, 0x01, 0x61],  // putAt: not in version 4
            [0x01, 0x20, 0x01, 0x01, 0x61],  // unknown form bit
            [0x01, 0x10, 0x01, 0x01, 0x61],  // sealed, no cipher
            [0x01, 0x03, 0x01, 0x01, 0x61],  // unknown codec
            [0x02, 0x01, 0x01, 0x01, 0x61],  // a compressed delete
            [0x01, 0x00, 0x00, 0x01, 0x61],  // type id 0
            [0x01, 0x00, 0x01, 0x05, 0x61],  // key longer than the body
            [0x02, 0x00, 0x01, 0x01, 0x61, 0x62],  // bytes after a delete
            [0x10, 0x00, 0x01, 0x01, 0x00],  // empty type name
            [0x10, 0x00, 0x02, 0x01, 0x01],  // empty dictionary
            [0x10, 0x00, 0x03, 0x01],  // key epoch, no cipher
            [0x10, 0x00, 0x09, 0x01],  // unknown define kind
        ] {
            XCTAssertThrowsError(try parse(record(body)), "\(body)")
        }
    }

    /// A compressed value whose claimed length LZ4 cannot reach, or that decompresses to another
    /// length, is corruption when read, before anything is allocated for the claim.
    func testAValueThatCannotDecompressToItsLengthIsCorruption() throws {
        for (stored, rawLength) in [([UInt8]([0x01]), 16383), ([0xFF, 0xFF, 0xFF], 100), ([0x10, 0x41], 2)] {
            var out: [UInt8] = []
            [UInt8]([1]).withUnsafeBytes { k in
                stored.withUnsafeBytes {
                    _ = RecordCodec.appendPut(into: &out, typeID: 1, key: k, stored: $0, codec: .lz4, rawLength: rawLength)
                }
            }
            let f = try parse(out)
            XCTAssertEqual(f.rawLength, rawLength)
            XCTAssertThrowsError(
                try out.withUnsafeBytes { try RecordCodec.withValue($0, f, meta: MetaTable(), path: "p", offset: 7) { _ in } }
            ) { e in
                XCTAssertEqual((e as? LogStoreError)?.code, .corruption)
                XCTAssertEqual((e as? LogStoreError)?.offset, 7)
            }
        }
    }

    func testMetaTableRefusesTwoMeaningsForOneID() throws {
        var m = MetaTable()
        try m.defineType(1, name: "A")
        try m.defineType(1, name: "A")  // the same define again (compaction copied it)
        XCTAssertThrowsError(try m.defineType(1, name: "B"))
        XCTAssertThrowsError(try m.defineType(2, name: "A"))
        try m.defineType(5000, name: "Far")
        XCTAssertEqual(m.typeName(5000), "Far")
        XCTAssertEqual(m.typeID(named: "Far"), 5000)
        XCTAssertEqual(m.nextTypeID, 5001)
        let d = DictionaryRef(id: 1, typeID: 1, bytes: [1, 2, 3], location: nil)
        try m.defineDictionary(d)
        XCTAssertEqual(m.currentDictionary(ofType: 1)?.id, 1)
        XCTAssertThrowsError(try m.defineDictionary(DictionaryRef(id: 1, typeID: 1, bytes: [9], location: nil)))
        XCTAssertThrowsError(try m.defineDictionary(DictionaryRef(id: 2, typeID: 77, bytes: [9], location: nil)))
        try m.defineDictionary(DictionaryRef(id: 2, typeID: 1, bytes: [4], location: nil))
        XCTAssertEqual(m.currentDictionary(ofType: 1)?.id, 2, "the newest dictionary becomes current")
        m.retain(DefineRefs(types: [1], dictionaries: [1]))
        XCTAssertNil(m.typeName(5000))
        XCTAssertNil(m.dictionary(2))
        XCTAssertNil(m.currentDictionary(ofType: 1), "the current dictionary went with its define")
        XCTAssertEqual(m.nextTypeID, 2)
    }

    func testDictionaryCompressionRoundTrips() throws {
        let dictionary = Array("the quick brown fox jumps over the lazy dog; ".utf8) + Array(repeating: UInt8(0x20), count: 100)
        let value = Array("the lazy dog jumps over the quick brown fox, and the quick brown fox jumps over the lazy dog".utf8)
        let c = LZ4.DictionaryCompressor(dictionary: dictionary)
        for level in [0, 3, 9] {
            guard let block = value.withUnsafeBytes({ c.compress($0, level: level) }) else { return XCTFail("level \(level): not smaller") }
            var out = [UInt8](repeating: 0, count: value.count)
            let ok = block.withUnsafeBytes { b in
                out.withUnsafeMutableBytes { o in dictionary.withUnsafeBytes { LZ4.decompress(b, into: o, dictionary: $0) } }
            }
            XCTAssertTrue(ok)
            XCTAssertEqual(out, value)
            var short = [UInt8](repeating: 0, count: value.count - 1)
            XCTAssertFalse(
                block.withUnsafeBytes { b in
                    short.withUnsafeMutableBytes { o in dictionary.withUnsafeBytes { LZ4.decompress(b, into: o, dictionary: $0) } }
                })
            // Without its dictionary the block does not decode to the value.
            var alone = [UInt8](repeating: 0, count: value.count)
            let aloneOK = block.withUnsafeBytes { b in alone.withUnsafeMutableBytes { LZ4.decompress(b, into: $0) } }
            XCTAssertFalse(aloneOK && alone == value)
        }
    }

    func testManifestAndSegmentHeaderVersion4RoundTrip() throws {
        let id = StoreID(bytes: Array(0..<16))
        let m = ManifestFile(
            version: 4, generation: 7, nextSegment: 9, segments: [3, 8], storeId: id,
            sealed: [3: ManifestFile.Sealed(length: 100, lastSequence: 4)])
        let decoded = try ManifestFile.decode(m.encoded(), path: "MANIFEST")
        XCTAssertEqual(decoded, m)
        XCTAssertEqual(m.encoded().count, 8 + 2 + 2 + 8 + 4 + 16 + 4 + 16 + 4 + 2 * 20 + 4)
        // An unknown cipher is a store this build cannot open, not damage.
        var bytes = m.encoded()
        bytes[40] = 7
        let crc = CRC32C.mask(CRC32C.checksum(Array(bytes.dropLast(4))))
        withUnsafeBytes(of: crc.littleEndian) { bytes.replaceSubrange((bytes.count - 4)..., with: $0) }
        XCTAssertThrowsError(try ManifestFile.decode(bytes, path: "MANIFEST")) { e in
            XCTAssertEqual((e as? LogStoreError)?.code, .unsupportedFormatVersion)
        }

        let h = SegmentHeader(version: 4, flags: SegmentHeader.flagCompacted, segment: 8, baseSequence: 5, storeId: id)
        let encoded = h.encoded()
        XCTAssertEqual(encoded.count, 48)
        guard case .ok(let back) = encoded.withUnsafeBytes({ SegmentHeader.decode($0) }) else { return XCTFail("header does not decode") }
        XCTAssertEqual(back, h)
        var v3 = encoded
        v3[8] = 3
        guard case .notASegment = v3.withUnsafeBytes({ SegmentHeader.decode($0) }) else {
            return XCTFail("version 3 is no LogStore header")
        }
    }
}
