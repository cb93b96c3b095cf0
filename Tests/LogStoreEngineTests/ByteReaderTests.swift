import XCTest

@testable import LogStoreEngine

/// `_ByteReader.uvarint` has two paths (unchecked bytes with 10 or more left, checked near the
/// end of a buffer): both must read what `_ByteWriter` wrote and refuse the same bad encodings.
final class ByteReaderTests: XCTestCase {
    func read(_ bytes: [UInt8], padding: Int) -> Result<UInt64, _DecodeError> {
        (bytes + [UInt8](repeating: 0, count: padding)).withUnsafeBytes { buf in
            var r = _ByteReader(buf)
            do throws(_DecodeError) {
                let v = try r.uvarint()
                XCTAssertEqual(r.offset, bytes.count, "consumed bytes of \(bytes)")
                return .success(v)
            } catch {
                return .failure(error)
            }
        }
    }

    func testEveryVarintLengthReadsTheSameNearTheEndOfABufferAndFarFromIt() throws {
        var values: [UInt64] = [0, 1, 0x7F, 0x80, 0x3FFF, 0x4000, UInt64(UInt32.max), UInt64.max - 1, UInt64.max]
        for shift in stride(from: 0, to: 64, by: 7) { values.append(1 << UInt64(shift)) }
        for v in values {
            var w = _ByteWriter()
            w.uvarint(v)
            for padding in [0, 9, 16] { XCTAssertEqual(try read(w.bytes, padding: padding).get(), v, "\(v), padding \(padding)") }
        }
    }

    func testBadVarintsFailOnBothPaths() {
        let tooLong = [UInt8](repeating: 0x80, count: 10) + [0x01]
        let overflowing = [UInt8](repeating: 0xFF, count: 9) + [0x02]
        let cutShort: [UInt8] = [0x80, 0x80]
        for padding in [0, 16] {
            for bad in [tooLong, overflowing] {
                if case .success(let v) = read(bad, padding: padding) { XCTFail("\(bad) read as \(v) with padding \(padding)") }
            }
        }
        if case .success(let v) = read(cutShort, padding: 0) { XCTFail("a varint cut short read as \(v)") }
    }
}
