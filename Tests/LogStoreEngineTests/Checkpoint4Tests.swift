import XCTest

@testable import LogStoreEngine

/// The CHECKPOINT 4 codec (``CheckpointFileV4``): what it writes reads back, and what it refuses.
final class Checkpoint4Tests: XCTestCase {
    static let byCity = IndexDefinition(attributes: [["address", "city"], ["rating"]])

    func sample() -> CheckpointFileV4 {
        let w1 = RunWitness(runNumber: 1, pageCount: 40, rootPage: 39, entryCount: 5_000, headerCrc: 0xDEAD_BEEF)
        let w2 = RunWitness(runNumber: 4, pageCount: 3, rootPage: 2, entryCount: 17, headerCrc: 7)
        let w3 = RunWitness(runNumber: 3, pageCount: 12, rootPage: 11, entryCount: 5_000, headerCrc: 9)
        return CheckpointFileV4(
            generation: 3, sequence: 812, createdAtMillis: 1_700_000_000_000, storeId: StoreID(bytes: Array(1...16)),
            segments: [
                .init(number: 2, length: 1 << 20, rawBytes: 900_000), .init(number: 5, length: 4_096, rawBytes: 1_000),
            ],
            indexes: [
                .init(type: "User", definition: nil, base: w1, delta: w2, entryCount: 5_010),
                .init(type: "User", definition: Self.byCity, base: w3, delta: nil, entryCount: 5_010),
                .init(type: "Empty", definition: Self.byCity, base: nil, delta: nil, entryCount: 0),
            ],
            nextRun: 5)
    }

    func decode(_ bytes: [UInt8]) throws -> CheckpointFileV4 { try bytes.withUnsafeBytes { try CheckpointFileV4.decode($0) } }

    /// `bytes` with its trailing CRC recomputed.
    func fixed(_ bytes: [UInt8]) -> [UInt8] {
        var b = bytes
        let crc = CRC32C.mask(b.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<(b.count - 4)])) })
        withUnsafeBytes(of: crc.littleEndian) { for i in 0..<4 { b[b.count - 4 + i] = $0[i] } }
        return b
    }

    func testEncodesAndDecodesBackToTheSameCheckpoint() throws {
        let cp = sample()
        let bytes = cp.encode()
        XCTAssertEqual(try decode(bytes), cp)
        XCTAssertEqual(bytes.withUnsafeBytes { CheckpointFileV4.version(of: $0) }, 4)
        XCTAssertEqual(Array(bytes.prefix(8)), CheckpointFile.magic)
        XCTAssertEqual(cp.runNumbers, [1, 4, 3])
        // The legacy decoder refuses it by version, so an older build replays instead.
        XCTAssertThrowsError(try bytes.withUnsafeBytes { try CheckpointFile.decode($0) })
    }

    func testRefusesCheckpointsThatContradictThemselves() throws {
        func refuses(_ change: (inout CheckpointFileV4) -> Void, _ reason: String, line: UInt = #line) {
            var cp = sample()
            change(&cp)
            XCTAssertThrowsError(try decode(cp.encode()), line: line) { error in
                XCTAssertTrue((error as? _DecodeError)?.reason.contains(reason) == true, "\(error)", line: line)
            }
        }
        refuses({ $0.indexes.append($0.indexes[0]) }, "appears twice")
        refuses({ $0.indexes[2].base = $0.indexes[0].base }, "named twice")
        refuses({ $0.indexes[0].base = nil }, "delta run without a base")
        refuses({ $0.indexes[1].delta = $0.indexes[1].base }, "named twice")
        refuses({ $0.nextRun = 4 }, "next run number")
        refuses({ $0.segments = [] }, "segment count")
        refuses({ $0.segments.append($0.segments[0]) }, "listed twice")
        refuses({ $0.indexes[0].type = "" }, "empty type name")
        // Fields the encoder never writes.
        let good = sample().encode()
        var encrypted = good
        encrypted[CheckpointFileV4.headerSize - 4 - 16 - 7 - 1] = 1
        XCTAssertThrowsError(try decode(fixed(encrypted)))
        var version = good
        version[8] = 5
        XCTAssertThrowsError(try decode(fixed(version)))
        var flags = good
        flags[10] = 1
        XCTAssertThrowsError(try decode(fixed(flags)))
        var crc = good
        crc[20] ^= 1
        XCTAssertThrowsError(try decode(crc))
        XCTAssertThrowsError(try decode(Array(good.dropLast())))
        XCTAssertThrowsError(try decode(fixed(good + [0, 0, 0, 0])))
    }

    func testMutatedBytesAreRefusedOrReadConsistentlyNeverTrap() throws {
        let good = sample().encode()
        var rng = SplitMix64(seed: 28)
        var accepted = 0
        for iteration in 0..<5_000 {
            var bytes = good
            switch iteration % 3 {
            case 0:
                for _ in 0..<Int.random(in: 1...3, using: &rng) {
                    bytes[Int.random(in: 8..<bytes.count - 4, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                }
            case 1: bytes.removeSubrange(Int.random(in: 8..<bytes.count - 4, using: &rng)..<(bytes.count - 4))
            default:
                let at = Int.random(in: 8..<bytes.count - 4, using: &rng)
                bytes.insert(
                    contentsOf: (0..<Int.random(in: 1...9, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }, at: at)
            }
            guard bytes.count >= 4, let cp = try? decode(fixed(bytes)) else { continue }
            accepted += 1
            XCTAssertEqual(Set(cp.runNumbers).count, cp.runNumbers.count)
            XCTAssertTrue(cp.runNumbers.allSatisfy { $0 < cp.nextRun })
            XCTAssertEqual(try decode(cp.encode()), cp)
        }
        XCTAssertLessThan(accepted, 2_500)
    }
}
