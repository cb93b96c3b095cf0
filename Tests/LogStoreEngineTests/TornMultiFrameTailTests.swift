import Foundation
import XCTest

@testable import LogStoreEngine

final class TornMultiFrameTailTests: XCTestCase {
    /// A multi-frame transaction whose append stopped after its data frames (no commit frame) is
    /// an interrupted write: open cuts it and keeps everything committed before it.
    func testUncommittedMultiFrameTransactionAtTheTailIsCutAsATornWrite() throws {
        let dir = NSTemporaryDirectory() + "logstore-torn-multiframe-\(UUID().uuidString)"
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        var o = LogEngineOptions.replayOnly
        o.maxFramePayload = 512
        o.compression = false
        o.durability = .none
        let path = dir + "/" + LogStoreFormat.segmentFileName(1)
        let committedEnd: UInt64
        do {
            let e = try LogEngine.open(directory: dir, options: o)
            try e.commit([.put(type: "A", key: RecordKey([1]), value: AttributeValue.int(1).encoded())])
            committedEnd = try POSIXFileSystem().open(path, mode: .readOnly).size()
            try e.commit((0..<10).map { .put(type: "A", key: RecordKey([UInt8($0 + 10)]), value: [UInt8](repeating: 7, count: 300)) })
            try e.close()
        }
        // Cut the commit frame off: every data frame of transaction 2 stays.
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var offset = Int(committedEnd)
        var frames: [Int] = []
        while offset < bytes.count {
            frames.append(offset)
            offset +=
                LogFrame.headerSizeV2
                + Int(bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self).littleEndian })
        }
        XCTAssertGreaterThan(frames.count, 2, "precondition: transaction 2 spans several frames")
        let f = try POSIXFileSystem().open(path, mode: .readWrite)
        try f.truncate(to: UInt64(frames[frames.count - 1]))
        try f.close()

        let e = try LogEngine.open(directory: dir, options: o)
        defer { try? e.close() }
        XCTAssertEqual(e.recoveryReport.truncatedTail?.offset, committedEnd)
        XCTAssertEqual(e.recoveryReport.lastSequence, 1)
        XCTAssertEqual(try e.snapshot().count(ofType: "A"), 1)
        XCTAssertEqual(try POSIXFileSystem().open(path, mode: .readOnly).size(), committedEnd)
    }
}
