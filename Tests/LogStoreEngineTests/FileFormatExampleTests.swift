import Foundation
import XCTest

@testable import LogStoreEngine

/// Keeps the worked example in Docs/FileFormat.md true: the bytes below are what the engine writes.
final class FileFormatExampleTests: XCTestCase {
    func testWorkedExampleBytesMatchTheDocumentation() throws {
        let value = AttributeValue.map(["id": .string("a1"), "rating": .int(5)]).encoded()
        XCTAssertEqual(hex(value), "0a 02 02 69 64 05 02 61 31 06 72 61 74 69 6e 67 03 0a")
        var options = LogEngineOptions.replayOnly
        options.compression = false
        let out = TransactionEncoder.encode(
            [.put(type: "User", key: RecordKey(Array("a1".utf8)), value: value)], sequence: 1, options: options, syncedThrough: 48)
        XCTAssertEqual(
            hex(Array(out.bytes[4...])),
            "1c 00 00 00 02 00 00 00 01 00 00 00 00 00 00 00 1c 00 00 00 30 00 00 00 01 04 55 73 65 72 02 61 31 12 0a 02 02 69 64 05 02 61 31 06 72 61 74 69 6e 67 03 0a"
        )
        // The CRC covers bytes 4..< end.
        let crc = out.bytes.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[4...])) }
        XCTAssertEqual(Array(out.bytes[0..<4]), withUnsafeBytes(of: CRC32C.mask(crc).littleEndian) { Array($0) })
        let id = StoreID(bytes: Array(0..<16))
        XCTAssertEqual(
            hex(SegmentHeader(segment: 1, baseSequence: 1, storeId: id).encoded().prefix(44)),
            "89 4c 53 45 47 0d 0a 1a 02 00 00 00 01 00 00 00 01 00 00 00 00 00 00 00 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 00 00 00 00"
        )
    }

    func hex<C: Collection>(_ b: C) -> String where C.Element == UInt8 {
        b.map { String(format: "%02x", $0) }.joined(separator: " ")
    }
}
