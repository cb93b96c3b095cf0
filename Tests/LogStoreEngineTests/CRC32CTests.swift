import XCTest

@testable import LogStoreEngine

/// `CRC32C` computes with the CPU's instruction where there is one: it must give the software
/// loop's values for every length and alignment, chained or not.
final class CRC32CTests: XCTestCase {
    func testTheCheckValueOfTheStandard() {
        XCTAssertEqual(CRC32C.checksum(Array("123456789".utf8)), 0xE306_9283)
        XCTAssertEqual(CRC32C.checksum([UInt8]()), 0)
    }

    func testHardwareAndSoftwareAgreeAtEveryLengthAndAlignment() {
        var rng = SplitMix64(seed: 11)
        let bytes = (0..<600).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        bytes.withUnsafeBytes { buf in
            for start in 0..<9 {
                for end in stride(from: start, through: buf.count, by: 7) {
                    let slice = UnsafeRawBufferPointer(rebasing: buf[start..<end])
                    let seed = UInt32(truncatingIfNeeded: rng.next())
                    XCTAssertEqual(CRC32C.update(seed, slice), CRC32C.softwareUpdate(seed, slice), "bytes \(start)..<\(end)")
                }
            }
            // Chaining over a split gives the checksum of the whole.
            let whole = CRC32C.checksum(buf)
            for cut in [0, 1, 8, 13, 599, 600] {
                let first = CRC32C.update(0, UnsafeRawBufferPointer(rebasing: buf[0..<cut]))
                XCTAssertEqual(CRC32C.update(first, UnsafeRawBufferPointer(rebasing: buf[cut...])), whole, "cut at \(cut)")
            }
        }
    }
}
