import Foundation
import XCTest

@testable import LogStoreEngine

/// Keeps the worked example in Docs/FileFormat.md (section 12, store format 4) true: the bytes
/// below are what the engine writes, checksums included.
final class FileFormatExampleTests: XCTestCase {
    static let value: [UInt8] = AttributeValue.map(["id": .string("a1"), "rating": .int(5)]).encoded()

    func testWorkedExampleBytesMatchTheDocumentation() throws {
        XCTAssertEqual(hex(Self.value), "0a 02 02 69 64 05 02 61 31 06 72 61 74 69 6e 67 03 0a")
        var options = LogEngineOptions.replayOnly
        options.compression = false
        let out = TransactionEncoder.encode(
            [.put(type: "User", key: RecordKey(Array("a1".utf8)), value: Self.value)], sequence: 1, meta: MetaTable(), options: options,
            syncedThrough: 48)
        XCTAssertEqual(out.bytes.count, 28 + 14 + 29)
        // The frame header: CRC of bytes 4..<28 (a normal frame has no sequence table).
        XCTAssertEqual(hex(out.bytes[0..<28]), "b1 4e ea f1 2b 00 00 00 02 00 00 00 01 00 00 00 00 00 00 00 02 00 00 00 30 00 00 00")
        let headerCRC = out.bytes.withUnsafeBytes { CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[4..<28]))) }
        XCTAssertEqual(Array(out.bytes[0..<4]), withUnsafeBytes(of: headerCRC.littleEndian) { Array($0) })
        // The type define, then the put; each record's CRC covers its body.
        XCTAssertEqual(hex(out.bytes[28..<42]), "09 e6 63 62 36 10 00 01 01 04 55 73 65 72")
        XCTAssertEqual(
            hex(out.bytes[42...]),
            "18 1c 8d 37 97 01 00 01 02 61 31 0a 02 02 69 64 05 02 61 31 06 72 61 74 69 6e 67 03 0a")
        for (start, end) in [(28, 42), (42, 71)] {
            let crc = out.bytes.withUnsafeBytes { CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[(start + 5)..<end]))) }
            XCTAssertEqual(Array(out.bytes[(start + 1)..<(start + 5)]), withUnsafeBytes(of: crc.littleEndian) { Array($0) })
        }
        XCTAssertEqual(out.placements[0], RecordLocation(segment: 0, offset: 42, length: 29, sequence: 0))

        let id = StoreID(bytes: Array(0..<16))
        XCTAssertEqual(
            hex(SegmentHeader(segment: 1, baseSequence: 1, storeId: id).encoded()),
            "89 4c 53 45 47 0d 0a 1a 04 00 00 00 01 00 00 00 01 00 00 00 00 00 00 00 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 00 00 00 00 7c a8 c0 83"
        )
        XCTAssertEqual(
            hex(ManifestFile(generation: 1, nextSegment: 2, segments: [1], storeId: id).encoded()),
            "89 4c 53 4d 46 0d 0a 1a 04 00 00 00 01 00 00 00 00 00 00 00 02 00 00 00 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f"
                + " 00 00 00 00" + String(repeating: " 00", count: 16)
                + " 01 00 00 00 01 00 00 00" + String(repeating: " 00", count: 16) + " c2 73 a4 f4")
    }

    /// The engine writes exactly those bytes into a new store, and indexes the put at offset 90.
    func testAStoreHoldsTheWorkedExampleAfterItsHeader() throws {
        let fs = InMemoryFileSystem()
        var options = LogEngineOptions.replayOnly
        options.compression = false
        let engine = try LogEngine.open(directory: "/s", fileSystem: fs, options: options)
        try engine.commit([.put(type: "User", key: RecordKey(Array("a1".utf8)), value: Self.value)])
        let loc = try engine.snapshot().location(type: "User", key: RecordKey(Array("a1".utf8)))
        XCTAssertEqual(loc, RecordLocation(segment: 1, offset: 90, length: 29, sequence: 1))
        try engine.close()
        let segment = try fs.readAll("/s/000001.log")
        XCTAssertEqual(segment.count, 48 + 71)
        XCTAssertEqual(Array(segment[0..<8]), SegmentHeader.magic)
        XCTAssertEqual(segment[8], 4, "segment header version 4")
        XCTAssertEqual(hex(segment[(48 + 28)...]), hex(encodedExample()[28...]))
    }

    func encodedExample() -> [UInt8] {
        var options = LogEngineOptions.replayOnly
        options.compression = false
        return TransactionEncoder.encode(
            [.put(type: "User", key: RecordKey(Array("a1".utf8)), value: Self.value)], sequence: 1, meta: MetaTable(), options: options,
            syncedThrough: 48
        ).bytes
    }

    func hex<C: Collection>(_ b: C) -> String where C.Element == UInt8 {
        b.map { String(format: "%02x", $0) }.joined(separator: " ")
    }
}
