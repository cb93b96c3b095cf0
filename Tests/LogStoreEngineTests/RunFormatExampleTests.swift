import XCTest

@testable import LogStoreEngine

/// The worked example of Docs/FileFormat.md, sections 9b ("CHECKPOINT (version 4)") and 9c
/// ("Run files"): the bytes the document shows are the bytes this build writes.
final class RunFormatExampleTests: XCTestCase {
    /// Bytes from the document's hex (spaces and line breaks ignored).
    func bytes(_ hex: String) -> [UInt8] {
        let digits = hex.filter { $0.isHexDigit }
        var out: [UInt8] = []
        var i = digits.startIndex
        while i < digits.endIndex {
            let j = digits.index(i, offsetBy: 2)
            out.append(UInt8(digits[i..<j], radix: 16) ?? 0)
            i = j
        }
        return out
    }

    func zeros(_ n: Int) -> [UInt8] { [UInt8](repeating: 0, count: n) }

    func testTheRunAndCheckpointOfTheExampleHaveTheDocumentedBytes() throws {
        let storeId = StoreID(bytes: Array(0..<16))
        let sink = RunMemorySink()
        let w = RunWriter(
            header: RunHeader(storeId: storeId, runNumber: 1, kind: .primaryBase, layout: .fixed8, sequence: 2), sink: sink)
        try w.append(
            key: RecordKey(Array("user0001".utf8)),
            location: RecordLocation(segment: 1, offset: 48, length: 40, sequence: 1))
        try w.append(
            key: RecordKey(Array("user0002".utf8)),
            location: RecordLocation(segment: 1, offset: 104, length: 40, sequence: 2))
        let header = try w.finish()
        let run = sink.bytes
        XCTAssertEqual(run.count, 2 * 4096)

        let headerPage =
            bytes("89 4c 53 52 4e 0d 0a 1a  04 00  00 00") + Array(0..<16) + bytes("01 00 00 00  01 08 01 00")
            + bytes("02 00 00 00 00 00 00 00  02 00 00 00  01 00 00 00") + bytes("01 00 00 00  01 00 00 00  02 00 00 00 00 00 00 00")
            + zeros(16) + bytes("02 00 00 00 00 00 00 00") + zeros(32) + bytes("eb 53 66 cc")
        XCTAssertEqual(Array(run[0..<128]), headerPage)
        XCTAssertEqual(Array(run[128..<4096]), zeros(4096 - 128))

        let leaf =
            bytes("de ca bc db  00  01  02 00  00 00 00 00 00 00 00 00") + bytes("00 00 00 00")
            + Array("user0001".utf8) + bytes("01 00 00 00 30 00 00 00 28 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00")
            + Array("user0002".utf8) + bytes("01 00 00 00 68 00 00 00 28 00 00 00 00 00 00 00 02 00 00 00 00 00 00 00")
        XCTAssertEqual(leaf.count, 84)
        XCTAssertEqual(Array(run[4096..<(4096 + 84)]), leaf)
        XCTAssertEqual(Array(run[(4096 + 84)...]), zeros(4096 - 84))

        // The reader sees what the example says.
        let mapped = try MappedRun(data: RunBytes(copying: run), path: "000001.run")
        XCTAssertEqual(mapped.header, header)
        XCTAssertEqual(try RunValidator.validate(mapped).entries, 2)

        var meta = MetaTable()
        try meta.defineType(1, name: "User")
        let checkpoint = CheckpointFileV4(
            generation: 1, sequence: 2, createdAtMillis: 0, storeId: storeId,
            segments: [
                .init(
                    number: 1, length: 160, rawBytes: 112, refs: DefineRefs(types: [1], dictionaries: []), pendingBytes: 80,
                    deadBytes: 0)
            ],
            indexes: [.init(type: "User", definition: nil, base: RunWitness(header), delta: nil, entryCount: 2)], nextRun: 2,
            meta: meta)
        let expected =
            bytes("89 4c 53 43 50 0d 0a 1a  04 00  00 00") + bytes("01 00 00 00 00 00 00 00  02 00 00 00 00 00 00 00")
            + zeros(8) + Array(0..<16) + zeros(8) + zeros(16) + bytes("53 00 00 00")
            + bytes("01  01 00 00 00  a0 00 00 00 00 00 00 00  70 00 00 00 00 00 00 00") + bytes("06  01  01 01  00  50  00")
            + bytes("08  01 01 04 55 73 65 72  00")
            + bytes("01  04 55 73 65 72  00")
            + bytes("01  01 00 00 00  02 00 00 00  01 00 00 00  02 00 00 00 00 00 00 00  eb 53 66 cc") + bytes("00")
            + bytes("02 00 00 00 00 00 00 00") + bytes("02 00 00 00  ff") + bytes("c0 bf 1e d6")
        XCTAssertEqual(expected.count, 167)
        XCTAssertEqual(checkpoint.encode(), expected)
        XCTAssertEqual(try expected.withUnsafeBytes { try CheckpointFileV4.decode($0) }, checkpoint)
    }
}
