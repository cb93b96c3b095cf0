import Foundation
import XCTest

@testable import LogStoreEngine

/// The value grammar (Docs/FileFormat.md, "Values"): every type round-trips bit-exactly, and the
/// decoder turns every malformed input into `LogStoreError.corruption` without trapping.
final class AttributeValueTests: XCTestCase {
    func roundTrip(_ v: AttributeValue, file: StaticString = #filePath, line: UInt = #line) throws -> AttributeValue {
        let bytes = v.encoded()
        let back = try AttributeValue.decode(bytes)
        XCTAssertEqual(back.encoded(), bytes, "re-encoding changed the bytes", file: file, line: line)
        return back
    }

    func testNullAndBoolRoundTrip() throws {
        XCTAssertEqual(try roundTrip(.null), .null)
        XCTAssertEqual(try roundTrip(.bool(true)), .bool(true))
        XCTAssertEqual(try roundTrip(.bool(false)), .bool(false))
        XCTAssertEqual(AttributeValue.null.encoded(), [0x00])
        XCTAssertEqual(AttributeValue.bool(false).encoded(), [0x01])
        XCTAssertEqual(AttributeValue.bool(true).encoded(), [0x02])
    }

    func testInt64RoundTripIncludingMinAndMax() throws {
        let values: [Int64] = [
            0, 1, -1, 63, -64, 64, -65, 127, 128, 300, -300, 1 << 31, -(1 << 31), 1 << 62, Int64(Int32.max), .max, .min, .max - 1, .min + 1,
        ]
        for i in values {
            XCTAssertEqual(try roundTrip(.int(i)), .int(i), "\(i)")
        }
        // zigzag: small magnitudes are one byte, the extremes ten.
        XCTAssertEqual(AttributeValue.int(-1).encoded(), [0x03, 0x01])
        XCTAssertEqual(AttributeValue.int(1).encoded(), [0x03, 0x02])
        XCTAssertEqual(AttributeValue.int(.max).encoded().count, 11)
        XCTAssertEqual(AttributeValue.int(.min).encoded().count, 11)
    }

    func testDoubleRoundTripKeepsBitPatterns() throws {
        let values: [Double] = [
            0, -0.0, 1.5, -2.25, .pi, .infinity, -.infinity, .leastNonzeroMagnitude, .greatestFiniteMagnitude,
            .nan, -.nan, Double(nan: 0x1234, signaling: false), .signalingNaN, Double(bitPattern: 0x7FF0_0000_0000_0001),
        ]
        for d in values {
            guard case .double(let back) = try roundTrip(.double(d)) else { return XCTFail("not a double") }
            XCTAssertEqual(back.bitPattern, d.bitPattern, "bits of \(d)")
        }
        guard case .double(let z) = try roundTrip(.double(-0.0)) else { return XCTFail() }
        XCTAssertEqual(z.sign, .minus)
    }

    func testStringRoundTripIncludingEmptyAndNonASCII() throws {
        let strings = [
            "", "a", "héllo wörld", "e\u{301}", "\u{E9}", "日本語のテキスト", "🦊🏳️‍🌈", "nul\u{0}inside", String(repeating: "x", count: 1000),
        ]
        for s in strings {
            guard case .string(let back) = try roundTrip(.string(s)) else { return XCTFail("not a string") }
            // Byte-exact, not merely canonically equal.
            XCTAssertEqual(Array(back.utf8), Array(s.utf8), s)
        }
        XCTAssertEqual(AttributeValue.string("").encoded(), [0x05, 0x00])
    }

    func testBytesDateUUIDRoundTrip() throws {
        for b in [[], [0], [0xFF, 0x00, 0x7F], [UInt8](0...255) + [UInt8](0...255)] as [[UInt8]] {
            XCTAssertEqual(try roundTrip(.bytes(b)), .bytes(b))
        }
        for t in [0, -1e9, 1e9, 123_456.789_012_345, .infinity, -.infinity] as [Double] {
            guard case .date(let d) = try roundTrip(.date(Date(timeIntervalSinceReferenceDate: t))) else { return XCTFail() }
            XCTAssertEqual(d.timeIntervalSinceReferenceDate.bitPattern, t.bitPattern)
        }
        let now = Date()
        guard case .date(let d) = try roundTrip(.date(now)) else { return XCTFail() }
        XCTAssertEqual(d.timeIntervalSinceReferenceDate.bitPattern, now.timeIntervalSinceReferenceDate.bitPattern)
        for u in [
            UUID(), UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)), UUID(uuidString: "F81D4FAE-7DEC-11D0-A765-00A0C91E6BF6")!,
        ] {
            XCTAssertEqual(try roundTrip(.uuid(u)), .uuid(u))
        }
        // RFC 4122 byte order on disk.
        let u = UUID(uuidString: "00112233-4455-6677-8899-AABBCCDDEEFF")!
        XCTAssertEqual(
            AttributeValue.uuid(u).encoded(),
            [0x08] + [0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF])
    }

    func testArrayAndNestedMapRoundTrip() throws {
        let v: AttributeValue = .map([
            "name": .string("Ada"),
            "tags": .array([.string("a"), .int(1), .null, .bool(true), .array([]), .map([:])]),
            "address": .map(["city": .string("Zürich"), "zip": .int(8001), "geo": .array([.double(47.37), .double(8.54)])]),
            "": .bytes([1, 2, 3]),
            "é": .uuid(UUID()),
            "Z": .date(Date(timeIntervalSinceReferenceDate: 42)),
        ])
        XCTAssertEqual(try roundTrip(v), v)
        XCTAssertEqual(v["address"]?["city"], .string("Zürich"))
        XCTAssertEqual(try roundTrip(.array([])), .array([]))
        XCTAssertEqual(try roundTrip(.map([:])), .map([:]))
    }

    func testMapKeysAreWrittenInUTF8ByteOrder() throws {
        let bytes = AttributeValue.map(["b": .null, "a": .null, "é": .null, "Z": .null, "": .null]).encoded()
        // tag, count, then ("" , "Z", "a", "b", "é") by UTF-8 bytes.
        XCTAssertEqual(bytes, [0x0A, 5, 0, 0x00, 1, 0x5A, 0x00, 1, 0x61, 0x00, 1, 0x62, 0x00, 2, 0xC3, 0xA9, 0x00])
    }

    func testDeepestAcceptedNestingRoundTrips() throws {
        var v: AttributeValue = .null
        for _ in 0..<(AttributeValue.maxDepth - 1) { v = .array([v]) }
        XCTAssertEqual(try roundTrip(v), v)
    }

    // MARK: Malformed input

    func assertCorrupt(_ bytes: [UInt8], _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        let e = assertThrowsLogStoreError(.corruption, what, file: file, line: line) { try AttributeValue.decode(bytes) }
        XCTAssertNotNil(e?.offset, "corruption without an offset: \(what)", file: file, line: line)
    }

    func testDecoderRejectsUnknownTag() {
        for tag in [0x0B, 0x0F, 0x7F, 0x80, 0xFF] as [UInt8] { assertCorrupt([tag], "tag \(tag)") }
        assertCorrupt([0x09, 0x01, 0x42], "unknown tag inside an array")
    }

    func testDecoderRejectsEmptyAndTruncatedInput() {
        assertCorrupt([], "empty")
        let full = AttributeValue.map([
            "a": .int(.min), "b": .double(1), "c": .string("héllo"), "d": .bytes([1, 2]),
            "e": .date(Date(timeIntervalSinceReferenceDate: 1)),
            "f": .uuid(UUID()), "g": .array([.int(300), .null]),
        ]).encoded()
        for n in 0..<full.count { assertCorrupt(Array(full.prefix(n)), "prefix of \(n) bytes") }
    }

    func testDecoderRejectsOverlongVarint() {
        // 11 continuation-style bytes: longer than any 64-bit LEB128.
        assertCorrupt([0x03] + [UInt8](repeating: 0x80, count: 10) + [0x01], "11-byte varint")
        // 10 bytes whose last byte carries bits beyond 64.
        assertCorrupt([0x03] + [UInt8](repeating: 0xFF, count: 9) + [0x02], "varint overflowing 64 bits")
        // A length varint that does not fit the buffer.
        assertCorrupt([0x05] + [UInt8](repeating: 0xFF, count: 9) + [0x01], "string length 2^64-1")
        assertCorrupt([0x09, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F], "array count far beyond the buffer")
    }

    func testDecoderRejectsMapKeysNotAscending() {
        assertCorrupt([0x0A, 2, 1, 0x62, 0x00, 1, 0x61, 0x00], "keys b, a")
        assertCorrupt([0x0A, 2, 1, 0x61, 0x00, 1, 0x61, 0x00], "duplicate key a")
        // Code-point order and UTF-16 order differ from UTF-8 byte order for these; bytes rule.
        assertCorrupt([0x0A, 2, 2, 0xC3, 0xA9, 0x00, 1, 0x7A, 0x00], "é before z")
    }

    /// NFD "é" (65 CC 81) and NFC "é" (C3 A9) are ascending by bytes but equal as
    /// Swift strings. Such a map is corruption (FileFormat §8), never a map that silently keeps one.
    func testDecoderRejectsMapKeysEqualAsSwiftStringsButDifferentInBytes() {
        let nfd: [UInt8] = [0x65, 0xCC, 0x81]
        let nfc: [UInt8] = [0xC3, 0xA9]
        XCTAssertEqual(String(decoding: nfd, as: UTF8.self), String(decoding: nfc, as: UTF8.self))
        let map: [UInt8] = [0x0A, 2, 3] + nfd + [0x03, 0x02, 2] + nfc + [0x03, 0x04]
        assertCorrupt(map, "NFD and NFC é as two keys")
        // Nested, and with ASCII keys around them.
        let nested: [UInt8] = [0x0A, 1, 1, 0x61, 0x0A, 3, 1, 0x61, 0x00, 3] + nfd + [0x00, 2] + nfc + [0x00]
        assertCorrupt(nested, "nested NFD and NFC é")
        // KELVIN SIGN (E2 84 AA) is canonically equivalent to ASCII "K".
        assertCorrupt([0x0A, 2, 1, 0x4B, 0x00, 3, 0xE2, 0x84, 0xAA, 0x00], "K and KELVIN SIGN")
        // One of them alone is fine, and the encoder keeps its bytes.
        let single: [UInt8] = [0x0A, 1, 3] + nfd + [0x00]
        XCTAssertEqual((try? AttributeValue.decode(single))?.encoded(), single)
    }

    func testDecoderRejectsNestingTooDeep() {
        let depth = AttributeValue.maxDepth
        var deep: [UInt8] = []
        for _ in 0..<depth { deep += [0x09, 0x01] }
        deep.append(0x00)
        assertCorrupt(deep, "\(depth) nested arrays")
        // Far deeper than the limit must not exhaust the stack either.
        var deeper: [UInt8] = []
        for _ in 0..<100_000 { deeper += [0x0A, 0x01, 0x00] }
        deeper.append(0x00)
        assertCorrupt(deeper, "100000 nested maps")
        // A value nested too deep for the decoder is refused on read, never trusted.
        var v: AttributeValue = .null
        for _ in 0..<(depth + 5) { v = .array([v]) }
        assertCorrupt(v.encoded(), "encoder output nested deeper than maxDepth")
    }

    func testDecoderRejectsTrailingBytes() {
        assertCorrupt([0x00, 0x00], "null then a byte")
        assertCorrupt(AttributeValue.string("x").encoded() + [0x01], "string then a byte")
    }

    func testDecoderRejectsInvalidUTF8() {
        assertCorrupt([0x05, 0x02, 0xC3, 0x28], "invalid UTF-8 string")
        assertCorrupt([0x0A, 0x01, 0x01, 0xFF, 0x00], "invalid UTF-8 map key")
    }

    /// Every single-byte mutation of a valid encoding either decodes or throws `.corruption`;
    /// nothing traps.
    func testEveryByteMutationDecodesOrThrowsCorruption() {
        let v = AttributeValue.map([
            "a": .array([.int(-5), .double(.nan), .string("ü"), .bytes([9, 9]), .map(["x": .bool(true)])]),
            "u": .uuid(UUID()), "d": .date(Date(timeIntervalSinceReferenceDate: 7)),
        ])
        let bytes = v.encoded()
        for i in bytes.indices {
            for mask in [0x01, 0x80, 0xFF, 0x7F] as [UInt8] {
                var m = bytes
                m[i] ^= mask
                do {
                    _ = try AttributeValue.decode(m)
                } catch let e as LogStoreError {
                    XCTAssertEqual(e.code, .corruption)
                } catch {
                    XCTFail("unexpected error \(error)")
                }
            }
        }
    }
}
