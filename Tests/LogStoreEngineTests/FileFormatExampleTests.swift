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
        let out = try TransactionEncoder.encode(
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
        // A clear store's encoding throws nothing (only a cipher can).
        return
            (try? TransactionEncoder.encode(
                [.put(type: "User", key: RecordKey(Array("a1".utf8)), value: Self.value)], sequence: 1, meta: MetaTable(), options: options,
                syncedThrough: 48
            ))?.bytes ?? []
    }

    /// Docs/FileFormat.md's worked example (section 12), read from the document itself: each
    /// byte listing equals what the engine writes, so the text cannot drift from the code.
    func testTheDocumentsWorkedExampleIsWhatTheEngineWrites() throws {
        let doc = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Docs/FileFormat.md")
        let text = try String(contentsOf: doc, encoding: .utf8)
        guard let start = text.range(of: "## 12. Worked example"),
            let end = text.range(of: "## 13.", range: start.upperBound..<text.endIndex)
        else { return XCTFail("FileFormat.md has no section 12 followed by section 13") }
        let section = String(text[start.upperBound..<end.lowerBound])
        // Listings: a line ending in ":" names one; its indented lines start with hex bytes.
        var listings: [String: [UInt8]] = [:]
        var current: String? = nil
        for line in section.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("    "), let name = current {
                listings[name, default: []] += leadingHex(line)
            } else if !line.isEmpty {
                current = line.hasSuffix(":") ? String(line.dropLast()) : nil
            }
        }
        let out = encodedExample()
        XCTAssertEqual(listings["Value (18 bytes)"], Self.value)
        XCTAssertEqual(listings["Type define record (14 bytes)"], Array(out[28..<42]))
        XCTAssertEqual(listings["Put record (29 bytes)"].map { $0 + Self.value }, Array(out[42...]))
        XCTAssertEqual(listings["Frame (28 + 43 bytes)"], Array(out[0..<28]))
        // The segment header and MANIFEST's CRC, quoted in the prose.
        let id = StoreID(bytes: Array(0..<16))
        let prose = section.replacingOccurrences(of: "\n", with: " ")
        XCTAssertEqual(quoted(prose, after: "= header `"), SegmentHeader(segment: 1, baseSequence: 1, storeId: id).encoded())
        let manifest = ManifestFile(generation: 1, nextSegment: 2, segments: [1], storeId: id).encoded()
        XCTAssertTrue(prose.contains("`MANIFEST` (\(manifest.count) bytes"), "MANIFEST's size")
        XCTAssertEqual(quoted(prose, after: "ends with the CRC `"), Array(manifest.suffix(4)))
        XCTAssertTrue(prose.contains("48 + 28 + 14 = 90, length 29"), "the put's location")
    }

    /// The hex bytes at the start of `line` (two hex digits each, up to the first other word).
    func leadingHex<S: StringProtocol>(_ line: S) -> [UInt8] {
        var out: [UInt8] = []
        for word in line.split(separator: " ") {
            guard word.count == 2, let b = UInt8(word, radix: 16) else { break }
            out.append(b)
        }
        return out
    }

    /// The hex bytes quoted between `marker` and the next backquote of `text`.
    func quoted(_ text: String, after marker: String) -> [UInt8]? {
        guard let m = text.range(of: marker), let close = text.range(of: "`", range: m.upperBound..<text.endIndex) else { return nil }
        return leadingHex(text[m.upperBound..<close.lowerBound])
    }

    func hex<C: Collection>(_ b: C) -> String where C.Element == UInt8 {
        b.map { String(format: "%02x", $0) }.joined(separator: " ")
    }
}
